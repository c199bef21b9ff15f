// The daily time window of the scheduler (daemon/scheduler/admission): parsing and when it next
// opens, in UTC and across midnight; which of a loop's agents the usage-limit holds leave it.
// Budgets are tested end to end (test_scheduler.py), fallbacks too (test_agents.py).
#include "daemon/admission/admission.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>

namespace {

// Epoch ms of 2026-11-22 at HH:MM UTC (plus days).
std::int64_t at(int hours, int minutes, int days = 0) {
    const std::int64_t midnight = 1795305600000;  // 2026-11-22T00:00:00Z
    return midnight + ((days * 24 + hours) * 60 + minutes) * 60000LL;
}

struct utc {
    utc() {
        ::setenv("TZ", "UTC", 1);
        ::tzset();
    }
};

}  // namespace

TEST_CASE("a time window is HH:MM-HH:MM; anything else is a clear invalid_params") {
    auto window = ralph::parse_time_window("01:30-07:05");
    REQUIRE(window);
    CHECK(window->start_minute == 90);
    CHECK(window->end_minute == 425);
    CHECK_FALSE(ralph::parse_time_window(""));
    for (const char* bad : {"1:00-07:00", "01:00", "01:00-24:00", "25:00-01:00", "01:60-02:00",
                            "ab:cd-01:00", "01:00-01:00", "01:00-07:00 "}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(ralph::parse_time_window(bad), ralph::proto::rpc_error);
    }
}

TEST_CASE("the window is open at its start, closed at its end, and opens next at its start") {
    utc zone;
    auto window = *ralph::parse_time_window("01:00-07:00");
    CHECK(ralph::next_window_open(window, at(1, 0)) == at(1, 0));
    CHECK(ralph::next_window_open(window, at(6, 59)) == at(6, 59));
    CHECK(ralph::next_window_open(window, at(7, 0)) == at(1, 0, 1));
    CHECK(ralph::next_window_open(window, at(0, 59)) == at(1, 0));
    CHECK(ralph::next_window_open(window, at(12, 0)) == at(1, 0, 1));
}

TEST_CASE("a window across midnight") {
    utc zone;
    auto window = *ralph::parse_time_window("22:00-07:00");
    CHECK(ralph::next_window_open(window, at(23, 0)) == at(23, 0));
    CHECK(ralph::next_window_open(window, at(3, 0)) == at(3, 0));
    CHECK(ralph::next_window_open(window, at(7, 0)) == at(22, 0));
    CHECK(ralph::next_window_open(window, at(21, 59)) == at(22, 0));
}

TEST_CASE("a loop runs on its first agent no usage limit holds, and waits for the earliest reset") {
    ralph::test::temp_dir dir;
    ralph::store db(dir.path / "ralph.db");
    ralph::admission gate(db, "default");
    ralph::proto::submit_params spec;
    spec.agent = "claude";
    spec.model = "opus";
    spec.args = {"--verbose"};
    spec.fallback = {"codex:o3", "gemini"};
    const std::vector<std::string> agents{"claude", "codex", "gemini"};

    CHECK(gate.for_quotas(agents, 1000).go());
    CHECK(gate.pick_agent(spec, 1000) == ralph::proto::agent_choice{"claude", "opus"});
    CHECK(ralph::proto::on_agent(spec, gate.pick_agent(spec, 1000)) == spec);

    db.holds().hold_agent({"claude", "default", 9000, "claude usage limit", ""});
    // Another account's hold of codex holds nothing here.
    db.holds().hold_agent({"codex", "work", 9000, "codex usage limit", "build1"});
    CHECK(gate.for_quotas(agents, 1000).go());
    CHECK(gate.pick_agent(spec, 1000) == ralph::proto::agent_choice{"codex", "o3"});
    const ralph::proto::submit_params on_codex = ralph::proto::on_agent(spec, {"codex", "o3"});
    CHECK(on_codex.agent == "codex");
    CHECK(on_codex.model == "o3");
    CHECK(on_codex.args.empty());  // claude's own

    db.holds().hold_agent({"codex", "default", 5000, "codex usage limit", ""});
    CHECK(gate.pick_agent(spec, 1000) == ralph::proto::agent_choice{"gemini", ""});
    db.holds().hold_agent({"gemini", "default", 7000, "gemini usage limit", "build2"});
    const auto held = gate.for_quotas(agents, 1000);
    CHECK(held.what == ralph::admission::verdict::kind::wait);
    CHECK(held.until_ms == 5000);
    CHECK(held.reason == "waiting for the reset of account default's codex usage limit");
    CHECK(gate.for_quotas({"gemini"}, 1000).reason ==
          "waiting for the reset of account default's gemini usage limit, learnt from build2");
    // Past codex's reset codex is free again; past claude's, claude comes first again.
    CHECK(gate.pick_agent(spec, 5000) == ralph::proto::agent_choice{"codex", "o3"});
    CHECK(gate.pick_agent(spec, 9000) == ralph::proto::agent_choice{"claude", "opus"});
}

TEST_CASE("a usage limit holds the quota it was met on: a command's program, or a quota key") {
    using ralph::proto::quota_of;
    using ralph::proto::quotas_of;
    ralph::proto::submit_params spec;
    spec.agent = "command";
    spec.command = "/home/me/bin/my-agent --prompt-file {prompt_file}";
    CHECK(quota_of(spec) == "command:my-agent");
    spec.fallback = {"claude:opus", "command"};
    // A fallback `command` is the loop's own command, on its quota; another agent has its own.
    CHECK(quotas_of(spec) ==
          std::vector<std::string>{"command:my-agent", "claude", "command:my-agent"});
    spec.quota_key = "gateway-team-a";
    CHECK(quotas_of(spec) ==
          std::vector<std::string>{"gateway-team-a", "claude", "gateway-team-a"});
    // A judge draws on its own quota: its agent's, its command's program.
    spec.judge = "command";
    spec.judge_command = "judge.sh";
    CHECK(quota_of(ralph::proto::as_judge(spec)) == "command:judge.sh");

    ralph::test::temp_dir dir;
    ralph::store db(dir.path / "ralph.db");
    ralph::admission gate(db, "default");
    db.holds().hold_agent({"command:other-agent", "default", 9000, "other-agent usage limit", ""});
    ralph::proto::submit_params mine;
    mine.agent = "command";
    mine.command = "my-agent";
    // Another program's limit is not this one's.
    CHECK(gate.for_quotas(quotas_of(mine), 1000).go());
    db.holds().hold_agent({"command:my-agent", "default", 9000, "my-agent usage limit", ""});
    CHECK_FALSE(gate.for_quotas(quotas_of(mine), 1000).go());
    mine.quota_key = "separate";
    CHECK(gate.for_quotas(quotas_of(mine), 1000).go());
}
