// Runs one loop: one coroutine per running loop, on the daemon's io_context. At each step it
// reads the loop's record and asks the iteration policy (iteration_policy) what comes next —
// the work again, its judge, the end of the iteration, the end of the loop — and does it: an
// attempt (loop/attempt) after asking the admission whether the loop may run an agent now (else
// the loop leaves its runner, parked in `waiting` until it may: a usage limit's reset, a budget,
// the time window), a retry's backoff or the delay between iterations (in `waiting`, keeping its
// slot), the count of an iteration, or the loop's end state (a --merge or --pr loop lands
// first). Every decision comes from the record, so a runner that takes a loop up after a wait,
// a pause or a crash goes on where the last one stopped; a usage limit an attempt met holds its
// agent in the ledger every loop obeys.
//
// A daemon that starts while an attempt of an earlier one still runs (or ended meanwhile) gives
// the loop a runner that adopts it: the attempt is followed and recorded first, then the loop
// goes on.
#pragma once

#include "common/asio.hpp"
#include "common/shim_protocol.hpp"
#include "daemon/loop/iteration_policy.hpp"
#include "daemon/loop/runner_context.hpp"
#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ralph {

class attempt_run;
struct attempt_outcome;
class store;
namespace workspace {
struct snapshot;
}

// What the iteration policy reads of `loop`: its record of the iteration in progress.
loop_record read_loop_record(store& db, const proto::loop_info& loop);

class loop_runner {
  public:
    loop_runner(runner_context& ctx, std::int64_t loop_id);
    ~loop_runner();

    std::int64_t loop_id() const { return loop_id_; }
    // Before run(): the loop's attempt `attempt_id` was started by an earlier ralphd under the
    // shim `started` describes; run() follows it to its end first, without a new start.
    void adopt(std::int64_t attempt_id, const shim::started& started);
    // Runs the loop until it ends or is stopped; never throws.
    awaitable<void> run();
    // The user cancelled: end the agent; the loop ends as cancelled.
    void cancel();
    // The daemon is stopping: end the agent; the attempt is interrupted and the loop goes back
    // to queued, to continue where its record says at the next start.
    void stop();
    // The user paused the loop: like stop, but the loop ends up paused until resumed.
    void pause();
    // ralphd stops and leaves the agent running, for the next ralphd to adopt: the runner starts
    // no other attempt and records nothing of the loop's state from now on.
    void detach();

  private:
    struct adopted_attempt {
        std::int64_t attempt_id = 0;
        shim::started started;
    };

    awaitable<void> run_iterations();
    // A --worktree loop: creates its worktree (off the io thread) unless it exists. False when
    // the loop ended instead (it could not be created, or a cancel or stop came meanwhile).
    awaitable<bool> make_worktree();
    // Runs the attempt `step` asks for (work or judge) unless the admission holds the loop back
    // (then false: the loop left its runner).
    awaitable<bool> run_attempt(const proto::loop_info& loop, const loop_record& record,
                                const next_step& step);
    // The iteration `record` is in is over: counts it and ends the loop or goes on. False when
    // the loop ended.
    awaitable<bool> end_iteration(const proto::loop_info& loop, const loop_record& record,
                                  const next_step& step);
    // Ends the loop completed for `reason`, with its `iterations` counted; a --merge loop's
    // branch is merged first (off the io thread), a --pr loop's pull request opened, and what
    // came of it is recorded and added to the reason.
    awaitable<void> complete(const std::string& reason, std::int64_t iterations);
    // A usage limit ended the attempt: its agent is held in the ledger until the reset.
    void hold_agent(const attempt_outcome& outcome);
    // Unless the admission lets the loop run an agent now, records why and returns true: the
    // loop leaves its runner as `waiting` until a time (window, usage-limit hold, budget; the
    // scheduler brings it back), `queued` (the scheduler is paused) or `exhausted` (its own
    // token or cost cap).
    bool leave_unless_admitted(const proto::loop_info& loop);
    // Sleeps in state `waiting` until epoch ms `until` (or until cancel/stop).
    awaitable<void> wait_until(std::int64_t until, const std::string& reason);
    void set_state(const state_change& change);
    // If a cancel or a daemon stop came, records the loop's resulting state and returns true.
    bool finish_if_stopped();

    runner_context& ctx_;
    std::int64_t loop_id_;
    std::optional<adopted_attempt> adopted_;
    stop_kind stop_ = stop_kind::none;
    std::unique_ptr<attempt_run> attempt_;  // the running attempt, null between attempts
    net::steady_timer wait_timer_;          // delays and backoffs
    // The last successful attempt's "after" snapshot and when it was taken: the next attempt's
    // "before" when it starts at once.
    std::shared_ptr<workspace::snapshot> fresh_snapshot_;
    std::chrono::steady_clock::time_point fresh_snapshot_at_;
};

}  // namespace ralph
