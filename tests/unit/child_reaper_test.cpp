// The child reaper with processes started on pool threads while the io thread reaps on SIGCHLD:
// every exit status reaches its waiter, also that of a child that ended before its start
// returned to the pool thread.
#include "daemon/process/child_reaper.hpp"
#include "common/asio.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/helper_process.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace {

using ralph::awaitable;
using ralph::net::io_context;

// Starts `request` on `pool` and awaits its wait status.
awaitable<int> run_on(ralph::net::thread_pool& pool, ralph::child_reaper& reaper,
                      const ralph::spawn_request& request) {
    const ralph::spawned_process process =
        co_await ralph::off_thread(pool, [&] { return reaper.spawn(request); });
    ::close(process.stdout_fd);
    ::close(process.stderr_fd);
    co_return co_await reaper.wait_exit(process.pid);
}

}  // namespace

TEST_CASE("child_reaper: every status of processes started on other threads arrives") {
    io_context io;
    ralph::child_reaper reaper(io);
    ralph::net::thread_pool pool(2);
    constexpr int count = 100;
    std::vector<ralph::spawn_request> requests;
    for (int i = 0; i < count; ++i)
        requests.push_back(
            {{"/bin/sh", "-c", "exit " + std::to_string(i % 7)}, {"PATH=/usr/bin:/bin"}, "/", ""});
    std::vector<int> statuses(count, -1);
    int done = 0;
    for (int i = 0; i < count; ++i)
        ralph::net::co_spawn(io, run_on(pool, reaper, requests[std::size_t(i)]),
                             [&, i](std::exception_ptr error, int status) {
                                 CHECK_FALSE(error);
                                 statuses[std::size_t(i)] = status;
                                 if (++done == count) io.stop();
                             });
    ralph::net::steady_timer limit(io, std::chrono::seconds(30));
    limit.async_wait([&io](boost::system::error_code ec) {
        if (!ec) io.stop();
    });
    io.run();
    REQUIRE(done == count);
    for (int i = 0; i < count; ++i) {
        CAPTURE(i);
        CHECK(WIFEXITED(statuses[std::size_t(i)]));
        CHECK(WEXITSTATUS(statuses[std::size_t(i)]) == i % 7);
    }
}

// run_helper: `request` run to its end on `io`, with `limit`; returns what it gave.
namespace {

struct helper_result {
    ralph::helper_run run;
    ralph::helper_output output;
};

helper_result run_helper_to_end(const ralph::spawn_request& request,
                                std::chrono::milliseconds limit) {
    io_context io;
    ralph::child_reaper reaper(io);
    ralph::net::thread_pool pool(1);
    helper_result result;
    ralph::net::co_spawn(io, ralph::run_helper(io, pool, reaper, request, limit, result.output),
                         [&](std::exception_ptr error, ralph::helper_run run) {
                             CHECK_FALSE(error);
                             result.run = run;
                             io.stop();
                         });
    io.run();
    return result;
}

}  // namespace

TEST_CASE("child_reaper: run_helper ends a helper that outlives its limit, group and all") {
    const auto started = std::chrono::steady_clock::now();
    // The child keeps the pipes open too: the whole group goes.
    const helper_result hung = run_helper_to_end(
        {{"/bin/sh", "-c", "echo started; sleep 60 & sleep 60"}, {"PATH=/usr/bin:/bin"}, "/", ""},
        std::chrono::milliseconds(300));
    CHECK(hung.run.timed_out);
    CHECK(WIFSIGNALED(hung.run.status));
    CHECK(hung.output.out == "started\n");
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));

    const helper_result quick = run_helper_to_end(
        {{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {"PATH=/usr/bin:/bin"}, "/", ""},
        std::chrono::seconds(30));
    CHECK_FALSE(quick.run.timed_out);
    CHECK(WEXITSTATUS(quick.run.status) == 3);
    CHECK((quick.output.out == "out\n" && quick.output.err == "err\n"));

    const helper_result missing = run_helper_to_end(
        {{"no-such-program-here"}, {"PATH=/nonexistent"}, "/", ""}, std::chrono::seconds(30));
    CHECK(missing.run.status == -1);
    CHECK_FALSE(missing.output.err.empty());
}
