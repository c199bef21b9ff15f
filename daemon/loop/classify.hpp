// How an attempt ended, in the record's terms (termination, failure class, error): from what ended
// it, the agent's exit status and what its stream said. The failure policy (README, "Failures")
// reads these.
#pragma once

#include "common/agent_stream/agent_stream.hpp"
#include "proto/types.hpp"

#include <optional>

namespace ralph {

// What ended the attempt, as far as ralph knows.
enum class attempt_end {
    by_itself,  // the agent exited (or was killed by something else than ralph)
    cancelled,  // loop.cancel
    stopped,    // ralphd stopped, or the loop was paused
    timed_out,  // --timeout or --inactivity-timeout
};

// Sets the attempt's termination, failure class, error, exit code and signal. `wait_status` is
// the agent's as waitpid gives it; nullopt when its shim ended without one (killed, or the
// machine restarted): the attempt is then interrupted, a crash.
void classify_attempt(proto::attempt_info& attempt, attempt_end end,
                      const std::optional<int>& wait_status, const agent_stream::summary& said);

}  // namespace ralph
