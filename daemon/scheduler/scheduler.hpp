// Decides which queued loops run: FIFO within priority (high first), at most max_concurrent at
// once, and never two loops in the same workspace at once. A queued loop whose agent is held by
// a usage limit (store::agent_hold_of) is parked in `waiting` until the hold ends, and parked
// loops go back to the queue when their resume_at passes (one timer for the earliest). Owns the
// running loop_runners; schedule() is called whenever something may have freed or queued work.
#pragma once

#include "daemon/runner/loop_runner.hpp"
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
    scheduler(runner_context& ctx, std::int64_t max_concurrent);

    // Inserts a validated loop as queued and schedules.
    proto::loop_info submit(const proto::submit_params& spec);
    // Cancels a queued, waiting or running loop. Throws rpc_error(invalid_state) for an ended
    // loop. A running loop is returned still running; it becomes cancelled when its agent ended.
    proto::loop_info cancel(std::int64_t loop_id);
    // Starts queued loops while there is room.
    void schedule();
    // Stops every runner (agents ended, loops re-queued) and calls `done` when all have ended.
    void shutdown(std::function<void()> done);

    std::int64_t max_concurrent() const { return max_concurrent_; }
    std::size_t running_count() const { return running_.size(); }

private:
    struct running_loop {
        std::unique_ptr<loop_runner> runner;
        std::string workspace;
    };
    void start(std::int64_t loop_id, const std::string& workspace);
    void finished(std::int64_t loop_id);
    void set_state(std::int64_t loop_id, proto::loop_state state, const std::string& reason,
                   std::int64_t resume_at);
    // Runs schedule() at epoch ms `when` (0: no parked loop, no timer).
    void wake_at(std::int64_t when);

    runner_context& ctx_;
    std::int64_t max_concurrent_;
    std::map<std::int64_t, running_loop> running_;
    bool shutting_down_ = false;
    std::function<void()> on_all_stopped_;
    net::steady_timer wake_timer_;
};

}  // namespace ralph
