// Runs one loop: iteration after iteration, each iteration one or more attempts (retries), until
// a completion signal (from min_iterations on), max_iterations, a failure past the retries, a
// cancel, or the daemon stopping. One coroutine per running loop, on the daemon's io_context.
//
// An attempt: the prompt is built and written to a file, the agent is spawned in its own process
// group, its stdout/stderr are appended to the output log as they arrive and fed to the
// adapter's parser, and the attempt ends when the process exited and both pipes are closed.
// Whatever the agent left running in its group is ended (SIGTERM, SIGKILL after the grace).
#pragma once

#include "common/asio.hpp"
#include "proto/types.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

namespace ralph {

class store;
class output_log;
class child_reaper;
class output_parser;
enum class output_stream;

// What every loop runner shares, owned by the daemon.
struct runner_context {
    net::io_context& io;
    store& db;
    output_log& output;
    child_reaper& reaper;
    std::filesystem::path prompt_dir;          // where each loop's current prompt file lives
    std::chrono::milliseconds kill_grace;      // SIGTERM → SIGKILL
    std::function<void(const proto::loop_info&)> on_state;  // every state change, after commit
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

private:
    struct attempt_outcome {
        proto::termination how = proto::termination::running;
        bool completion_signal = false;
        std::string error;
    };
    enum class stop_kind { none, cancel, shutdown };

    awaitable<void> run_iterations();
    awaitable<attempt_outcome> run_attempt(const proto::loop_info& loop, std::int64_t iteration,
                                           std::int64_t attempt_number);
    awaitable<void> read_stream(net::posix::stream_descriptor& pipe, std::int64_t attempt_id,
                                output_stream stream, output_parser& parser, int& open_readers,
                                net::steady_timer& readers_done);
    // Sleeps in state `waiting` until now + seconds (or until cancel/stop).
    awaitable<void> wait(double seconds, const std::string& reason);
    void set_state(proto::loop_state state, const std::string& reason, std::int64_t resume_at = 0);
    // If a cancel or a daemon stop came, records the loop's resulting state and returns true.
    bool finish_if_stopped();
    // SIGTERM to the agent's group now, SIGKILL after the grace if anything is left.
    void terminate_agent();

    runner_context& ctx_;
    std::int64_t loop_id_;
    stop_kind stop_ = stop_kind::none;
    pid_t agent_pgid_ = 0;               // the running attempt's process group, 0 between attempts
    bool timed_out_ = false;
    net::steady_timer wait_timer_;       // delays and backoffs
    net::steady_timer kill_timer_;       // SIGKILL after the grace
};

}  // namespace ralph
