// Decides which queued loops run: by priority (high first) then submit order, at most
// max_concurrent at once, never two loops in the same workspace at once, and only when the
// admission (admission.hpp: pause, time window, budgets, usage-limit holds) lets them. A queued
// loop that may not run before some time is parked in `waiting` with resume_at, and parked
// loops go back to the queue when it passes (one timer for the earliest). Owns the running
// loop_runners; schedule() is called whenever something may have freed or queued work.
#pragma once

#include "daemon/loop/loop_runner.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace ralph {

class scheduler {
  public:
    explicit scheduler(runner_context& ctx);

    // Inserts a validated loop as queued; schedules once the caller's reply is out.
    proto::loop_info submit(const proto::submit_params& spec);
    // Cancels a queued, waiting, paused or running loop. Throws rpc_error(invalid_state) for an
    // ended loop. A running loop is returned still running; it becomes cancelled when its agent
    // ended.
    proto::loop_info cancel(std::int64_t loop_id);
    // Pauses a queued, waiting or running loop (a running agent is ended; the iteration counts
    // as spent). Returned still running until its agent ended.
    proto::loop_info pause(std::int64_t loop_id);
    // Puts a paused loop back in the queue.
    proto::loop_info resume(std::int64_t loop_id);
    // Queues a failed, stalled or cancelled loop again (loop.retry): it goes on from where it
    // was, its iterations kept, its earlier attempts behind it (loop_table::set_state). Throws
    // rpc_error(invalid_state), naming what to do instead, for any other loop.
    proto::loop_info retry(std::int64_t loop_id);
    // Raises the loop's max_iterations by `more` (loop.extend): an exhausted loop may run `more`
    // iterations beyond those it ran and is queued again; one that has not ended runs longer.
    // Throws rpc_error(invalid_state) for a loop without an iteration limit or another end state.
    proto::loop_info extend(std::int64_t loop_id, std::int64_t more);
    // Starts queued loops while there is room.
    void schedule();
    // The settings, budgets or clock changed: parked loops are queued again and scheduled
    // afresh (those still held are parked again, with the new time).
    void reconsider();
    // Gives the loop a runner that follows its attempt `attempt_id`, which an earlier ralphd
    // started under the shim `started` describes (loop_runner::adopt), and then goes on.
    void adopt(std::int64_t loop_id, std::int64_t attempt_id, const shim::started& started);
    // Stops every runner (agents ended, loops re-queued) and calls `done` when all have ended.
    void shutdown(std::function<void()> done);
    // ralphd stops and leaves the agents running: no loop is started any more, no runner starts
    // another attempt, nothing running is ended.
    void detach();

    std::size_t running_count() const { return running_.size(); }
    // True while the loop has a runner, which may still be finishing after its end state.
    bool is_running(std::int64_t loop_id) const { return running_.contains(loop_id); }
    // True while a loop with a runner works in `workspace`: a loop submitted there now waits for
    // it to end (one loop per workspace).
    bool workspace_busy(const std::string& workspace) const;

  private:
    struct running_loop {
        std::unique_ptr<loop_runner> runner;
        std::string workspace;
    };
    // schedule()'s work, which writes (parking, starting) and may meet a storage error.
    void schedule_now();
    void start(std::int64_t loop_id, const std::string& workspace);
    void launch(std::unique_ptr<loop_runner> runner, const std::string& workspace);
    void finished(std::int64_t loop_id);
    void set_state(std::int64_t loop_id, proto::loop_event event, const std::string& reason,
                   std::int64_t resume_at, bool notable_wait = false);
    // The loop, or rpc_error(invalid_state) naming the action when it has ended.
    proto::loop_info unended_loop(std::int64_t loop_id, const char* action);
    // An ended loop that may be taken back to the queue by `action` (retry, extend): no runner
    // still finishing it, and not past its own token or cost cap, which would end it at once.
    void check_can_requeue(const proto::loop_info& loop, const char* action);
    // Runs schedule() at epoch ms `when` (0: no parked loop, no timer).
    void wake_at(std::int64_t when);

    runner_context& ctx_;
    std::map<std::int64_t, running_loop> running_;
    bool shutting_down_ = false;
    std::function<void()> on_all_stopped_;
    net::steady_timer wake_timer_;
};

}  // namespace ralph
