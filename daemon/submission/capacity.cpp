// The dry run's capacity (see capacity.hpp).
#include "daemon/submission/capacity.hpp"

#include "daemon/admission/admission.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"

#include <algorithm>
#include <string>

namespace ralph {
namespace {

// Why this daemon starts no loop now, as scheduler::schedule decides it (ralphd degraded; the
// scheduler paused, outside its time window or out of a global budget); "" when it starts loops.
std::string scheduler_held_reason(admission& gate, const storage_health& health,
                                  std::int64_t now_ms) {
    if (health.degraded()) return "ralph cannot write its state: " + health.status().cause;
    const admission::verdict global = gate.global(now_ms);
    return global.go() ? "" : global.reason;
}

}  // namespace

proto::host_capacity capacity_for(const proto::submit_params& spec, std::int64_t now_ms,
                                  const runner_load& load, admission& gate,
                                  const storage_health& health, store& db) {
    proto::host_capacity room;
    room.max_concurrent = gate.scheduler_settings().max_concurrent;
    room.running = load.running;
    room.scheduler_held_reason = scheduler_held_reason(gate, health, now_ms);
    room.scheduler_held = !room.scheduler_held_reason.empty();
    room.workspace_busy = load.workspace_busy;
    if (!room.scheduler_held && !room.workspace_busy)
        room.free_slots = std::max<std::int64_t>(0, room.max_concurrent - room.running);
    room.queued = db.loops().count_loops({proto::loop_state::queued});
    const admission::verdict held = gate.for_quotas(proto::quotas_of(spec), now_ms);
    room.agent_held = !held.go();
    room.agent_held_until = room.agent_held ? held.until_ms : 0;
    return room;
}

}  // namespace ralph
