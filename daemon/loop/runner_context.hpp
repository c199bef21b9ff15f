// What every loop runner shares, owned by the daemon: the io thread and its pool, the store, the
// clock, the admission, the output index, the storage's health, the reaper, the state directory,
// the settings SIGHUP may change, and the daemon's components a runner reports to.
#pragma once

#include "common/asio.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/state_dir.hpp"
#include "proto/daemon_api.hpp"
#include "proto/state_machine.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

class store;
class admission;
class wall_clock;
class output_log;
class storage_health;
class notifier;
class child_reaper;

// Why a runner was told to stop.
enum class stop_kind {
    none,
    cancel,    // the user cancelled: the agent is ended, the loop ends cancelled
    shutdown,  // ralphd stops: the agent is ended, the loop goes back to queued
    pause,     // the user paused: the agent is ended, the loop is paused
    detach,    // ralphd stops and leaves the agent running for the next ralphd to adopt
};

// A change of a loop's state, as a runner or the scheduler asks for it.
struct state_change {
    proto::loop_event event = proto::loop_event::start;
    std::string reason = {};     // the stop reason (or why it waits)
    std::int64_t resume_at = 0;  // a wait's end (epoch ms)
    // A wait the push notifications announce (a usage limit's reset, a budget; not the time
    // window, a retry's backoff or the delay between iterations).
    bool notable_wait = false;
    // The loop's finished iterations, counted in the same transaction as the change (an
    // iteration that ends the loop).
    std::optional<std::int64_t> iterations = {};
};

struct runner_context {
    net::io_context& io;
    net::thread_pool& blocking;  // work that blocks (git snapshots), off the io thread
    store& db;
    const wall_clock& clock;  // every recorded time and budget decision
    admission& gate;          // may the loop run an agent now
    output_log& output;
    storage_health& health;  // a write the storage refuses: ralphd degraded, the runner leaves
    child_reaper& reaper;
    state_dir state;                     // prompt files, private TMPDIRs, attempts
    std::filesystem::path shim_program;  // ralph-shim, which runs each agent
    // "<a cgroup v2 directory>/ralph-<daemon>-attempt-": each attempt's cgroup is this followed by
    // its id; empty when ralphd cannot create cgroups (the shim ends its own descendants then).
    std::string cgroup_prefix;
    std::chrono::milliseconds kill_grace;         // SIGTERM → SIGKILL
    std::int64_t max_output_bytes;                // an attempt's output bound (0 = none)
    agent_binaries binaries;                      // configured agent programs
    env_policy agent_env;                         // which of ralphd's variables agents get
    std::chrono::milliseconds rate_limit_margin;  // added to a usage limit's stated reset
    std::chrono::milliseconds rate_limit_wait;    // when no reset is stated (doubles, ≤ 1 h)
    // A new loop and every state change, after commit. Takes the id and new state: the loop is
    // read only if someone watches it or it ended (hooks).
    std::function<void(std::int64_t loop_id, proto::loop_state state)> on_state;
    // An attempt or an iteration ended: the loop's counters (attempts, iterations, tokens,
    // cost) changed in the store while its state did not (events.subscribe hears it).
    std::function<void(std::int64_t loop_id)> on_counters;
    // Every state change of a loop: applies the change's event (loop_table::set_state) and commits
    // it with the push notifications it causes (an end state, or a notable wait), then calls
    // on_state. Returns the new state.
    std::function<proto::loop_state(std::int64_t loop_id, const state_change& change)> change_state;
    notifier& notices;  // push notifications that are not a state change (a rejection)
    // What a --sandbox of the loop hides (sandbox::layout::hidden): ralph's own directories and
    // the workspaces of the other loops that have not ended.
    std::function<std::vector<std::filesystem::path>(std::int64_t loop_id)> sandbox_hidden;
    // A usage limit holds an agent (for the daemon's account): recorded in the ledger every loop
    // obeys, and told to the daemon's peers (ralphd --peer).
    std::function<void(const proto::agent_hold& hold)> record_hold;
};

}  // namespace ralph
