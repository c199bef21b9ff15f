#include "daemon/runner/loop_runner.hpp"

#include "common/text.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/runner/child_reaper.hpp"
#include "daemon/runner/completion.hpp"
#include "daemon/runner/process.hpp"
#include "daemon/runner/prompt.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace ralph {
namespace {

constexpr std::size_t read_buffer_bytes = 256 << 10;
constexpr double max_backoff_seconds = 600;

std::string describe_failure(proto::termination how, const std::string& error) {
    if (!error.empty()) return error;
    return std::string(proto::to_string(how));
}

void write_file(const std::filesystem::path& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush())
        throw std::runtime_error("cannot write prompt file " + path.string());
}

}  // namespace

loop_runner::loop_runner(runner_context& ctx, std::int64_t loop_id)
    : ctx_(ctx), loop_id_(loop_id), wait_timer_(ctx.io), kill_timer_(ctx.io) {}

void loop_runner::cancel() {
    stop_ = stop_kind::cancel;
    terminate_agent();
    wait_timer_.cancel();
}

void loop_runner::stop() {
    if (stop_ == stop_kind::none) stop_ = stop_kind::shutdown;
    terminate_agent();
    wait_timer_.cancel();
}

void loop_runner::terminate_agent() {
    if (agent_pgid_ == 0) return;
    signal_group(agent_pgid_, SIGTERM);
    pid_t pgid = agent_pgid_;
    kill_timer_.expires_after(ctx_.kill_grace);
    kill_timer_.async_wait([pgid](boost::system::error_code ec) {
        if (!ec && group_alive(pgid)) signal_group(pgid, SIGKILL);
    });
}

void loop_runner::set_state(proto::loop_state state, const std::string& reason,
                            std::int64_t resume_at) {
    ctx_.db.set_state(loop_id_, state, reason, resume_at, text::now_ms());
    ctx_.on_state(ctx_.db.get_loop(loop_id_));
}

awaitable<void> loop_runner::run() {
    try {
        co_await run_iterations();
    } catch (const std::exception& e) {
        spdlog::error("loop {}: {}", loop_id_, e.what());
        try {
            set_state(proto::loop_state::failed, std::string("internal error: ") + e.what());
        } catch (const std::exception& again) {
            spdlog::error("loop {}: cannot record the failure: {}", loop_id_, again.what());
        }
    }
    ctx_.output.close(loop_id_);
}

awaitable<void> loop_runner::run_iterations() {
    set_state(proto::loop_state::running, "");
    while (true) {
        proto::loop_info loop = ctx_.db.get_loop(loop_id_);
        const auto& spec = loop.spec;
        if (spec.max_iterations > 0 && loop.iterations >= spec.max_iterations) {
            set_state(proto::loop_state::exhausted,
                      fmt::format("reached max iterations ({})", spec.max_iterations));
            co_return;
        }
        const std::int64_t iteration = loop.iterations + 1;
        std::int64_t failures = 0;
        std::int64_t attempt_number = 0;
        attempt_outcome outcome;
        while (true) {
            outcome = co_await run_attempt(loop, iteration, ++attempt_number);
            if (stop_ == stop_kind::shutdown) {
                // The interrupted iteration counts as spent (the agent may have done work);
                // the loop continues with the next one at the next start.
                ctx_.db.set_iterations(loop_id_, iteration, text::now_ms());
            }
            if (finish_if_stopped()) co_return;
            if (outcome.how == proto::termination::exited) break;
            if (outcome.how == proto::termination::spawn_failed) {
                set_state(proto::loop_state::failed, outcome.error);
                co_return;
            }
            ++failures;
            if (failures > spec.max_retries) {
                set_state(proto::loop_state::failed,
                          fmt::format("iteration {} failed {} time(s), last: {}", iteration, failures,
                                      describe_failure(outcome.how, outcome.error)));
                co_return;
            }
            double backoff = std::min(max_backoff_seconds,
                                      spec.retry_backoff_s * std::pow(2.0, double(failures - 1)));
            co_await wait(backoff, fmt::format("retry {} of {} after {}", failures, spec.max_retries,
                                               describe_failure(outcome.how, outcome.error)));
            if (finish_if_stopped()) co_return;
        }
        ctx_.db.set_iterations(loop_id_, iteration, text::now_ms());
        if (outcome.completion_signal && iteration >= spec.min_iterations) {
            set_state(proto::loop_state::completed,
                      fmt::format("completion signal <promise>{}</promise> in iteration {}",
                                  spec.completion_phrase, iteration));
            co_return;
        }
        if (spec.max_iterations > 0 && iteration >= spec.max_iterations) {
            set_state(proto::loop_state::exhausted,
                      fmt::format("reached max iterations ({})", spec.max_iterations));
            co_return;
        }
        if (spec.delay_s > 0) co_await wait(spec.delay_s, "delay between iterations");
        if (finish_if_stopped()) co_return;
    }
}

bool loop_runner::finish_if_stopped() {
    switch (stop_) {
        case stop_kind::none:
            return false;
        case stop_kind::cancel:
            set_state(proto::loop_state::cancelled, "cancelled by the user");
            return true;
        case stop_kind::shutdown:
            set_state(proto::loop_state::queued, "daemon stopped; continues at the next start");
            return true;
    }
    return false;
}

awaitable<void> loop_runner::wait(double seconds, const std::string& reason) {
    if (stop_ != stop_kind::none) co_return;
    auto duration = std::chrono::milliseconds(std::int64_t(seconds * 1000));
    set_state(proto::loop_state::waiting, reason, text::now_ms() + duration.count());
    wait_timer_.expires_after(duration);
    boost::system::error_code ec;
    co_await wait_timer_.async_wait(net::redirect_error(use_awaitable, ec));
    if (stop_ == stop_kind::none) set_state(proto::loop_state::running, "");
}

awaitable<loop_runner::attempt_outcome> loop_runner::run_attempt(const proto::loop_info& loop,
                                                                  std::int64_t iteration,
                                                                  std::int64_t attempt_number) {
    const agent& adapter = find_agent(loop.spec.agent);
    std::vector<std::pair<std::string, std::string>> overrides(loop.spec.env.begin(),
                                                               loop.spec.env.end());
    overrides.emplace_back("RALPH_LOOP_ID", std::to_string(loop_id_));
    overrides.emplace_back("RALPH_ITERATION", std::to_string(iteration));
    std::vector<std::string> env = environment_with(overrides);
    std::string search_path = search_path_of(env);

    proto::attempt_info attempt;
    attempt.loop_id = loop_id_;
    attempt.iteration = iteration;
    attempt.attempt = attempt_number;
    attempt.started_at = text::now_ms();
    attempt.output_start = ctx_.output.written_end(loop_id_);

    attempt_outcome outcome;
    spawned_process process;
    try {
        std::string prompt = build_prompt(loop, iteration);
        auto prompt_file = ctx_.prompt_dir / (std::to_string(loop_id_) + ".prompt.md");
        write_file(prompt_file, prompt);
        invocation inv = adapter.invoke({loop.spec, prompt, prompt_file.string(), search_path});
        attempt.argv = inv.argv;
        attempt.id = ctx_.db.begin_attempt(attempt);
        process = spawn_process({inv.argv, env, loop.spec.workspace,
                                 inv.prompt_on_stdin ? prompt_file.string() : std::string()});
    } catch (const std::exception& e) {
        if (attempt.id == 0) attempt.id = ctx_.db.begin_attempt(attempt);
        attempt.how = proto::termination::spawn_failed;
        attempt.error = e.what();
        attempt.ended_at = text::now_ms();
        attempt.output_end = attempt.output_start;
        ctx_.db.finish_attempt(attempt);
        spdlog::warn("loop {}: {}", loop_id_, attempt.error);
        outcome.how = attempt.how;
        outcome.error = attempt.error;
        co_return outcome;
    }

    ctx_.reaper.watch(process.pid);
    ctx_.db.set_attempt_process(attempt.id, process.pid, process.start_time);
    agent_pgid_ = process.pid;
    timed_out_ = false;
    spdlog::info("loop {}: iteration {} attempt {} started (pid {})", loop_id_, iteration,
                 attempt_number, process.pid);
    // A cancel or stop that came while we were starting applies to this process too.
    if (stop_ != stop_kind::none) terminate_agent();

    net::steady_timer timeout(ctx_.io);
    timeout.expires_after(std::chrono::milliseconds(std::int64_t(loop.spec.timeout_s * 1000)));
    timeout.async_wait([this](boost::system::error_code ec) {
        if (ec || agent_pgid_ == 0) return;
        spdlog::info("loop {}: attempt timed out", loop_id_);
        timed_out_ = true;
        terminate_agent();
    });

    std::unique_ptr<output_parser> parser = adapter.make_parser();
    net::posix::stream_descriptor out_pipe(ctx_.io, process.stdout_fd);
    net::posix::stream_descriptor err_pipe(ctx_.io, process.stderr_fd);
    int open_readers = 2;
    net::steady_timer readers_done(ctx_.io, net::steady_timer::time_point::max());
    net::co_spawn(ctx_.io,
                  read_stream(out_pipe, attempt.id, output_stream::stdout_stream, *parser,
                              open_readers, readers_done),
                  net::detached);
    net::co_spawn(ctx_.io,
                  read_stream(err_pipe, attempt.id, output_stream::stderr_stream, *parser,
                              open_readers, readers_done),
                  net::detached);

    int status = co_await ctx_.reaper.wait_exit(process.pid);
    // The agent is done; anything it left running in its group is ended now, so the pipes close.
    if (group_alive(process.pid)) terminate_agent();
    if (open_readers > 0) {
        // A process that left the group (setsid) could hold the pipes open forever: give up on
        // them after the kill grace twice over.
        net::steady_timer give_up(ctx_.io);
        give_up.expires_after(2 * ctx_.kill_grace + std::chrono::seconds(1));
        give_up.async_wait([&](boost::system::error_code ec) {
            if (ec) return;
            spdlog::warn("loop {}: agent output still open after the agent exited; closing it", loop_id_);
            boost::system::error_code ignored;
            out_pipe.close(ignored);
            err_pipe.close(ignored);
        });
        while (open_readers > 0) {
            boost::system::error_code ec;
            co_await readers_done.async_wait(net::redirect_error(use_awaitable, ec));
        }
        give_up.cancel();
    }
    timeout.cancel();
    agent_pgid_ = 0;

    if (stop_ == stop_kind::cancel) attempt.how = proto::termination::cancelled;
    else if (stop_ == stop_kind::shutdown) attempt.how = proto::termination::interrupted;
    else if (timed_out_) attempt.how = proto::termination::timeout;
    else if (WIFEXITED(status)) attempt.how = WEXITSTATUS(status) == 0 ? proto::termination::exited
                                                                        : proto::termination::failed;
    else attempt.how = proto::termination::crashed;
    if (WIFEXITED(status)) attempt.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) attempt.signal = WTERMSIG(status);
    if (attempt.how == proto::termination::timeout)
        attempt.error = fmt::format("timed out after {}s", loop.spec.timeout_s);
    attempt.completion_signal = attempt.how == proto::termination::exited &&
                                contains_promise(parser->final_answer(), loop.spec.completion_phrase);
    ctx_.output.flush();
    attempt.output_end = ctx_.output.committed_end(loop_id_);
    attempt.ended_at = text::now_ms();
    ctx_.db.finish_attempt(attempt);
    spdlog::info("loop {}: iteration {} attempt {} ended: {}{}", loop_id_, iteration, attempt_number,
                 proto::to_string(attempt.how), attempt.completion_signal ? " (completion signal)" : "");
    outcome.how = attempt.how;
    outcome.completion_signal = attempt.completion_signal;
    outcome.error = attempt.error;
    co_return outcome;
}

awaitable<void> loop_runner::read_stream(net::posix::stream_descriptor& pipe,
                                         std::int64_t attempt_id, output_stream stream,
                                         output_parser& parser, int& open_readers,
                                         net::steady_timer& readers_done) {
    std::vector<char> buffer(read_buffer_bytes);
    while (true) {
        boost::system::error_code ec;
        std::size_t n = co_await pipe.async_read_some(net::buffer(buffer),
                                                      net::redirect_error(use_awaitable, ec));
        if (n > 0) {
            std::string_view bytes(buffer.data(), n);
            try {
                ctx_.output.append(loop_id_, attempt_id, stream, bytes);
            } catch (const std::exception& e) {
                // Output that cannot be persisted must not be produced: end the attempt.
                spdlog::error("loop {}: {}; ending the agent", loop_id_, e.what());
                terminate_agent();
                break;
            }
            parser.feed(stream, bytes);
        }
        if (ec) break;
    }
    if (--open_readers == 0) readers_done.cancel();
}

}  // namespace ralph
