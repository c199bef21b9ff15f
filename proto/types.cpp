#include "proto/types.hpp"

#include "common/enum_names.hpp"
#include "common/text.hpp"
#include "proto/errors.hpp"
#include "proto/field_names.hpp"
#include "proto/fields.hpp"

#include <algorithm>
#include <array>

namespace ralph::proto {
namespace {

constexpr std::array<enum_name<loop_state>, 9> loop_state_names{{
    {loop_state::queued, "queued"},
    {loop_state::running, "running"},
    {loop_state::waiting, "waiting"},
    {loop_state::paused, "paused"},
    {loop_state::completed, "completed"},
    {loop_state::exhausted, "exhausted"},
    {loop_state::failed, "failed"},
    {loop_state::cancelled, "cancelled"},
    {loop_state::stalled, "stalled"},
}};
static_assert(names_in_order(loop_state_names, loop_state::stalled));

constexpr std::array<enum_name<termination>, 8> termination_names{{
    {termination::running, "running"},
    {termination::exited, "exited"},
    {termination::failed, "failed"},
    {termination::crashed, "crashed"},
    {termination::timeout, "timeout"},
    {termination::cancelled, "cancelled"},
    {termination::interrupted, "interrupted"},
    {termination::spawn_failed, "spawn_failed"},
}};
static_assert(names_in_order(termination_names, termination::spawn_failed));

constexpr std::array<enum_name<failure_class>, 10> failure_class_names{{
    {failure_class::none, ""},
    {failure_class::rate_limit, "rate_limit"},
    {failure_class::transient, "transient"},
    {failure_class::auth, "auth"},
    {failure_class::missing_program, "missing_program"},
    {failure_class::timeout, "timeout"},
    {failure_class::crash, "crash"},
    {failure_class::no_verdict, "no_verdict"},
    {failure_class::output_limit, "output_limit"},
    {failure_class::config, "config"},
}};
static_assert(names_in_order(failure_class_names, failure_class::config));

constexpr std::array<enum_name<attempt_kind>, 2> attempt_kind_names{{
    {attempt_kind::work, "work"},
    {attempt_kind::judge, "judge"},
}};
static_assert(names_in_order(attempt_kind_names, attempt_kind::judge));

}  // namespace

nlohmann::json time_to_json(std::int64_t ms) {
    return ms == 0 ? nlohmann::json(nullptr) : nlohmann::json(text::format_iso8601(ms));
}

std::int64_t time_from_json(const nlohmann::json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) return 0;
    return text::parse_iso8601_or_zero(it->get_ref<const std::string&>());
}

std::string_view to_string(loop_state state) { return name_of(loop_state_names, state); }

loop_state loop_state_from_string(std::string_view name) {
    return parse(loop_state_names, name, "loop state");
}

bool is_terminal(loop_state state) {
    switch (state) {
        case loop_state::completed:
        case loop_state::exhausted:
        case loop_state::failed:
        case loop_state::cancelled:
        case loop_state::stalled:
            return true;
        default:
            return false;
    }
}

std::string_view to_string(termination value) { return name_of(termination_names, value); }

termination termination_from_string(std::string_view name) {
    return parse(termination_names, name, "termination");
}

std::string_view to_string(failure_class value) { return name_of(failure_class_names, value); }

failure_class failure_class_from_string(std::string_view name) {
    return parse(failure_class_names, name, "failure class");
}

std::string_view to_string(attempt_kind value) { return name_of(attempt_kind_names, value); }

attempt_kind attempt_kind_from_string(std::string_view name) {
    return parse(attempt_kind_names, name, "attempt kind");
}

// A usage is flattened into the object that has it.
void add_usage(nlohmann::json& j, const usage& u) {
    j["input_tokens"] = u.input_tokens;
    j["output_tokens"] = u.output_tokens;
    j["cost_usd"] = u.cost_usd ? nlohmann::json(*u.cost_usd) : nlohmann::json();
    j["turns"] = u.turns;
    j["tool_calls"] = u.tool_calls;
}

usage read_usage(const nlohmann::json& j) {
    usage u;
    u.input_tokens = read_or<std::int64_t>(j, "input_tokens", 0);
    u.output_tokens = read_or<std::int64_t>(j, "output_tokens", 0);
    if (j.contains("cost_usd") && j["cost_usd"].is_number())
        u.cost_usd = j["cost_usd"].get<double>();
    u.turns = read_or<std::int64_t>(j, "turns", 0);
    u.tool_calls = read_or<std::int64_t>(j, "tool_calls", 0);
    return u;
}

// field_name:: for the fields that ralphctl mcp's tool schema names (proto/field_names.hpp).
void from_json(const nlohmann::json& j, submit_params& p) {
    const auto& obj = params_object(j);
    read_field(obj, field_name::name, p.name);
    read_field(obj, field_name::workspace, p.workspace);
    read_field(obj, field_name::agent, p.agent);
    read_field(obj, "model", p.model);
    read_field(obj, field_name::command, p.command);
    read_field(obj, "args", p.args);
    read_field(obj, "fallback", p.fallback);
    for (const auto& fallback : p.fallback)
        if (parse_agent_choice(fallback).agent.empty())
            throw rpc_error(error_kind::invalid_params,
                            "params.fallback: '" + fallback + "' names no agent (AGENT[:MODEL])");
    read_field(obj, "quota_key", p.quota_key);
    if (p.quota_key.size() > 64 ||
        std::any_of(p.quota_key.begin(), p.quota_key.end(),
                    [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
        throw rpc_error(error_kind::invalid_params,
                        "params.quota_key: at most 64 bytes, no control characters");
    read_field(obj, "judge", p.judge);
    read_field(obj, "judge_model", p.judge_model);
    read_field(obj, "judge_command", p.judge_command);
    read_field(obj, "judge_max_rejections", p.judge_max_rejections);
    read_field(obj, "judge_prompt", p.judge_prompt);
    read_field(obj, "env", p.env);
    read_field(obj, field_name::prompt, p.prompt);
    read_field(obj, "prompt_file", p.prompt_file);
    read_field(obj, "completion_phrase", p.completion_phrase);
    read_field(obj, field_name::max_iterations, p.max_iterations);
    read_field(obj, "min_iterations", p.min_iterations);
    read_field(obj, "timeout_s", p.timeout_s);
    read_field(obj, "delay_s", p.delay_s);
    read_field(obj, "max_retries", p.max_retries);
    read_field(obj, "retry_backoff_s", p.retry_backoff_s);
    read_field(obj, "priority", p.priority);
    read_field(obj, "specs_file", p.specs_file);
    read_field(obj, "status_tag", p.status_tag);
    read_field(obj, "status_value", p.status_value);
    read_field(obj, "legacy_phrase", p.legacy_phrase);
    read_field(obj, "backlog_rule", p.backlog_rule);
    read_field(obj, "verify_command", p.verify_command);
    read_field(obj, "commit", p.commit);
    read_field(obj, field_name::allow_dirty, p.allow_dirty);
    read_field(obj, "stall_iterations", p.stall_iterations);
    read_field(obj, "stall_failures", p.stall_failures);
    read_field(obj, "inactivity_timeout_s", p.inactivity_timeout_s);
    read_field(obj, "iterations_per_hour", p.iterations_per_hour);
    read_field(obj, "iterations_per_day", p.iterations_per_day);
    read_field(obj, "max_tokens", p.max_tokens);
    read_field(obj, "max_cost_usd", p.max_cost_usd);
    read_field(obj, "on_done", p.on_done);
    read_field(obj, "notify", p.notify);
    read_field(obj, "worktree", p.worktree);
    read_field(obj, "sandbox", p.sandbox);
    read_field(obj, "sandbox_offline", p.sandbox_offline);
    read_field(obj, "allow_foreign_workspace", p.allow_foreign_workspace);
    read_field(obj, "worktree_source", p.worktree_source);
    read_field(obj, "worktree_path", p.worktree_path);
    read_field(obj, "worktree_branch", p.worktree_branch);
    read_field(obj, "worktree_base", p.worktree_base);
    read_field(obj, "worktree_target", p.worktree_target);
    read_field(obj, "merge", p.merge);
    read_field(obj, "delete_branch", p.delete_branch);
    read_field(obj, "pr", p.pr_remote);
    read_field(obj, field_name::idempotency_key, p.idempotency_key);
    read_field(obj, "dry_run", p.dry_run);
}

void to_json(nlohmann::json& j, const submit_params& p) {
    // Field by field: an initializer list builds a two-element array per field first.
    j = nlohmann::json::object();
    j[field_name::name] = p.name;
    j[field_name::workspace] = p.workspace;
    j[field_name::agent] = p.agent;
    j["model"] = p.model;
    j[field_name::command] = p.command;
    j["args"] = p.args;
    j["fallback"] = p.fallback;
    j["quota_key"] = p.quota_key;
    j["judge"] = p.judge;
    j["judge_model"] = p.judge_model;
    j["judge_command"] = p.judge_command;
    j["judge_max_rejections"] = p.judge_max_rejections;
    j["judge_prompt"] = p.judge_prompt;
    j["env"] = p.env;
    j[field_name::prompt] = p.prompt;
    j["prompt_file"] = p.prompt_file;
    j["completion_phrase"] = p.completion_phrase;
    j[field_name::max_iterations] = p.max_iterations;
    j["min_iterations"] = p.min_iterations;
    j["timeout_s"] = p.timeout_s;
    j["delay_s"] = p.delay_s;
    j["max_retries"] = p.max_retries;
    j["retry_backoff_s"] = p.retry_backoff_s;
    j["priority"] = p.priority;
    j["specs_file"] = p.specs_file;
    j["status_tag"] = p.status_tag;
    j["status_value"] = p.status_value;
    j["legacy_phrase"] = p.legacy_phrase;
    j["backlog_rule"] = p.backlog_rule;
    j["verify_command"] = p.verify_command;
    j["commit"] = p.commit;
    j[field_name::allow_dirty] = p.allow_dirty;
    j["stall_iterations"] = p.stall_iterations;
    j["stall_failures"] = p.stall_failures;
    j["inactivity_timeout_s"] = p.inactivity_timeout_s;
    j["iterations_per_hour"] = p.iterations_per_hour;
    j["iterations_per_day"] = p.iterations_per_day;
    j["max_tokens"] = p.max_tokens;
    j["max_cost_usd"] = p.max_cost_usd;
    j["on_done"] = p.on_done;
    j["notify"] = p.notify;
    j["worktree"] = p.worktree;
    j["sandbox"] = p.sandbox;
    j["sandbox_offline"] = p.sandbox_offline;
    j["allow_foreign_workspace"] = p.allow_foreign_workspace;
    j["worktree_source"] = p.worktree_source;
    j["worktree_path"] = p.worktree_path;
    j["worktree_branch"] = p.worktree_branch;
    j["worktree_base"] = p.worktree_base;
    j["worktree_target"] = p.worktree_target;
    j["merge"] = p.merge;
    j["delete_branch"] = p.delete_branch;
    j["pr"] = p.pr_remote;
    j[field_name::idempotency_key] = p.idempotency_key;
    if (p.dry_run) j["dry_run"] = true;  // a request's only: no stored loop has it
}

void usage::add(const usage& other) {
    input_tokens += other.input_tokens;
    output_tokens += other.output_tokens;
    if (other.cost_usd) cost_usd = cost_usd.value_or(0) + *other.cost_usd;
    turns += other.turns;
    tool_calls += other.tool_calls;
}

agent_choice parse_agent_choice(std::string_view text) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) return {std::string(text), ""};
    return {std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
}

std::vector<agent_choice> agents_of(const submit_params& spec) {
    std::vector<agent_choice> agents{{spec.agent, spec.model}};
    for (const auto& fallback : spec.fallback) agents.push_back(parse_agent_choice(fallback));
    return agents;
}

submit_params on_agent(const submit_params& spec, const agent_choice& choice) {
    if (choice == agent_choice{spec.agent, spec.model}) return spec;
    submit_params on = spec;
    on.agent = choice.agent;
    on.model = choice.model;
    on.args.clear();
    on.quota_key.clear();  // the loop's own agent's
    return on;
}

std::string quota_of(const submit_params& spec) {
    constexpr std::size_t max_quota_bytes = 64;
    std::string quota = spec.quota_key;
    if (quota.empty() && spec.agent == "command") {
        // The program, without its directory: one script reached by two paths is one quota.
        std::string program;
        try {
            const std::vector<std::string> words = text::split_command_words(spec.command);
            if (!words.empty()) program = words.front();
        } catch (const std::invalid_argument&) {
            // Checked at submit; a command that does not parse runs nothing to hold.
        }
        quota = "command:" + program.substr(program.find_last_of('/') + 1);
    } else if (quota.empty()) {
        quota = spec.agent;
    }
    quota.resize(text::utf8_head(quota, max_quota_bytes).size());
    return quota;
}

std::vector<std::string> quotas_of(const submit_params& spec) {
    std::vector<std::string> quotas;
    for (const auto& choice : agents_of(spec)) quotas.push_back(quota_of(on_agent(spec, choice)));
    return quotas;
}

submit_params as_judge(const submit_params& spec) {
    submit_params judge = spec;
    judge.agent = spec.judge;
    judge.model = spec.judge_model;
    judge.command = spec.judge_command;
    judge.args.clear();
    judge.fallback.clear();
    judge.quota_key.clear();
    return judge;
}

std::string redacted_url(const std::string& url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) return "…";
    const auto authority_end = url.find_first_of("/?#", scheme_end + 3);
    if (authority_end == std::string::npos) return url;
    return url.substr(0, authority_end) + "/…";
}

void to_json(nlohmann::json& j, const loop_info& loop) {
    j = loop.spec;
    j.erase("env");
    nlohmann::json& env_names = j["env_names"] = nlohmann::json::array();
    for (const auto& entry : loop.spec.env) env_names.push_back(entry.first);
    nlohmann::json& notify = j["notify"] = nlohmann::json::array();
    for (const auto& url : loop.spec.notify) notify.push_back(redacted_url(url));
    j["id"] = loop.id;
    j["state"] = to_string(loop.state);
    j["stop_reason"] = loop.stop_reason;
    j["iterations"] = loop.iterations;
    j["attempts"] = loop.attempts;
    j["retries"] = loop.retries;
    j["created_at"] = time_to_json(loop.created_at);
    j["started_at"] = time_to_json(loop.started_at);
    j["finished_at"] = time_to_json(loop.finished_at);
    j["updated_at"] = time_to_json(loop.updated_at);
    j["resume_at"] = time_to_json(loop.resume_at);
    j["output_bytes"] = loop.output_bytes;
    j["landing"] = loop.landing;
    add_usage(j, loop.usage);
}

namespace {

struct summary_column {
    summary_field value;
    std::string_view name;
    nlohmann::json (*get)(const loop_info&);
};

// The summary's fields in the order of summary_field, with their names and values.
constexpr std::array<summary_column, 23> summary_columns{{
    {summary_field::id, "id", [](const loop_info& l) { return nlohmann::json(l.id); }},
    {summary_field::name, "name", [](const loop_info& l) { return nlohmann::json(l.spec.name); }},
    {summary_field::state, "state",
     [](const loop_info& l) { return nlohmann::json(to_string(l.state)); }},
    {summary_field::stop_reason, "stop_reason",
     [](const loop_info& l) { return nlohmann::json(l.stop_reason); }},
    {summary_field::workspace, "workspace",
     [](const loop_info& l) { return nlohmann::json(l.spec.workspace); }},
    {summary_field::worktree_path, "worktree_path",
     [](const loop_info& l) { return nlohmann::json(l.spec.worktree_path); }},
    {summary_field::worktree_branch, "worktree_branch",
     [](const loop_info& l) { return nlohmann::json(l.spec.worktree_branch); }},
    {summary_field::agent, "agent",
     [](const loop_info& l) { return nlohmann::json(l.spec.agent); }},
    {summary_field::priority, "priority",
     [](const loop_info& l) { return nlohmann::json(l.spec.priority); }},
    {summary_field::iterations, "iterations",
     [](const loop_info& l) { return nlohmann::json(l.iterations); }},
    {summary_field::max_iterations, "max_iterations",
     [](const loop_info& l) { return nlohmann::json(l.spec.max_iterations); }},
    {summary_field::min_iterations, "min_iterations",
     [](const loop_info& l) { return nlohmann::json(l.spec.min_iterations); }},
    {summary_field::attempts, "attempts",
     [](const loop_info& l) { return nlohmann::json(l.attempts); }},
    {summary_field::retries, "retries",
     [](const loop_info& l) { return nlohmann::json(l.retries); }},
    {summary_field::created_at, "created_at",
     [](const loop_info& l) { return time_to_json(l.created_at); }},
    {summary_field::started_at, "started_at",
     [](const loop_info& l) { return time_to_json(l.started_at); }},
    {summary_field::finished_at, "finished_at",
     [](const loop_info& l) { return time_to_json(l.finished_at); }},
    {summary_field::updated_at, "updated_at",
     [](const loop_info& l) { return time_to_json(l.updated_at); }},
    {summary_field::resume_at, "resume_at",
     [](const loop_info& l) { return time_to_json(l.resume_at); }},
    {summary_field::output_bytes, "output_bytes",
     [](const loop_info& l) { return nlohmann::json(l.output_bytes); }},
    {summary_field::input_tokens, "input_tokens",
     [](const loop_info& l) { return nlohmann::json(l.usage.input_tokens); }},
    {summary_field::output_tokens, "output_tokens",
     [](const loop_info& l) { return nlohmann::json(l.usage.output_tokens); }},
    {summary_field::cost_usd, "cost_usd",
     [](const loop_info& l) {
         return l.usage.cost_usd ? nlohmann::json(*l.usage.cost_usd) : nlohmann::json();
     }},
}};

static_assert(names_in_order(summary_columns, summary_field::cost_usd));

}  // namespace

std::string_view to_string(summary_field field) { return name_of(summary_columns, field); }

summary_field summary_field_from_string(std::string_view name) {
    return parse(summary_columns, name, "field");
}

nlohmann::json summary_json(const loop_info& loop, const std::vector<summary_field>& fields) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& column : summary_columns)
        if (fields.empty() || std::find(fields.begin(), fields.end(), column.value) != fields.end())
            j[std::string(column.name)] = column.get(loop);
    return j;
}

void from_json(const nlohmann::json& j, loop_info& loop) {
    from_json(j, loop.spec);
    for (const auto& name : read_or<std::vector<std::string>>(j, "env_names", {}))
        loop.spec.env[name] = "";
    loop.id = read_or<std::int64_t>(j, "id", 0);
    loop.state = loop_state_from_string(read_or<std::string>(j, "state", "queued"));
    loop.stop_reason = read_or<std::string>(j, "stop_reason", "");
    loop.iterations = read_or<std::int64_t>(j, "iterations", 0);
    loop.attempts = read_or<std::int64_t>(j, "attempts", 0);
    loop.retries = read_or<std::int64_t>(j, "retries", 0);
    loop.created_at = time_from_json(j, "created_at");
    loop.started_at = time_from_json(j, "started_at");
    loop.finished_at = time_from_json(j, "finished_at");
    loop.updated_at = time_from_json(j, "updated_at");
    loop.resume_at = time_from_json(j, "resume_at");
    loop.output_bytes = read_or<std::int64_t>(j, "output_bytes", 0);
    loop.landing = read_or<std::string>(j, "landing", "");
    loop.usage = read_usage(j);
}

bool agent_feedback::empty() const {
    return !score && summary.empty() && improvements.empty() && next_steps.empty() &&
           ideas.empty() && blockers.empty();
}

void to_json(nlohmann::json& j, const agent_feedback& feedback) {
    j = nlohmann::json{
        {"score", feedback.score ? nlohmann::json(*feedback.score) : nlohmann::json()},
        {"summary", feedback.summary},
        {"improvements", feedback.improvements},
        {"next_steps", feedback.next_steps},
        {"ideas", feedback.ideas},
        {"blockers", feedback.blockers},
    };
}

void from_json(const nlohmann::json& j, agent_feedback& feedback) {
    feedback = {};
    if (!j.is_object()) return;
    if (auto it = j.find("score"); it != j.end() && it->is_number_integer()) {
        const auto score = it->get<std::int64_t>();
        if (score >= 0 && score <= 10) feedback.score = int(score);
    }
    const auto read = [&j](const char* key, std::string& out) {
        if (auto it = j.find(key); it != j.end() && it->is_string()) out = it->get<std::string>();
    };
    read("summary", feedback.summary);
    read("improvements", feedback.improvements);
    read("next_steps", feedback.next_steps);
    read("ideas", feedback.ideas);
    read("blockers", feedback.blockers);
}

void to_json(nlohmann::json& j, const attempt_info& a) {
    j = nlohmann::json{
        {"id", a.id},
        {"loop_id", a.loop_id},
        {"iteration", a.iteration},
        {"attempt", a.attempt},
        {"kind", to_string(a.kind)},
        {"agent", a.agent},
        {"model", a.model},
        {"argv", a.argv},
        {"pid", a.pid},
        {"started_at", time_to_json(a.started_at)},
        {"ended_at", time_to_json(a.ended_at)},
        {"termination", to_string(a.how)},
        {"exit_code", a.exit_code ? nlohmann::json(*a.exit_code) : nlohmann::json()},
        {"signal", a.signal ? nlohmann::json(*a.signal) : nlohmann::json()},
        {"completion_signal", a.completion_signal},
        {"completion_rule", a.completion_rule},
        {"failure", to_string(a.failure)},
        {"error", a.error},
        {"summary", a.summary},
        {"head_before", a.head_before},
        {"head_after", a.head_after},
        {"tree_before", a.tree_before},
        {"tree_after", a.tree_after},
        {"files_changed", a.files_changed},
        {"insertions", a.insertions},
        {"deletions", a.deletions},
        {"progress", a.progress ? nlohmann::json(*a.progress) : nlohmann::json()},
        {"feedback", a.feedback ? nlohmann::json(*a.feedback) : nlohmann::json()},
        {"verify_exit", a.verify_exit ? nlohmann::json(*a.verify_exit) : nlohmann::json()},
        {"verify_output", a.verify_output},
        {"output_start", a.output_start},
        {"output_end", a.output_end},
        {"verdict", a.verdict},
        {"verdict_reasons", a.verdict_reasons}};
    add_usage(j, a.usage);
}

void from_json(const nlohmann::json& j, attempt_info& a) {
    a.id = read_or<std::int64_t>(j, "id", 0);
    a.loop_id = read_or<std::int64_t>(j, "loop_id", 0);
    a.iteration = read_or<std::int64_t>(j, "iteration", 0);
    a.attempt = read_or<std::int64_t>(j, "attempt", 0);
    a.kind = attempt_kind_from_string(read_or<std::string>(j, "kind", "work"));
    a.agent = read_or<std::string>(j, "agent", "");
    a.model = read_or<std::string>(j, "model", "");
    a.argv = read_or<std::vector<std::string>>(j, "argv", {});
    a.pid = read_or<std::int64_t>(j, "pid", 0);
    a.started_at = time_from_json(j, "started_at");
    a.ended_at = time_from_json(j, "ended_at");
    a.how = termination_from_string(read_or<std::string>(j, "termination", "running"));
    if (j.contains("exit_code") && j["exit_code"].is_number())
        a.exit_code = j["exit_code"].get<int>();
    if (j.contains("signal") && j["signal"].is_number()) a.signal = j["signal"].get<int>();
    a.completion_signal = read_or<bool>(j, "completion_signal", false);
    a.completion_rule = read_or<std::string>(j, "completion_rule", "");
    a.failure = failure_class_from_string(read_or<std::string>(j, "failure", ""));
    a.error = read_or<std::string>(j, "error", "");
    a.summary = read_or<std::string>(j, "summary", "");
    a.usage = read_usage(j);
    a.head_before = read_or<std::string>(j, "head_before", "");
    a.head_after = read_or<std::string>(j, "head_after", "");
    a.tree_before = read_or<std::string>(j, "tree_before", "");
    a.tree_after = read_or<std::string>(j, "tree_after", "");
    a.files_changed = read_or<std::int64_t>(j, "files_changed", 0);
    a.insertions = read_or<std::int64_t>(j, "insertions", 0);
    a.deletions = read_or<std::int64_t>(j, "deletions", 0);
    if (j.contains("progress") && j["progress"].is_boolean())
        a.progress = j["progress"].get<bool>();
    if (j.contains("feedback") && j["feedback"].is_object())
        a.feedback = j["feedback"].get<agent_feedback>();
    if (j.contains("verify_exit") && j["verify_exit"].is_number())
        a.verify_exit = j["verify_exit"].get<int>();
    a.verify_output = read_or<std::string>(j, "verify_output", "");
    a.output_start = read_or<std::int64_t>(j, "output_start", 0);
    a.output_end = read_or<std::int64_t>(j, "output_end", 0);
    a.verdict = read_or<std::string>(j, "verdict", "");
    a.verdict_reasons = read_or<std::string>(j, "verdict_reasons", "");
}

void to_json(nlohmann::json& j, const event_info& e) {
    j = nlohmann::json{{"id", e.id},
                       {"attempt_id", e.attempt_id},
                       {"iteration", e.iteration},
                       {"ts", time_to_json(e.ts)},
                       {"kind", e.kind},
                       {"tool", e.tool},
                       {"text", e.text}};
}

void from_json(const nlohmann::json& j, event_info& e) {
    e.id = read_or<std::int64_t>(j, "id", 0);
    e.attempt_id = read_or<std::int64_t>(j, "attempt_id", 0);
    e.iteration = read_or<std::int64_t>(j, "iteration", 0);
    e.ts = time_from_json(j, "ts");
    e.kind = read_or<std::string>(j, "kind", "");
    e.tool = read_or<std::string>(j, "tool", "");
    e.text = read_or<std::string>(j, "text", "");
}

void to_json(nlohmann::json& j, const agent_info& a) {
    j = nlohmann::json{{"name", a.name},
                       {"description", a.description},
                       {"program", a.program},
                       {"path", a.path.empty() ? nlohmann::json() : nlohmann::json(a.path)},
                       {"output_format", a.output_format},
                       {"structured_output", a.structured_output},
                       {"tokens", a.tokens},
                       {"cost", a.cost},
                       {"rate_limit_detection", a.rate_limit_detection},
                       {"environment",
                        {{"passed", a.environment.passed},
                         {"withheld", a.environment.withheld},
                         {"unset", a.environment.unset}}}};
}

void from_json(const nlohmann::json& j, agent_info& a) {
    a.name = read_or<std::string>(j, "name", "");
    a.description = read_or<std::string>(j, "description", "");
    a.program = read_or<std::string>(j, "program", "");
    a.path = read_or<std::string>(j, "path", "");
    a.output_format = read_or<std::string>(j, "output_format", "text");
    a.structured_output = read_or<bool>(j, "structured_output", false);
    a.tokens = read_or<bool>(j, "tokens", false);
    a.cost = read_or<bool>(j, "cost", false);
    a.rate_limit_detection = read_or<bool>(j, "rate_limit_detection", false);
    const nlohmann::json environment = read_or<nlohmann::json>(j, "environment", {});
    if (environment.is_object()) {
        using names = std::vector<std::string>;
        a.environment.passed = read_or<names>(environment, "passed", {});
        a.environment.withheld = read_or<names>(environment, "withheld", {});
        a.environment.unset = read_or<names>(environment, "unset", {});
    }
}

void to_json(nlohmann::json& j, const storage_status& s) {
    j = nlohmann::json{{"state", s.state},
                       {"cause", s.cause},
                       {"fix", s.fix},
                       {"since", time_to_json(s.since)},
                       {"failed_writes", s.failed_writes}};
}

void from_json(const nlohmann::json& j, storage_status& s) {
    s.state = read_or<std::string>(j, "state", "ok");
    s.cause = read_or<std::string>(j, "cause", "");
    s.fix = read_or<std::string>(j, "fix", "");
    s.since = time_from_json(j, "since");
    s.failed_writes = read_or<std::int64_t>(j, "failed_writes", 0);
}

void to_json(nlohmann::json& j, const daemon_info& info) {
    j = nlohmann::json{{"version", info.version},
                       {"protocol_version", info.protocol_version},
                       {"pid", info.pid},
                       {"socket", info.socket},
                       {"database", info.database},
                       {"started_at", time_to_json(info.started_at)},
                       {"max_concurrent", info.max_concurrent},
                       {"loops_by_state", info.loops_by_state},
                       {"storage", info.storage},
                       {"host", info.host},
                       {"account", info.account},
                       {"peers", info.peers},
                       {"notify_targets", info.notify_targets}};
}

void from_json(const nlohmann::json& j, daemon_info& info) {
    info.version = read_or<std::string>(j, "version", "");
    info.protocol_version = read_or<int>(j, "protocol_version", 0);
    info.pid = read_or<std::int64_t>(j, "pid", 0);
    info.socket = read_or<std::string>(j, "socket", "");
    info.database = read_or<std::string>(j, "database", "");
    info.started_at = time_from_json(j, "started_at");
    info.max_concurrent = read_or<std::int64_t>(j, "max_concurrent", 1);
    info.loops_by_state = read_or<std::map<std::string, std::int64_t>>(j, "loops_by_state", {});
    info.storage = read_or<storage_status>(j, "storage", {});
    info.host = read_or<std::string>(j, "host", "");
    info.account = read_or<std::string>(j, "account", "");
    info.peers = read_or<std::vector<peer_status>>(j, "peers", {});
    info.notify_targets = read_or<std::vector<std::string>>(j, "notify_targets", {});
}

void to_json(nlohmann::json& j, const peer_status& p) {
    j = nlohmann::json{{"name", p.name},
                       {"address", p.address},
                       {"linked", p.linked},
                       {"error", p.error},
                       {"since", time_to_json(p.since)}};
}

void from_json(const nlohmann::json& j, peer_status& p) {
    p.name = read_or<std::string>(j, "name", "");
    p.address = read_or<std::string>(j, "address", "");
    p.linked = read_or<bool>(j, "linked", false);
    p.error = read_or<std::string>(j, "error", "");
    p.since = time_from_json(j, "since");
}

void to_json(nlohmann::json& j, const scheduler_settings& s) {
    j = nlohmann::json{
        {"max_concurrent", s.max_concurrent}, {"paused", s.paused}, {"window", s.window}};
}

void from_json(const nlohmann::json& j, scheduler_settings& s) {
    s.max_concurrent = read_or<std::int64_t>(j, "max_concurrent", 1);
    s.paused = read_or<bool>(j, "paused", false);
    s.window = read_or<std::string>(j, "window", "");
}

void to_json(nlohmann::json& j, const budget_limits& b) {
    j = nlohmann::json{{"iterations_per_hour", b.iterations_per_hour},
                       {"iterations_per_day", b.iterations_per_day},
                       {"tokens_per_day", b.tokens_per_day},
                       {"cost_per_day_usd", b.cost_per_day_usd}};
}

void from_json(const nlohmann::json& j, budget_limits& b) {
    b.iterations_per_hour = read_or<std::int64_t>(j, "iterations_per_hour", 0);
    b.iterations_per_day = read_or<std::int64_t>(j, "iterations_per_day", 0);
    b.tokens_per_day = read_or<std::int64_t>(j, "tokens_per_day", 0);
    b.cost_per_day_usd = read_or<double>(j, "cost_per_day_usd", 0);
}

void to_json(nlohmann::json& j, const budget_use& u) {
    j = nlohmann::json{{"name", u.name},           {"loop_id", u.loop_id},
                       {"used", u.used},           {"limit", u.limit},
                       {"window_ms", u.window_ms}, {"frees_at", time_to_json(u.frees_at)}};
}

void from_json(const nlohmann::json& j, budget_use& u) {
    u.name = read_or<std::string>(j, "name", "");
    u.loop_id = read_or<std::int64_t>(j, "loop_id", 0);
    u.used = read_or<double>(j, "used", 0);
    u.limit = read_or<double>(j, "limit", 0);
    u.window_ms = read_or<std::int64_t>(j, "window_ms", 0);
    u.frees_at = time_from_json(j, "frees_at");
}

}  // namespace ralph::proto
