// What this daemon has room for, for a loop a submit describes: loop.submit's dry run answers it,
// and `ralphctl submit --host auto` places the loop by it (client/placement). A slot counts as
// free only if the loop would start in it now: not while the scheduler is held (ralphd cannot
// write its state; paused, outside its time window or out of a global budget, as admission
// says) nor while another loop works in the workspace. With submission.hpp, what a submit meets
// before a loop exists.
#pragma once

#include "proto/loop_api.hpp"
#include "proto/types.hpp"

#include <cstdint>

namespace ralph {

class admission;
class storage_health;
class store;

// What the scheduler says of its runners when asked (scheduler::running_count, workspace_busy).
struct runner_load {
    std::int64_t running = 0;     // loops with a runner
    bool workspace_busy = false;  // one of them works in the submit's workspace
};

// The capacity for a loop on `spec`'s agents (its own and its fallbacks) in `spec`'s workspace,
// at now_ms. Reads the database (the queue's length); changes nothing.
proto::host_capacity capacity_for(const proto::submit_params& spec, std::int64_t now_ms,
                                  const runner_load& load, admission& gate,
                                  const storage_health& health, store& db);

}  // namespace ralph
