#include "daemon/loop/attempt.hpp"

#include "common/agent_stream/agent_stream.hpp"
#include "common/text.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/assessment.hpp"
#include "daemon/loop/classify.hpp"
#include "daemon/loop/loop_memory.hpp"
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
#include "proto/errors.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace ralph {
namespace {

constexpr std::size_t max_verify_output_bytes = 16 << 10;

// The snapshot before the attempt, kept in its directory for a ralphd that adopts the attempt:
// only a git workspace's (HEAD and the tree), small and enough to compare with.
constexpr const char* snapshot_before_file = "before.json";

void save_snapshot_before(const std::filesystem::path& dir, const workspace::snapshot& before) {
    if (!before.is_git || !before.error.empty()) return;
    std::ofstream(dir / snapshot_before_file)
        << nlohmann::json{{"head", before.head}, {"tree", before.tree}}.dump();
}

std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::optional<workspace::snapshot> load_snapshot_before(const std::filesystem::path& dir) {
    const nlohmann::json saved =
        nlohmann::json::parse(read_text_file(dir / snapshot_before_file), nullptr, false);
    if (!saved.is_object()) return std::nullopt;
    workspace::snapshot before;
    before.is_git = true;
    before.head = saved.value("head", "");
    before.tree = saved.value("tree", "");
    return before;
}

// The shim's and the agents' clock is the real one (an agent's reset time too); ralphd's may be
// shifted (debug.clock, --test-clock).
std::int64_t on_clock(const wall_clock& clock, std::int64_t real_ms) {
    return real_ms + (clock.now_ms() - text::now_ms());
}

std::string describe_usage(const agent_stream::event& e) {
    std::string text = fmt::format("{} input, {} output tokens", e.input_tokens, e.output_tokens);
    if (e.cost_usd) text += fmt::format(", ${:.4f}", *e.cost_usd);
    return text;
}

}  // namespace

attempt_run::attempt_run(runner_context& ctx, std::int64_t loop_id, const stop_kind& stop)
    : ctx_(ctx), loop_id_(loop_id), stop_(stop), inactivity_timer_(ctx.io), kill_timer_(ctx.io) {}

attempt_run::~attempt_run() = default;

void attempt_run::terminate() {
    if (agent_) agent_->terminate();
    if (helper_pgid_ == 0) return;
    signal_group(helper_pgid_, SIGTERM);
    pid_t pgid = helper_pgid_;
    kill_timer_.expires_after(ctx_.kill_grace);
    kill_timer_.async_wait([pgid](boost::system::error_code ec) {
        if (!ec && group_alive(pgid)) signal_group(pgid, SIGKILL);
    });
}

void attempt_run::watch_inactivity(std::chrono::milliseconds limit) {
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
            terminate();
            return;
        }
        watch_inactivity(limit);
    });
}

attempt_outcome attempt_run::record_start_failure(proto::attempt_info& attempt,
                                                  const std::exception& e) {
    auto* refusal = dynamic_cast<const proto::rpc_error*>(&e);
    if (attempt.id == 0) attempt.id = ctx_.db.attempts().begin_attempt(attempt, 0);
    store_refusals(attempt.id);
    attempt.how = proto::termination::spawn_failed;
    attempt.failure = proto::failure_class::crash;
    // What the user must fix (the program, the workspace replaced by a link): said once.
    if (refusal && refusal->kind() == proto::error_kind::agent_unavailable)
        attempt.failure = proto::failure_class::missing_program;
    else if (refusal && refusal->kind() == proto::error_kind::invalid_workspace)
        attempt.failure = proto::failure_class::config;
    attempt.error = e.what();
    attempt.ended_at = ctx_.clock.now_ms();
    attempt.output_end = attempt.output_start;
    ctx_.db.attempts().finish_attempt(attempt);
    spdlog::warn("loop {}: {}", loop_id_, attempt.error);
    remove_tmpdir();
    attempt_outcome outcome;
    outcome.record = attempt;
    return outcome;
}

awaitable<attempt_outcome> attempt_run::run(const proto::loop_info& loop, std::int64_t iteration,
                                            std::int64_t attempt_number,
                                            const std::optional<completion_claim>& claim,
                                            workspace::snapshot* fresh_before) {
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
    if (!claim && fresh_before)
        before = std::move(*fresh_before);
    else if (!claim)
        before = co_await off_thread(ctx_.blocking,
                                     [&] { return workspace::take_snapshot(workspace_dir); });
    attempt.head_before = before.head;
    attempt.tree_before = before.tree;
    // What the judge's diff starts from: the workspace at the loop's first iteration.
    if (iteration == 1 && before.is_git && !before.tree.empty())
        ctx_.db.loops().set_loop_base(loop_id_, {before.head, before.tree});

    attempt_plan plan;
    try {
        setting_ = co_await set_up_attempt(ctx_, loop, attempt.kind, iteration, attempt_number);
        const attempt_inputs inputs =
            read_attempt_inputs(ctx_, loop, iteration, setting_.env, claim);
        plan = co_await off_thread(ctx_.blocking, [&] {
            return prepare_attempt(ctx_, loop, attempt, setting_, inputs, refusals_);
        });
    } catch (const std::exception& e) {
        // ralph's own storage refused a write: not the agent's failure (the runner leaves).
        if (storage_health::is_storage_error(e)) throw;
        co_return record_start_failure(attempt, e);
    }
    if (stop_ == stop_kind::detach) {
        attempt_outcome nothing_ran;
        nothing_ran.ran = false;
        co_return nothing_ran;
    }
    attempt.argv = plan.agent.argv;
    attempt.id = ctx_.db.attempts().begin_attempt(attempt, 0);
    store_refusals(attempt.id);
    const std::filesystem::path dir = ctx_.state.attempt_dir(attempt.id);
    if (!ctx_.cgroup_prefix.empty())
        plan.agent.cgroup = ctx_.cgroup_prefix + std::to_string(attempt.id);
    shim::started started;
    try {
        // Starting a process takes milliseconds (clone, exec, the shim's answer), and so can
        // creating files: off the io thread, which serves every client meanwhile.
        started = co_await off_thread(ctx_.blocking, [&] {
            storage_health::write_state([&] {
                std::filesystem::create_directory(dir);
                save_snapshot_before(dir, before);
            });
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
    ctx_.db.attempts().set_attempt_process(attempt.id, started.agent_pid, started.agent_start_time);
    spdlog::info("loop {}: iteration {} attempt {} started (pid {}, shim {})", loop_id_, iteration,
                 attempt_number, started.agent_pid, started.shim_pid);
    attempt_process process(ctx_.io, dir, ctx_.output.file_of(loop_id_), started);
    std::unique_ptr<agent_stream::parser> parser =
        agent_stream::make_parser(find_agent(loop.spec.agent).output_format(), plan.prompt);
    const std::optional<int> status = co_await supervise(loop, attempt, process, *parser, false, 0);
    remove_tmpdir();
    co_return co_await record(loop, attempt, process, *parser, claim ? nullptr : &before, status);
}

awaitable<attempt_outcome> attempt_run::adopt(const proto::loop_info& its_loop,
                                              std::int64_t attempt_id,
                                              const shim::started& started) {
    proto::attempt_info attempt = ctx_.db.attempts().get_attempt(attempt_id);
    // The loop as the attempt saw it: on the agent it ran on (its own or a fallback), or as its
    // judge.
    const bool judging = attempt.kind == proto::attempt_kind::judge;
    proto::loop_info loop = its_loop;
    loop.spec = judging ? proto::as_judge(its_loop.spec)
                        : proto::on_agent(its_loop.spec, {attempt.agent, attempt.model});
    const std::filesystem::path dir = ctx_.state.attempt_dir(attempt.id);
    spdlog::info("loop {}: adopting iteration {} attempt {} (pid {}, shim {})", loop_id_,
                 attempt.iteration, attempt.attempt, started.agent_pid, started.shim_pid);
    // What the attempt's --verify needs: the sandbox it runs in, as the agent's (a judge runs
    // none).
    if (!judging)
        setting_ =
            co_await set_up_attempt(ctx_, loop, attempt.kind, attempt.iteration, attempt.attempt);
    attempt_process process(ctx_.io, dir, ctx_.output.file_of(loop_id_), started);
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
    const std::optional<int> status = co_await supervise(
        loop, attempt, process, *parser, true, ctx_.db.attempts().stream_event_count(attempt.id));
    remove_tmpdir();
    co_return co_await record(loop, attempt, process, *parser, before ? &*before : nullptr, status);
}

void attempt_run::remove_tmpdir() {
    if (setting_.tmpdir.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(setting_.tmpdir, ignored);
}

awaitable<std::optional<int>> attempt_run::supervise(const proto::loop_info& loop,
                                                     const proto::attempt_info& attempt,
                                                     attempt_process& process,
                                                     agent_stream::parser& parser, bool adopted,
                                                     std::int64_t skip_events) {
    agent_ = &process;
    parser_ = &parser;
    timed_out_ = false;
    hung_ = false;
    // A cancel or stop that came while the agent was starting applies to it too.
    if (stop_ != stop_kind::none && stop_ != stop_kind::detach) terminate();

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
        terminate();
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

awaitable<attempt_outcome> attempt_run::record(const proto::loop_info& loop,
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
    attempt.summary = summary_line(said.final_answer);
    attempt_end end = attempt_end::by_itself;
    if (stop_ == stop_kind::cancel)
        end = attempt_end::cancelled;
    else if (stop_ == stop_kind::shutdown || stop_ == stop_kind::pause)
        end = attempt_end::stopped;
    else if (timed_out_ || hung_)
        end = attempt_end::timed_out;
    classify_attempt(attempt, end, status, said);
    if (process.exit() && process.exit()->over_output_limit) {
        attempt.how = proto::termination::failed;
        attempt.failure = proto::failure_class::output_limit;
        attempt.error = fmt::format(
            "the agent wrote more than {} bytes of output in one attempt and was ended (ralphd "
            "--max-output raises the bound)",
            ctx_.max_output_bytes);
    }
    if (attempt.how == proto::termination::timeout)
        attempt.error = hung_ ? fmt::format(
                                    "no output for {}s while no tool was running "
                                    "(inactivity timeout)",
                                    loop.spec.inactivity_timeout_s)
                              : fmt::format("timed out after {}s", loop.spec.timeout_s);
    attempt_outcome outcome;
    if (attempt.how == proto::termination::exited && attempt.kind == proto::attempt_kind::judge)
        read_verdict(said.final_answer, attempt);
    else if (attempt.how == proto::termination::exited)
        outcome.after = co_await assess(loop, said.final_answer, before, attempt);
    store_refusals(attempt.id);
    ctx_.output.flush();
    attempt.output_end = ctx_.output.committed_end(loop_id_);
    attempt.ended_at =
        process.exit() ? on_clock(ctx_.clock, process.exit()->ended_at_ms) : ctx_.clock.now_ms();
    // A claim of completion keeps the answer that makes it, for its judge (also after a restart).
    ctx_.db.attempts().finish_attempt(
        attempt, last_rows, attempt.completion_signal ? said.final_answer : std::string());
    ctx_.on_counters(loop_id_);
    std::error_code ignored;
    std::filesystem::remove_all(ctx_.state.attempt_dir(attempt.id), ignored);
    spdlog::info("loop {}: iteration {} {} attempt {} ended: {}{}{}", loop_id_, attempt.iteration,
                 proto::to_string(attempt.kind), attempt.attempt, proto::to_string(attempt.how),
                 attempt.failure == proto::failure_class::none
                     ? ""
                     : " (" + std::string(proto::to_string(attempt.failure)) + ")",
                 attempt.completion_signal ? " (completion signal)" : "");
    outcome.record = attempt;
    outcome.quota = proto::quota_of(loop.spec);
    if (said.resets_at_ms > 0) outcome.resets_at_ms = on_clock(ctx_.clock, said.resets_at_ms);
    co_return outcome;
}

awaitable<std::shared_ptr<workspace::snapshot>> attempt_run::assess(
    const proto::loop_info& loop, const std::string& final_answer,
    const workspace::snapshot* before, proto::attempt_info& attempt) {
    const auto& spec = loop.spec;
    const std::vector<std::string> notes = extract_notes(final_answer);
    const std::int64_t now = ctx_.clock.now_ms();
    attempt.feedback = extract_feedback(final_answer);
    // One trip to the pool for the notes, the snapshot and both comparisons: each trip waits for
    // a thread to wake up twice.
    workspace_after found = co_await off_thread(ctx_.blocking, [&] {
        return look_at_workspace(loop, attempt.iteration, notes, before, now);
    });
    if (!found.notes_refused.empty()) refused(found.notes_refused);
    if (!found.after.refused.empty())
        refused("git snapshots and --commit in " + spec.workspace + ": " + found.after.refused);
    record_changes(attempt, before, found);
    if (spec.commit && attempt.progress.value_or(true) && found.after.is_git) {
        const std::filesystem::path workspace_dir = spec.workspace;
        const std::string message = fmt::format("ralph: loop {} ({}), iteration {}\n\n{}", loop_id_,
                                                spec.name, attempt.iteration, attempt.summary);
        std::string error;
        std::string head = co_await off_thread(
            ctx_.blocking, [&] { return workspace::commit_all(workspace_dir, message, error); });
        if (!error.empty())
            spdlog::warn("loop {}: --commit failed: {}", loop_id_, error);
        else
            attempt.head_after = head;
    }

    attempt.completion_rule = completion_rule(spec, final_answer);
    if (!attempt.completion_rule.empty() && attempt.iteration >= spec.min_iterations &&
        !spec.verify_command.empty() && !co_await verify(loop, attempt)) {
        spdlog::info("loop {}: {} not accepted: --verify exited {}", loop_id_,
                     attempt.completion_rule, attempt.verify_exit.value_or(-1));
        const std::string why =
            fmt::format("--verify exited {}: {}", attempt.verify_exit.value_or(-1),
                        last_line(attempt.verify_output));
        ctx_.notices.add(
            rejection_notification(ctx_.db.loops().get_loop(loop_id_), attempt.iteration, why, now),
            spec.notify);
        attempt.completion_rule.clear();
    }
    attempt.completion_signal = !attempt.completion_rule.empty();
    // Nothing but ralph's own files (.ralph/, not in snapshots) changes the workspace between
    // here and the next attempt when it starts at once, unless --commit or --verify ran.
    if (!before || spec.commit || !spec.verify_command.empty()) co_return nullptr;
    co_return std::make_shared<workspace::snapshot>(std::move(found.after));
}

awaitable<bool> attempt_run::verify(const proto::loop_info& loop, proto::attempt_info& attempt) {
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
        if (loop.spec.sandbox) {
            sandbox::layout view = setting_.view;
            for (auto& path : sandbox::program_paths(
                     resolve_program(request.argv[0], request.env, loop.spec.workspace),
                     view.hidden))
                view.read_only.push_back(std::move(path));
            request.argv = sandbox::wrap(setting_.bwrap, view, loop.spec.workspace, request.argv);
        }
        process = co_await off_thread(ctx_.blocking, [&] { return ctx_.reaper.spawn(request); });
    } catch (const std::exception& e) {
        attempt.verify_exit = 127;
        attempt.verify_output = std::string("cannot run --verify: ") + e.what();
        co_return false;
    }
    helper_pgid_ = process.pid;  // a cancel or stop ends the check too
    // One that came while the check was being started.
    if (stop_ == stop_kind::cancel || stop_ == stop_kind::shutdown || stop_ == stop_kind::pause)
        terminate();
    net::steady_timer timeout(ctx_.io);
    timeout.expires_after(std::chrono::milliseconds(std::int64_t(loop.spec.timeout_s * 1000)));
    timeout.async_wait([this](boost::system::error_code ec) {
        if (!ec && helper_pgid_ != 0) terminate();
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

std::vector<proto::event_info> attempt_run::event_rows(std::int64_t attempt_id,
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

void attempt_run::store_events(std::int64_t attempt_id, std::vector<agent_stream::event>& events) {
    if (events.empty()) return;
    ctx_.db.attempts().add_events(loop_id_, event_rows(attempt_id, events));
}

void attempt_run::refused(const std::string& what) {
    spdlog::warn("loop {}: {}; skipped", loop_id_, what);
    refusals_.push_back(what + "; skipped");
}

void attempt_run::remove_git_redirects(const proto::loop_info& loop) {
    for (auto& what : sandbox::remove_git_redirects(loop.spec.workspace, setting_.git,
                                                    setting_.view.read_only)) {
        spdlog::warn("loop {}: {}", loop_id_, what);
        refusals_.push_back(std::move(what));
    }
}

void attempt_run::store_refusals(std::int64_t attempt_id) {
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
    ctx_.db.attempts().add_events(loop_id_, rows);
}

}  // namespace ralph
