// `ralphctl submit --host auto`'s choice of a host (client/placement): a host whose scheduler is
// not held first, then free slots (none in a busy workspace), then the shortest queue, then an
// agent no usage limit holds; equals in the hosts file's order; a host that refused or did not
// answer is never chosen; the host of the idempotency key's loop wins; an older daemon's answer,
// without the scheduler's hold, reads as not held.
#include "client/placement.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

namespace {

using ralph::client::choose_host;
using ralph::client::placement_offer;

placement_offer offer(std::int64_t free_slots, std::int64_t queued, bool held = false) {
    placement_offer o;
    o.capacity.max_concurrent = 4;
    o.capacity.running = 4 - free_slots;
    o.capacity.free_slots = free_slots;
    o.capacity.queued = queued;
    o.capacity.agent_held = held;
    o.capacity.agent_held_until = held ? 1'795'000'000'000 : 0;
    return o;
}

// A host that starts no loop now: the daemon says why and counts no free slot.
placement_offer held_host(std::int64_t queued) {
    placement_offer o = offer(0, queued);
    o.capacity.scheduler_held = true;
    o.capacity.scheduler_held_reason = "the scheduler is paused";
    return o;
}

}  // namespace

TEST_CASE("placement: the host with the most free slots gets the loop, whatever its queue") {
    CHECK(choose_host({offer(0, 0), offer(2, 5), offer(1, 0)}) == 1);
    CHECK(choose_host({offer(1, 0, true), offer(0, 0)}) == 0);
}

TEST_CASE("placement: a host whose scheduler is held gets the loop only when every host's is") {
    // Paused, outside its window or degraded: its queue does not move, a full host's does.
    CHECK(choose_host({held_host(0), offer(1, 3)}) == 1);
    CHECK(choose_host({held_host(0), offer(0, 9, true)}) == 1);
    // Whatever slots it counts (a daemon counts none while held).
    placement_offer counting = held_host(0);
    counting.capacity.free_slots = 4;
    CHECK(choose_host({counting, offer(1, 0)}) == 1);
    // All held: the usual rules among them.
    CHECK(choose_host({held_host(2), held_host(1), std::nullopt}) == 1);
}

TEST_CASE("placement: an older daemon's dry run, without scheduler_held, reads as not held") {
    // Its capacity before scheduler_held, scheduler_held_reason and workspace_busy.
    const auto answer = nlohmann::json::parse(R"({
        "id": 0, "state": "queued", "created": false, "warnings": [],
        "capacity": {"max_concurrent": 4, "running": 2, "free_slots": 2, "queued": 0,
                     "agent_held": false, "agent_held_until": null}})")
                            .get<ralph::proto::submit_result>();
    REQUIRE(answer.capacity.has_value());
    CHECK_FALSE(answer.capacity->scheduler_held);
    CHECK(answer.capacity->scheduler_held_reason.empty());
    CHECK_FALSE(answer.capacity->workspace_busy);
    const placement_offer older{*answer.capacity, false};
    // Its free slots count as they are: it wins over a held host and over fewer free slots.
    CHECK(choose_host({held_host(0), older}) == 1);
    CHECK(choose_host({offer(1, 0), older}) == 1);
    CHECK(choose_host({offer(3, 0), older}) == 0);
}

TEST_CASE("placement: a busy workspace is no free slot: the loop goes where it starts now") {
    placement_offer busy = offer(0, 0);  // 4 slots, one loop running in the loop's workspace
    busy.capacity.running = 1;
    busy.capacity.workspace_busy = true;
    CHECK(choose_host({busy, offer(1, 2)}) == 1);
}

TEST_CASE("placement: between equal free slots the shortest queue, then an agent not held") {
    CHECK(choose_host({offer(0, 3), offer(0, 1), offer(0, 2)}) == 1);
    CHECK(choose_host({offer(1, 1, true), offer(1, 1, false)}) == 1);
    CHECK(choose_host({offer(0, 0, true), offer(0, 1, false)}) == 0);
}

TEST_CASE("placement: between equals the first host, in the hosts file's order") {
    CHECK(choose_host({offer(1, 0), offer(1, 0), offer(1, 0)}) == 0);
    CHECK(choose_host({std::nullopt, offer(0, 2, true), offer(0, 2, true)}) == 1);
}

TEST_CASE("placement: a host that refused or did not answer is never chosen; none: no host") {
    CHECK(choose_host({std::nullopt, offer(0, 9, true), std::nullopt}) == 1);
    CHECK_FALSE(choose_host({std::nullopt, std::nullopt}).has_value());
    CHECK_FALSE(choose_host({}).has_value());
}

TEST_CASE("placement: the host that has the idempotency key's loop gets the retry") {
    placement_offer retry = offer(0, 7, true);
    retry.has_loop = true;
    CHECK(choose_host({offer(3, 0), retry, offer(2, 0)}) == 1);
}
