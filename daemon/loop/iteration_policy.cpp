#include "daemon/loop/iteration_policy.hpp"

#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ralph {
namespace {

constexpr double max_backoff_seconds = 600;
constexpr std::int64_t max_usage_limit_wait_ms = 3600 * 1000;
// A stop reason quotes the first line of a judge's reasons, cut to this many bytes.
constexpr std::size_t max_quoted_bytes = 200;

using proto::attempt_info;
using proto::failure_class;
using proto::termination;

bool ended_by_ralph(const attempt_info& attempt) {
    return attempt.how == termination::interrupted || attempt.how == termination::cancelled;
}

// A failure that counts toward the retries: not a usage limit (it burns none), not an attempt
// ralph ended itself.
bool counts_as_failure(const attempt_info& attempt) {
    return attempt.failure != failure_class::none && attempt.failure != failure_class::rate_limit &&
           !ended_by_ralph(attempt);
}

// A failure no retry mends: the loop stops at once, saying why and what to do.
std::optional<std::string> stopping_failure(const attempt_info& attempt) {
    const std::string failure = describe_failure(attempt);
    // A configuration failure's error ends with its fix (classify.cpp).
    if (attempt.how == termination::spawn_failed ||
        attempt.failure == failure_class::missing_program ||
        attempt.failure == failure_class::output_limit || attempt.failure == failure_class::config)
        return failure;
    if (attempt.failure == failure_class::auth)
        return fmt::format(
            "agent {} could not authenticate: {} (log it in or set its API key, then resubmit)",
            attempt.agent, failure);
    return std::nullopt;
}

next_step loop_ends(proto::loop_event ending, std::string reason) {
    next_step step;
    step.kind = step_kind::end_loop;
    step.ending = ending;
    step.reason = std::move(reason);
    return step;
}

// The iteration is over and goes on, unless it was the last the loop may run or the last of too
// many without progress.
next_step iteration_over(const proto::submit_params& spec, const loop_record& record) {
    next_step step;
    step.kind = step_kind::end_iteration;
    if (spec.stall_iterations > 0 && record.iterations_without_progress >= spec.stall_iterations) {
        step.ending = proto::loop_event::stall;
        step.reason = fmt::format(
            "no progress in {} iterations in a row (no commit, no change to the files or the "
            "specs)",
            spec.stall_iterations);
    } else if (spec.max_iterations > 0 && record.iteration >= spec.max_iterations) {
        step.ending = proto::loop_event::exhaust;
        step.reason = fmt::format("reached max iterations ({})", spec.max_iterations);
    }
    return step;
}

// The judge's verdict on the claim ends the iteration.
next_step judged(const proto::submit_params& spec, const loop_record& record,
                 const attempt_info& verdict) {
    if (verdict.verdict == "accept") {
        next_step step;
        step.kind = step_kind::end_iteration;
        step.ending = proto::loop_event::complete;
        step.reason = fmt::format("judge {} accepted the completion claimed in iteration {}",
                                  verdict.agent, record.iteration);
        return step;
    }
    if (record.judge_rejections >= spec.judge_max_rejections) {
        next_step step;
        step.kind = step_kind::end_iteration;
        step.ending = proto::loop_event::stall;
        step.reason =
            fmt::format("judge {} rejected the claim of completion {} time(s), last: {}",
                        verdict.agent, record.judge_rejections,
                        text::first_line_within(verdict.verdict_reasons, max_quoted_bytes));
        return step;
    }
    next_step step = iteration_over(spec, record);
    step.rejection =
        fmt::format("judge {} rejected it: {}", verdict.agent,
                    text::first_line_within(verdict.verdict_reasons, max_quoted_bytes));
    return step;
}

// The last attempt failed: the same step again after a backoff, or the loop ends.
next_step after_failure(const proto::submit_params& spec, const std::vector<attempt_info>& attempts,
                        next_step again) {
    const attempt_info& last = attempts.back();
    if (auto reason = stopping_failure(last)) return loop_ends(proto::loop_event::fail, *reason);
    // Usage limits burn no retry (the admission parks the loop until the hold ends); neither
    // does an attempt ralph itself interrupted (a pause, a stop).
    if (!counts_as_failure(last)) return again;
    const std::string failure = describe_failure(last);
    const std::string key = std::string(proto::to_string(last.failure)) + ": " + failure;
    std::int64_t failures = 0;
    std::int64_t identical = 0;  // in a row at the end, the same failure as the last
    bool in_row = true;
    for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
        if (!counts_as_failure(*it)) continue;
        ++failures;
        const std::string its_key =
            std::string(proto::to_string(it->failure)) + ": " + describe_failure(*it);
        if (in_row && its_key == key)
            ++identical;
        else
            in_row = false;
    }
    // The same failure over and over (a broken setup, not bad luck) stops the loop even when
    // retries remain.
    if (spec.stall_failures > 0 && identical >= spec.stall_failures)
        return loop_ends(proto::loop_event::stall,
                         fmt::format("{} identical failures in a row: {}", identical, failure));
    if (failures > spec.max_retries)
        return loop_ends(proto::loop_event::fail,
                         fmt::format("iteration {} failed {} time(s), last: {}", last.iteration,
                                     failures, failure));
    const double backoff =
        std::min(max_backoff_seconds, spec.retry_backoff_s * std::pow(2.0, double(failures - 1)));
    again.not_before_ms = last.ended_at + std::int64_t(backoff * 1000);
    again.reason = fmt::format("retry {} of {} after {}", failures, spec.max_retries, failure);
    return again;
}

}  // namespace

std::string describe_failure(const attempt_info& attempt) {
    if (!attempt.error.empty()) return attempt.error;
    return std::string(proto::to_string(attempt.how));
}

std::optional<completion_claim> pending_claim(const proto::submit_params& spec,
                                              const loop_record& record) {
    if (spec.judge.empty() || record.iteration < spec.min_iterations) return std::nullopt;
    for (auto it = record.attempts.rbegin(); it != record.attempts.rend(); ++it)
        if (it->kind == proto::attempt_kind::work && it->how == termination::exited &&
            it->completion_signal)
            return completion_claim{it->id, it->completion_rule, ""};
    return std::nullopt;
}

std::vector<std::string> next_step_quotas(const proto::submit_params& spec,
                                          const loop_record& record) {
    if (decide_next(spec, record).kind == step_kind::judge)
        return proto::quotas_of(proto::as_judge(spec));
    return proto::quotas_of(spec);
}

next_step decide_next(const proto::submit_params& spec, const loop_record& record) {
    if (record.attempts.empty()) {
        // Its last iteration was counted before the loop could end (an interrupted one).
        if (spec.max_iterations > 0 && record.iteration > spec.max_iterations)
            return loop_ends(proto::loop_event::exhaust,
                             fmt::format("reached max iterations ({})", spec.max_iterations));
        return {};
    }
    const attempt_info& last = record.attempts.back();
    if (last.kind == proto::attempt_kind::judge) {
        next_step judge;
        judge.kind = step_kind::judge;
        judge.claim = pending_claim(spec, record);
        // A judge attempt without a claim before it in the iteration (a record written before
        // claims were kept): its iteration's work is taken as done, without completion.
        if (!judge.claim) return iteration_over(spec, record);
        if (last.how == termination::exited) return judged(spec, record, last);
        // Only the judge's own failures count: those of the work before the claim are behind.
        std::vector<attempt_info> since_claim;
        for (const auto& attempt : record.attempts)
            if (attempt.id > judge.claim->attempt_id) since_claim.push_back(attempt);
        return after_failure(spec, since_claim, judge);
    }
    if (last.how == termination::exited) {
        const bool claims = last.completion_signal && record.iteration >= spec.min_iterations;
        if (claims && !spec.judge.empty()) {
            next_step judge;
            judge.kind = step_kind::judge;
            judge.claim = pending_claim(spec, record);
            return judge;
        }
        if (claims) {
            next_step step;
            step.kind = step_kind::end_iteration;
            step.ending = proto::loop_event::complete;
            step.reason = fmt::format("{} in iteration {}", last.completion_rule, record.iteration);
            return step;
        }
        return iteration_over(spec, record);
    }
    // An interrupted iteration counts as spent: the agent may have done work, and a daemon that
    // keeps stopping must not run a loop past max_iterations.
    if (ended_by_ralph(last)) return iteration_over(spec, record);
    return after_failure(spec, record.attempts, next_step{});
}

std::int64_t usage_limit_hold_until(const loop_record& record, std::int64_t stated_reset_ms,
                                    std::int64_t margin_ms, std::int64_t wait_ms,
                                    std::int64_t now_ms) {
    if (stated_reset_ms > 0) return stated_reset_ms + margin_ms;
    const auto limited = std::count_if(
        record.attempts.begin(), record.attempts.end(),
        [](const attempt_info& attempt) { return attempt.failure == failure_class::rate_limit; });
    const double factor = std::pow(2.0, double(std::max<std::int64_t>(0, limited - 1)));
    return now_ms +
           std::min<std::int64_t>(max_usage_limit_wait_ms, std::int64_t(double(wait_ms) * factor));
}

}  // namespace ralph
