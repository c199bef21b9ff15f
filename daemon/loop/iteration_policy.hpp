// The iteration policy: what a loop does next, decided from its record alone — the attempts of
// the iteration in progress, the judge's rejections, the iterations without progress — and
// nothing a runner keeps in memory. So a runner that takes a loop up after a wait, a pause, a
// usage limit of its judge or a crash of ralphd does exactly what the first one would have done:
// a work attempt that finished is never run again, and a claim of completion waits for its judge
// however long the judge's agent is held.
//
// An iteration is a run of attempts: work attempts until one exits (retries in between), then,
// with `--judge`, judge attempts on that attempt's claim until one gives a verdict. The iteration
// is over when an attempt exits without a claim (or with one and no judge), when the judge gives
// its verdict, or when an attempt was interrupted (the agent may have done work: it counts as
// spent); a failure past the retries, or the same failure again and again, ends the loop.
#pragma once

#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

// A work attempt's claim of completion, which its judge checks.
struct completion_claim {
    std::int64_t attempt_id = 0;
    std::string rule;          // the completion rule it met (the stop reason names it)
    std::string final_answer;  // the worker's final answer (its end), for the judge's prompt
};

// What the policy reads of a loop's record.
struct loop_record {
    std::int64_t iteration = 0;                 // the iteration in progress: those counted + 1
    std::vector<proto::attempt_info> attempts;  // of that iteration, oldest first
    std::int64_t judge_rejections = 0;          // the judge's REJECTs over the whole loop
    // The loop's last iterations in a row whose work made no progress (store).
    std::int64_t iterations_without_progress = 0;
};

enum class step_kind {
    work,           // run the iteration's work (a retry: not before `not_before_ms`)
    judge,          // run the judge on `claim` (a retry: not before `not_before_ms`)
    end_iteration,  // the iteration is over: count it, then end the loop if `ending`, else go on
    end_loop,       // the loop ends, by `ending`, before the iteration in progress starts
};

struct next_step {
    step_kind kind = step_kind::work;
    // How the loop ends (complete, stall, exhaust, fail): always for end_loop; for
    // end_iteration when the iteration is its last.
    std::optional<proto::loop_event> ending;
    // The stop reason of an ending; a retry's: why it waits ("retry 1 of 3 after …").
    std::string reason;
    std::int64_t not_before_ms = 0;         // a retry's backoff ends then (0 = now)
    std::optional<completion_claim> claim;  // judge
    // An end_iteration after a rejected claim that goes on: the rejection's text, for a push
    // notification.
    std::string rejection;
};

// What the loop does next. `record.attempts` holds no running attempt.
next_step decide_next(const proto::submit_params& spec, const loop_record& record);

// The claim of completion the iteration's attempts hold for its judge, if any: the last work
// attempt that exited with its completion rule met, from min_iterations on, when the loop has a
// judge.
std::optional<completion_claim> pending_claim(const proto::submit_params& spec,
                                              const loop_record& record);

// The quotas the loop's next step runs on: its judge's when that step judges a claim, else those
// of its own agent and its fallbacks (proto::quotas_of). What admits a loop to its next step.
std::vector<std::string> next_step_quotas(const proto::submit_params& spec,
                                          const loop_record& record);

// Until when a usage limit holds the agent of `limited` (an attempt of the iteration in progress
// that failed for it, already in `record`): the reset it stated plus `margin_ms`, else `wait_ms`
// doubled with each earlier usage limit of the iteration, at most an hour.
std::int64_t usage_limit_hold_until(const loop_record& record, std::int64_t stated_reset_ms,
                                    std::int64_t margin_ms, std::int64_t wait_ms,
                                    std::int64_t now_ms);

// The failure as the record and the stop reasons say it: its error, else its termination.
std::string describe_failure(const proto::attempt_info& attempt);

}  // namespace ralph
