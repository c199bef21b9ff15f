// Registration of the API's methods, one function per method family (one file each).
#pragma once

#include "common/asio.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/state_dir.hpp"
#include "daemon/store/gc.hpp"
#include "proto/daemon_api.hpp"
#include "proto/types.hpp"

#include <filesystem>
#include <functional>

namespace ralph {
class store;
class scheduler;
class admission;
class wall_clock;
class output_log;
class storage_health;
class child_reaper;
class notifier;
class env_policy;
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
    storage_health& health;  // daemon.info's storage; gc on a full disk
    // The API's blocking work (a submit's checks, gc's file deletes), apart from the runners' so
    // that it does not wait behind fifty agent starts.
    net::thread_pool& blocking;
    const agent_binaries& binaries;  // changed by SIGHUP (ralphd::reload), on the io thread
    const env_policy& agent_env;     // the same: what agents get of ralphd's environment
    state_dir state;                 // where --worktree loops get their worktrees
    proto::daemon_info identity;     // the static part of daemon.info
    // Where loop.pr runs git push and gh (loop/landing.hpp).
    net::io_context& io;
    child_reaper& reaper;
    notifier& notices;  // notify.test's sending
    // web.info and web.rotate_token: the web token (replaced first when `rotate`) and the login
    // URL of ralphd --listen (server/web_gate).
    std::function<proto::web_info(bool rotate)> web_login;
    // web.login_code: a login URL with a one-time code instead of the token.
    std::function<proto::web_login_code()> web_login_code;
    // Stops ralphd after the reply is on its way, leaving the agents running or not.
    std::function<void(bool leave_running)> request_shutdown;
    // gc_context::forget_loop: for history.gc, once the loop's rows are gone.
    std::function<loop_files(std::int64_t loop_id)> forget_loop;
    // The ledger of usage-limit holds shared with peers (daemon/peers): records a hold a peer
    // sent (`from`: its name, for a hold without origin; peers/peer_holds checks it), true when
    // it was news; and the holds in force as peers are told them.
    std::function<bool(const proto::agent_hold& hold, const std::string& from)> learn_hold;
    std::function<std::vector<proto::agent_hold>()> holds_in_force;
    // daemon.info's peers: the state of each ralphd --peer link.
    std::function<std::vector<proto::peer_status>()> peers;
};

void register_daemon_methods(method_registry& registry, method_services& services);
void register_loop_methods(method_registry& registry, method_services& services);
void register_agent_methods(method_registry& registry, method_services& services);
// scheduler.get/set, budget.get/set, and debug.clock when the clock is adjustable.
void register_scheduler_methods(method_registry& registry, method_services& services);
void register_history_methods(method_registry& registry, method_services& services);
void register_peer_methods(method_registry& registry, method_services& services);

}  // namespace ralph::rpc
