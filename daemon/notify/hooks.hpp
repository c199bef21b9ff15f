// The on-done hooks (README, "Hooks and notifications"), in daemon/notify/ with the webhooks: the
// folder holds everything that runs or is sent when a loop ends, what `--on-done` and `--notify`
// ask for. When a loop reaches an end state — completed, exhausted, failed, stalled or cancelled;
// not the re-queue of a daemon stop — its own hook (`submit --on-done`) and the daemon-wide one
// (`ralphd --on-done`) both run, independently and at once, and with `ralphd --notify` a desktop
// notification is sent through notify-send when it is on PATH.
//
// A hook is split into words like the command agent's template and started without a shell
// (a shell is `sh -c '...'`), in the loop's workspace, stdin /dev/null, in its own process
// group, with the loop's outcome in its environment (hook_process_environment). The hooks of
// a --sandbox loop (its own and the daemon's) run in a sandbox like its agent's, but writing
// nothing outside a private /tmp: their program or the files they read may be the agent's work. Its
// first lines of output and its exit status go to the daemon's log. One that runs past the time
// limit is killed with its process group, and so is whatever it leaves running when it exits: no
// orphans. Hooks are supervised on the io thread like agents (child_reaper, asio pipes), never
// waited for, so a failing, hanging or missing hook affects neither the loop, nor other loops,
// nor the daemon. At shutdown the running hooks get a grace to finish, then are killed.
#pragma once

#include "common/asio.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/process/helper_process.hpp"
#include "proto/types.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ralph {

class child_reaper;

struct hook_settings {
    std::string on_done;                              // the daemon-wide hook; "" = none
    bool notify = false;                              // desktop notifications (notify-send)
    std::chrono::milliseconds time_limit{60000};      // per hook, then its group is killed
    std::chrono::milliseconds shutdown_grace{10000};  // what shutdown waits for running hooks
};

// What a hook learns of the ended loop: RALPH_HOOK ("loop" or "daemon": which hook this is),
// RALPH_LOOP_ID, RALPH_LOOP_NAME, RALPH_STATE, RALPH_STOP_REASON, RALPH_ITERATIONS,
// RALPH_WORKSPACE, RALPH_WORKTREE_BRANCH ("" without --worktree), RALPH_AGENT,
// RALPH_INPUT_TOKENS, RALPH_OUTPUT_TOKENS and RALPH_COST_USD ("" when the agent reported none).
std::vector<std::pair<std::string, std::string>> hook_environment(const proto::loop_info& loop,
                                                                  std::string_view hook);

// The whole environment of hook `hook` ("loop", "daemon" or "notify") of `loop`. The loop's own
// hook, and every hook of a --sandbox loop, gets what the loop's agent gets (agent_environment:
// ralphd's variables that `policy` passes, the loop's --env) plus hook_environment: a sandboxed
// agent may have rewritten the program or what it reads, and must not learn ralphd's secrets
// through it. ralphd's own --on-done hook of a loop without --sandbox, the user's program from
// ralphd's configuration, and the desktop notification get ralphd's whole environment plus
// hook_environment (notify-send needs the session's bus, which agents are not given).
std::vector<std::string> hook_process_environment(const proto::loop_info& loop,
                                                  std::string_view hook, const env_policy& policy);

// The argv of hook `command`: its words, split like a command template. A relative program path
// with a slash ("./notify.sh") is relative to `dir`, where the hook runs. Throws
// std::invalid_argument for an unterminated quote or an empty command.
std::vector<std::string> hook_argv(const std::string& command, const std::filesystem::path& dir);

// Where the hooks of `loop` run: its workspace, or the submitted one when that is gone (a
// --worktree loop cancelled before its worktree was made), or "" when neither exists.
std::string hook_directory(const proto::submit_params& spec);

// notify-send on the daemon's PATH, or "" (ralphd --notify).
std::filesystem::path notify_send_program();

class hook_runner {
  public:
    // `agent_env`: the env policy of the agents (ralphd's, kept up to date at SIGHUP), which the
    // hooks that get a loop's environment go through; `sandbox_hidden`: what the sandbox of a
    // --sandbox loop's hooks hides (runner_context).
    // `blocking`: where the hooks' processes are started.
    hook_runner(
        net::io_context& io, net::thread_pool& blocking, child_reaper& reaper,
        hook_settings settings, const env_policy& agent_env,
        std::function<std::vector<std::filesystem::path>(std::int64_t loop_id)> sandbox_hidden);

    // Starts the hooks of a loop that has just reached an end state (after its commit).
    void loop_ended(const proto::loop_info& loop);
    // New settings (SIGHUP) for the hooks started from now on.
    void set_settings(hook_settings settings) { settings_ = std::move(settings); }
    // Gives running hooks the shutdown grace to end, kills what is left, and calls `done` once
    // none runs (at once when none does). No hook starts afterwards.
    void shutdown(std::function<void()> done);

  private:
    struct running_hook {
        running_hook(net::io_context& io, std::string label) : label(std::move(label)), limit(io) {}
        std::string label;    // for the log: "loop 7: submit --on-done hook"
        std::string command;  // for the log: its words
        spawn_request request;
        spawned_process process;  // pid -1 until started
        helper_output output;
        std::chrono::steady_clock::time_point started;
        net::steady_timer limit;  // the time limit
        bool timed_out = false;
    };
    using hook_list = std::list<running_hook>;

    void start(const proto::loop_info& loop, const std::string& label,
               std::vector<std::string> argv, const std::string& dir, std::string_view which);
    awaitable<void> supervise(running_hook& hook);
    void finished(hook_list::iterator hook);
    // Logs what the hook printed: its first lines.
    void log_output(const running_hook& hook) const;

    net::io_context& io_;
    net::thread_pool& blocking_;
    child_reaper& reaper_;
    hook_settings settings_;
    const env_policy& agent_env_;
    std::function<std::vector<std::filesystem::path>(std::int64_t loop_id)> sandbox_hidden_;
    hook_list running_;
    bool shutting_down_ = false;  // waiting for the running hooks to end
    bool stopped_ = false;        // shut down: no hook starts any more
    bool grace_over_ = false;     // shutting down, the grace ended: what is left is killed
    std::function<void()> on_all_ended_;
    net::steady_timer grace_timer_;
};

}  // namespace ralph
