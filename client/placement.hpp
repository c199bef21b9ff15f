// `ralphctl submit --host auto`: which host gets the loop, chosen from every host's answer to a
// dry run of the submit (loop.submit with dry_run: every check, nothing created, and the
// daemon's capacity). Pure: no I/O, so that the rule is unit-tested (tests/unit/placement_test).
#pragma once

#include "proto/loop_api.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace ralph::client {

// A host that accepted the dry run.
struct placement_offer {
    proto::host_capacity capacity;
    // The submit's idempotency key names a loop there already: the submit goes there and
    // answers that loop, so that a retry never makes a second loop on another host.
    bool has_loop = false;
};

// The index of the host that gets the loop among `offers` (nullopt: the host refused or did not
// answer), or nullopt when none offers: a host that has the key's loop; else one whose scheduler
// is not held (paused, outside its time window, out of a global budget, degraded), whose queue
// moves; then the most free slots (slots where the loop would start now: none in a busy
// workspace), then the shortest queue, then one where a usage limit does not hold the loop's
// agents; between equals the first (the order of the hosts file, `local` first).
std::optional<std::size_t> choose_host(const std::vector<std::optional<placement_offer>>& offers);

}  // namespace ralph::client
