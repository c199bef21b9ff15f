// Runs one loop: iteration after iteration, each iteration one or more attempts (retries), until
// a completion signal (from min_iterations on), max_iterations, a failure past the retries, a
// cancel, or the daemon stopping. One coroutine per running loop, on the daemon's io_context.
//
// An attempt goes in three steps:
// - prepare: the workspace snapshot, the state file, the prompt (written to a file), the agent's
//   argv (wrapped in the sandbox) and its explicit environment: a shim::spec;
// - supervise: the agent runs under its ralph-shim (process/attempt_process), which writes its
//   output to the loop's file and outlives ralphd; the runner follows the shim's journal, indexes
//   the bytes (output_log) and feeds them to the adapter's parser (common/agent_stream), whose
//   events are stored as they come, and ends the agent on a timeout, a silence, a cancel or a stop;
// - record: the exit status and what the stream said make the attempt's termination and failure
//   class; a successful one is assessed (notes, feedback, snapshot after, --commit, completion
//   rule, --verify); the attempt is stored with its tokens, cost and summary.
// With submit --judge, an iteration whose work meets a completion rule goes on with attempts of
// kind `judge`: the judge agent gets the claim (the task, the worker's answer, the diff since the
// loop's first iteration, --verify's output) and runs where it cannot change the workspace — under
// bubblewrap with the workspace read-only, or without bwrap in a throw-away checkout of it — and
// its <ralph_verdict> decides: ACCEPT completes the loop, REJECT sends its reasons to the next
// iteration's prompt (stalled after judge_max_rejections), no verdict is a failed attempt.
// The outcome decides what happens next (SPEC §4): success, retry with backoff, stop, or — for a
// usage limit — park the loop in `waiting` until the reset and hold every loop on that agent.
//
// A daemon that starts while an attempt of an earlier one still runs (or ended meanwhile) gives
// the loop a runner that adopts it: supervise and record from where the shim is, then go on.
#pragma once

#include "common/asio.hpp"
#include "common/shim_protocol.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/loop/loop_memory.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/process/sandbox.hpp"
#include "daemon/state_dir.hpp"
#include "proto/daemon_api.hpp"
#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

namespace ralph {

class store;
class admission;
class wall_clock;
class output_log;
class storage_health;
class notifier;
class child_reaper;
class attempt_process;
enum class output_stream;
namespace agent_stream {
class parser;
struct summary;
struct event;
}  // namespace agent_stream
namespace workspace {
struct snapshot;
}
using workspace_snapshot = workspace::snapshot;

// What every loop runner shares, owned by the daemon.
struct runner_context {
    net::io_context& io;
    net::thread_pool& blocking;  // work that blocks (git snapshots), off the io thread
    store& db;
    const wall_clock& clock;  // every recorded time and budget decision
    admission& gate;          // may the loop run an agent now (SPEC §5)
    output_log& output;
    storage_health& health;  // a write the storage refuses: ralphd degraded, the runner leaves
    child_reaper& reaper;
    state_dir state;                     // prompt files, private TMPDIRs, attempts
    std::filesystem::path shim_program;  // ralph-shim, which runs each agent
    // "<a cgroup v2 directory>/ralph-<daemon>-attempt-": each attempt's cgroup is this followed by
    // its id; empty when ralphd cannot create cgroups (the shim ends its own descendants then).
    std::string cgroup_prefix;
    std::chrono::milliseconds kill_grace;         // SIGTERM → SIGKILL
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
    // Every state change of a loop: applies `event` (store::set_state) and commits it with the
    // push notifications it causes (notify/notification: an end state, or a wait when
    // `notable_wait`, for a usage limit or a budget), then calls on_state. Returns the new state.
    std::function<proto::loop_state(std::int64_t loop_id, proto::loop_event event,
                                    const std::string& reason, std::int64_t resume_at,
                                    bool notable_wait)>
        change_state;
    notifier& notices;  // push notifications that are not a state change (a rejection)
    // What a --sandbox of the loop hides (sandbox::layout::hidden): ralph's own directories and
    // the workspaces of the other loops that have not ended.
    std::function<std::vector<std::filesystem::path>(std::int64_t loop_id)> sandbox_hidden;
    // A usage limit holds an agent (for the daemon's account): recorded in the ledger every loop
    // obeys, and told to the daemon's peers (ralphd --peer).
    std::function<void(const proto::agent_hold& hold)> record_hold;
};

class loop_runner {
  public:
    loop_runner(runner_context& ctx, std::int64_t loop_id);

    std::int64_t loop_id() const { return loop_id_; }
    // Before run(): the loop's attempt `attempt_id` was started by an earlier ralphd under the
    // shim `started` describes; run() follows it to its end first, without a new start.
    void adopt(std::int64_t attempt_id, const shim::started& started);
    // Runs the loop until it ends or is stopped; never throws.
    awaitable<void> run();
    // The user cancelled: end the agent; the loop ends as cancelled.
    void cancel();
    // The daemon is stopping: end the agent; the attempt is interrupted and the loop goes back
    // to queued, to continue with its next iteration at the next start.
    void stop();
    // The user paused the loop: like stop, but the loop ends up paused until resumed.
    void pause();
    // ralphd stops and leaves the agent running, for the next ralphd to adopt: the runner starts
    // no other attempt and records nothing of the loop's state from now on.
    void detach();

  private:
    struct attempt_outcome {
        std::int64_t attempt_id = 0;
        proto::attempt_kind kind = proto::attempt_kind::work;
        std::string agent;  // the agent it ran on
        proto::termination how = proto::termination::running;
        proto::failure_class failure = proto::failure_class::none;
        bool completion_signal = false;
        std::string completion_rule;  // which rule matched, for the stop reason
        std::string error;
        std::int64_t resets_at_ms = 0;  // a usage limit's stated reset
        std::string final_answer;       // a work attempt's, for its judge
        std::string verdict;            // a judge's: "accept", "reject" or ""
        std::string verdict_reasons;
    };
    // What a judge attempt checks: the claim of completion of the iteration's work.
    struct completion_claim {
        std::int64_t attempt_id = 0;  // the work attempt that made it
        std::string rule;             // the completion rule it met
        std::string final_answer;
    };
    enum class stop_kind { none, cancel, shutdown, pause, detach };
    // What prepare gives: how to start the agent, and what the attempt needs after.
    struct attempt_plan {
        std::string prompt;
        shim::spec agent;
        std::filesystem::path tmpdir;  // the attempt's private TMPDIR, removed at its end
    };
    // What preparing an attempt needs of the database and of the settings SIGHUP changes: read
    // on the io thread, as the preparation runs on the pool.
    struct attempt_inputs {
        std::optional<proto::agent_feedback> previous_feedback;  // the previous iteration's
        std::vector<std::string> steering;
        std::int64_t loop_started_at = 0;
        std::string program;  // the agent's program, as find_program finds it
        std::chrono::milliseconds kill_grace{0};
        std::string judge_reasons;  // why the judge rejected the previous iteration's claim
        // A judge's: the claim, the loop's base, the claiming attempt's --verify.
        const completion_claim* claim = nullptr;
        std::string base_head;
        std::string base_tree;
        std::optional<int> verify_exit;
        std::string verify_output;
    };
    struct adopted_attempt {
        std::int64_t attempt_id = 0;
        shim::started started;
    };

    awaitable<void> run_iterations();
    // A --worktree loop: creates its worktree (off the io thread) unless it exists. False when
    // the loop ended instead (it could not be created, or a cancel or stop came meanwhile).
    awaitable<bool> make_worktree();
    // Ends the loop completed for `reason`; a --merge loop's branch is merged first (off the io
    // thread), a --pr loop's pull request opened, and what came of it is recorded and added to
    // the reason.
    awaitable<void> complete(const std::string& reason);
    // Prepares, starts, supervises and records one attempt: of the loop's work, or with `claim`
    // the judge's (`loop` is then as the judge sees it, proto::as_judge).
    awaitable<attempt_outcome> run_attempt(const proto::loop_info& loop, std::int64_t iteration,
                                           std::int64_t attempt_number,
                                           const completion_claim* claim);
    // Supervises and records the adopted attempt.
    awaitable<attempt_outcome> resume_attempt(const proto::loop_info& loop);
    // The agent's environment and, for a --sandbox loop, the sandbox's view (bwrap_,
    // sandbox_view_: git paths looked up off the io thread), shared by prepare and adoption.
    // A judge's view: the workspace read-only where bwrap is found, else no sandbox (the judge
    // runs in a throw-away checkout).
    awaitable<std::vector<std::string>> agent_env_and_sandbox(const proto::loop_info& loop,
                                                              proto::attempt_kind kind,
                                                              std::int64_t iteration,
                                                              std::int64_t attempt_number,
                                                              std::filesystem::path& tmpdir);
    attempt_inputs read_attempt_inputs(const proto::loop_info& loop, std::int64_t iteration,
                                       const std::vector<std::string>& env,
                                       const completion_claim* claim);
    // Writes the state file and the prompt, builds the agent's invocation: file system work, on
    // the pool thread. A judge's prompt instead, with the diff, and the throw-away checkout it
    // runs in when it is not sandboxed.
    attempt_plan prepare_attempt(const proto::loop_info& loop, const proto::attempt_info& attempt,
                                 const std::vector<std::string>& env,
                                 const std::filesystem::path& tmpdir, const attempt_inputs& inputs);
    // The judge's prompt (pool thread); makes the throw-away checkout unless it is sandboxed.
    std::string prepare_judge(const proto::loop_info& loop, std::int64_t iteration,
                              const attempt_inputs& inputs, bool sandboxed);
    // An attempt whose agent could not be started, recorded as spawn_failed.
    attempt_outcome record_start_failure(proto::attempt_info& attempt, const std::exception& e);
    // Follows the agent until its attempt is over: its output indexed and parsed, the time
    // limits kept. An `adopted` attempt's first `skip_events` stream events were stored by the
    // ralphd that started it. Returns the agent's wait status; nullopt when its shim ended
    // without one.
    awaitable<std::optional<int>> supervise(const proto::loop_info& loop,
                                            const proto::attempt_info& attempt,
                                            attempt_process& process, agent_stream::parser& parser,
                                            bool adopted, std::int64_t skip_events);
    // Classifies, assesses (with `before`, the snapshot taken before the agent ran; null when it
    // is not known) or reads the judge's verdict, and stores the attempt that is over.
    awaitable<attempt_outcome> record(const proto::loop_info& loop, proto::attempt_info& attempt,
                                      attempt_process& process, agent_stream::parser& parser,
                                      const workspace_snapshot* before,
                                      const std::optional<int>& status);
    // What an attempt that exited leaves for the next ones: notes appended to .ralph/notes.md,
    // its feedback; then what it did to the workspace (snapshot after, stats, progress, the
    // --commit) and which completion rule matched, checked by --verify.
    awaitable<void> assess(const proto::loop_info& loop, const std::string& final_answer,
                           const workspace_snapshot* before, proto::attempt_info& attempt,
                           attempt_outcome& outcome);
    // The judge's <ralph_verdict> into `attempt`; none makes it a failed attempt (no_verdict).
    static void read_verdict(const std::string& final_answer, proto::attempt_info& attempt);
    // The completion rule the final answer (and the specs file) meets, or "".
    std::string completion_rule(const proto::submit_params& spec,
                                const std::string& final_answer) const;
    // Runs --verify in the workspace; true when it exits 0. Its status and output go to attempt.
    awaitable<bool> verify(const proto::loop_info& loop, proto::attempt_info& attempt);
    // Writes .ralph/loop.md for the iteration and returns the previous feedback for its prompt.
    std::string write_state_file(const proto::loop_info& loop, std::int64_t iteration,
                                 const attempt_inputs& inputs);
    // The events as rows of the attempt (and clears them).
    std::vector<proto::event_info> event_rows(std::int64_t attempt_id,
                                              std::vector<agent_stream::event>& events);
    // Stores and clears the events.
    void store_events(std::int64_t attempt_id, std::vector<agent_stream::event>& events);
    // A write ralph refused (a symbolic link in the workspace, common/safe_open): logged now,
    // stored as a "refused" event of the attempt by store_refusals.
    void refused(const std::string& what);
    // After a sandboxed run (the agent's, --verify's): removes what it left for git to follow out
    // of the sandbox's protection (sandbox::remove_git_redirects), each a "refused" event too.
    void remove_git_redirects(const proto::loop_info& loop);
    void store_refusals(std::int64_t attempt_id);
    // Unless the admission lets the loop run an agent now, records why and returns true: the
    // loop leaves its runner as `waiting` until a time (window, usage-limit hold, budget; the
    // scheduler brings it back), `queued` (the scheduler is paused) or `exhausted` (its own
    // token or cost cap).
    bool leave_unless_admitted(const proto::loop_info& loop);
    // How long to hold an agent whose usage limit names no reset: doubles with each limited
    // attempt of the iteration.
    std::int64_t rate_limit_backoff_ms(std::int64_t iteration);
    // Sleeps in state `waiting` until now + seconds (or until cancel/stop).
    awaitable<void> wait(double seconds, const std::string& reason);
    // Applies `event` to the loop's state (ctx_.change_state).
    void set_state(proto::loop_event event, const std::string& reason, std::int64_t resume_at = 0,
                   bool notable_wait = false);
    // A push notification: the claim of completion of `iteration` was rejected, `why`.
    void notify_rejection(std::int64_t iteration, const std::string& why);
    // If a cancel or a daemon stop came, records the loop's resulting state and returns true.
    bool finish_if_stopped();
    // Ends the running agent (through its shim) or --verify check: SIGTERM, SIGKILL after the
    // grace.
    void terminate_agent();
    // Ends the agent as hung when it has been silent for `limit` while no tool call of its
    // awaits a result; checks a few times per limit until the attempt ends.
    void watch_inactivity(std::chrono::milliseconds limit);

    runner_context& ctx_;
    std::int64_t loop_id_;
    std::optional<adopted_attempt> adopted_;
    stop_kind stop_ = stop_kind::none;
    attempt_process* agent_ = nullptr;  // the running attempt's agent, null between attempts
    pid_t helper_pgid_ = 0;             // the running --verify check's process group, or 0
    bool timed_out_ = false;
    bool hung_ = false;                       // ended by the inactivity timeout
    agent_stream::parser* parser_ = nullptr;  // the running attempt's, null between attempts
    std::chrono::steady_clock::time_point last_output_;
    net::steady_timer inactivity_timer_;
    std::vector<std::string> refusals_;  // refused() since the last store_refusals
    // A --sandbox loop's: bwrap and what the current attempt's sandbox shows; --verify runs in
    // the same.
    std::string bwrap_;
    sandbox::layout sandbox_view_;
    workspace::git_directories sandbox_git_;  // the workspace's, before the current attempt
    std::string last_failure_;                // class and message of the last failed attempt
    std::int64_t identical_failures_ = 0;     // failed attempts in a row with that same failure
    net::steady_timer wait_timer_;            // delays and backoffs
    net::steady_timer kill_timer_;            // SIGKILL after the grace, for --verify
    // The last successful attempt's "after" snapshot and when it was taken (see run_attempt).
    std::shared_ptr<workspace_snapshot> fresh_snapshot_;
    std::chrono::steady_clock::time_point fresh_snapshot_at_;
};

}  // namespace ralph
