// Registration of the API's methods, one function per method family (one file each).
#pragma once

#include "daemon/agents/agent.hpp"
#include "proto/types.hpp"

#include <filesystem>
#include <functional>

namespace ralph {
class store;
class scheduler;
class admission;
class wall_clock;
class output_log;
}  // namespace ralph

namespace ralph::rpc {

class method_registry;

// What the methods work on; owned by the daemon.
struct method_services {
    store& db;
    scheduler& loops;
    admission& gate;
    wall_clock& clock;
    output_log& output;
    const agent_binaries& binaries;
    std::filesystem::path worktree_dir;     // where --worktree loops get their worktrees
    proto::daemon_info identity;            // the static part of daemon.info
    std::function<void()> request_shutdown;  // runs after the reply is on its way
};

void register_daemon_methods(method_registry& registry, method_services& services);
void register_loop_methods(method_registry& registry, method_services& services);
void register_agent_methods(method_registry& registry, method_services& services);
// scheduler.get/set, budget.get/set, and debug.clock when the clock is adjustable.
void register_scheduler_methods(method_registry& registry, method_services& services);

}  // namespace ralph::rpc
