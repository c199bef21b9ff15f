// The loop state machine (README, "Loops"): every state change of a loop is an event applied to its
// current state through this one table; a change the table does not allow is a bug, refused by
// the store (store::set_state throws). ARCHITECTURE.md shows the table as describe_transitions()
// renders it, and a unit test keeps the two equal.
//
// The states themselves are the API's (proto::loop_state, types.hpp).
#pragma once

#include "proto/types.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::proto {

enum class loop_event {
    start,     // the scheduler gives the loop a runner
    wait,      // a delay or a retry backoff, or parked (budget, window, usage limit): resume_at
    wake,      // the runner's delay is over
    requeue,   // back in the queue: a parked loop's time came, the scheduler paused, ralphd stops
    pause,     // loop.pause
    resume,    // loop.resume
    complete,  // a completion rule held at or after min_iterations
    exhaust,   // max_iterations, or the loop's token or cost cap
    stall,     // no progress, or identical failures
    fail,      // retries used up, the agent cannot run, an internal error
    cancel,    // loop.cancel
    retry,     // loop.retry: a failed, stalled or cancelled loop runs again from where it was
    extend     // loop.extend: an exhausted loop gets more iterations
};

std::string_view to_string(loop_event event);

struct transition {
    loop_state from;
    loop_event event;
    loop_state to;
};

// Every allowed transition, by state then event.
const std::vector<transition>& transitions();

// The state `event` takes a loop in state `from` to; nullopt when the table does not allow it.
std::optional<loop_state> next_state(loop_state from, loop_event event);

// The table as ARCHITECTURE.md shows it: a markdown table, one row per state.
std::string describe_transitions();

}  // namespace ralph::proto
