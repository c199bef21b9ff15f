#include "daemon/scheduler/scheduler.hpp"

#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace ralph {

scheduler::scheduler(runner_context& ctx) : ctx_(ctx), wake_timer_(ctx.io) {}

proto::loop_info scheduler::submit(const proto::submit_params& spec) {
    if (shutting_down_)
        throw proto::rpc_error(proto::error_kind::shutting_down,
                               "ralphd is shutting down and takes no new loops");
    std::int64_t id = ctx_.db.insert_loop(spec, ctx_.clock.now_ms());
    spdlog::info("loop {} submitted: agent {} in {}", id, spec.agent, spec.workspace);
    ctx_.on_state(id, proto::loop_state::queued);
    // After the reply: whoever submits waits for no loop to start.
    net::post(ctx_.io, [this] { schedule(); });
    return ctx_.db.get_loop(id);
}

proto::loop_info scheduler::unended_loop(std::int64_t loop_id, const char* action) {
    proto::loop_info loop = ctx_.db.get_loop(loop_id);
    if (proto::is_terminal(loop.state))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot {} loop {}: it has already ended ({})", action,
                                           loop_id, proto::to_string(loop.state)));
    return loop;
}

proto::loop_info scheduler::cancel(std::int64_t loop_id) {
    unended_loop(loop_id, "cancel");
    if (auto it = running_.find(loop_id); it != running_.end()) {
        it->second.runner->cancel();
        return ctx_.db.get_loop(loop_id);
    }
    set_state(loop_id, proto::loop_event::cancel, "cancelled by the user", 0);
    return ctx_.db.get_loop(loop_id);
}

proto::loop_info scheduler::pause(std::int64_t loop_id) {
    proto::loop_info loop = unended_loop(loop_id, "pause");
    if (auto it = running_.find(loop_id); it != running_.end()) {
        it->second.runner->pause();
        return ctx_.db.get_loop(loop_id);
    }
    if (loop.state != proto::loop_state::paused)
        set_state(loop_id, proto::loop_event::pause, "paused by the user", 0);
    return ctx_.db.get_loop(loop_id);
}

proto::loop_info scheduler::resume(std::int64_t loop_id) {
    proto::loop_info loop = unended_loop(loop_id, "resume");
    if (loop.state != proto::loop_state::paused || running_.count(loop_id))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot resume loop {}: it is {}, not paused", loop_id,
                                           proto::to_string(loop.state)));
    set_state(loop_id, proto::loop_event::resume, "", 0);
    schedule();
    return ctx_.db.get_loop(loop_id);
}

void scheduler::check_can_requeue(const proto::loop_info& loop, const char* action) {
    if (shutting_down_)
        throw proto::rpc_error(proto::error_kind::shutting_down,
                               "ralphd is shutting down and starts no loop");
    if (running_.count(loop.id))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot {} loop {}: its agent is still being stopped; "
                                           "try again in a moment",
                                           action, loop.id));
    const admission::verdict own = ctx_.gate.for_loop(loop, ctx_.clock.now_ms());
    if (own.what == admission::verdict::kind::end)
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot {} loop {}: {}; it would end again at once (submit it again with "
                        "a higher --max-tokens or --max-cost)",
                        action, loop.id, own.reason));
}

proto::loop_info scheduler::retry(std::int64_t loop_id) {
    const proto::loop_info loop = ctx_.db.get_loop(loop_id);
    const std::string state(proto::to_string(loop.state));
    if (!proto::is_terminal(loop.state))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot retry loop {}: it is {}, not ended (it goes on "
                                           "by itself{})",
                                           loop_id, state,
                                           loop.state == proto::loop_state::paused
                                               ? "; ralphctl resume " + std::to_string(loop_id)
                                               : std::string()));
    if (loop.state == proto::loop_state::exhausted)
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot retry loop {}: it is exhausted ({}); give it more iterations: "
                        "ralphctl extend {} --by N",
                        loop_id, loop.stop_reason, loop_id));
    if (!proto::next_state(loop.state, proto::loop_event::retry))
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot retry loop {}: it {}; submit it again for more", loop_id, state));
    check_can_requeue(loop, "retry");
    set_state(loop_id, proto::loop_event::retry, "", 0);
    spdlog::info("loop {} retried after {} iteration(s): it was {}", loop_id, loop.iterations,
                 state);
    schedule();
    return ctx_.db.get_loop(loop_id);
}

proto::loop_info scheduler::extend(std::int64_t loop_id, std::int64_t more) {
    proto::loop_info loop = ctx_.db.get_loop(loop_id);
    if (loop.spec.max_iterations == 0)
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot extend loop {}: it has no iteration limit "
                                           "(max_iterations 0)",
                                           loop_id));
    const bool ended = proto::is_terminal(loop.state);
    if (ended && loop.state != proto::loop_state::exhausted)
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot extend loop {}: it is {}, not exhausted{}", loop_id,
                        proto::to_string(loop.state),
                        proto::next_state(loop.state, proto::loop_event::retry)
                            ? fmt::format("; run it again: ralphctl retry {}", loop_id)
                            : std::string()));
    // An exhausted loop gets `more` beyond those it ran (an interrupted last iteration may have
    // counted one past the limit); one still going gets `more` beyond its limit.
    const std::int64_t base =
        ended ? std::max(loop.iterations, loop.spec.max_iterations) : loop.spec.max_iterations;
    const std::int64_t raised = std::min(base + more, proto::max_iterations);
    if (ended) check_can_requeue(loop, "extend");
    // The limit first: a crash before the state change leaves an exhausted loop with a higher
    // limit, which extend raises again.
    ctx_.db.set_max_iterations(loop_id, raised, ctx_.clock.now_ms());
    spdlog::info("loop {}: max iterations {} → {}", loop_id, loop.spec.max_iterations, raised);
    if (!ended) {
        ctx_.on_counters(loop_id);
        return ctx_.db.get_loop(loop_id);
    }
    set_state(loop_id, proto::loop_event::extend, "", 0);
    schedule();
    return ctx_.db.get_loop(loop_id);
}

bool scheduler::workspace_busy(const std::string& workspace) const {
    return std::ranges::any_of(
        running_, [&workspace](const auto& run) { return run.second.workspace == workspace; });
}

void scheduler::schedule() {
    // A degraded ralphd starts nothing (storage_health); it schedules again once it can write.
    if (shutting_down_ || ctx_.health.degraded()) return;
    try {
        schedule_now();
    } catch (const std::exception& e) {
        if (!ctx_.health.failed(e)) throw;
    }
}

void scheduler::schedule_now() {
    const std::int64_t now = ctx_.clock.now_ms();
    std::int64_t next_wake = 0;
    auto wake_by = [&next_wake](std::int64_t when) {
        if (next_wake == 0 || when < next_wake) next_wake = when;
    };
    auto park = [&](std::int64_t loop_id, const admission::verdict& verdict) {
        set_state(loop_id, proto::loop_event::wait, verdict.reason, verdict.until_ms,
                  verdict.notable);
        wake_by(verdict.until_ms);
    };
    // Parked loops (waiting without a runner) whose time has come are queued again.
    for (const auto& loop : ctx_.db.list_loops({proto::loop_state::waiting}, 0)) {
        if (running_.count(loop.id)) continue;  // waiting inside its runner: a delay or backoff
        if (loop.resume_at <= now)
            set_state(loop.id, proto::loop_event::requeue, "", 0);
        else
            wake_by(loop.resume_at);
    }
    const admission::verdict global = ctx_.gate.global(now);
    if (global.what == admission::verdict::kind::stay_queued) {
        wake_at(next_wake);
        return;
    }
    const auto max_concurrent = std::size_t(ctx_.gate.scheduler_settings().max_concurrent);
    // Every slot taken and no usage limit to park a loop for: no queued loop starts or waits, so
    // the queue (which may hold thousands) is not read.
    if (global.go() && running_.size() >= max_concurrent && !ctx_.gate.any_agent_held(now)) {
        wake_at(next_wake);
        return;
    }
    std::set<std::string> busy_workspaces;
    for (const auto& [id, run] : running_) busy_workspaces.insert(run.workspace);
    // One lookup per set of quotas, not per queued loop: a long queue mostly shares a few.
    std::map<std::vector<std::string>, admission::verdict> quotas;
    for (const auto& queued : ctx_.db.queued_loops()) {
        if (running_.count(queued.id)) continue;  // its runner is still ending (paused, resumed)
        if (!global.go()) {
            park(queued.id, global);
            continue;
        }
        // A loop whose claim waits for its judge is admitted by its judge's quota, not by its
        // worker's.
        std::vector<std::string> next_quotas = queued.quotas;
        if (queued.may_judge_next) {
            const proto::loop_info loop = ctx_.db.get_loop(queued.id);
            next_quotas = next_step_quotas(loop.spec, read_loop_record(ctx_.db, loop));
        }
        auto held = quotas.find(next_quotas);
        if (held == quotas.end())
            held = quotas.emplace(next_quotas, ctx_.gate.for_quotas(next_quotas, now)).first;
        if (!held->second.go()) {
            park(queued.id, held->second);
            continue;
        }
        if (running_.size() >= max_concurrent) continue;
        // A second loop on the same workspace waits for the first to end.
        if (busy_workspaces.count(queued.workspace)) continue;
        // The loop's own budgets; a loop past its cap starts, and its runner ends it.
        auto own = ctx_.gate.for_loop(ctx_.db.get_loop(queued.id), now);
        if (own.what == admission::verdict::kind::wait) {
            park(queued.id, own);
            continue;
        }
        busy_workspaces.insert(queued.workspace);
        start(queued.id, queued.workspace);
    }
    wake_at(next_wake);
}

void scheduler::reconsider() {
    if (shutting_down_) return;
    for (const auto& loop : ctx_.db.list_loops({proto::loop_state::waiting}, 0))
        if (!running_.count(loop.id)) set_state(loop.id, proto::loop_event::requeue, "", 0);
    schedule();
}

void scheduler::wake_at(std::int64_t when) {
    if (when == 0) {
        wake_timer_.cancel();
        return;
    }
    wake_timer_.expires_after(
        std::chrono::milliseconds(std::max<std::int64_t>(0, when - ctx_.clock.now_ms())));
    wake_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) schedule();
    });
}

void scheduler::set_state(std::int64_t loop_id, proto::loop_event event, const std::string& reason,
                          std::int64_t resume_at, bool notable_wait) {
    ctx_.change_state(
        loop_id,
        {.event = event, .reason = reason, .resume_at = resume_at, .notable_wait = notable_wait});
}

void scheduler::start(std::int64_t loop_id, const std::string& workspace) {
    launch(std::make_unique<loop_runner>(ctx_, loop_id), workspace);
}

void scheduler::adopt(std::int64_t loop_id, std::int64_t attempt_id, const shim::started& started) {
    auto runner = std::make_unique<loop_runner>(ctx_, loop_id);
    runner->adopt(attempt_id, started);
    launch(std::move(runner), ctx_.db.get_loop(loop_id).spec.workspace);
}

void scheduler::launch(std::unique_ptr<loop_runner> runner, const std::string& workspace) {
    const std::int64_t loop_id = runner->loop_id();
    loop_runner& ref = *runner;
    running_.emplace(loop_id, running_loop{std::move(runner), workspace});
    net::co_spawn(ctx_.io, ref.run(), [this, loop_id](std::exception_ptr) {
        // Let the finished coroutine unwind before its runner is destroyed.
        net::post(ctx_.io, [this, loop_id] { finished(loop_id); });
    });
}

void scheduler::finished(std::int64_t loop_id) {
    running_.erase(loop_id);
    if (shutting_down_) {
        if (running_.empty() && on_all_stopped_) std::exchange(on_all_stopped_, nullptr)();
        return;
    }
    schedule();
}

void scheduler::shutdown(std::function<void()> done) {
    shutting_down_ = true;
    wake_timer_.cancel();
    on_all_stopped_ = std::move(done);
    if (running_.empty()) {
        std::exchange(on_all_stopped_, nullptr)();
        return;
    }
    for (auto& [id, run] : running_) run.runner->stop();
}

void scheduler::detach() {
    shutting_down_ = true;
    wake_timer_.cancel();
    for (auto& [id, run] : running_) run.runner->detach();
}

}  // namespace ralph
