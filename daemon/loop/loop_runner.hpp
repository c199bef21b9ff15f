// Runs one loop: iteration after iteration, each iteration one or more attempts (retries), until
// a completion signal (from min_iterations on), max_iterations, a failure past the retries, a
// cancel, or the daemon stopping. One coroutine per running loop, on the daemon's io_context.
//
// An attempt: the prompt is built and written to a file, the agent is spawned in its own process
// group, its stdout/stderr are appended to the output log as they arrive and fed to the
// adapter's parser, and the attempt ends when the process exited and both pipes are closed.
// Whatever the agent left running in its group is ended (SIGTERM, SIGKILL after the grace).
// The adapter's stream parser (common/agent_stream) turns stdout into events, stored as they
// come, and at the end into the attempt's tokens, cost, final answer and failure class, which
// decide what happens next (SPEC §4): success, retry with backoff, stop, or — for a usage limit —
// park the loop in `waiting` until the reset and hold every loop on that agent until then.
#pragma once

#include "common/asio.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/process/sandbox.hpp"
#include "daemon/state_dir.hpp"
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
class child_reaper;
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
    child_reaper& reaper;
    state_dir state;                              // prompt files, private TMPDIRs
    std::chrono::milliseconds kill_grace;         // SIGTERM → SIGKILL
    agent_binaries binaries;                      // configured agent programs
    env_policy agent_env;                         // which of ralphd's variables agents get
    std::chrono::milliseconds rate_limit_margin;  // added to a usage limit's stated reset
    std::chrono::milliseconds rate_limit_wait;    // when no reset is stated (doubles, ≤ 1 h)
    // Every state change, after commit. Takes the id and new state: the loop is read only if
    // someone watches it or it ended (hooks).
    std::function<void(std::int64_t loop_id, proto::loop_state state)> on_state;
    // What a --sandbox of the loop hides (sandbox::layout::hidden): ralph's own directories and
    // the workspaces of the other loops that have not ended.
    std::function<std::vector<std::filesystem::path>(std::int64_t loop_id)> sandbox_hidden;
};

class loop_runner {
  public:
    loop_runner(runner_context& ctx, std::int64_t loop_id);

    std::int64_t loop_id() const { return loop_id_; }
    // Runs the loop until it ends or is stopped; never throws.
    awaitable<void> run();
    // The user cancelled: end the agent; the loop ends as cancelled.
    void cancel();
    // The daemon is stopping: end the agent; the attempt is interrupted and the loop goes back
    // to queued, to continue with its next iteration at the next start.
    void stop();
    // The user paused the loop: like stop, but the loop ends up paused until resumed.
    void pause();

  private:
    struct attempt_outcome {
        proto::termination how = proto::termination::running;
        proto::failure_class failure = proto::failure_class::none;
        bool completion_signal = false;
        std::string completion_rule;  // which rule matched, for the stop reason
        std::string error;
        std::int64_t resets_at_ms = 0;  // a usage limit's stated reset
    };
    enum class stop_kind { none, cancel, shutdown, pause };

    awaitable<void> run_iterations();
    // A --worktree loop: creates its worktree (off the io thread) unless it exists. False when
    // the loop ended instead (it could not be created, or a cancel or stop came meanwhile).
    awaitable<bool> make_worktree();
    awaitable<attempt_outcome> run_attempt(const proto::loop_info& loop, std::int64_t iteration,
                                           std::int64_t attempt_number);
    awaitable<void> read_stream(net::posix::stream_descriptor& pipe, std::int64_t attempt_id,
                                output_stream stream, agent_stream::parser& parser,
                                int& open_readers, net::steady_timer& readers_done);
    // What an attempt that exited leaves for the next ones: notes appended to .ralph/notes.md,
    // its feedback; then what it did to the workspace (snapshot after, stats, progress, the
    // --commit) and which completion rule matched, checked by --verify.
    awaitable<void> judge(const proto::loop_info& loop, const std::string& final_answer,
                          const workspace_snapshot& before, proto::attempt_info& attempt,
                          attempt_outcome& outcome);
    // The completion rule the final answer (and the specs file) meets, or "".
    std::string completion_rule(const proto::submit_params& spec,
                                const std::string& final_answer) const;
    // Runs --verify in the workspace; true when it exits 0. Its status and output go to attempt.
    awaitable<bool> verify(const proto::loop_info& loop, proto::attempt_info& attempt);
    // Writes .ralph/loop.md for the iteration and returns the previous feedback for its prompt.
    std::string write_state_file(const proto::loop_info& loop, std::int64_t iteration);
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
    // Sets how the ended attempt terminated and its failure class, from the exit status, a
    // timeout or stop, and what the agent said.
    void classify(proto::attempt_info& attempt, int status,
                  const agent_stream::summary& said) const;
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
    // Applies `event` to the loop's state (proto/state_machine) and tells ctx_.on_state.
    void set_state(proto::loop_event event, const std::string& reason, std::int64_t resume_at = 0);
    // If a cancel or a daemon stop came, records the loop's resulting state and returns true.
    bool finish_if_stopped();
    // SIGTERM to the agent's group now, SIGKILL after the grace if anything is left.
    void terminate_agent();
    // Ends the agent as hung when it has been silent for `limit` while no tool call of its
    // awaits a result; checks a few times per limit until the attempt ends.
    void watch_inactivity(std::chrono::milliseconds limit);

    runner_context& ctx_;
    std::int64_t loop_id_;
    stop_kind stop_ = stop_kind::none;
    pid_t agent_pgid_ = 0;  // the running attempt's process group, 0 between attempts
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
    net::steady_timer kill_timer_;            // SIGKILL after the grace
    // The last successful attempt's "after" snapshot and when it was taken (see run_attempt).
    std::shared_ptr<workspace_snapshot> fresh_snapshot_;
    std::chrono::steady_clock::time_point fresh_snapshot_at_;
    // The read buffers of the agent's stdout and stderr pipes, allocated at the first attempt and
    // kept: a buffer of this size is an mmap, and its munmap after every attempt stopped the
    // other threads' CPUs to flush their TLBs.
    std::unique_ptr<char[]> read_buffers_[2];
};

}  // namespace ralph
