// The dry run's capacity (daemon/submission/capacity): free slots only where the loop would
// start now, the queue's length, why the scheduler is held, the agents' usage-limit holds —
// against a real database, with the time given.
#include "daemon/submission/capacity.hpp"

#include "daemon/admission/admission.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <system_error>

namespace {

constexpr std::int64_t now = 1795305600000;  // 2026-11-22T00:00:00Z

struct daemon_state {
    ralph::test::temp_dir dir;
    ralph::store db{dir.path / "ralph.db"};
    ralph::admission gate{db, "default"};
    ralph::net::io_context io;
    ralph::storage_health health{io, db.settings(), ralph::state_dir(dir.path), [] {}};

    ralph::proto::host_capacity capacity(const ralph::proto::submit_params& spec,
                                         ralph::runner_load load = {}) {
        return ralph::capacity_for(spec, now, load, gate, health, db);
    }
};

ralph::proto::submit_params spec_on(std::string agent) {
    ralph::proto::submit_params spec;
    spec.workspace = "/srv/project";
    spec.agent = std::move(agent);
    return spec;
}

void set_max_concurrent(ralph::admission& gate, std::int64_t max, bool paused = false) {
    ralph::proto::scheduler_settings settings = gate.scheduler_settings();
    settings.max_concurrent = max;
    settings.paused = paused;
    gate.set_scheduler_settings(settings);
}

}  // namespace

TEST_CASE("capacity: the slots left by the running loops are free, and the queue is counted") {
    daemon_state daemon;
    set_max_concurrent(daemon.gate, 4);
    const auto spec = spec_on("claude");
    daemon.db.loops().insert_loop(spec, now);
    daemon.db.loops().insert_loop(spec, now);
    // A paused loop is not in the queue.
    const std::int64_t paused = daemon.db.loops().insert_loop(spec, now);
    daemon.db.loops().set_state(paused, ralph::proto::loop_event::pause, "", 0, now);

    const auto room = daemon.capacity(spec, {.running = 1, .workspace_busy = false});
    CHECK(room.max_concurrent == 4);
    CHECK(room.running == 1);
    CHECK(room.free_slots == 3);
    CHECK(room.queued == 2);
    CHECK_FALSE(room.scheduler_held);
    CHECK(room.scheduler_held_reason.empty());
    CHECK_FALSE(room.workspace_busy);
    CHECK_FALSE(room.agent_held);
    CHECK(room.agent_held_until == 0);

    // More running than allowed (max_concurrent lowered since): none free, never below zero.
    CHECK(daemon.capacity(spec, {.running = 6}).free_slots == 0);
}

TEST_CASE("capacity: a busy workspace frees no slot, though the scheduler is not held") {
    daemon_state daemon;
    set_max_concurrent(daemon.gate, 2);
    const auto room = daemon.capacity(spec_on("claude"), {.running = 1, .workspace_busy = true});
    CHECK(room.workspace_busy);
    CHECK(room.free_slots == 0);
    CHECK_FALSE(room.scheduler_held);
}

TEST_CASE("capacity: a paused scheduler frees no slot, and says why") {
    daemon_state daemon;
    set_max_concurrent(daemon.gate, 2, true);
    const auto room = daemon.capacity(spec_on("claude"));
    CHECK(room.scheduler_held);
    CHECK(room.scheduler_held_reason == "the scheduler is paused");
    CHECK(room.free_slots == 0);
    CHECK(room.max_concurrent == 2);
}

TEST_CASE("capacity: a daemon that cannot write its state is held, with the cause") {
    daemon_state daemon;
    const std::system_error full(ENOSPC, std::generic_category(), "write ralph.db");
    REQUIRE(daemon.health.failed(full));
    const auto room = daemon.capacity(spec_on("claude"));
    CHECK(room.scheduler_held);
    CHECK(room.scheduler_held_reason ==
          std::string("ralph cannot write its state: ") + full.what());
    CHECK(room.free_slots == 0);
}

TEST_CASE("capacity: the agents are held only when a usage limit holds each the loop may run on") {
    daemon_state daemon;
    ralph::proto::submit_params spec = spec_on("claude");
    spec.fallback = {"codex"};
    daemon.db.holds().hold_agent({"claude", "default", now + 9000, "claude usage limit", ""});
    auto room = daemon.capacity(spec);
    CHECK_FALSE(room.agent_held);  // codex is free
    CHECK(room.free_slots == 1);

    daemon.db.holds().hold_agent({"codex", "default", now + 5000, "codex usage limit", ""});
    room = daemon.capacity(spec);
    CHECK(room.agent_held);
    CHECK(room.agent_held_until == now + 5000);  // the earliest reset
    // A usage limit is no hold of the scheduler: the slot stays free.
    CHECK_FALSE(room.scheduler_held);
    CHECK(room.free_slots == 1);
}
