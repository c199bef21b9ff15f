// The API's types (proto/methods.hpp): every method's request and result survive their JSON
// conversion (to_json, then from_json) unchanged — the daemon and ralphctl read what the other
// wrote. A method whose types have no sample here does not link.
#include "proto/methods.hpp"

#include "daemon/rpc/registry.hpp"
#include "daemon/server/websocket_session.hpp"
#include "proto/errors.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <tuple>
#include <type_traits>

namespace proto = ralph::proto;
namespace method = ralph::proto::method;

namespace {

// Times go over the wire in milliseconds.
constexpr std::int64_t t0 = 1'795'000'000'123;

template <typename T>
T sample();

template <>
proto::no_params sample() {
    return {};
}
template <>
proto::done sample() {
    return {};
}
template <>
proto::shutdown_request sample() {
    return {true};
}

template <>
proto::submit_params sample() {
    proto::submit_params p;
    p.name = "api";
    p.workspace = "/src/api";
    p.agent = "claude";
    p.model = "opus";
    p.args = {"--flag", "two words"};
    p.fallback = {"codex:o3", "gemini"};
    p.judge = "command";
    p.judge_model = "m";
    p.judge_command = "review {prompt_file}";
    p.judge_max_rejections = 5;
    p.judge_prompt = "Review {{prompt}}.";
    p.env = {{"API_KEY", "secret"}};
    p.notify = {"https://hooks.example.org"};  // nothing to redact: the loop's JSON has it whole
    p.prompt = "Implement SPECS.md";
    p.completion_phrase = "DONE";
    p.max_iterations = 40;
    p.min_iterations = 2;
    p.timeout_s = 600.5;
    p.delay_s = 0;
    p.max_retries = 1;
    p.priority = -3;
    p.backlog_rule = true;
    p.verify_command = "make test";
    p.commit = true;
    p.stall_failures = 0;
    p.max_cost_usd = 2.5;
    p.on_done = "notify-send done";
    p.worktree = true;
    p.sandbox = true;
    p.sandbox_offline = true;
    p.allow_foreign_workspace = true;
    p.worktree_path = "/state/worktrees/loop-7";
    p.worktree_branch = "ralph/loop-7";
    p.worktree_target = "main";
    p.merge = true;
    p.delete_branch = true;
    p.pr_remote = "upstream";
    p.idempotency_key = "nightly";
    p.dry_run = true;
    return p;
}

template <>
proto::loop_info sample() {
    proto::loop_info loop;
    loop.id = 7;
    loop.spec = sample<proto::submit_params>();
    loop.spec.env = {{"API_KEY", ""}};  // the API carries the names only
    loop.state = proto::loop_state::waiting;
    loop.stop_reason = "delay between iterations";
    loop.iterations = 3;
    loop.attempts = 5;
    loop.retries = 2;
    loop.created_at = t0;
    loop.started_at = t0 + 1;
    loop.updated_at = t0 + 2;
    loop.resume_at = t0 + 3;
    loop.output_bytes = 12345;
    loop.usage = {100, 20, 0.25, 4, 9};
    loop.landing = "merged into main (fast-forward) at 0123456789ab";
    return loop;
}

template <>
proto::agent_info sample() {
    return {"claude", "Claude Code",
            "claude", "/usr/bin/claude",
            "claude", true,
            true,     true,
            true,     {{"ANTHROPIC_API_KEY"}, {"MYGATEWAY_KEY"}, {"VAULT_TOKEN"}}};
}

template <>
proto::attempt_info sample() {
    proto::attempt_info a;
    a.id = 11;
    a.loop_id = 7;
    a.iteration = 3;
    a.attempt = 2;
    a.agent = "claude";
    a.model = "opus";
    a.argv = {"claude", "-p"};
    a.pid = 4242;
    a.started_at = t0;
    a.ended_at = t0 + 5000;
    a.how = proto::termination::failed;
    a.exit_code = 1;
    a.failure = proto::failure_class::transient;
    a.error = "HTTP 529";
    a.usage = {10, 2, std::nullopt, 1, 0};
    a.summary = "first line";
    a.head_before = "aaa";
    a.head_after = "bbb";
    a.tree_before = "ccc";
    a.tree_after = "ddd";
    a.files_changed = 2;
    a.insertions = 10;
    a.deletions = 1;
    a.progress = true;
    a.feedback = proto::agent_feedback{};
    a.feedback->score = 7;
    a.feedback->summary = "ok";
    a.feedback->next_steps = "a\nb";
    a.verify_exit = 0;
    a.verify_output = "tests pass";
    a.output_start = 100;
    a.output_end = 200;
    a.kind = proto::attempt_kind::judge;
    a.verdict = "reject";
    a.verdict_reasons = "tests fail";
    return a;
}

template <>
proto::event_info sample() {
    return {5, 11, 3, t0, "tool_use", "Bash", "ls"};
}

template <>
proto::daemon_info sample() {
    return {"0.1.0",
            1,
            99,
            "/run/ralphd.sock",
            "/state/ralph.db",
            t0,
            2,
            {{"queued", 1}},
            {"degraded", "disk full", "free space", t0, 3},
            "box",
            "work",
            {{"build1", "ssh://me@build1", true, "", t0},
             {"build2", "ssh://build2:2222", false, "ssh exited with status 255", t0}},
            {"https://ntfy.sh/…"}};
}

template <>
proto::loop_id_request sample() {
    return {7};
}
template <>
proto::extend_request sample() {
    return {7, 5};
}
template <>
proto::removal_result sample() {
    return {7, 12, 340, 52'000, true};
}
template <>
proto::submit_result sample() {
    // A dry run's answer: its loop (dry_run) and the daemon's capacity.
    return {sample<proto::loop_info>(),
            false,
            {"a warning"},
            proto::host_capacity{4, 3, 0, 2, true, "the scheduler is paused", true, true, t0 + 4}};
}
template <>
proto::list_request sample() {
    return {{proto::loop_state::queued, proto::loop_state::running},
            50,
            120,
            {proto::summary_field::id, proto::summary_field::state}};
}
template <>
proto::loop_list sample() {
    // Summaries: only the summary fields of a loop go over the wire.
    proto::loop_info loop;
    loop.id = 7;
    loop.spec.name = "api";
    loop.spec.workspace = "/src/api";
    loop.spec.agent = "codex";
    loop.spec.max_iterations = 9;
    loop.state = proto::loop_state::running;
    loop.iterations = 2;
    loop.created_at = t0;
    loop.usage.cost_usd = 1.5;
    return {{loop, loop}, {}, 5000};
}
template <>
proto::loop_detail sample() {
    return {sample<proto::loop_info>(), sample<proto::agent_info>()};
}
template <>
proto::attempt_list sample() {
    return {{sample<proto::attempt_info>()}};
}
template <>
proto::diff_request sample() {
    return {7, 11, 4096};
}
template <>
proto::attempt_diff sample() {
    return {7, 11, 3, "diff --git a/a.txt b/a.txt\n", true, ""};
}
template <>
proto::steer_request sample() {
    return {7, "the tests live in t/"};
}
template <>
proto::steer_result sample() {
    return {7, 3, 4};
}
template <>
proto::landing_result sample() {
    return {sample<proto::loop_info>(), true};
}
template <>
proto::events_request sample() {
    return {7, 2, 40, 500};
}
template <>
proto::event_list sample() {
    return {{sample<proto::event_info>()}, 5};
}
template <>
proto::output_request sample() {
    return {7, 100, std::nullopt, 4096, "base64", false};
}
template <>
proto::output_page sample() {
    return {7,          100,
            110,        500,
            "aGVsbG8=", "base64",
            "codex",    proto::loop_state::completed,
            true,       {2, 1, proto::attempt_kind::judge}};
}
template <>
proto::tail_started sample() {
    return {7, 100, proto::loop_state::waiting, "waiting for the global budget", 1764000000000};
}
template <>
proto::subscription sample() {
    return {true};
}
template <>
proto::agent_list sample() {
    return {{sample<proto::agent_info>()}, {"HOME", "PATH"}};
}
template <>
proto::scheduler_changes sample() {
    return {3, true, std::string("01:00-07:00")};
}
template <>
proto::scheduler_state sample() {
    return {{3, false, "22:00-07:00"}, false, t0, 1, {{"running", 1}}};
}
template <>
proto::budget_request sample() {
    return {7};
}
template <>
proto::budget_changes sample() {
    return {10, std::nullopt, 1'000'000, 20.5};
}
template <>
proto::budget_state sample() {
    return {t0,
            {10, 100, 1'000'000, 20.5},
            {{"iterations_per_hour", 0, 10, 10, 3'600'000, t0 + 60'000}},
            {{"claude", "default", t0 + 3'600'000, "usage limit", ""}}};
}
template <>
proto::notify_test_request sample() {
    return {"ntfy+https://ntfy.example.org/night"};
}
template <>
proto::notify_test_result sample() {
    return {{{"https://ntfy.example.org/…", "ntfy", false, 503, "answered 503 Service Unavailable"},
             {"http://127.0.0.1:9/…", "generic", true, 200, ""}}};
}
template <>
proto::web_info sample() {
    return {std::string(64, 'a'), "http://127.0.0.1:7177/login?token=" + std::string(64, 'a')};
}
template <>
proto::web_login_code sample() {
    return {"http://127.0.0.1:7177/login?code=" + std::string(32, 'c'), t0 + 60'000};
}
template <>
proto::clock_request sample() {
    return {t0, 60'000};
}
template <>
proto::clock_state sample() {
    return {t0};
}
template <>
proto::report_request sample() {
    return {t0};
}
template <>
proto::report sample() {
    proto::report r;
    r.since = t0;
    r.until = t0 + 86'400'000;
    proto::report_loop loop;
    loop.id = 7;
    loop.name = "api";
    loop.state = proto::loop_state::completed;
    loop.created_at = t0;
    loop.finished_at = t0 + 1000;
    loop.iterations_total = 4;
    loop.duration_ms = 1000;
    loop.head_before = "aaa";
    loop.activity.attempts = 5;
    loop.activity.commits = 2;
    loop.activity.usage.cost_usd = 0.5;
    loop.activity.agent_ms = 900;
    loop.activity.failures = {{"crash", 1}};
    r.loops = {loop};
    proto::add_totals(r);
    return r;
}
template <>
proto::gc_request sample() {
    return {3600, true};
}
template <>
proto::gc_result sample() {
    return {true, t0, true, {1, 2}, {3}, {2}, 10, 20, 4096};
}

template <>
proto::agent_hold sample() {
    return {"claude", "work", t0 + 3'600'000, "claude usage limit (loop 3: …)", "build1"};
}
template <>
proto::peer_link_request sample() {
    return {"build1", {sample<proto::agent_hold>()}};
}
template <>
proto::peer_link_result sample() {
    return {"laptop", {sample<proto::agent_hold>(), {"codex", "default", t0, "codex", ""}}};
}
template <>
proto::peer_hold_result sample() {
    return {true};
}

template <typename T>
void check_round_trip() {
    const T value = sample<T>();
    const nlohmann::json wire = value;
    CAPTURE(wire.dump());
    CHECK(wire.get<T>() == value);
}

template <typename... Methods>
void check_methods(std::type_identity<std::tuple<Methods...>>) {
    (check_round_trip<typename Methods::request>(), ...);
    (check_round_trip<typename Methods::result>(), ...);
}

}  // namespace

TEST_CASE("proto: every method's request and result read back as they were written") {
    check_methods(std::type_identity<method::all_methods>{});
}

TEST_CASE("proto: an agent's feedback reads back as it was written; bad JSON gives empty fields") {
    proto::agent_feedback feedback;
    feedback.score = 7;
    feedback.summary = "s \"quoted\"";
    feedback.next_steps = "a\nb";
    feedback.blockers = "none";
    const nlohmann::json json = feedback;
    CHECK(json["score"] == 7);
    CHECK(json["ideas"] == "");
    CHECK(nlohmann::json::parse(json.dump()).get<proto::agent_feedback>() == feedback);
    CHECK(nlohmann::json(proto::agent_feedback{})["score"].is_null());
    CHECK(nlohmann::json::array().get<proto::agent_feedback>().empty());
    CHECK(nlohmann::json{{"score", 42}, {"summary", 3}}.get<proto::agent_feedback>().empty());
    CHECK(nlohmann::json{{"score", "7"}}.get<proto::agent_feedback>().empty());
    CHECK(proto::agent_feedback{}.empty());
    CHECK_FALSE(feedback.empty());
}

TEST_CASE("proto: the data of an error reads back as it was written") {
    const proto::dirty_workspace dirty{{" M src/main.cpp", "?? notes.txt"}};
    CHECK(nlohmann::json(dirty).get<proto::dirty_workspace>() == dirty);
}

TEST_CASE("proto: the notifications read back as they were written") {
    proto::output_notification output{
        7, 100, 5, "aGVsbG8=", "base64", "codex", std::nullopt, {3, 1, proto::attempt_kind::work}};
    CHECK(nlohmann::json(output).get<proto::output_notification>() == output);
    output.text = "● Read main.cpp";
    CHECK(nlohmann::json(output).get<proto::output_notification>() == output);
    const proto::state_notification state{
        7, proto::loop_state::stalled, "no progress", 3, true, 1764000000000};
    CHECK(nlohmann::json(state).get<proto::state_notification>() == state);
}

TEST_CASE("proto: the hand-written loop.output notification is the serialized one") {
    const proto::output_origin origin{3, 2, proto::attempt_kind::judge};
    for (const char* encoding : {"base64", "utf8"}) {
        const std::string piece = "hello \xE2\x9C\x93\n";
        const proto::output_notification typed{7,
                                               100,
                                               std::int64_t(piece.size()),
                                               proto::encode_output(piece, encoding),
                                               encoding,
                                               "claude",
                                               std::nullopt,
                                               origin};
        CHECK(ralph::serialize_output_notification(7, 100, piece, encoding, "claude", origin,
                                                   std::nullopt) ==
              ralph::rpc::serialize(
                  ralph::rpc::make_notification(proto::notification::loop_output, typed)));
        proto::output_notification rendered = typed;
        rendered.text = "● Write \"notes\" â";
        CHECK(ralph::serialize_output_notification(7, 100, piece, encoding, "claude", origin,
                                                   rendered.text) ==
              ralph::rpc::serialize(
                  ralph::rpc::make_notification(proto::notification::loop_output, rendered)));
    }
}

TEST_CASE("proto: a binary loop.output is the serialized notification, a newline, the bytes") {
    const std::string piece("\0\xFF\n{\"x\"}\xE2\x9C", 10);
    const proto::output_notification typed{
        7, 100, std::int64_t(piece.size()), "", "binary", "codex", std::nullopt, {}};
    CHECK(
        ralph::serialize_output_notification(7, 100, piece, "binary", "codex", {}, std::nullopt) ==
        ralph::rpc::serialize(
            ralph::rpc::make_notification(proto::notification::loop_output, typed)) +
            "\n" + piece);
    // The bytes go whole: no character is held back for the next piece as in "utf8".
    CHECK(proto::sendable_length(piece, "binary") == piece.size());
}

TEST_CASE("proto: an output's section names the attempt that wrote it") {
    CHECK(proto::output_section({}) == "");
    CHECK(proto::output_section({3, 1, proto::attempt_kind::work}) == "iteration 3");
    CHECK(proto::output_section({3, 2, proto::attempt_kind::work}) == "iteration 3 · attempt 2");
    CHECK(proto::output_section({3, 2, proto::attempt_kind::judge}) == "iteration 3 · judge");
}

TEST_CASE("proto: a loop's summary holds the fields asked for, each under its name") {
    const proto::loop_info loop = sample<proto::loop_info>();
    CHECK(proto::summary_json(loop, {proto::summary_field::state, proto::summary_field::id}) ==
          nlohmann::json{{"id", 7}, {"state", "waiting"}});
    const nlohmann::json all = proto::summary_json(loop);
    CHECK(all.size() == std::size_t(proto::summary_field::cost_usd) + 1);
    for (const auto& [name, value] : all.items())
        CHECK(proto::to_string(proto::summary_field_from_string(name)) == name);
    CHECK_THROWS_AS(proto::summary_field_from_string("env"), std::invalid_argument);
    const nlohmann::json bad = {{"fields", {"id", "env"}}};
    CHECK_THROWS_WITH_AS(
        bad.get<proto::list_request>(),
        "params.fields: unknown field 'env' (use id, name, state, stop_reason, workspace, "
        "worktree_path, worktree_branch, agent, priority, iterations, max_iterations, "
        "min_iterations, attempts, retries, created_at, started_at, finished_at, updated_at, "
        "resume_at, output_bytes, input_tokens, output_tokens or cost_usd)",
        proto::rpc_error);
}

TEST_CASE("proto: a loop's env values never leave the daemon, only their names") {
    proto::loop_info loop = sample<proto::loop_info>();
    loop.spec.env = {{"API_KEY", "secret"}};
    const nlohmann::json wire = loop;
    CHECK_FALSE(wire.contains("env"));
    CHECK(wire.at("env_names") == nlohmann::json::array({"API_KEY"}));
    CHECK(wire.dump().find("secret") == std::string::npos);
}

TEST_CASE("proto: dry_run is a request's only: a loop's spec and a submit's answer leave it out") {
    proto::submit_params spec = sample<proto::submit_params>();
    CHECK(nlohmann::json(spec).at("dry_run") == true);
    spec.dry_run = false;
    CHECK_FALSE(nlohmann::json(spec).contains("dry_run"));
    proto::submit_result real{sample<proto::loop_info>(), true, {}, std::nullopt};
    real.loop.spec.dry_run = false;
    const nlohmann::json wire = real;
    CHECK_FALSE(wire.contains("dry_run"));
    CHECK_FALSE(wire.contains("capacity"));
    CHECK_FALSE(wire.get<proto::submit_result>().capacity.has_value());
}

TEST_CASE("proto: the judge sees the loop on its own agent, model and command, without --arg") {
    proto::submit_params spec = sample<proto::submit_params>();
    const proto::submit_params judge = proto::as_judge(spec);
    CHECK(judge.agent == "command");
    CHECK(judge.model == "m");
    CHECK(judge.command == "review {prompt_file}");
    CHECK(judge.args.empty());
    CHECK(judge.fallback.empty());
    CHECK(judge.workspace == spec.workspace);
    CHECK(judge.prompt == spec.prompt);
    CHECK(proto::attempt_kind_from_string("judge") == proto::attempt_kind::judge);
    CHECK(proto::to_string(proto::attempt_kind::work) == "work");
    CHECK_THROWS_AS(proto::attempt_kind_from_string("other"), std::invalid_argument);
}
