#include "daemon/loop/loop_runner.hpp"

#include "common/agent_stream.hpp"
#include "common/paths.hpp"
#include "common/safe_open.hpp"
#include "common/text.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/classify.hpp"
#include "daemon/loop/completion.hpp"
#include "daemon/loop/landing.hpp"
#include "daemon/loop/loop_memory.hpp"
#include "daemon/loop/prompt.hpp"
#include "daemon/notify/notification.hpp"
#include "daemon/notify/notifier.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/attempt_process.hpp"
#include "daemon/process/child_reaper.hpp"
#include "daemon/process/helper_process.hpp"
#include "daemon/process/process.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/errors.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

namespace ralph {
namespace {

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
        line.resize(text::utf8_head(line, max_summary_bytes).size());
        line += "…";
    }
    return line;
}

// The last line of `text` that is not blank, as first_line cuts it: what a failed check said
// last.
std::string last_line(const std::string& text) {
    std::string_view rest = text;
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
        rest.remove_suffix(1);
    return first_line(std::string(rest.substr(rest.find_last_of('\n') + 1)));
}

constexpr std::size_t max_verify_output_bytes = 16 << 10;
// The judge's prompt shows the first 256 KiB of the diff since the loop started.
constexpr std::size_t max_judge_diff_bytes = 256 << 10;

// The snapshot before the attempt, kept in its directory for a ralphd that adopts the attempt:
// only a git workspace's (HEAD and the tree), small and enough to compare with.
constexpr const char* snapshot_before_file = "before.json";

void save_snapshot_before(const std::filesystem::path& dir, const workspace::snapshot& before) {
    if (!before.is_git || !before.error.empty()) return;
    std::ofstream(dir / snapshot_before_file)
        << nlohmann::json{{"head", before.head}, {"tree", before.tree}}.dump();
}

std::optional<workspace::snapshot> load_snapshot_before(const std::filesystem::path& dir) {
    std::ifstream in(dir / snapshot_before_file);
    std::ostringstream text;
    text << in.rdbuf();
    const nlohmann::json saved = nlohmann::json::parse(text.str(), nullptr, false);
    if (!saved.is_object()) return std::nullopt;
    workspace::snapshot before;
    before.is_git = true;
    before.head = saved.value("head", "");
    before.tree = saved.value("tree", "");
    return before;
}

std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The shim's clock is the real one; ralphd's may be shifted (debug.clock, --test-clock).
std::int64_t on_clock(const wall_clock& clock, std::int64_t real_ms) {
    return real_ms + (clock.now_ms() - text::now_ms());
}

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

void loop_runner::detach() {
    if (stop_ == stop_kind::none) stop_ = stop_kind::detach;
    wait_timer_.cancel();
}

void loop_runner::terminate_agent() {
    if (agent_) agent_->terminate();
    if (helper_pgid_ == 0) return;
    signal_group(helper_pgid_, SIGTERM);
    pid_t pgid = helper_pgid_;
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
        if (ec || agent_ == nullptr || parser_ == nullptr) return;
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

void loop_runner::notify_rejection(std::int64_t iteration, const std::string& why) {
    const proto::loop_info loop = ctx_.db.get_loop(loop_id_);
    ctx_.notices.add(rejection_notification(loop, iteration, why, ctx_.clock.now_ms()),
                     loop.spec.notify);
}

void loop_runner::set_state(proto::loop_event event, const std::string& reason,
                            std::int64_t resume_at, bool notable_wait) {
    ctx_.change_state(loop_id_, event, reason, resume_at, notable_wait);
}

awaitable<void> loop_runner::run() {
    try {
        co_await run_iterations();
    } catch (const std::exception& e) {
        if (ctx_.health.failed(e)) {
            // Nothing of the loop can be recorded now: it stays as it is, its agent goes on
            // under its shim, and ralphd takes the loop up again once it can write.
            spdlog::warn("loop {}: left as it is until ralph's state can be written again",
                         loop_id_);
            co_return;
        }
        spdlog::error("loop {}: {}", loop_id_, e.what());
        try {
            set_state(proto::loop_event::fail, std::string("internal error: ") + e.what());
        } catch (const std::exception& again) {
            spdlog::error("loop {}: cannot record the failure: {}", loop_id_, again.what());
        }
    }
    ctx_.output.flush();
}

void loop_runner::adopt(std::int64_t attempt_id, const shim::started& started) {
    adopted_ = adopted_attempt{attempt_id, started};
}

awaitable<void> loop_runner::run_iterations() {
    // An adopted attempt's loop is running already, in its worktree if it has one.
    if (!adopted_) {
        set_state(proto::loop_event::start, "");
        if (!co_await make_worktree()) co_return;
    }
    while (true) {
        proto::loop_info loop = ctx_.db.get_loop(loop_id_);
        const auto& spec = loop.spec;
        if (!adopted_ && spec.max_iterations > 0 && loop.iterations >= spec.max_iterations) {
            set_state(proto::loop_event::exhaust,
                      fmt::format("reached max iterations ({})", spec.max_iterations));
            co_return;
        }
        const std::int64_t iteration = loop.iterations + 1;
        // The failed attempts of the iteration so far (an adopted one may be a retry).
        std::int64_t failures = 0;
        if (adopted_)
            for (const auto& earlier : ctx_.db.attempts_of(loop_id_))
                if (earlier.iteration == iteration && earlier.id != adopted_->attempt_id &&
                    earlier.failure != proto::failure_class::none &&
                    earlier.failure != proto::failure_class::rate_limit)
                    ++failures;
        attempt_outcome outcome;
        // Once the iteration's work claimed completion before a judge: the iteration's next
        // attempts are the judge's.
        std::optional<completion_claim> claim;
        while (true) {
            if (adopted_) {
                outcome = co_await resume_attempt(loop);
                adopted_.reset();
            } else {
                proto::loop_info attempt_loop = loop;
                if (claim) attempt_loop.spec = proto::as_judge(spec);
                // A degraded ralphd starts no attempt: the loop is taken up again once it can
                // write (storage_health).
                if (stop_ == stop_kind::detach || ctx_.health.degraded() ||
                    leave_unless_admitted(attempt_loop))
                    co_return;
                // The loop's own agent, or the first fallback no usage limit holds: the files
                // are the memory, so another agent can take the next iteration up.
                if (!claim)
                    attempt_loop.spec =
                        proto::on_agent(spec, ctx_.gate.pick_agent(spec, ctx_.clock.now_ms()));
                outcome = co_await run_attempt(
                    attempt_loop, iteration, ctx_.db.attempts_in_iteration(loop_id_, iteration) + 1,
                    claim ? &*claim : nullptr);
                // ralphd is leaving the agents running and came before this one started.
                if (outcome.how == proto::termination::running) co_return;
            }
            if (stop_ == stop_kind::shutdown || stop_ == stop_kind::pause ||
                stop_ == stop_kind::detach) {
                // The interrupted iteration counts as spent (the agent may have done work);
                // the loop continues with the next one when it runs again.
                ctx_.db.set_iterations(loop_id_, iteration, ctx_.clock.now_ms());
            }
            if (finish_if_stopped()) co_return;
            if (outcome.how == proto::termination::exited) {
                if (outcome.kind == proto::attempt_kind::work && outcome.completion_signal &&
                    iteration >= spec.min_iterations && !spec.judge.empty()) {
                    claim = completion_claim{outcome.attempt_id, outcome.completion_rule,
                                             outcome.final_answer};
                    failures = 0;
                    continue;
                }
                break;
            }
            std::string failure = describe_failure(outcome.how, outcome.error);
            // A configuration failure (its error says the fix) fails the same way every time.
            if (outcome.how == proto::termination::spawn_failed ||
                outcome.failure == proto::failure_class::missing_program ||
                outcome.failure == proto::failure_class::config) {
                set_state(proto::loop_event::fail, failure);
                co_return;
            }
            if (outcome.failure == proto::failure_class::auth) {
                set_state(proto::loop_event::fail,
                          fmt::format("agent {} could not authenticate: {} (log it in or set its "
                                      "API key, then resubmit)",
                                      outcome.agent, failure));
                co_return;
            }
            if (outcome.failure == proto::failure_class::rate_limit) {
                // Burns no retry: every loop on this agent waits for the reset, or runs on a
                // fallback meanwhile.
                std::int64_t until = outcome.resets_at_ms > 0
                                         ? outcome.resets_at_ms + ctx_.rate_limit_margin.count()
                                         : ctx_.clock.now_ms() + rate_limit_backoff_ms(iteration);
                ctx_.record_hold(
                    {outcome.agent, ctx_.gate.account(), until,
                     fmt::format("{} usage limit (loop {}: {})", outcome.agent, loop_id_, failure),
                     ""});
                continue;  // leave_unless_admitted parks the loop
            }
            // An adopted judge's failure: the claim it checked is not known to this ralphd; the
            // next iteration claims anew.
            if (outcome.kind == proto::attempt_kind::judge && !claim) break;
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
        ctx_.on_counters(loop_id_);
        if (outcome.kind == proto::attempt_kind::judge) {
            if (outcome.verdict == "accept") {
                const std::string reason =
                    fmt::format("judge {} accepted the completion claimed in iteration {}",
                                outcome.agent, iteration);
                co_await complete(reason);
                co_return;
            }
            const std::int64_t rejections = ctx_.db.judge_rejections(loop_id_);
            if (outcome.verdict == "reject" && rejections >= spec.judge_max_rejections) {
                set_state(
                    proto::loop_event::stall,
                    fmt::format("judge {} rejected the claim of completion {} time(s), "
                                "last: {}",
                                outcome.agent, rejections, first_line(outcome.verdict_reasons)));
                co_return;
            }
            if (outcome.verdict == "reject")
                notify_rejection(iteration, fmt::format("judge {} rejected it: {}", outcome.agent,
                                                        first_line(outcome.verdict_reasons)));
        } else if (outcome.completion_signal && iteration >= spec.min_iterations) {
            const std::string reason =
                fmt::format("{} in iteration {}", outcome.completion_rule, iteration);
            co_await complete(reason);
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

awaitable<void> loop_runner::complete(const std::string& reason) {
    proto::loop_info loop = ctx_.db.get_loop(loop_id_);
    loop.stop_reason = reason;  // as the pull request's body says it
    if (!loop.spec.merge && loop.spec.pr_remote.empty()) {
        set_state(proto::loop_event::complete, reason);
        co_return;
    }
    const landing_tools tools{ctx_.io, ctx_.blocking, ctx_.reaper};
    const std::vector<proto::attempt_info> attempts = ctx_.db.attempts_of(loop_id_);
    const landing_way way = loop.spec.merge ? landing_way::merge : landing_way::pull_request;
    const landing landed = co_await land(tools, loop, attempts, way);
    spdlog::info("loop {}: {}", loop_id_, landed.text);
    ctx_.db.set_landing(loop_id_, landed.text, ctx_.clock.now_ms());
    set_state(proto::loop_event::complete,
              reason + (loop.spec.merge ? "; merge: " : "; pr: ") + landed.text);
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
            set_state(proto::loop_event::wait, verdict.reason, verdict.until_ms, verdict.notable);
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
        case stop_kind::detach:
            // The loop stays as it is; the next ralphd re-queues or adopts it.
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

awaitable<std::vector<std::string>> loop_runner::agent_env_and_sandbox(
    const proto::loop_info& loop, proto::attempt_kind kind, std::int64_t iteration,
    std::int64_t attempt_number, std::filesystem::path& tmpdir) {
    const agent& adapter = find_agent(loop.spec.agent);
    std::vector<std::pair<std::string, std::string>> overrides(loop.spec.env.begin(),
                                                               loop.spec.env.end());
    overrides.emplace_back("RALPH_LOOP_ID", std::to_string(loop_id_));
    overrides.emplace_back("RALPH_ITERATION", std::to_string(iteration));
    overrides.emplace_back("RALPH_ATTEMPT", std::to_string(attempt_number));
    overrides.emplace_back("RALPH_ATTEMPT_KIND", std::string(proto::to_string(kind)));
    if (adapter.needs_private_tmpdir()) {
        tmpdir = ctx_.state.scratch_of(loop_id_);
        overrides.emplace_back("TMPDIR", tmpdir.string());
    }
    std::vector<std::string> env =
        agent_environment(ctx_.agent_env, agent_variables(adapter, loop.spec), overrides);
    if (kind == proto::attempt_kind::judge) {
        // Nothing of the workspace (nor of its worktree, under the hidden state directory) is
        // writable: only the judge's TMPDIR and its own config and cache paths.
        bwrap_ = paths::find_executable("bwrap", search_path_of(env)).string();
        sandbox_view_ = {};
        sandbox_view_.writable =
            sandbox::writable_paths({}, {}, tmpdir, env, adapter.home_state_paths());
        sandbox_view_.read_only = {loop.spec.workspace, ctx_.state.prompt_of(loop_id_)};
        if (!loop.spec.worktree_path.empty())
            sandbox_view_.read_only.push_back(loop.spec.worktree_path);
        sandbox_view_.hidden = ctx_.sandbox_hidden(loop_id_);
        sandbox_view_.offline = loop.spec.sandbox_offline;
        co_return env;
    }
    if (!loop.spec.sandbox) co_return env;

    // The git directories are writable (commits go there), their config, hooks and info not.
    const std::filesystem::path workspace_dir = loop.spec.workspace;
    std::vector<std::filesystem::path> protected_git = co_await off_thread(ctx_.blocking, [&] {
        sandbox_git_ = workspace::find_git_directories(workspace_dir);
        return sandbox::protected_git_paths(workspace_dir, sandbox_git_);
    });
    bwrap_ = sandbox::find_bwrap(search_path_of(env));
    sandbox_view_.writable = sandbox::writable_paths(workspace_dir, sandbox_git_, tmpdir, env,
                                                     adapter.home_state_paths());
    sandbox_view_.read_only = std::move(protected_git);
    sandbox_view_.read_only.push_back(ctx_.state.prompt_of(loop_id_));
    // A workspace below the top of its worktree: the rest of the worktree (its .git pointer
    // among it) is readable, under the hidden state directory.
    if (!loop.spec.worktree_path.empty())
        sandbox_view_.read_only.push_back(loop.spec.worktree_path);
    sandbox_view_.hidden = ctx_.sandbox_hidden(loop_id_);
    sandbox_view_.offline = loop.spec.sandbox_offline;
    co_return env;
}

loop_runner::attempt_inputs loop_runner::read_attempt_inputs(const proto::loop_info& loop,
                                                             std::int64_t iteration,
                                                             const std::vector<std::string>& env,
                                                             const completion_claim* claim) {
    attempt_inputs inputs;
    if (claim) {
        inputs.claim = claim;
        const store::loop_base base = ctx_.db.base_of(loop_id_);
        inputs.base_head = base.head;
        inputs.base_tree = base.tree;
        const proto::attempt_info worked = ctx_.db.get_attempt(claim->attempt_id);
        inputs.verify_exit = worked.verify_exit;
        inputs.verify_output = worked.verify_output;
    } else {
        inputs.judge_reasons = ctx_.db.rejection_in(loop_id_, iteration - 1);
    }
    // Only the previous iteration's: an older iteration's feedback (next steps long done) must
    // not come back when the last iteration gave none.
    inputs.previous_feedback = ctx_.db.feedback_of(loop_id_, iteration - 1);
    inputs.steering = ctx_.db.steering_for(loop_id_, iteration);
    inputs.loop_started_at = loop.started_at != 0 ? loop.started_at : ctx_.clock.now_ms();
    inputs.program =
        find_program(find_agent(loop.spec.agent), loop.spec, ctx_.binaries, search_path_of(env));
    inputs.kill_grace = ctx_.kill_grace;
    return inputs;
}

loop_runner::attempt_plan loop_runner::prepare_attempt(const proto::loop_info& loop,
                                                       const proto::attempt_info& attempt,
                                                       const std::vector<std::string>& env,
                                                       const std::filesystem::path& tmpdir,
                                                       const attempt_inputs& inputs) {
    const agent& adapter = find_agent(loop.spec.agent);
    attempt_plan plan;
    if (!tmpdir.empty()) {
        std::filesystem::remove_all(tmpdir);
        std::filesystem::create_directories(tmpdir);
        plan.tmpdir = tmpdir;
    }
    const bool judging = attempt.kind == proto::attempt_kind::judge;
    const bool sandboxed = judging ? !bwrap_.empty() : loop.spec.sandbox;
    if (judging) {
        plan.prompt = prepare_judge(loop, attempt.iteration, inputs, sandboxed);
    } else {
        prompt_extras extras;
        extras.previous_feedback = write_state_file(loop, attempt.iteration, inputs);
        extras.steering = inputs.steering;
        extras.judge_reasons = inputs.judge_reasons;
        plan.prompt = build_prompt(loop, attempt.iteration, extras);
    }
    const std::string prompt_file = ctx_.state.prompt_of(loop_id_).string();
    // In place: the agent is not running.
    overwrite_file(ctx_.state.prompt_dir(), state_dir::prompt_file_name(loop_id_), plan.prompt);
    invocation inv = adapter.invoke({loop.spec, inputs.program, plan.prompt, prompt_file});
    // A judge without bwrap runs in its throw-away checkout.
    const std::string cwd = judging && !sandboxed ? ctx_.state.judge_checkout_of(loop_id_).string()
                                                  : loop.spec.workspace;
    if (sandboxed) inv.argv = sandbox::wrap(bwrap_, sandbox_view_, cwd, inv.argv);
    if (inv.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty command");
    shim::spec& agent = plan.agent;
    agent.program = resolve_program(inv.argv[0], env, loop.spec.workspace);
    agent.argv = std::move(inv.argv);
    agent.env = environment_in(env, cwd);
    agent.cwd = cwd;
    agent.stdin_path = inv.prompt_on_stdin ? prompt_file : std::string();
    agent.output_file = ctx_.output.file_of(loop_id_).string();
    agent.output_start = attempt.output_start;
    agent.kill_grace_ms = inputs.kill_grace.count();
    return plan;
}

loop_runner::attempt_outcome loop_runner::record_start_failure(proto::attempt_info& attempt,
                                                               const std::exception& e) {
    auto* unavailable = dynamic_cast<const proto::rpc_error*>(&e);
    if (attempt.id == 0) attempt.id = ctx_.db.begin_attempt(attempt, 0);
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
    attempt_outcome outcome;
    outcome.agent = attempt.agent;
    outcome.how = attempt.how;
    outcome.failure = attempt.failure;
    outcome.error = attempt.error;
    return outcome;
}

awaitable<loop_runner::attempt_outcome> loop_runner::run_attempt(const proto::loop_info& loop,
                                                                 std::int64_t iteration,
                                                                 std::int64_t attempt_number,
                                                                 const completion_claim* claim) {
    proto::attempt_info attempt;
    attempt.kind = claim ? proto::attempt_kind::judge : proto::attempt_kind::work;
    attempt.loop_id = loop_id_;
    attempt.agent = loop.spec.agent;
    attempt.model = loop.spec.model;
    attempt.iteration = iteration;
    attempt.attempt = attempt_number;
    attempt.started_at = ctx_.clock.now_ms();
    ctx_.output.flush();
    attempt.output_start = ctx_.output.committed_end(loop_id_);

    // The previous attempt's "after" serves as this one's "before" when it was taken moments ago
    // (the next iteration started at once): another snapshot would find the same and cost a
    // trip to the pool, whose thread a loaded machine may not run for milliseconds.
    // A judge changes nothing (nor is its snapshot needed: its prompt's diff takes one).
    const std::filesystem::path workspace_dir = loop.spec.workspace;
    workspace::snapshot before;
    const auto now = std::chrono::steady_clock::now();
    if (!claim && fresh_snapshot_ && now - fresh_snapshot_at_ <= fresh_snapshot_age)
        before = std::move(*fresh_snapshot_);
    else if (!claim)
        before = co_await off_thread(ctx_.blocking,
                                     [&] { return workspace::take_snapshot(workspace_dir); });
    fresh_snapshot_.reset();
    attempt.head_before = before.head;
    attempt.tree_before = before.tree;
    // What the judge's diff starts from: the workspace at the loop's first iteration.
    if (iteration == 1 && before.is_git && !before.tree.empty())
        ctx_.db.set_loop_base(loop_id_, {before.head, before.tree});

    attempt_plan plan;
    try {
        std::filesystem::path tmpdir;
        std::vector<std::string> env =
            co_await agent_env_and_sandbox(loop, attempt.kind, iteration, attempt_number, tmpdir);
        const attempt_inputs inputs = read_attempt_inputs(loop, iteration, env, claim);
        plan = co_await off_thread(
            ctx_.blocking, [&] { return prepare_attempt(loop, attempt, env, tmpdir, inputs); });
    } catch (const std::exception& e) {
        // ralph's own storage refused a write: not the agent's failure (run() leaves the loop).
        if (storage_health::is_storage_error(e)) throw;
        co_return record_start_failure(attempt, e);
    }
    if (stop_ == stop_kind::detach) {
        const attempt_outcome nothing_ran;
        co_return nothing_ran;
    }
    attempt.argv = plan.agent.argv;
    attempt.id = ctx_.db.begin_attempt(attempt, 0);
    store_refusals(attempt.id);
    const std::filesystem::path dir = ctx_.state.attempt_dir(attempt.id);
    if (!ctx_.cgroup_prefix.empty())
        plan.agent.cgroup = ctx_.cgroup_prefix + std::to_string(attempt.id);
    shim::started started;
    try {
        // Starting a process takes milliseconds (clone, exec, the shim's answer), and so can
        // creating files: off the io thread, which serves every client meanwhile.
        started = co_await off_thread(ctx_.blocking, [&] {
            std::filesystem::create_directory(dir);
            save_snapshot_before(dir, before);
            return attempt_process::start(ctx_.shim_program, dir, plan.agent);
        });
    } catch (const std::exception& e) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
        // The attempt row, without a shim, is recorded as interrupted when ralphd takes the loop
        // up again (ralphd::recover).
        if (storage_health::is_storage_error(e)) throw;
        co_return record_start_failure(attempt, e);
    }
    // The shim and the agent run from here on, whatever happens to ralphd: the attempt row knows
    // the agent, its directory the shim.
    attempt.pid = started.agent_pid;
    ctx_.db.set_attempt_process(attempt.id, started.agent_pid, started.agent_start_time);
    spdlog::info("loop {}: iteration {} attempt {} started (pid {}, shim {})", loop_id_, iteration,
                 attempt_number, started.agent_pid, started.shim_pid);
    attempt_process process(ctx_.io, dir, ctx_.output.file_of(loop_id_), started);
    std::unique_ptr<agent_stream::parser> parser =
        agent_stream::make_parser(find_agent(loop.spec.agent).output_format(), plan.prompt);
    const std::optional<int> status = co_await supervise(loop, attempt, process, *parser, false, 0);
    if (!plan.tmpdir.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(plan.tmpdir, ignored);
    }
    co_return co_await record(loop, attempt, process, *parser, claim ? nullptr : &before, status);
}

awaitable<loop_runner::attempt_outcome> loop_runner::resume_attempt(
    const proto::loop_info& its_loop) {
    proto::attempt_info attempt = ctx_.db.get_attempt(adopted_->attempt_id);
    // The loop as the attempt saw it: on the agent it ran on (its own or a fallback), or as its
    // judge.
    const bool judging = attempt.kind == proto::attempt_kind::judge;
    proto::loop_info loop = its_loop;
    loop.spec = judging ? proto::as_judge(its_loop.spec)
                        : proto::on_agent(its_loop.spec, {attempt.agent, attempt.model});
    const std::filesystem::path dir = ctx_.state.attempt_dir(attempt.id);
    spdlog::info("loop {}: adopting iteration {} attempt {} (pid {}, shim {})", loop_id_,
                 attempt.iteration, attempt.attempt, adopted_->started.agent_pid,
                 adopted_->started.shim_pid);
    // What the attempt's --verify needs: the sandbox it runs in, as the agent's (a judge runs
    // none).
    std::filesystem::path tmpdir;
    if (!judging)
        co_await agent_env_and_sandbox(loop, attempt.kind, attempt.iteration, attempt.attempt,
                                       tmpdir);
    attempt_process process(ctx_.io, dir, ctx_.output.file_of(loop_id_), adopted_->started);
    // The parser reads the attempt's whole output again (it only was in the earlier ralphd's
    // memory); the prompt file is still this attempt's.
    std::unique_ptr<agent_stream::parser> parser =
        agent_stream::make_parser(find_agent(loop.spec.agent).output_format(),
                                  read_text_file(ctx_.state.prompt_of(loop_id_)));
    // The snapshot before is in the attempt's directory (its row gets it with the end).
    const std::optional<workspace::snapshot> before = load_snapshot_before(dir);
    if (before) {
        attempt.head_before = before->head;
        attempt.tree_before = before->tree;
    }
    const std::optional<int> status = co_await supervise(loop, attempt, process, *parser, true,
                                                         ctx_.db.stream_event_count(attempt.id));
    if (!tmpdir.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(tmpdir, ignored);
    }
    co_return co_await record(loop, attempt, process, *parser, before ? &*before : nullptr, status);
}

awaitable<std::optional<int>> loop_runner::supervise(const proto::loop_info& loop,
                                                     const proto::attempt_info& attempt,
                                                     attempt_process& process,
                                                     agent_stream::parser& parser, bool adopted,
                                                     std::int64_t skip_events) {
    agent_ = &process;
    parser_ = &parser;
    timed_out_ = false;
    hung_ = false;
    // A cancel or stop that came while the agent was starting applies to it too.
    if (stop_ != stop_kind::none && stop_ != stop_kind::detach) terminate_agent();

    // An adopted attempt has run for a while already; a new one gets its whole time (also when
    // debug.clock shifted the clock since it started).
    const std::int64_t ran_ms =
        adopted ? std::max<std::int64_t>(0, ctx_.clock.now_ms() - attempt.started_at) : 0;
    net::steady_timer timeout(ctx_.io);
    timeout.expires_after(std::chrono::milliseconds(
        std::max<std::int64_t>(0, std::int64_t(loop.spec.timeout_s * 1000) - ran_ms)));
    timeout.async_wait([this](boost::system::error_code ec) {
        if (ec || agent_ == nullptr) return;
        spdlog::info("loop {}: attempt timed out", loop_id_);
        timed_out_ = true;
        terminate_agent();
    });
    last_output_ = std::chrono::steady_clock::now();
    if (loop.spec.inactivity_timeout_s > 0)
        watch_inactivity(
            std::chrono::milliseconds(std::int64_t(loop.spec.inactivity_timeout_s * 1000)));

    // Bytes before this were indexed by the ralphd that started the attempt.
    const std::int64_t indexed_end = ctx_.output.committed_end(loop_id_);
    std::vector<agent_stream::event> events;
    while (true) {
        const std::vector<attempt_process::chunk> chunks = co_await process.next();
        if (chunks.empty()) break;
        last_output_ = std::chrono::steady_clock::now();
        for (const auto& chunk : chunks) {
            const bool out = chunk.stream == shim::stream::stdout_stream;
            if (chunk.offset >= indexed_end)
                ctx_.output.index(loop_id_, attempt.id,
                                  out ? output_stream::stdout_stream : output_stream::stderr_stream,
                                  chunk.offset, std::int64_t(chunk.bytes.size()));
            if (out)
                parser.feed(chunk.bytes, events);
            else
                parser.feed_stderr(chunk.bytes);
        }
        const auto skipped = std::min<std::int64_t>(skip_events, std::int64_t(events.size()));
        events.erase(events.begin(), events.begin() + skipped);
        skip_events -= skipped;
        store_events(attempt.id, events);
    }
    timeout.cancel();
    inactivity_timer_.cancel();
    agent_ = nullptr;
    parser_ = nullptr;
    if (loop.spec.sandbox && attempt.kind == proto::attempt_kind::work) remove_git_redirects(loop);
    // Bytes the shim wrote without a journal record (the disk refused the record) are the
    // attempt's too.
    ctx_.output.recover(loop_id_, attempt.id);
    if (process.exit()) {
        if (process.exit()->lost_bytes > 0)
            refused(fmt::format("{} bytes of the agent's output were lost: {}",
                                process.exit()->lost_bytes, process.exit()->lost_reason));
        co_return process.exit()->wait_status;
    }
    if (process.kill_leftovers())
        spdlog::warn("loop {}: killed what was left of the agent of attempt {}", loop_id_,
                     attempt.id);
    co_return std::nullopt;
}

awaitable<loop_runner::attempt_outcome> loop_runner::record(const proto::loop_info& loop,
                                                            proto::attempt_info& attempt,
                                                            attempt_process& process,
                                                            agent_stream::parser& parser,
                                                            const workspace::snapshot* before,
                                                            const std::optional<int>& status) {
    std::vector<agent_stream::event> last_events;
    parser.finish(last_events);
    // Stored with the attempt's end, in its transaction.
    const std::vector<proto::event_info> last_rows = event_rows(attempt.id, last_events);
    const agent_stream::summary& said = parser.result();
    attempt.usage = {said.input_tokens, said.output_tokens, said.cost_usd, said.turns,
                     said.tool_calls};
    attempt.summary = first_line(said.final_answer);
    attempt_outcome outcome;
    attempt_end end = attempt_end::by_itself;
    if (stop_ == stop_kind::cancel)
        end = attempt_end::cancelled;
    else if (stop_ == stop_kind::shutdown || stop_ == stop_kind::pause)
        end = attempt_end::stopped;
    else if (timed_out_ || hung_)
        end = attempt_end::timed_out;
    classify_attempt(attempt, end, status, said);
    if (attempt.how == proto::termination::timeout)
        attempt.error = hung_ ? fmt::format(
                                    "no output for {}s while no tool was running "
                                    "(inactivity timeout)",
                                    loop.spec.inactivity_timeout_s)
                              : fmt::format("timed out after {}s", loop.spec.timeout_s);
    if (attempt.how == proto::termination::exited && attempt.kind == proto::attempt_kind::judge)
        read_verdict(said.final_answer, attempt);
    else if (attempt.how == proto::termination::exited)
        co_await assess(loop, said.final_answer, before, attempt, outcome);
    store_refusals(attempt.id);
    ctx_.output.flush();
    attempt.output_end = ctx_.output.committed_end(loop_id_);
    attempt.ended_at =
        process.exit() ? on_clock(ctx_.clock, process.exit()->ended_at_ms) : ctx_.clock.now_ms();
    ctx_.db.finish_attempt(attempt, last_rows);
    ctx_.on_counters(loop_id_);
    std::error_code ignored;
    std::filesystem::remove_all(ctx_.state.attempt_dir(attempt.id), ignored);
    if (attempt.kind == proto::attempt_kind::judge)
        std::filesystem::remove_all(ctx_.state.judge_checkout_of(loop_id_), ignored);
    spdlog::info("loop {}: iteration {} {} attempt {} ended: {}{}{}", loop_id_, attempt.iteration,
                 proto::to_string(attempt.kind), attempt.attempt, proto::to_string(attempt.how),
                 attempt.failure == proto::failure_class::none
                     ? ""
                     : " (" + std::string(proto::to_string(attempt.failure)) + ")",
                 attempt.completion_signal ? " (completion signal)" : "");
    outcome.attempt_id = attempt.id;
    outcome.kind = attempt.kind;
    outcome.agent = attempt.agent;
    outcome.how = attempt.how;
    outcome.failure = attempt.failure;
    outcome.completion_signal = attempt.completion_signal;
    outcome.error = attempt.error;
    outcome.resets_at_ms = said.resets_at_ms;
    outcome.final_answer = said.final_answer;
    outcome.verdict = attempt.verdict;
    outcome.verdict_reasons = attempt.verdict_reasons;
    co_return outcome;
}

std::string loop_runner::write_state_file(const proto::loop_info& loop, std::int64_t iteration,
                                          const attempt_inputs& inputs) {
    const std::optional<proto::agent_feedback>& previous = inputs.previous_feedback;
    loop_state_file state;
    state.loop_id = loop_id_;
    state.name = loop.spec.name;
    state.iteration = iteration;
    state.max_iterations = loop.spec.max_iterations;
    state.min_iterations = loop.spec.min_iterations;
    state.completion_signal = "<promise>" + loop.spec.completion_phrase + "</promise>";
    state.started_at = text::format_iso8601(inputs.loop_started_at);
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

void loop_runner::read_verdict(const std::string& final_answer, proto::attempt_info& attempt) {
    const std::optional<judge_verdict> verdict = extract_verdict(final_answer);
    if (!verdict) {
        attempt.how = proto::termination::failed;
        attempt.failure = proto::failure_class::no_verdict;
        attempt.error =
            "the judge gave no verdict (<ralph_verdict>ACCEPT</ralph_verdict> or REJECT)";
        return;
    }
    attempt.verdict = verdict->accepted ? "accept" : "reject";
    attempt.verdict_reasons = verdict->reasons;
}

std::string loop_runner::prepare_judge(const proto::loop_info& loop, std::int64_t iteration,
                                       const attempt_inputs& inputs, bool sandboxed) {
    const std::filesystem::path workspace_dir = loop.spec.workspace;
    judge_inputs judged;
    judged.iteration = iteration;
    judged.completion_rule = inputs.claim->rule;
    judged.final_answer = inputs.claim->final_answer;
    judged.base_head = inputs.base_head;
    judged.verify_exit = inputs.verify_exit;
    judged.verify_output = inputs.verify_output;
    const workspace::snapshot now = workspace::take_snapshot(workspace_dir);
    if (inputs.base_tree.empty()) {
        judged.diff_unavailable =
            now.is_git ? "(No diff: the workspace at the loop's first iteration is not known.)"
                       : "(No diff: the workspace is not in a git repository.)";
    } else {
        workspace::snapshot base;
        base.is_git = true;
        base.head = inputs.base_head;
        base.tree = inputs.base_tree;
        const workspace::patch_text patch =
            workspace::diff_snapshots(workspace_dir, base, now, max_judge_diff_bytes);
        judged.diff = text::to_valid_utf8(patch.text);
        judged.diff_cut = patch.cut;
        if (!patch.error.empty())
            judged.diff_unavailable = "(No diff: " + patch.error + ")";
        else if (patch.text.empty())
            judged.diff_unavailable = "(Nothing changed since the loop started.)";
    }
    if (!sandboxed) {
        const std::string error = workspace::check_out_snapshot(
            workspace_dir, now, ctx_.state.judge_checkout_of(loop_id_));
        if (!error.empty()) throw std::runtime_error(error);
    }
    return build_judge_prompt(loop, judged);
}

awaitable<void> loop_runner::assess(const proto::loop_info& loop, const std::string& final_answer,
                                    const workspace::snapshot* before, proto::attempt_info& attempt,
                                    attempt_outcome& outcome) {
    const auto& spec = loop.spec;
    const std::filesystem::path workspace_dir = spec.workspace;
    const std::vector<std::string> notes = extract_notes(final_answer);
    const std::int64_t now = ctx_.clock.now_ms();
    attempt.feedback = extract_feedback(final_answer);

    // One trip to the pool for the notes, the snapshot and both comparisons: each trip waits for
    // a thread to wake up twice.
    std::string specs_relative;
    if (auto specs = specs_path(spec); !specs.empty())
        specs_relative = specs.lexically_relative(workspace_dir).string();
    struct workspace_after {
        std::string notes_refused;  // a link where the notes go
        workspace::snapshot after;
        workspace::change_stats changes;
        bool specs_changed = false;
    };
    workspace_after result = co_await off_thread(ctx_.blocking, [&] {
        workspace_after r;
        try {
            append_notes(workspace_dir, notes_file_name, attempt.iteration, notes, now);
        } catch (const safe_open::link_refused& e) {
            r.notes_refused = e.what();
        } catch (const std::exception& e) {
            spdlog::warn("loop {}: {}", loop_id_, e.what());
        }
        r.after = workspace::take_snapshot(workspace_dir);
        if (!before) return r;
        r.changes = workspace::compare(workspace_dir, *before, r.after);
        if (!specs_relative.empty())
            r.specs_changed =
                workspace::file_changed(*before, r.after, workspace_dir, specs_relative);
        return r;
    });
    if (!result.notes_refused.empty()) refused(result.notes_refused);
    const workspace::snapshot& after = result.after;
    if (!after.refused.empty())
        refused("git snapshots and --commit in " + spec.workspace + ": " + after.refused);
    const workspace::change_stats& changes = result.changes;
    attempt.head_after = after.head;
    // --commit below moves HEAD, not the tree: tree_after stays the snapshot's.
    attempt.tree_after = after.tree;
    // Without the snapshot before (an adopted attempt in a plain directory), what changed is
    // unknown: progress stays unknown, which counts as progress. So it does when what changed is
    // known only in part and that part shows no change.
    if (before) {
        attempt.files_changed = changes.files_changed;
        attempt.insertions = changes.insertions;
        attempt.deletions = changes.deletions;
        const bool changed = changes.progress() || result.specs_changed;
        if (changed || changes.error.empty()) attempt.progress = changed;
        if (!changes.error.empty())
            spdlog::warn("loop {}: iteration {}: what changed is known only in part: {}", loop_id_,
                         attempt.iteration, changes.error);
    }
    if (spec.commit && attempt.progress.value_or(true) && after.is_git) {
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
        notify_rejection(attempt.iteration,
                         fmt::format("--verify exited {}: {}", attempt.verify_exit.value_or(-1),
                                     last_line(attempt.verify_output)));
        outcome.completion_rule.clear();
    }
    attempt.completion_signal = !outcome.completion_rule.empty();
    // Nothing but ralph's own files (.ralph/, not in snapshots) changes the workspace between
    // here and the next attempt when it starts at once, unless --commit or --verify ran.
    if (before && !spec.commit && spec.verify_command.empty()) {
        fresh_snapshot_ = std::make_shared<workspace::snapshot>(std::move(result.after));
        fresh_snapshot_at_ = std::chrono::steady_clock::now();
    }
}

awaitable<bool> loop_runner::verify(const proto::loop_info& loop, proto::attempt_info& attempt) {
    std::vector<std::string> env =
        agent_environment(ctx_.agent_env, agent_variables(find_agent(loop.spec.agent), loop.spec),
                          std::vector<std::pair<std::string, std::string>>(loop.spec.env.begin(),
                                                                           loop.spec.env.end()));
    spawn_request request{{}, std::move(env), loop.spec.workspace, std::string()};
    spawned_process process;
    try {
        request.argv = text::split_command_words(loop.spec.verify_command);
        if (request.argv.empty()) throw std::invalid_argument("empty command");
        // In the attempt's sandbox: the agent may have rewritten the check's program.
        if (loop.spec.sandbox)
            request.argv = sandbox::wrap(bwrap_, sandbox_view_, loop.spec.workspace, request.argv);
        process = co_await off_thread(ctx_.blocking, [&] { return ctx_.reaper.spawn(request); });
    } catch (const std::exception& e) {
        attempt.verify_exit = 127;
        attempt.verify_output = std::string("cannot run --verify: ") + e.what();
        co_return false;
    }
    helper_pgid_ = process.pid;  // a cancel or stop ends the check too
    // One that came while the check was being started.
    if (stop_ == stop_kind::cancel || stop_ == stop_kind::shutdown || stop_ == stop_kind::pause)
        terminate_agent();
    net::steady_timer timeout(ctx_.io);
    timeout.expires_after(std::chrono::milliseconds(std::int64_t(loop.spec.timeout_s * 1000)));
    timeout.async_wait([this](boost::system::error_code ec) {
        if (!ec && helper_pgid_ != 0) terminate_agent();
    });
    helper_output captured;
    captured.limit = max_verify_output_bytes;
    int status = co_await finish_helper(ctx_.io, ctx_.reaper, process, captured);
    timeout.cancel();
    helper_pgid_ = 0;
    if (loop.spec.sandbox) remove_git_redirects(loop);
    std::string output = captured.out + captured.err;
    if (output.size() > max_verify_output_bytes)
        output.erase(0, output.size() - max_verify_output_bytes);
    attempt.verify_output = text::to_valid_utf8(output);
    attempt.verify_exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    co_return *attempt.verify_exit == 0;
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

void loop_runner::remove_git_redirects(const proto::loop_info& loop) {
    for (auto& what : sandbox::remove_git_redirects(loop.spec.workspace, sandbox_git_,
                                                    sandbox_view_.read_only)) {
        spdlog::warn("loop {}: {}", loop_id_, what);
        refusals_.push_back(std::move(what));
    }
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

}  // namespace ralph
