#include "daemon/loop/loop_runner.hpp"

#include "common/text.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/attempt.hpp"
#include "daemon/loop/landing.hpp"
#include "daemon/notify/notification.hpp"
#include "daemon/notify/notifier.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/workspace/workspace.hpp"

#include <spdlog/spdlog.h>

namespace ralph {
namespace {

// How old the last attempt's snapshot may be to serve as the next attempt's first one.
constexpr auto fresh_snapshot_age = std::chrono::milliseconds(50);

}  // namespace

loop_runner::loop_runner(runner_context& ctx, std::int64_t loop_id)
    : ctx_(ctx), loop_id_(loop_id), wait_timer_(ctx.io) {}

loop_runner::~loop_runner() = default;

void loop_runner::cancel() {
    stop_ = stop_kind::cancel;
    if (attempt_) attempt_->terminate();
    wait_timer_.cancel();
}

void loop_runner::stop() {
    if (stop_ == stop_kind::none) stop_ = stop_kind::shutdown;
    if (attempt_) attempt_->terminate();
    wait_timer_.cancel();
}

void loop_runner::pause() {
    if (stop_ == stop_kind::none) stop_ = stop_kind::pause;
    if (attempt_) attempt_->terminate();
    wait_timer_.cancel();
}

void loop_runner::detach() {
    if (stop_ == stop_kind::none) stop_ = stop_kind::detach;
    wait_timer_.cancel();
}

void loop_runner::adopt(std::int64_t attempt_id, const shim::started& started) {
    adopted_ = adopted_attempt{attempt_id, started};
}

void loop_runner::set_state(const state_change& change) { ctx_.change_state(loop_id_, change); }

awaitable<void> loop_runner::run() {
    try {
        co_await run_iterations();
    } catch (const std::exception& e) {
        attempt_.reset();
        if (ctx_.health.failed(e)) {
            // Nothing of the loop can be recorded now: it stays as it is, its agent goes on
            // under its shim, and ralphd takes the loop up again once it can write.
            spdlog::warn("loop {}: left as it is until ralph's state can be written again",
                         loop_id_);
            co_return;
        }
        spdlog::error("loop {}: {}", loop_id_, e.what());
        try {
            set_state({.event = proto::loop_event::fail,
                       .reason = std::string("internal error: ") + e.what()});
        } catch (const std::exception& again) {
            spdlog::error("loop {}: cannot record the failure: {}", loop_id_, again.what());
        }
    }
    ctx_.output.flush();
}

loop_record read_loop_record(store& db, const proto::loop_info& loop) {
    loop_record record;
    record.iteration = loop.iterations + 1;
    record.attempts = db.attempts_in(loop.id, record.iteration);
    record.judge_rejections = db.judge_rejections(loop.id);
    record.iterations_without_progress = db.iterations_without_progress(loop.id);
    return record;
}

awaitable<void> loop_runner::run_iterations() {
    if (adopted_) {
        // An adopted attempt's loop is running already, in its worktree if it has one.
        const adopted_attempt adopted = *adopted_;
        adopted_.reset();
        const proto::loop_info loop = ctx_.db.get_loop(loop_id_);
        attempt_ = std::make_unique<attempt_run>(ctx_, loop_id_, stop_);
        const attempt_outcome outcome =
            co_await attempt_->adopt(loop, adopted.attempt_id, adopted.started);
        attempt_.reset();
        hold_agent(outcome);
    } else {
        set_state({.event = proto::loop_event::start});
        if (!co_await make_worktree()) co_return;
    }
    while (true) {
        const proto::loop_info loop = ctx_.db.get_loop(loop_id_);
        const loop_record record = read_loop_record(ctx_.db, loop);
        const next_step step = decide_next(loop.spec, record);
        if (stop_ != stop_kind::none) {
            // An iteration the stop interrupted counts as spent (and so does one that was over
            // anyway); an iteration that ends the loop is left to the next runner, which reads
            // the same record.
            if ((stop_ == stop_kind::shutdown || stop_ == stop_kind::pause) &&
                step.kind == step_kind::end_iteration && !step.ending)
                ctx_.db.set_iterations(loop_id_, record.iteration, ctx_.clock.now_ms());
            finish_if_stopped();
            co_return;
        }
        switch (step.kind) {
            case step_kind::end_loop:
                set_state({.event = *step.ending, .reason = step.reason});
                co_return;
            case step_kind::end_iteration:
                if (!co_await end_iteration(loop, record, step)) co_return;
                break;
            case step_kind::work:
            case step_kind::judge:
                if (!co_await run_attempt(loop, record, step)) co_return;
                break;
        }
    }
}

awaitable<bool> loop_runner::run_attempt(const proto::loop_info& loop, const loop_record& record,
                                         const next_step& step) {
    if (step.not_before_ms > ctx_.clock.now_ms()) {
        co_await wait_until(step.not_before_ms, step.reason);
        if (finish_if_stopped()) co_return false;
    }
    proto::loop_info attempt_loop = loop;
    if (step.kind == step_kind::judge) attempt_loop.spec = proto::as_judge(loop.spec);
    // A degraded ralphd starts no attempt: the loop is taken up again once it can write
    // (storage_health).
    if (stop_ == stop_kind::detach || ctx_.health.degraded() || leave_unless_admitted(attempt_loop))
        co_return false;
    // The loop's own agent, or the first fallback no usage limit holds: the files are the
    // memory, so another agent can take the next iteration up.
    if (step.kind == step_kind::work)
        attempt_loop.spec =
            proto::on_agent(loop.spec, ctx_.gate.pick_agent(loop.spec, ctx_.clock.now_ms()));
    workspace::snapshot* fresh = nullptr;
    if (fresh_snapshot_ &&
        std::chrono::steady_clock::now() - fresh_snapshot_at_ <= fresh_snapshot_age)
        fresh = fresh_snapshot_.get();
    attempt_ = std::make_unique<attempt_run>(ctx_, loop_id_, stop_);
    attempt_outcome outcome =
        co_await attempt_->run(attempt_loop, record.iteration,
                               std::int64_t(record.attempts.size()) + 1, step.claim, fresh);
    attempt_.reset();
    fresh_snapshot_ = std::move(outcome.after);
    fresh_snapshot_at_ = std::chrono::steady_clock::now();
    // ralphd is leaving the agents running and came before this one started.
    if (!outcome.ran) co_return false;
    hold_agent(outcome);
    co_return true;
}

void loop_runner::hold_agent(const attempt_outcome& outcome) {
    if (outcome.record.failure != proto::failure_class::rate_limit) return;
    // Burns no retry: every loop on this agent waits for the reset, or runs on a fallback
    // meanwhile; the admission parks this one.
    const proto::loop_info loop = ctx_.db.get_loop(loop_id_);
    const std::int64_t until = usage_limit_hold_until(
        read_loop_record(ctx_.db, loop), outcome.resets_at_ms, ctx_.rate_limit_margin.count(),
        ctx_.rate_limit_wait.count(), ctx_.clock.now_ms());
    ctx_.record_hold({outcome.quota, ctx_.gate.account(), until,
                      fmt::format("{} usage limit (loop {}: {})", outcome.quota, loop_id_,
                                  describe_failure(outcome.record)),
                      ""});
}

awaitable<bool> loop_runner::end_iteration(const proto::loop_info& loop, const loop_record& record,
                                           const next_step& step) {
    if (step.ending == proto::loop_event::complete) {
        co_await complete(step.reason, record.iteration);
        co_return false;
    }
    if (step.ending) {
        set_state({.event = *step.ending, .reason = step.reason, .iterations = record.iteration});
        co_return false;
    }
    // The count and the notification of a rejection: both or neither.
    const std::int64_t now = ctx_.clock.now_ms();
    ctx_.db.in_transaction([&] {
        ctx_.db.set_iterations(loop_id_, record.iteration, now);
        if (!step.rejection.empty())
            ctx_.notices.add(rejection_notification(loop, record.iteration, step.rejection, now),
                             loop.spec.notify);
    });
    ctx_.on_counters(loop_id_);
    if (loop.spec.delay_s > 0)
        co_await wait_until(now + std::int64_t(loop.spec.delay_s * 1000),
                            "delay between iterations");
    co_return !finish_if_stopped();
}

awaitable<void> loop_runner::complete(const std::string& reason, std::int64_t iterations) {
    // As the pull request's body says it: the iterations are counted with the end state.
    proto::loop_info loop = ctx_.db.get_loop(loop_id_);
    loop.stop_reason = reason;
    loop.iterations = iterations;
    if (!loop.spec.merge && loop.spec.pr_remote.empty()) {
        set_state(
            {.event = proto::loop_event::complete, .reason = reason, .iterations = iterations});
        co_return;
    }
    const landing_tools tools{ctx_.io, ctx_.blocking, ctx_.reaper};
    const std::vector<proto::attempt_info> attempts = ctx_.db.attempts_of(loop_id_);
    const landing_way way = loop.spec.merge ? landing_way::merge : landing_way::pull_request;
    const landing landed = co_await land(tools, loop, attempts, way);
    spdlog::info("loop {}: {}", loop_id_, landed.text);
    ctx_.db.set_landing(loop_id_, landed.text, ctx_.clock.now_ms());
    set_state({.event = proto::loop_event::complete,
               .reason = reason + (loop.spec.merge ? "; merge: " : "; pr: ") + landed.text,
               .iterations = iterations});
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
    set_state({.event = proto::loop_event::fail,
               .reason = fmt::format("cannot create the worktree {} of {}: {}", spec.worktree_path,
                                     spec.worktree_source, error)});
    co_return false;
}

bool loop_runner::leave_unless_admitted(const proto::loop_info& loop) {
    auto verdict = ctx_.gate.check(loop, ctx_.clock.now_ms());
    switch (verdict.what) {
        case admission::verdict::kind::go:
            return false;
        case admission::verdict::kind::stay_queued:
            set_state({.event = proto::loop_event::requeue, .reason = verdict.reason});
            break;
        case admission::verdict::kind::wait:
            spdlog::info("loop {}: {} until {}", loop_id_, verdict.reason,
                         text::format_iso8601(verdict.until_ms));
            set_state({.event = proto::loop_event::wait,
                       .reason = verdict.reason,
                       .resume_at = verdict.until_ms,
                       .notable_wait = verdict.notable});
            break;
        case admission::verdict::kind::end:
            set_state({.event = proto::loop_event::exhaust, .reason = verdict.reason});
            break;
    }
    return true;
}

bool loop_runner::finish_if_stopped() {
    switch (stop_) {
        case stop_kind::none:
            return false;
        case stop_kind::cancel:
            set_state({.event = proto::loop_event::cancel, .reason = "cancelled by the user"});
            return true;
        case stop_kind::shutdown:
            set_state({.event = proto::loop_event::requeue,
                       .reason = "daemon stopped; continues at the next start"});
            return true;
        case stop_kind::pause:
            set_state({.event = proto::loop_event::pause, .reason = "paused by the user"});
            return true;
        case stop_kind::detach:
            // The loop stays as it is; the next ralphd re-queues or adopts it.
            return true;
    }
    return false;
}

awaitable<void> loop_runner::wait_until(std::int64_t until, const std::string& reason) {
    if (stop_ != stop_kind::none) co_return;
    const std::int64_t now = ctx_.clock.now_ms();
    set_state({.event = proto::loop_event::wait, .reason = reason, .resume_at = until});
    wait_timer_.expires_after(std::chrono::milliseconds(std::max<std::int64_t>(0, until - now)));
    boost::system::error_code ec;
    co_await wait_timer_.async_wait(net::redirect_error(use_awaitable, ec));
    if (stop_ == stop_kind::none) set_state({.event = proto::loop_event::wake});
}

}  // namespace ralph
