// ralphd itself: owns the store, the output log, the reaper, the scheduler, the registry and
// the server, wires them together, recovers what an earlier daemon left at start, and shuts
// down in order. Everything runs on one io_context thread (see ARCHITECTURE.md).
#pragma once

#include "common/asio.hpp"
#include "common/hosts_file.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/loop_runner.hpp"
#include "daemon/notify/hooks.hpp"
#include "daemon/notify/notifier.hpp"
#include "daemon/peers/peer_link.hpp"
#include "daemon/process/child_reaper.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/server/server.hpp"
#include "daemon/server/subscriber_hub.hpp"
#include "daemon/server/web_gate.hpp"
#include "daemon/store/gc.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/wal_checkpointer.hpp"
#include "daemon/workspace/fifo_open_breaker.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

namespace ralph {

struct daemon_options {
    std::filesystem::path socket_path;
    std::filesystem::path db_path;
    int listen_fd = -1;  // an inherited listening socket (systemd), or -1 to bind socket_path
    std::chrono::milliseconds kill_grace{10000};
    std::int64_t max_output_bytes = std::int64_t(1) << 30;  // --max-output: per attempt, 0 = none
    std::optional<std::int64_t> max_concurrent;  // --max-concurrent: replaces the stored setting
    bool test_clock = false;                     // --test-clock: debug.clock may shift the time
    std::int64_t test_clock_start_ms = 0;        // the time to start at (0 = real time)
    server_limits limits;
    agent_binaries binaries;                             // --agent-binary NAME=PATH
    env_policy agent_env;                                // --env-policy RULE
    std::chrono::milliseconds rate_limit_margin{60000};  // --rate-limit-margin
    std::chrono::milliseconds rate_limit_wait{60000};    // --rate-limit-wait
    hook_settings hooks;                                 // --on-done, --notify, --hook-timeout
    std::vector<std::string> webhooks;                   // --notify URL (parsed once in main)
    std::filesystem::path shim_program;                  // ralph-shim, found next to ralphd
    bool cgroups = true;         // --cgroups auto: a cgroup per attempt where ralphd can create one
    std::string listen_address;  // --listen ADDRESS:PORT: an IP address; "" = no TCP listener
    unsigned listen_port = 0;
    std::string host_name;            // --host-name: the daemon's name (daemon.info, its peers)
    std::string account = "default";  // --account: whose usage limits hold the agents
    std::vector<host_entry> peers;    // --peer NAME, with its address from the hosts file
};

class ralphd {
  public:
    ralphd(net::io_context& io, daemon_options options);
    // Ends the pools' work first: what they run uses everything else (a start begun finishes,
    // one not begun never runs; the next ralphd takes both up).
    ~ralphd();

    // Adopts the attempts an earlier ralphd left running (or that ended meanwhile), recovers the
    // rest, starts listening and scheduling.
    void start();
    // Stops accepting, ends the agents (loops go back to queued) unless `leave_running` (their
    // shims go on, and the next ralphd adopts them), then stops the io_context. Idempotent.
    void shutdown(bool leave_running);
    // SIGHUP: takes the settings of `options` that can change while loops run (kill grace, agent
    // programs, rate-limit waits, hooks, max_concurrent when given); the rest is ignored.
    // Running loops use the new values from their next step on (a kill, a wait, a spawn).
    void reload(const daemon_options& options);
    // An exception that left a handler of the io_context: true (ralphd goes on, degraded) when the
    // storage refused a write, false for anything else (a bug).
    bool storage_failed(const std::exception& e);
    // The API's methods over this daemon, as the server dispatches them: the handlers' unit
    // tests call them in-process (tests/support/daemon_in_process.hpp).
    const rpc::method_registry& registry() const { return registry_; }

  private:
    // An attempt of an earlier ralphd to follow to its end.
    struct adoption {
        std::int64_t loop_id = 0;
        std::int64_t attempt_id = 0;
        shim::started started;
    };
    // The attempts of an earlier ralphd (or of runners that left when the storage refused a
    // write): those with a shim are adopted (returned), the others (the daemon died while
    // starting them, or they predate shims) are recorded as interrupted, their loops re-queued
    // with the loops that were waiting. Loops that have a runner are not touched.
    std::vector<adoption> recover();
    // recover(), then the adopted attempts handed to the scheduler and scheduling: at start, and
    // when the storage can be written again after a fault.
    void take_up_loops();
    // --max-concurrent (at start and at SIGHUP) replaces the stored scheduler setting when it is
    // not the value the configuration gave last time.
    void apply_configured_max_concurrent(std::int64_t configured);
    // Tells systemd's watchdog (WatchdogSec= of ralphd.service) that the io thread is alive, now
    // and every `interval` after.
    void ping_watchdog(std::chrono::microseconds interval);
    // runner_context::sandbox_hidden: ralph's socket directory and state directory, and the
    // workspaces of the loops but `loop_id` that have not ended.
    std::vector<std::filesystem::path> sandbox_hidden(std::int64_t loop_id);
    // method_services::forget_loop.
    loop_files forget_loop(std::int64_t loop_id);
    // method_services::web_login.
    proto::web_info web_login(bool rotate);
    proto::web_login_code web_login_code();
    // runner_context::record_hold, and a hold learnt from a peer: records it in the ledger and,
    // when it is news, tells the peers (their links and the sessions of theirs linked here).
    // Returns whether it was news.
    bool record_hold(const proto::agent_hold& hold);
    // method_services::learn_hold and peer_context::learn.
    bool learn_hold(const proto::agent_hold& hold, const std::string& from);
    // The holds in force as peers are told them.
    std::vector<proto::agent_hold> holds_in_force();
    // runner_context::change_state and on_state.
    proto::loop_state change_state(std::int64_t loop_id, const state_change& change);
    void state_changed(std::int64_t loop_id, proto::loop_state state);
    // Whether a loop's change to `state` is news for the push notifications: a loop parked again
    // for the cause it was announced waiting for (its budget taken again by another loop before
    // it ran) is not, until it runs or ends; nor is a wait announced before (the same cause
    // until the same time), whatever happened in between, a restart too. Kept with the loop
    // (loop_table::announce_wait), in the change's transaction.
    bool is_news(std::int64_t loop_id, proto::loop_state state, const state_change& change);

    net::io_context& io_;
    daemon_options options_;
    fifo_open_breaker fifo_breaker_;    // before the pools: their threads must be joinable
    net::thread_pool blocking_{1};      // git snapshots and other blocking work of the runners
    net::thread_pool api_blocking_{1};  // the API's blocking work (method_services::blocking)
    wall_clock clock_;
    store db_;
    wal_checkpointer checkpointer_;
    admission gate_;
    subscriber_hub hub_;
    storage_health health_;
    output_log output_;
    child_reaper reaper_;
    hook_runner hooks_;
    notifier notices_;
    web_gate web_;
    runner_context runner_ctx_;
    scheduler scheduler_;
    rpc::method_registry registry_;
    rpc::method_services services_;
    peer_context peer_ctx_;
    std::vector<std::unique_ptr<peer_link>> peers_;
    std::unique_ptr<server> server_;
    net::steady_timer shutdown_delay_;
    net::steady_timer watchdog_timer_;
    bool shutting_down_ = false;
};

}  // namespace ralph
