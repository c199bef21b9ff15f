#include "daemon/process/helper_process.hpp"

#include "daemon/off_thread.hpp"
#include "daemon/process/child_reaper.hpp"

#include <signal.h>

#include <array>
#include <chrono>
#include <string_view>

namespace ralph {
namespace {

void keep_bytes(std::string& into, std::string_view bytes, helper_output& output) {
    if (output.keep == helper_output::part::head) {
        std::size_t room = output.limit - std::min(into.size(), output.limit);
        into.append(bytes.substr(0, room));
        if (bytes.size() > room) output.truncated = true;
        return;
    }
    into.append(bytes);
    // Cut in steps, not at every read: each cut moves what is kept.
    if (into.size() > 2 * output.limit) {
        into.erase(0, into.size() - output.limit);
        output.truncated = true;
    }
}

// Reads a pipe to its end into `into`; the last of `open_readers` to end cancels `done`.
awaitable<void> read_pipe(net::posix::stream_descriptor& pipe, std::string& into,
                          helper_output& output, int& open_readers, net::steady_timer& done) {
    std::array<char, 16384> buffer;
    while (true) {
        boost::system::error_code ec;
        std::size_t n = co_await pipe.async_read_some(net::buffer(buffer),
                                                      net::redirect_error(use_awaitable, ec));
        keep_bytes(into, std::string_view(buffer.data(), n), output);
        if (ec) break;
    }
    if (output.keep == helper_output::part::tail && into.size() > output.limit) {
        into.erase(0, into.size() - output.limit);
        output.truncated = true;
    }
    if (--open_readers == 0) done.cancel();
}

}  // namespace

awaitable<int> finish_helper(net::io_context& io, child_reaper& reaper,
                             const spawned_process& process, helper_output& output) {
    net::posix::stream_descriptor out_pipe(io, process.stdout_fd);
    net::posix::stream_descriptor err_pipe(io, process.stderr_fd);
    int open_readers = 2;
    net::steady_timer readers_done(io, net::steady_timer::time_point::max());
    net::co_spawn(io, read_pipe(out_pipe, output.out, output, open_readers, readers_done),
                  net::detached);
    net::co_spawn(io, read_pipe(err_pipe, output.err, output, open_readers, readers_done),
                  net::detached);
    int status = co_await reaper.wait_exit(process.pid);
    // Whatever the helper left running would hold its pipes open.
    if (group_alive(process.pid)) signal_group(process.pid, SIGKILL);
    // The readers cancel the timer when both pipes are closed; if it expires first, a process
    // that left the group holds them: stop reading.
    readers_done.expires_after(std::chrono::seconds(1));
    while (open_readers > 0) {
        boost::system::error_code ec;
        co_await readers_done.async_wait(net::redirect_error(use_awaitable, ec));
        if (!ec) {
            boost::system::error_code ignored;
            out_pipe.close(ignored);
            err_pipe.close(ignored);
            readers_done.expires_at(net::steady_timer::time_point::max());
        }
    }
    co_return status;
}

awaitable<helper_run> run_helper(net::io_context& io, net::thread_pool& blocking,
                                 child_reaper& reaper, const spawn_request& request,
                                 std::chrono::milliseconds limit, helper_output& output) {
    helper_run run;
    spawned_process process;
    try {
        process = co_await off_thread(blocking, [&] { return reaper.spawn(request); });
    } catch (const std::exception& e) {
        output.err = e.what();
        co_return run;
    }
    net::steady_timer timeout(io);
    timeout.expires_after(limit);
    timeout.async_wait([&run, pid = process.pid](boost::system::error_code ec) {
        if (ec) return;
        run.timed_out = true;
        ::killpg(pid, SIGKILL);
    });
    run.status = co_await finish_helper(io, reaper, process, output);
    timeout.cancel();
    co_return run;
}

}  // namespace ralph
