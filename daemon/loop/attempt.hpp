// One attempt of a loop, from its preparation to its record: prepared (attempt_preparation),
// its agent started under its ralph-shim — or an attempt an earlier ralphd started adopted —,
// supervised, and recorded with what the assessment makes of it.
//
// Supervising is the byte pump: the shim writes the agent's output to the loop's file and
// journals it; the attempt follows the journal (process/attempt_process), indexes the bytes
// (store/output_log) and feeds them to the adapter's parser (common/agent_stream), whose events
// are stored as they come; it ends the agent on its timeout, a silence (the inactivity timeout,
// while no tool call awaits its result), or when the runner asks (terminate). Recording
// classifies the end (loop/classify), assesses a work attempt that exited (notes, feedback,
// snapshot after, --commit, completion rule, --verify) or reads a judge's verdict, and stores
// the attempt with its tokens, cost and summary in one transaction.
#pragma once

#include "common/asio.hpp"
#include "common/shim_protocol.hpp"
#include "daemon/loop/attempt_preparation.hpp"
#include "daemon/loop/iteration_policy.hpp"
#include "daemon/loop/runner_context.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/types.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

class attempt_process;
namespace agent_stream {
class parser;
struct event;
}  // namespace agent_stream

// What came of an attempt.
struct attempt_outcome {
    proto::attempt_info record;     // as stored
    std::string quota;              // the usage quota it drew on (proto::quota_of)
    std::int64_t resets_at_ms = 0;  // a usage limit's stated reset
    // The workspace after a successful work attempt, for the next attempt to start from when it
    // starts at once; null when it cannot serve (--commit or --verify may have changed it).
    std::shared_ptr<workspace::snapshot> after;
    // False when ralphd began to leave the agents running before this one started: nothing ran
    // and nothing was recorded.
    bool ran = true;
};

class attempt_run {
  public:
    // `stop` is the runner's: what it was told, read when the attempt starts and ends.
    attempt_run(runner_context& ctx, std::int64_t loop_id, const stop_kind& stop);
    attempt_run(const attempt_run&) = delete;
    attempt_run& operator=(const attempt_run&) = delete;
    ~attempt_run();

    // Prepares, starts, supervises and records a new attempt of `loop` (on the agent it runs on,
    // or as its judge: proto::as_judge with `claim`). `fresh_before`, when not null, is the
    // workspace as the previous attempt left it moments ago: it serves as this one's snapshot
    // before, and is moved from.
    awaitable<attempt_outcome> run(const proto::loop_info& loop, std::int64_t iteration,
                                   std::int64_t attempt_number,
                                   const std::optional<completion_claim>& claim,
                                   workspace::snapshot* fresh_before);
    // Follows the attempt `attempt_id`, which an earlier ralphd started under the shim `started`
    // describes, to its end, and records it. `its_loop` as the loop is.
    awaitable<attempt_outcome> adopt(const proto::loop_info& its_loop, std::int64_t attempt_id,
                                     const shim::started& started);
    // Ends the running agent (through its shim) or --verify check: SIGTERM, SIGKILL after the
    // grace. Nothing between them.
    void terminate();

  private:
    // An attempt whose agent could not be started, recorded as spawn_failed.
    attempt_outcome record_start_failure(proto::attempt_info& attempt, const std::exception& e);
    // Follows the agent until its attempt is over. An `adopted` attempt's first `skip_events`
    // stream events were stored by the ralphd that started it. Returns the agent's wait status;
    // nullopt when its shim ended without one.
    awaitable<std::optional<int>> supervise(const proto::loop_info& loop,
                                            const proto::attempt_info& attempt,
                                            attempt_process& process, agent_stream::parser& parser,
                                            bool adopted, std::int64_t skip_events);
    // Classifies, assesses (with `before`, the snapshot before the agent ran; null when it is
    // not known) or reads the judge's verdict, and stores the attempt that is over.
    awaitable<attempt_outcome> record(const proto::loop_info& loop, proto::attempt_info& attempt,
                                      attempt_process& process, agent_stream::parser& parser,
                                      const workspace::snapshot* before,
                                      const std::optional<int>& status);
    // The assessment of a work attempt that exited, into its record (see assessment.hpp);
    // returns the workspace after it when the next attempt may start from it.
    awaitable<std::shared_ptr<workspace::snapshot>> assess(const proto::loop_info& loop,
                                                           const std::string& final_answer,
                                                           const workspace::snapshot* before,
                                                           proto::attempt_info& attempt);
    // Runs --verify in the workspace (in the attempt's sandbox); true when it exits 0. Its status
    // and output go to `attempt`.
    awaitable<bool> verify(const proto::loop_info& loop, proto::attempt_info& attempt);
    // Ends the agent as hung when it has been silent for `limit` while no tool call of its
    // awaits a result; checks a few times per limit until the attempt ends.
    void watch_inactivity(std::chrono::milliseconds limit);
    // The events as rows of the attempt (and clears them).
    std::vector<proto::event_info> event_rows(std::int64_t attempt_id,
                                              std::vector<agent_stream::event>& events);
    void store_events(std::int64_t attempt_id, std::vector<agent_stream::event>& events);
    // A write ralph refused (a symbolic link in the workspace, common/safe_open): logged now,
    // stored as a "refused" event of the attempt by store_refusals.
    void refused(const std::string& what);
    // After a sandboxed run (the agent's, --verify's): removes what it left for git to follow out
    // of the sandbox's protection (sandbox::remove_git_redirects), each a "refused" event too.
    void remove_git_redirects(const proto::loop_info& loop);
    void store_refusals(std::int64_t attempt_id);
    void remove_tmpdir();

    runner_context& ctx_;
    std::int64_t loop_id_;
    const stop_kind& stop_;
    attempt_setting setting_;           // environment and sandbox, which --verify shares
    attempt_process* agent_ = nullptr;  // while the agent runs
    agent_stream::parser* parser_ = nullptr;
    pid_t helper_pgid_ = 0;  // the running --verify check's process group, or 0
    bool timed_out_ = false;
    bool hung_ = false;  // ended by the inactivity timeout
    std::chrono::steady_clock::time_point last_output_;
    net::steady_timer inactivity_timer_;
    net::steady_timer kill_timer_;       // SIGKILL after the grace, for --verify
    std::vector<std::string> refusals_;  // refused() since the last store_refusals
};

}  // namespace ralph
