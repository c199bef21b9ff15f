#include "daemon/loop/loop_runner.hpp"

#include "common/agent_stream.hpp"
#include "common/safe_open.hpp"
#include "common/text.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/completion.hpp"
#include "daemon/loop/loop_memory.hpp"
#include "daemon/loop/prompt.hpp"
#include "daemon/process/child_reaper.hpp"
#include "daemon/process/helper_process.hpp"
#include "daemon/process/process.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/store.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/errors.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

namespace ralph {
namespace {

// As large as the agent's stdout pipe (process.cpp): a flooding agent is read in few wake-ups.
constexpr std::size_t read_buffer_bytes = 1 << 20;
constexpr double max_backoff_seconds = 600;
// How old the last attempt's snapshot may be to serve as the next attempt's first one.
constexpr auto fresh_snapshot_age = std::chrono::milliseconds(50);
constexpr std::int64_t max_rate_limit_wait_ms = 3600 * 1000;
// A summary is the first line of the final answer, cut to this many bytes.
constexpr std::size_t max_summary_bytes = 200;

std::string describe_failure(proto::termination how, const std::string& error) {
    if (!error.empty()) return error;
    return std::string(proto::to_string(how));
}

std::string first_line(const std::string& text) {
    std::string line(text::first_line(text));
    if (line.size() > max_summary_bytes) {
        line.resize(
            text::utf8_complete_prefix(std::string_view(line).substr(0, max_summary_bytes)));
        line += "…";
    }
    return line;
}

// Runs blocking `work` on the pool; co_await it to resume on the caller's executor with the
// result (or its exception). `work` must capture by reference only: GCC 12 destroys objects
// created in a co_await full-expression twice (PR 99576), which is harmless only for trivially
// destructible ones. Built from plain handlers rather than co_spawn, whose Boost 1.74 version
// passes the work through such a coroutine lambda.
template <typename Work>
awaitable<std::invoke_result_t<Work>> off_thread(net::thread_pool& pool, Work work) {
    static_assert(std::is_trivially_destructible_v<Work>, "capture by reference only");
    using result_type = std::invoke_result_t<Work>;
    return net::async_initiate<const net::use_awaitable_t<>&,
                               void(std::exception_ptr, result_type)>(
        [&pool](auto handler, Work job) {
            net::post(pool, [handler = std::move(handler), job = std::move(job)]() mutable {
                std::exception_ptr error;
                result_type result{};
                try {
                    result = job();
                } catch (...) {
                    error = std::current_exception();
                }
                auto home = net::get_associated_executor(handler);
                net::post(home, [handler = std::move(handler), error,
                                 result = std::move(result)]() mutable {
                    handler(error, std::move(result));
                });
            });
        },
        use_awaitable, std::move(work));
}

constexpr std::size_t max_verify_output_bytes = 16 << 10;

std::string describe_usage(const agent_stream::event& e) {
    std::string text = fmt::format("{} input, {} output tokens", e.input_tokens, e.output_tokens);
    if (e.cost_usd) text += fmt::format(", ${:.4f}", *e.cost_usd);
    return text;
}

}  // namespace

loop_runner::loop_runner(runner_context& ctx, std::int64_t loop_id)
    : ctx_(ctx),
      loop_id_(loop_id),
      inactivity_timer_(ctx.io),
      wait_timer_(ctx.io),
      kill_timer_(ctx.io) {}

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

void loop_runner::pause() {
    if (stop_ == stop_kind::none) stop_ = stop_kind::pause;
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

void loop_runner::watch_inactivity(std::chrono::milliseconds limit) {
    auto period =
        std::clamp(limit / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(5000));
    inactivity_timer_.expires_after(period);
    inactivity_timer_.async_wait([this, limit](boost::system::error_code ec) {
        if (ec || agent_pgid_ == 0 || parser_ == nullptr) return;
        auto now = std::chrono::steady_clock::now();
        // A tool that runs long (a build, a test suite) keeps the agent quiet legitimately.
        if (parser_->awaiting_tool_result()) last_output_ = now;
        if (now - last_output_ >= limit) {
            spdlog::info("loop {}: agent silent for {} ms; ending it as hung", loop_id_,
                         limit.count());
            hung_ = true;
            terminate_agent();
            return;
        }
        watch_inactivity(limit);
    });
}

void loop_runner::set_state(proto::loop_event event, const std::string& reason,
                            std::int64_t resume_at) {
    const proto::loop_state state =
        ctx_.db.set_state(loop_id_, event, reason, resume_at, ctx_.clock.now_ms());
    ctx_.on_state(loop_id_, state);
}

awaitable<void> loop_runner::run() {
    try {
        co_await run_iterations();
    } catch (const std::exception& e) {
        spdlog::error("loop {}: {}", loop_id_, e.what());
        try {
            set_state(proto::loop_event::fail, std::string("internal error: ") + e.what());
        } catch (const std::exception& again) {
            spdlog::error("loop {}: cannot record the failure: {}", loop_id_, again.what());
        }
    }
    ctx_.output.close(loop_id_);
}

awaitable<void> loop_runner::run_iterations() {
    set_state(proto::loop_event::start, "");
    if (!co_await make_worktree()) co_return;
    while (true) {
        proto::loop_info loop = ctx_.db.get_loop(loop_id_);
        const auto& spec = loop.spec;
        if (spec.max_iterations > 0 && loop.iterations >= spec.max_iterations) {
            set_state(proto::loop_event::exhaust,
                      fmt::format("reached max iterations ({})", spec.max_iterations));
            co_return;
        }
        const std::int64_t iteration = loop.iterations + 1;
        std::int64_t failures = 0;
        attempt_outcome outcome;
        while (true) {
            if (leave_unless_admitted(loop)) co_return;
            outcome = co_await run_attempt(loop, iteration,
                                           ctx_.db.attempts_in_iteration(loop_id_, iteration) + 1);
            if (stop_ == stop_kind::shutdown || stop_ == stop_kind::pause) {
                // The interrupted iteration counts as spent (the agent may have done work);
                // the loop continues with the next one when it runs again.
                ctx_.db.set_iterations(loop_id_, iteration, ctx_.clock.now_ms());
            }
            if (finish_if_stopped()) co_return;
            if (outcome.how == proto::termination::exited) break;
            std::string failure = describe_failure(outcome.how, outcome.error);
            if (outcome.how == proto::termination::spawn_failed ||
                outcome.failure == proto::failure_class::missing_program) {
                set_state(proto::loop_event::fail, failure);
                co_return;
            }
            if (outcome.failure == proto::failure_class::auth) {
                set_state(proto::loop_event::fail,
                          fmt::format("agent {} could not authenticate: {} (log it in or set its "
                                      "API key, then resubmit)",
                                      spec.agent, failure));
                co_return;
            }
            if (outcome.failure == proto::failure_class::rate_limit) {
                // Burns no retry: the loop and every loop on this agent wait for the reset.
                std::int64_t until = outcome.resets_at_ms > 0
                                         ? outcome.resets_at_ms + ctx_.rate_limit_margin.count()
                                         : ctx_.clock.now_ms() + rate_limit_backoff_ms(iteration);
                ctx_.db.hold_agent(
                    spec.agent, until,
                    fmt::format("{} usage limit (loop {}: {})", spec.agent, loop_id_, failure));
                continue;  // leave_unless_admitted parks the loop
            }
            ++failures;
            // The same failure over and over (a broken setup, not bad luck) stops the loop even
            // when retries remain.
            std::string failure_key =
                std::string(proto::to_string(outcome.failure)) + ": " + failure;
            identical_failures_ = failure_key == last_failure_ ? identical_failures_ + 1 : 1;
            last_failure_ = failure_key;
            if (spec.stall_failures > 0 && identical_failures_ >= spec.stall_failures) {
                set_state(proto::loop_event::stall,
                          fmt::format("{} identical failures in a row: {}", identical_failures_,
                                      failure));
                co_return;
            }
            if (failures > spec.max_retries) {
                set_state(proto::loop_event::fail,
                          fmt::format("iteration {} failed {} time(s), last: {}", iteration,
                                      failures, failure));
                co_return;
            }
            double backoff = std::min(max_backoff_seconds,
                                      spec.retry_backoff_s * std::pow(2.0, double(failures - 1)));
            co_await wait(backoff, fmt::format("retry {} of {} after {}", failures,
                                               spec.max_retries, failure));
            if (finish_if_stopped()) co_return;
        }
        identical_failures_ = 0;
        last_failure_.clear();
        ctx_.db.set_iterations(loop_id_, iteration, ctx_.clock.now_ms());
        if (outcome.completion_signal && iteration >= spec.min_iterations) {
            set_state(proto::loop_event::complete,
                      fmt::format("{} in iteration {}", outcome.completion_rule, iteration));
            co_return;
        }
        if (spec.stall_iterations > 0 &&
            ctx_.db.iterations_without_progress(loop_id_) >= spec.stall_iterations) {
            set_state(proto::loop_event::stall,
                      fmt::format("no progress in {} iterations in a row (no commit, no change to "
                                  "the files or the specs)",
                                  spec.stall_iterations));
            co_return;
        }
        if (spec.max_iterations > 0 && iteration >= spec.max_iterations) {
            set_state(proto::loop_event::exhaust,
                      fmt::format("reached max iterations ({})", spec.max_iterations));
            co_return;
        }
        if (spec.delay_s > 0) co_await wait(spec.delay_s, "delay between iterations");
        if (finish_if_stopped()) co_return;
    }
}

awaitable<bool> loop_runner::make_worktree() {
    const proto::loop_info loop = ctx_.db.get_loop(loop_id_);
    const auto& spec = loop.spec;
    if (spec.worktree_path.empty()) co_return true;
    std::string error = co_await off_thread(ctx_.blocking, [&] {
        std::string failed = workspace::add_worktree(spec.worktree_source, spec.worktree_path,
                                                     spec.worktree_branch, spec.worktree_base);
        // A workspace below the top that HEAD does not have (untracked, empty) starts empty.
        std::error_code ec;
        if (failed.empty() && !std::filesystem::create_directories(spec.workspace, ec) && ec)
            failed = "cannot create " + spec.workspace + ": " + ec.message();
        return failed;
    });
    if (finish_if_stopped()) co_return false;
    if (error.empty()) co_return true;
    set_state(proto::loop_event::fail,
              fmt::format("cannot create the worktree {} of {}: {}", spec.worktree_path,
                          spec.worktree_source, error));
    co_return false;
}

std::int64_t loop_runner::rate_limit_backoff_ms(std::int64_t iteration) {
    std::int64_t limited = 0;
    for (const auto& attempt : ctx_.db.attempts_of(loop_id_))
        if (attempt.iteration == iteration && attempt.failure == proto::failure_class::rate_limit)
            ++limited;
    double factor = std::pow(2.0, double(std::max<std::int64_t>(0, limited - 1)));
    return std::min<std::int64_t>(max_rate_limit_wait_ms,
                                  std::int64_t(double(ctx_.rate_limit_wait.count()) * factor));
}

bool loop_runner::leave_unless_admitted(const proto::loop_info& loop) {
    auto verdict = ctx_.gate.check(loop, ctx_.clock.now_ms());
    switch (verdict.what) {
        case admission::verdict::kind::go:
            return false;
        case admission::verdict::kind::stay_queued:
            set_state(proto::loop_event::requeue, verdict.reason);
            break;
        case admission::verdict::kind::wait:
            spdlog::info("loop {}: {} until {}", loop_id_, verdict.reason,
                         text::format_iso8601(verdict.until_ms));
            set_state(proto::loop_event::wait, verdict.reason, verdict.until_ms);
            break;
        case admission::verdict::kind::end:
            set_state(proto::loop_event::exhaust, verdict.reason);
            break;
    }
    return true;
}

bool loop_runner::finish_if_stopped() {
    switch (stop_) {
        case stop_kind::none:
            return false;
        case stop_kind::cancel:
            set_state(proto::loop_event::cancel, "cancelled by the user");
            return true;
        case stop_kind::shutdown:
            set_state(proto::loop_event::requeue, "daemon stopped; continues at the next start");
            return true;
        case stop_kind::pause:
            set_state(proto::loop_event::pause, "paused by the user");
            return true;
    }
    return false;
}

awaitable<void> loop_runner::wait(double seconds, const std::string& reason) {
    if (stop_ != stop_kind::none) co_return;
    auto duration = std::chrono::milliseconds(std::int64_t(seconds * 1000));
    set_state(proto::loop_event::wait, reason, ctx_.clock.now_ms() + duration.count());
    wait_timer_.expires_after(duration);
    boost::system::error_code ec;
    co_await wait_timer_.async_wait(net::redirect_error(use_awaitable, ec));
    if (stop_ == stop_kind::none) set_state(proto::loop_event::wake, "");
}

awaitable<loop_runner::attempt_outcome> loop_runner::run_attempt(const proto::loop_info& loop,
                                                                 std::int64_t iteration,
                                                                 std::int64_t attempt_number) {
    const agent& adapter = find_agent(loop.spec.agent);
    std::vector<std::pair<std::string, std::string>> overrides(loop.spec.env.begin(),
                                                               loop.spec.env.end());
    overrides.emplace_back("RALPH_LOOP_ID", std::to_string(loop_id_));
    overrides.emplace_back("RALPH_ITERATION", std::to_string(iteration));
    overrides.emplace_back("RALPH_ATTEMPT", std::to_string(attempt_number));

    proto::attempt_info attempt;
    attempt.loop_id = loop_id_;
    attempt.iteration = iteration;
    attempt.attempt = attempt_number;
    attempt.started_at = ctx_.clock.now_ms();
    attempt.output_start = ctx_.output.written_end(loop_id_);

    attempt_outcome outcome;
    spawned_process process;
    std::string prompt;
    std::filesystem::path tmpdir;
    std::filesystem::path workspace_dir = loop.spec.workspace;
    // The previous attempt's "after" serves as this one's "before" when it was taken moments ago
    // (the next iteration started at once): another snapshot would find the same and cost a
    // trip to the pool, whose thread a loaded machine may not run for milliseconds.
    workspace::snapshot before;
    const auto now = std::chrono::steady_clock::now();
    if (fresh_snapshot_ && now - fresh_snapshot_at_ <= fresh_snapshot_age)
        before = std::move(*fresh_snapshot_);
    else
        before = co_await off_thread(ctx_.blocking,
                                     [&] { return workspace::take_snapshot(workspace_dir); });
    fresh_snapshot_.reset();
    attempt.head_before = before.head;
    // A --sandbox: the git directory is writable (commits go there), its config and hooks not.
    struct git_paths {
        std::filesystem::path common_dir;
        std::vector<std::filesystem::path> protected_paths;
    };
    git_paths git;
    if (loop.spec.sandbox)
        git = co_await off_thread(ctx_.blocking, [&] {
            git_paths found;
            found.common_dir = workspace::git_common_dir(workspace_dir);
            found.protected_paths = sandbox::protected_git_paths(workspace_dir, found.common_dir);
            return found;
        });
    try {
        if (adapter.needs_private_tmpdir()) {
            tmpdir = ctx_.state.scratch_of(loop_id_);
            std::filesystem::remove_all(tmpdir);
            std::filesystem::create_directories(tmpdir);
            overrides.emplace_back("TMPDIR", tmpdir.string());
        }
        std::vector<std::string> env =
            agent_environment(ctx_.agent_env, adapter.environment_variables(), overrides);
        prompt_extras extras;
        extras.previous_feedback = write_state_file(loop, iteration);
        extras.steering = ctx_.db.steering_for(loop_id_, iteration);
        prompt = build_prompt(loop, iteration, extras);
        const std::string prompt_name = state_dir::prompt_file_name(loop_id_);
        const auto prompt_file = ctx_.state.prompt_dir() / prompt_name;
        // In place: the agent is not running.
        overwrite_file(ctx_.state.prompt_dir(), prompt_name, prompt);
        std::string program = find_program(adapter, loop.spec, ctx_.binaries, search_path_of(env));
        invocation inv = adapter.invoke({loop.spec, program, prompt, prompt_file.string()});
        if (loop.spec.sandbox) {
            bwrap_ = sandbox::find_bwrap(search_path_of(env));
            sandbox_view_.writable = sandbox::writable_paths(workspace_dir, git.common_dir, tmpdir,
                                                             env, adapter.home_state_paths());
            sandbox_view_.read_only = git.protected_paths;
            sandbox_view_.read_only.push_back(prompt_file);
            // A workspace below the top of its worktree: the rest of the worktree (its .git
            // pointer among it) is readable, under the hidden state directory.
            if (!loop.spec.worktree_path.empty())
                sandbox_view_.read_only.push_back(loop.spec.worktree_path);
            sandbox_view_.hidden = ctx_.sandbox_hidden(loop_id_);
            sandbox_view_.offline = loop.spec.sandbox_offline;
            inv.argv = sandbox::wrap(bwrap_, sandbox_view_, loop.spec.workspace, inv.argv);
        }
        attempt.argv = inv.argv;
        process = spawn_process({inv.argv, std::move(env), loop.spec.workspace,
                                 inv.prompt_on_stdin ? prompt_file.string() : std::string()});
    } catch (const std::exception& e) {
        auto* unavailable = dynamic_cast<const proto::rpc_error*>(&e);
        attempt.id = ctx_.db.begin_attempt(attempt, 0);
        store_refusals(attempt.id);
        attempt.how = proto::termination::spawn_failed;
        attempt.failure = unavailable && unavailable->kind() == proto::error_kind::agent_unavailable
                              ? proto::failure_class::missing_program
                              : proto::failure_class::crash;
        attempt.error = e.what();
        attempt.ended_at = ctx_.clock.now_ms();
        attempt.output_end = attempt.output_start;
        ctx_.db.finish_attempt(attempt);
        spdlog::warn("loop {}: {}", loop_id_, attempt.error);
        outcome.how = attempt.how;
        outcome.failure = attempt.failure;
        outcome.error = attempt.error;
        co_return outcome;
    }

    // Recorded once the agent runs, in one transaction with its process, while it starts up. A
    // crash of ralphd before this commit leaves the agent unrecorded (as one between a spawn and
    // any later write of its pid would): its iteration runs again at the next start.
    attempt.pid = process.pid;
    try {
        attempt.id = ctx_.db.begin_attempt(attempt, process.start_time);
    } catch (...) {
        // An agent ralph cannot account for must not run on; the loop ends as failed. Not
        // watched: the reaper reaps it without keeping its status for anyone.
        signal_group(process.pid, SIGKILL);
        ::close(process.stdout_fd);
        ::close(process.stderr_fd);
        throw;
    }
    // Still before control returns to the io_context, as watch() requires.
    ctx_.reaper.watch(process.pid);
    store_refusals(attempt.id);
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

    std::unique_ptr<agent_stream::parser> parser =
        agent_stream::make_parser(adapter.output_format(), prompt);
    parser_ = parser.get();
    last_output_ = std::chrono::steady_clock::now();
    hung_ = false;
    if (loop.spec.inactivity_timeout_s > 0)
        watch_inactivity(
            std::chrono::milliseconds(std::int64_t(loop.spec.inactivity_timeout_s * 1000)));
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
            spdlog::warn("loop {}: agent output still open after the agent exited; closing it",
                         loop_id_);
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
    inactivity_timer_.cancel();
    agent_pgid_ = 0;
    parser_ = nullptr;
    if (!tmpdir.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(tmpdir, ignored);
    }

    std::vector<agent_stream::event> last_events;
    parser->finish(last_events);
    // Stored with the attempt's end, in its transaction.
    const std::vector<proto::event_info> last_rows = event_rows(attempt.id, last_events);
    const agent_stream::summary& said = parser->result();
    attempt.usage = {said.input_tokens, said.output_tokens, said.cost_usd, said.turns,
                     said.tool_calls};
    attempt.summary = first_line(said.final_answer);
    if (WIFEXITED(status)) attempt.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) attempt.signal = WTERMSIG(status);
    classify(attempt, status, said);
    if (attempt.how == proto::termination::timeout)
        attempt.error = hung_ ? fmt::format(
                                    "no output for {}s while no tool was running "
                                    "(inactivity timeout)",
                                    loop.spec.inactivity_timeout_s)
                              : fmt::format("timed out after {}s", loop.spec.timeout_s);
    if (attempt.how == proto::termination::exited)
        co_await judge(loop, said.final_answer, before, attempt, outcome);
    store_refusals(attempt.id);
    ctx_.output.flush();
    attempt.output_end = ctx_.output.committed_end(loop_id_);
    attempt.ended_at = ctx_.clock.now_ms();
    ctx_.db.finish_attempt(attempt, last_rows);
    spdlog::info("loop {}: iteration {} attempt {} ended: {}{}{}", loop_id_, iteration,
                 attempt_number, proto::to_string(attempt.how),
                 attempt.failure == proto::failure_class::none
                     ? ""
                     : " (" + std::string(proto::to_string(attempt.failure)) + ")",
                 attempt.completion_signal ? " (completion signal)" : "");
    outcome.how = attempt.how;
    outcome.failure = attempt.failure;
    outcome.completion_signal = attempt.completion_signal;
    outcome.error = attempt.error;
    outcome.resets_at_ms = said.resets_at_ms;
    co_return outcome;
}

std::string loop_runner::write_state_file(const proto::loop_info& loop, std::int64_t iteration) {
    // Only the previous iteration's: an older iteration's feedback (next steps long done) must
    // not come back when the last iteration gave none.
    std::optional<feedback> previous;
    if (nlohmann::json last = ctx_.db.feedback_of(loop_id_, iteration - 1); last.is_object())
        previous = feedback_from_json(last);
    loop_state_file state;
    state.loop_id = loop_id_;
    state.name = loop.spec.name;
    state.iteration = iteration;
    state.max_iterations = loop.spec.max_iterations;
    state.min_iterations = loop.spec.min_iterations;
    state.completion_signal = "<promise>" + loop.spec.completion_phrase + "</promise>";
    state.started_at =
        text::format_iso8601(loop.started_at != 0 ? loop.started_at : ctx_.clock.now_ms());
    state.previous_feedback = previous;
    try {
        // In place: the agent is not running yet.
        overwrite_file(loop.spec.workspace, state_file_name, render_loop_state(state));
    } catch (const safe_open::link_refused& e) {
        refused(e.what());
    } catch (const std::exception& e) {
        // The state file is a courtesy to the agent; the loop runs without it.
        spdlog::warn("loop {}: cannot write {}: {}", loop_id_, state_file_name, e.what());
    }
    return previous ? describe_for_prompt(*previous) : std::string();
}

std::string loop_runner::completion_rule(const proto::submit_params& spec,
                                         const std::string& final_answer) const {
    if (contains_promise(final_answer, spec.completion_phrase))
        return "completion signal <promise>" + spec.completion_phrase + "</promise>";
    if (!spec.status_tag.empty()) {
        auto status = extract_status(final_answer, spec.status_tag);
        if (status && status_matches(*status, spec.status_value))
            return fmt::format("status <{}>{}</{}>", spec.status_tag, spec.status_value,
                               spec.status_tag);
    }
    if (!spec.legacy_phrase.empty() && contains_substring_ci(final_answer, spec.legacy_phrase))
        return "completion phrase \"" + spec.legacy_phrase + "\"";
    if (spec.backlog_rule) {
        auto specs = specs_path(spec);
        std::string text;
        if (!specs.empty() && read_workspace_file(spec.workspace, specs, text) &&
            count_checkboxes(text).all_done())
            return "every checkbox of " + specs.filename().string() + " is checked";
    }
    return {};
}

awaitable<void> loop_runner::judge(const proto::loop_info& loop, const std::string& final_answer,
                                   const workspace::snapshot& before, proto::attempt_info& attempt,
                                   attempt_outcome& outcome) {
    const auto& spec = loop.spec;
    const std::filesystem::path workspace_dir = spec.workspace;
    try {
        append_notes(workspace_dir, notes_file_name, attempt.iteration, extract_notes(final_answer),
                     ctx_.clock.now_ms());
    } catch (const safe_open::link_refused& e) {
        refused(e.what());
    } catch (const std::exception& e) {
        spdlog::warn("loop {}: {}", loop_id_, e.what());
    }
    if (auto said = extract_feedback(final_answer)) attempt.feedback = to_json(*said);

    // One trip to the pool for the snapshot and both comparisons: each trip waits for a thread
    // to wake up twice.
    std::string specs_relative;
    if (auto specs = specs_path(spec); !specs.empty())
        specs_relative = specs.lexically_relative(workspace_dir).string();
    struct workspace_after {
        workspace::snapshot after;
        workspace::change_stats changes;
        bool specs_changed = false;
    };
    workspace_after result = co_await off_thread(ctx_.blocking, [&] {
        workspace_after r;
        r.after = workspace::take_snapshot(workspace_dir);
        r.changes = workspace::compare(workspace_dir, before, r.after);
        if (!specs_relative.empty())
            r.specs_changed =
                workspace::file_changed(before, r.after, workspace_dir, specs_relative);
        return r;
    });
    const workspace::snapshot& after = result.after;
    const workspace::change_stats& changes = result.changes;
    const bool specs_changed = result.specs_changed;
    attempt.head_after = after.head;
    attempt.files_changed = changes.files_changed;
    attempt.insertions = changes.insertions;
    attempt.deletions = changes.deletions;
    attempt.progress = changes.progress() || specs_changed;
    if (spec.commit && *attempt.progress && after.is_git) {
        std::string message = fmt::format("ralph: loop {} ({}), iteration {}\n\n{}", loop_id_,
                                          spec.name, attempt.iteration, attempt.summary);
        std::string error;
        std::string head = co_await off_thread(
            ctx_.blocking, [&] { return workspace::commit_all(workspace_dir, message, error); });
        if (!error.empty())
            spdlog::warn("loop {}: --commit failed: {}", loop_id_, error);
        else
            attempt.head_after = head;
    }

    outcome.completion_rule = completion_rule(spec, final_answer);
    if (!outcome.completion_rule.empty() && attempt.iteration >= spec.min_iterations &&
        !spec.verify_command.empty() && !co_await verify(loop, attempt)) {
        spdlog::info("loop {}: {} not accepted: --verify exited {}", loop_id_,
                     outcome.completion_rule, attempt.verify_exit.value_or(-1));
        outcome.completion_rule.clear();
    }
    attempt.completion_signal = !outcome.completion_rule.empty();
    // Nothing but ralph's own files (.ralph/, not in snapshots) changes the workspace between
    // here and the next attempt when it starts at once, unless --commit or --verify ran.
    if (!spec.commit && spec.verify_command.empty()) {
        fresh_snapshot_ = std::make_shared<workspace::snapshot>(std::move(result.after));
        fresh_snapshot_at_ = std::chrono::steady_clock::now();
    }
}

awaitable<bool> loop_runner::verify(const proto::loop_info& loop, proto::attempt_info& attempt) {
    std::vector<std::string> env =
        agent_environment(ctx_.agent_env, find_agent(loop.spec.agent).environment_variables(),
                          std::vector<std::pair<std::string, std::string>>(loop.spec.env.begin(),
                                                                           loop.spec.env.end()));
    spawned_process process;
    try {
        std::vector<std::string> argv = text::split_command_words(loop.spec.verify_command);
        if (argv.empty()) throw std::invalid_argument("empty command");
        // In the attempt's sandbox: the agent may have rewritten the check's program.
        if (loop.spec.sandbox)
            argv = sandbox::wrap(bwrap_, sandbox_view_, loop.spec.workspace, argv);
        process = spawn_process({argv, env, loop.spec.workspace, std::string()});
    } catch (const std::exception& e) {
        attempt.verify_exit = 127;
        attempt.verify_output = std::string("cannot run --verify: ") + e.what();
        co_return false;
    }
    ctx_.reaper.watch(process.pid);
    agent_pgid_ = process.pid;  // a cancel or stop ends the check too
    net::steady_timer timeout(ctx_.io);
    timeout.expires_after(std::chrono::milliseconds(std::int64_t(loop.spec.timeout_s * 1000)));
    timeout.async_wait([this](boost::system::error_code ec) {
        if (!ec && agent_pgid_ != 0) terminate_agent();
    });
    helper_output captured;
    captured.limit = max_verify_output_bytes;
    int status = co_await finish_helper(ctx_.io, ctx_.reaper, process, captured);
    timeout.cancel();
    agent_pgid_ = 0;
    std::string output = captured.out + captured.err;
    if (output.size() > max_verify_output_bytes)
        output.erase(0, output.size() - max_verify_output_bytes);
    attempt.verify_output = text::to_valid_utf8(output);
    attempt.verify_exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    co_return *attempt.verify_exit == 0;
}

void loop_runner::classify(proto::attempt_info& attempt, int status,
                           const agent_stream::summary& said) const {
    using proto::failure_class;
    using proto::termination;
    // What the agent said about an error, when it said anything.
    failure_class stated = failure_class::none;
    switch (said.failure) {
        case agent_stream::failure_hint::none:
            break;
        case agent_stream::failure_hint::rate_limit:
            stated = failure_class::rate_limit;
            break;
        case agent_stream::failure_hint::transient:
            stated = failure_class::transient;
            break;
        case agent_stream::failure_hint::auth:
            stated = failure_class::auth;
            break;
    }
    if (stop_ == stop_kind::cancel) {
        attempt.how = termination::cancelled;
    } else if (stop_ == stop_kind::shutdown || stop_ == stop_kind::pause) {
        attempt.how = termination::interrupted;
    } else if (timed_out_ || hung_) {
        attempt.how = termination::timeout;
        attempt.failure = failure_class::timeout;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
               (stated == failure_class::none || said.has_final_answer)) {
        attempt.how = termination::exited;
    } else if (WIFEXITED(status)) {
        // A non-zero exit, or a zero exit after an error and no answer (claude reports API
        // errors as a "success" result with is_error set).
        attempt.how = termination::failed;
        attempt.failure = stated != failure_class::none ? stated : failure_class::crash;
        attempt.error = !said.error.empty()
                            ? said.error
                            : fmt::format("agent exited with status {}", WEXITSTATUS(status));
    } else {
        attempt.how = termination::crashed;
        attempt.failure = stated != failure_class::none ? stated : failure_class::crash;
        attempt.error = fmt::format("agent killed by signal {}{}", WTERMSIG(status),
                                    said.error.empty() ? "" : " after: " + said.error);
    }
}

std::vector<proto::event_info> loop_runner::event_rows(std::int64_t attempt_id,
                                                       std::vector<agent_stream::event>& events) {
    std::vector<proto::event_info> rows;
    rows.reserve(events.size());
    std::int64_t now = ctx_.clock.now_ms();
    for (const auto& e : events) {
        proto::event_info row;
        row.attempt_id = attempt_id;
        row.ts = now;
        row.kind = agent_stream::to_string(e.kind);
        row.tool = e.tool;
        row.text = e.kind == agent_stream::event_kind::usage ? describe_usage(e) : e.text;
        rows.push_back(std::move(row));
    }
    events.clear();
    return rows;
}

void loop_runner::refused(const std::string& what) {
    spdlog::warn("loop {}: {}; skipped", loop_id_, what);
    refusals_.push_back(what + "; skipped");
}

void loop_runner::store_refusals(std::int64_t attempt_id) {
    if (refusals_.empty()) return;
    std::vector<proto::event_info> rows;
    for (auto& text : refusals_) {
        proto::event_info row;
        row.attempt_id = attempt_id;
        row.ts = ctx_.clock.now_ms();
        row.kind = "refused";
        row.text = std::move(text);
        rows.push_back(std::move(row));
    }
    refusals_.clear();
    ctx_.db.add_events(loop_id_, rows);
}

void loop_runner::store_events(std::int64_t attempt_id, std::vector<agent_stream::event>& events) {
    if (events.empty()) return;
    ctx_.db.add_events(loop_id_, event_rows(attempt_id, events));
}

awaitable<void> loop_runner::read_stream(net::posix::stream_descriptor& pipe,
                                         std::int64_t attempt_id, output_stream stream,
                                         agent_stream::parser& parser, int& open_readers,
                                         net::steady_timer& readers_done) {
    // Not zero-filled: the pages of a buffer only an agent's output touches cost nothing when it
    // says little (zeroing 2 x 256 KiB per attempt was a fifth of ralphd's time per iteration).
    auto& buffer = read_buffers_[stream == output_stream::stdout_stream ? 0 : 1];
    if (!buffer) buffer = std::make_unique_for_overwrite<char[]>(read_buffer_bytes);
    std::vector<agent_stream::event> events;
    while (true) {
        boost::system::error_code ec;
        std::size_t n = co_await pipe.async_read_some(net::buffer(buffer.get(), read_buffer_bytes),
                                                      net::redirect_error(use_awaitable, ec));
        if (n > 0) {
            last_output_ = std::chrono::steady_clock::now();
            std::string_view bytes(buffer.get(), n);
            try {
                ctx_.output.append(loop_id_, attempt_id, stream, bytes);
                if (stream == output_stream::stdout_stream)
                    parser.feed(bytes, events);
                else
                    parser.feed_stderr(bytes);
                store_events(attempt_id, events);
            } catch (const std::exception& e) {
                // Output that cannot be persisted must not be produced: end the attempt.
                spdlog::error("loop {}: {}; ending the agent", loop_id_, e.what());
                terminate_agent();
                break;
            }
        }
        if (ec) break;
    }
    if (--open_readers == 0) readers_done.cancel();
}

}  // namespace ralph
