// The iteration policy (daemon/loop/iteration_policy): what a loop does next, from its record
// alone. Each case is a record as a runner would read it — after a wait, a pause, a usage limit
// or a crash as much as in one run — and the step the policy must give.
#include "daemon/loop/iteration_policy.hpp"

#include <doctest/doctest.h>

namespace {

using ralph::completion_claim;
using ralph::decide_next;
using ralph::loop_record;
using ralph::next_step;
using ralph::next_step_quotas;
using ralph::step_kind;
using ralph::proto::attempt_info;
using ralph::proto::attempt_kind;
using ralph::proto::failure_class;
using ralph::proto::loop_event;
using ralph::proto::submit_params;
using ralph::proto::termination;

submit_params spec_of(const std::string& judge = "") {
    submit_params spec;
    spec.agent = "claude";
    spec.judge = judge;
    spec.max_iterations = 10;
    spec.min_iterations = 1;
    spec.max_retries = 3;
    spec.retry_backoff_s = 5;
    spec.stall_failures = 5;
    spec.stall_iterations = 3;
    spec.judge_max_rejections = 3;
    return spec;
}

attempt_info attempt(std::int64_t id, attempt_kind kind, termination how,
                     failure_class failure = failure_class::none) {
    attempt_info a;
    a.id = id;
    a.kind = kind;
    a.agent = kind == attempt_kind::judge ? "codex" : "claude";
    a.iteration = 4;
    a.how = how;
    a.failure = failure;
    a.ended_at = 1000 * id;
    return a;
}

attempt_info work_exited(std::int64_t id, bool claims = false) {
    attempt_info a = attempt(id, attempt_kind::work, termination::exited);
    a.completion_signal = claims;
    if (claims) a.completion_rule = "completion signal <promise>COMPLETE</promise>";
    return a;
}

attempt_info failed(std::int64_t id, failure_class failure, const std::string& error,
                    attempt_kind kind = attempt_kind::work) {
    attempt_info a = attempt(id, kind, termination::failed, failure);
    a.error = error;
    return a;
}

attempt_info verdict(std::int64_t id, const std::string& said) {
    attempt_info a = attempt(id, attempt_kind::judge, termination::exited);
    a.verdict = said;
    a.verdict_reasons = "the tests fail\nmore";
    return a;
}

loop_record record_of(std::vector<attempt_info> attempts) {
    loop_record record;
    record.iteration = 4;
    record.attempts = std::move(attempts);
    return record;
}

}  // namespace

TEST_CASE("policy: an iteration with no attempt runs the work") {
    const next_step step = decide_next(spec_of(), record_of({}));
    CHECK(step.kind == step_kind::work);
    CHECK(step.not_before_ms == 0);
    CHECK_FALSE(step.claim);
}

TEST_CASE("policy: a loop whose last iteration was counted before it could end is exhausted") {
    loop_record record = record_of({});
    record.iteration = 11;
    const next_step step = decide_next(spec_of(), record);
    CHECK(step.kind == step_kind::end_loop);
    CHECK(step.ending == loop_event::exhaust);
    CHECK(step.reason == "reached max iterations (10)");
}

TEST_CASE("policy: work that exited without a claim ends the iteration, which goes on") {
    const next_step step = decide_next(spec_of(), record_of({work_exited(7)}));
    CHECK(step.kind == step_kind::end_iteration);
    CHECK_FALSE(step.ending);
    CHECK(step.rejection.empty());
}

TEST_CASE("policy: the iteration that reaches max_iterations exhausts the loop") {
    submit_params spec = spec_of();
    spec.max_iterations = 4;
    const next_step step = decide_next(spec, record_of({work_exited(7)}));
    CHECK(step.kind == step_kind::end_iteration);
    CHECK(step.ending == loop_event::exhaust);
}

TEST_CASE("policy: too many iterations without progress stall the loop") {
    loop_record record = record_of({work_exited(7)});
    record.iterations_without_progress = 3;
    const next_step step = decide_next(spec_of(), record);
    CHECK(step.ending == loop_event::stall);
    CHECK(step.reason.starts_with("no progress in 3 iterations in a row"));
}

TEST_CASE("policy: a claim without a judge completes the loop, naming the rule") {
    const next_step step = decide_next(spec_of(), record_of({work_exited(7, true)}));
    CHECK(step.kind == step_kind::end_iteration);
    CHECK(step.ending == loop_event::complete);
    CHECK(step.reason == "completion signal <promise>COMPLETE</promise> in iteration 4");
}

TEST_CASE("policy: a claim before min_iterations is not one") {
    submit_params spec = spec_of("codex");
    spec.min_iterations = 5;
    const next_step step = decide_next(spec, record_of({work_exited(7, true)}));
    CHECK(step.kind == step_kind::end_iteration);
    CHECK_FALSE(step.ending);
}

TEST_CASE("policy: a claim with a judge goes to the judge, with the claiming attempt") {
    const next_step step = decide_next(spec_of("codex"), record_of({work_exited(7, true)}));
    CHECK(step.kind == step_kind::judge);
    REQUIRE(step.claim);
    CHECK(step.claim->attempt_id == 7);
    CHECK(step.claim->rule == "completion signal <promise>COMPLETE</promise>");
}

TEST_CASE("policy: a judge held by a usage limit is run again, never the finished work") {
    // The worker's claim stands however often the judge's agent is held: the next step is the
    // judge's, not a new run of the work (which a runner keeping the claim in memory re-ran after
    // each hold).
    const loop_record record = record_of(
        {work_exited(7, true), failed(8, failure_class::rate_limit, "429", attempt_kind::judge),
         failed(9, failure_class::rate_limit, "429", attempt_kind::judge)});
    const next_step step = decide_next(spec_of("codex"), record);
    CHECK(step.kind == step_kind::judge);
    REQUIRE(step.claim);
    CHECK(step.claim->attempt_id == 7);
    CHECK(step.not_before_ms == 0);
}

TEST_CASE("policy: a loop is admitted by the quota of its next step: its judge's for a claim") {
    submit_params spec = spec_of("codex");
    spec.fallback = {"gemini"};
    spec.quota_key = "gateway";
    using quotas = std::vector<std::string>;
    // The work (and its fallbacks) until a claim; the judge's own quota while it waits for one.
    CHECK(next_step_quotas(spec, record_of({})) == quotas{"gateway", "gemini"});
    const loop_record held_judge = record_of(
        {work_exited(7, true), failed(8, failure_class::rate_limit, "429", attempt_kind::judge)});
    CHECK(next_step_quotas(spec, held_judge) == quotas{"codex"});
    // After a rejection the next iteration's work: the worker's again.
    const loop_record rejected = record_of({work_exited(7, true), verdict(8, "REJECT")});
    CHECK(next_step_quotas(spec, rejected) == quotas{"gateway", "gemini"});
}

TEST_CASE("policy: a judge interrupted by a pause or a stop is run again on the same claim") {
    const loop_record record = record_of(
        {work_exited(7, true), attempt(8, attempt_kind::judge, termination::interrupted)});
    const next_step step = decide_next(spec_of("codex"), record);
    CHECK(step.kind == step_kind::judge);
    CHECK(step.claim->attempt_id == 7);
}

TEST_CASE("policy: the judge's failures are counted from its claim, the work's before it aside") {
    const loop_record record =
        record_of({failed(5, failure_class::crash, "boom"), failed(6, failure_class::crash, "boom"),
                   work_exited(7, true),
                   failed(8, failure_class::no_verdict, "no verdict", attempt_kind::judge)});
    const next_step step = decide_next(spec_of("codex"), record);
    CHECK(step.kind == step_kind::judge);
    CHECK(step.reason == "retry 1 of 3 after no verdict");
    CHECK(step.not_before_ms == 8000 + 5000);
}

TEST_CASE("policy: a judge failing past the retries fails the loop") {
    const loop_record record =
        record_of({work_exited(7, true), failed(8, failure_class::crash, "a", attempt_kind::judge),
                   failed(9, failure_class::crash, "b", attempt_kind::judge),
                   failed(10, failure_class::crash, "c", attempt_kind::judge),
                   failed(11, failure_class::crash, "d", attempt_kind::judge)});
    const next_step step = decide_next(spec_of("codex"), record);
    CHECK(step.kind == step_kind::end_loop);
    CHECK(step.ending == loop_event::fail);
    CHECK(step.reason == "iteration 4 failed 4 time(s), last: d");
}

TEST_CASE("policy: the judge's ACCEPT completes the loop") {
    const next_step step =
        decide_next(spec_of("codex"), record_of({work_exited(7, true), verdict(8, "accept")}));
    CHECK(step.kind == step_kind::end_iteration);
    CHECK(step.ending == loop_event::complete);
    CHECK(step.reason == "judge codex accepted the completion claimed in iteration 4");
}

TEST_CASE("policy: a REJECT ends the iteration with a notice, or stalls at the maximum") {
    loop_record record = record_of({work_exited(7, true), verdict(8, "reject")});
    record.judge_rejections = 2;
    next_step step = decide_next(spec_of("codex"), record);
    CHECK(step.kind == step_kind::end_iteration);
    CHECK_FALSE(step.ending);
    CHECK(step.rejection == "judge codex rejected it: the tests fail");
    record.judge_rejections = 3;
    step = decide_next(spec_of("codex"), record);
    CHECK(step.ending == loop_event::stall);
    CHECK(step.reason ==
          "judge codex rejected the claim of completion 3 time(s), last: the tests fail");
}

TEST_CASE("policy: a failed attempt is retried after a backoff that doubles") {
    next_step step =
        decide_next(spec_of(), record_of({failed(5, failure_class::transient, "overloaded")}));
    CHECK(step.kind == step_kind::work);
    CHECK(step.not_before_ms == 5000 + 5000);
    CHECK(step.reason == "retry 1 of 3 after overloaded");
    step = decide_next(spec_of(), record_of({failed(5, failure_class::transient, "overloaded"),
                                             failed(6, failure_class::crash, "exit 1")}));
    CHECK(step.not_before_ms == 6000 + 10000);
    CHECK(step.reason == "retry 2 of 3 after exit 1");
}

TEST_CASE("policy: failures past max_retries fail the loop; the same failure again stalls it") {
    next_step step = decide_next(
        spec_of(),
        record_of({failed(1, failure_class::crash, "a"), failed(2, failure_class::crash, "b"),
                   failed(3, failure_class::crash, "c"), failed(4, failure_class::crash, "d")}));
    CHECK(step.ending == loop_event::fail);
    CHECK(step.reason == "iteration 4 failed 4 time(s), last: d");
    submit_params spec = spec_of();
    spec.stall_failures = 2;
    step = decide_next(spec, record_of({failed(1, failure_class::crash, "same"),
                                        failed(2, failure_class::rate_limit, "429"),
                                        failed(3, failure_class::crash, "same")}));
    CHECK(step.ending == loop_event::stall);
    CHECK(step.reason == "2 identical failures in a row: same");
}

TEST_CASE("policy: a usage limit burns no retry and waits for nothing but the admission") {
    const next_step step =
        decide_next(spec_of(), record_of({failed(1, failure_class::rate_limit, "429"),
                                          failed(2, failure_class::rate_limit, "429"),
                                          failed(3, failure_class::rate_limit, "429"),
                                          failed(4, failure_class::rate_limit, "429"),
                                          failed(5, failure_class::rate_limit, "429")}));
    CHECK(step.kind == step_kind::work);
    CHECK(step.not_before_ms == 0);
}

TEST_CASE(
    "policy: a missing program, a failed start, a flood, a refused login or a configuration "
    "failure stop the loop at once") {
    attempt_info spawn =
        attempt(1, attempt_kind::work, termination::spawn_failed, failure_class::crash);
    spawn.error = "execvp: no such file";
    next_step step = decide_next(spec_of(), record_of({spawn}));
    CHECK(step.ending == loop_event::fail);
    CHECK(step.reason == "execvp: no such file");
    step = decide_next(spec_of(), record_of({failed(1, failure_class::output_limit, "flood")}));
    CHECK(step.ending == loop_event::fail);
    CHECK(step.reason == "flood");
    step = decide_next(spec_of(), record_of({failed(1, failure_class::auth, "401")}));
    CHECK(step.ending == loop_event::fail);
    CHECK(step.reason ==
          "agent claude could not authenticate: 401 (log it in or set its API key, then resubmit)");
    // With retries left: a configuration failure is the same at every attempt; its error says
    // the fix.
    const std::string missing =
        "Missing environment variable: `GW_KEY`. — start ralphd with "
        "--env-policy +GW_KEY";
    step = decide_next(spec_of(), record_of({failed(1, failure_class::config, missing)}));
    CHECK(step.ending == loop_event::fail);
    CHECK(step.reason == missing);
}

TEST_CASE("policy: an interrupted work attempt counts its iteration as spent") {
    const next_step step = decide_next(
        spec_of(), record_of({attempt(1, attempt_kind::work, termination::interrupted)}));
    CHECK(step.kind == step_kind::end_iteration);
    CHECK_FALSE(step.ending);
}

TEST_CASE("policy: a usage limit's hold ends at the stated reset plus the margin, else doubles") {
    const loop_record once = record_of({failed(1, failure_class::rate_limit, "429")});
    CHECK(ralph::usage_limit_hold_until(once, 50000, 60000, 60000, 1000) == 110000);
    CHECK(ralph::usage_limit_hold_until(once, 0, 60000, 60000, 1000) == 61000);
    const loop_record thrice = record_of({failed(1, failure_class::rate_limit, "429"),
                                          failed(2, failure_class::rate_limit, "429"),
                                          failed(3, failure_class::rate_limit, "429")});
    CHECK(ralph::usage_limit_hold_until(thrice, 0, 60000, 60000, 1000) == 241000);
    CHECK(ralph::usage_limit_hold_until(thrice, 0, 60000, 3600 * 1000, 0) == 3600 * 1000);
}
