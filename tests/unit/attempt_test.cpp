// An attempt's steps without a daemon: its agent supervised through a real ralph-shim
// (process/attempt_process: start, follow the journal, adopt, end) and its classification
// (loop/classify).
#include "common/asio.hpp"
#include "daemon/loop/classify.hpp"
#include "daemon/process/attempt_process.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using ralph::attempt_process;
using ralph::net::io_context;
namespace shim = ralph::shim;

namespace {

// What an attempt's output came to: the bytes of each stream, in the order they came.
struct followed {
    std::string out, err, all;
    std::optional<shim::exit_info> exit;
};

followed follow(io_context& io, attempt_process& process) {
    followed result;
    ralph::net::co_spawn(
        io,
        [&]() -> ralph::awaitable<void> {
            while (true) {
                const auto chunks = co_await process.next();
                if (chunks.empty()) break;
                for (const auto& chunk : chunks) {
                    (chunk.stream == shim::stream::stdout_stream ? result.out : result.err) +=
                        chunk.bytes;
                    result.all += chunk.bytes;
                }
            }
            result.exit = process.exit();
        },
        ralph::net::detached);
    io.run();
    io.restart();
    return result;
}

shim::spec shell(const ralph::test::temp_dir& tmp, const std::string& script) {
    shim::spec spec;
    spec.program = "/bin/sh";
    spec.argv = {"sh", "-c", script};
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.cwd = tmp.path.string();
    spec.output_file = (tmp.path / "output.log").string();
    spec.kill_grace_ms = 300;
    return spec;
}

fs::path attempt_dir(const ralph::test::temp_dir& tmp) {
    const fs::path dir = tmp.path / "attempt";
    fs::create_directories(dir);
    return dir;
}

bool alive(pid_t pid) {
    const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
    if (!fs::exists(stat)) return false;
    const std::string text = ralph::test::read_file(stat);
    return text.substr(text.rfind(')') + 2, 1) != "Z";
}

}  // namespace

TEST_CASE(
    "attempt: the shim writes the agent's output after the given offset and its exit status") {
    ralph::test::temp_dir tmp;
    const fs::path dir = attempt_dir(tmp);
    ralph::test::write_file(tmp.path / "output.log", "earlier attempts|junk past the end");
    shim::spec spec = shell(tmp, "printf out1; printf err1 >&2; printf out2; exit 3");
    spec.output_start = 16;
    const shim::started started = attempt_process::start(RALPH_SHIM, dir, spec);
    CHECK(started.agent_pid > 0);
    CHECK(started.shim_pid > 0);
    CHECK(attempt_process::find(dir).has_value());

    io_context io;
    attempt_process process(io, dir, spec.output_file, started);
    const followed got = follow(io, process);
    CHECK(got.out == "out1out2");
    CHECK(got.err == "err1");
    REQUIRE(got.exit.has_value());
    CHECK(WIFEXITED(got.exit->wait_status));
    CHECK(WEXITSTATUS(got.exit->wait_status) == 3);
    CHECK(got.exit->lost_bytes == 0);
    CHECK(got.exit->output_end == 16 + 12);
    // What was past the start is nobody's: cut, then the agent's bytes, in the order written.
    CHECK(ralph::test::read_file(spec.output_file) == "earlier attempts" + got.all);
}

TEST_CASE("attempt: an agent that cannot be started is refused with the reason, nothing runs") {
    ralph::test::temp_dir tmp;
    shim::spec spec = shell(tmp, "true");
    spec.program = (tmp.path / "no-such-agent").string();
    spec.argv = {"no-such-agent"};
    CHECK_THROWS_WITH_AS(attempt_process::start(RALPH_SHIM, attempt_dir(tmp), spec),
                         doctest::Contains("cannot run no-such-agent in"), std::runtime_error);
    spec = shell(tmp, "true");
    spec.cwd = (tmp.path / "gone").string();
    CHECK_THROWS_WITH_AS(attempt_process::start(RALPH_SHIM, attempt_dir(tmp), spec),
                         doctest::Contains("No such file or directory"), std::runtime_error);
}

TEST_CASE("attempt: another follower adopts a running attempt from its journal, none is lost") {
    ralph::test::temp_dir tmp;
    const fs::path dir = attempt_dir(tmp);
    const shim::spec spec = shell(tmp,
                                  "i=0; while [ $i -lt 40 ]; do echo line $i; i=$((i+1)); "
                                  "sleep 0.01; done");
    const shim::started started = attempt_process::start(RALPH_SHIM, dir, spec);
    {
        // A first ralphd follows for a while, then goes away.
        io_context io;
        attempt_process first(io, dir, spec.output_file, started);
        ralph::net::co_spawn(
            io, [&]() -> ralph::awaitable<void> { co_await first.next(); }, ralph::net::detached);
        io.run();
    }
    io_context io;
    attempt_process adopted(io, dir, spec.output_file, started);
    const followed got = follow(io, adopted);
    std::string expected;
    for (int i = 0; i < 40; ++i) expected += "line " + std::to_string(i) + "\n";
    CHECK(got.out == expected);
    REQUIRE(got.exit.has_value());
    CHECK(got.exit->wait_status == 0);
}

TEST_CASE("attempt: terminate ends the agent and what it started, also outside its group") {
    ralph::test::temp_dir tmp;
    const fs::path dir = attempt_dir(tmp);
    const shim::spec spec =
        shell(tmp,
              "setsid sh -c 'trap \"\" TERM; echo $$ > escaped.pid; exec sleep 100' & "
              "while [ ! -s escaped.pid ]; do sleep 0.01; done; exec sleep 100");
    const shim::started started = attempt_process::start(RALPH_SHIM, dir, spec);
    while (!fs::exists(tmp.path / "escaped.pid") ||
           ralph::test::read_file(tmp.path / "escaped.pid").empty())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const pid_t escaped = std::stoi(ralph::test::read_file(tmp.path / "escaped.pid"));
    CHECK(alive(escaped));
    io_context io;
    attempt_process process(io, dir, spec.output_file, started);
    process.terminate();
    const followed got = follow(io, process);
    REQUIRE(got.exit.has_value());
    CHECK(WIFSIGNALED(got.exit->wait_status));
    CHECK(WTERMSIG(got.exit->wait_status) == SIGTERM);
    CHECK_FALSE(alive(escaped));
}

TEST_CASE("classify: what ended an attempt and its exit status make its record") {
    ralph::agent_stream::summary quiet;
    const auto classified = [](ralph::attempt_end end, std::optional<int> status,
                               const ralph::agent_stream::summary& said) {
        ralph::proto::attempt_info attempt;
        ralph::classify_attempt(attempt, end, status, said);
        return attempt;
    };
    using ralph::attempt_end;
    using ralph::proto::failure_class;
    using ralph::proto::termination;
    const int exit0 = 0, exit3 = 3 << 8, killed = SIGKILL;

    auto a = classified(attempt_end::by_itself, exit0, quiet);
    CHECK(a.how == termination::exited);
    CHECK(a.exit_code == 0);
    a = classified(attempt_end::by_itself, exit3, quiet);
    CHECK(a.how == termination::failed);
    CHECK(a.failure == failure_class::crash);
    CHECK(a.error == "agent exited with status 3");
    a = classified(attempt_end::by_itself, killed, quiet);
    CHECK(a.how == termination::crashed);
    CHECK(a.signal == SIGKILL);
    CHECK(classified(attempt_end::cancelled, killed, quiet).how == termination::cancelled);
    CHECK(classified(attempt_end::stopped, killed, quiet).how == termination::interrupted);
    a = classified(attempt_end::timed_out, killed, quiet);
    CHECK(a.how == termination::timeout);
    CHECK(a.failure == failure_class::timeout);
    a = classified(attempt_end::by_itself, std::nullopt, quiet);
    CHECK(a.how == termination::interrupted);
    CHECK(a.error.find("ralph-shim") != std::string::npos);

    // A usage limit said in the stream: a failure of that class, also with exit status 0 and no
    // answer; an answer makes a zero exit a success.
    ralph::agent_stream::summary limited;
    limited.failure = ralph::agent_stream::failure_hint::rate_limit;
    limited.error = "usage limit reached";
    a = classified(attempt_end::by_itself, exit0, limited);
    CHECK(a.how == termination::failed);
    CHECK(a.failure == failure_class::rate_limit);
    CHECK(a.error == "usage limit reached");
    limited.has_final_answer = true;
    CHECK(classified(attempt_end::by_itself, exit0, limited).how == termination::exited);
}
