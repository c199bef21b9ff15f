// `ralphctl submit --host auto`'s choice of a host (client/placement): free slots first, then the
// shortest queue, then an agent no usage limit holds; equals in the hosts file's order; a host
// that refused or did not answer is never chosen; the host of the idempotency key's loop wins.
#include "client/placement.hpp"

#include <doctest/doctest.h>

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

}  // namespace

TEST_CASE("placement: the host with the most free slots gets the loop, whatever its queue") {
    CHECK(choose_host({offer(0, 0), offer(2, 5), offer(1, 0)}) == 1);
    CHECK(choose_host({offer(1, 0, true), offer(0, 0)}) == 0);
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
