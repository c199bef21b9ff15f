#include "proto/history.hpp"

#include "common/text.hpp"
#include "proto/errors.hpp"
#include "proto/fields.hpp"

#include <stdexcept>

namespace ralph::proto {
namespace {

// Milliseconds in JSON are seconds with three decimals, like the API's other *_s fields.
double seconds_of(std::int64_t ms) { return double(ms) / 1000.0; }
std::int64_t ms_of(const nlohmann::json& j, const char* name) {
    return std::int64_t(j.value(name, 0.0) * 1000.0 + 0.5);
}

}  // namespace

void from_json(const nlohmann::json& j, report_request& r) {
    std::optional<std::string> since;
    read_field(params_object(j), "since", since);
    if (!since) return;
    try {
        r.since = text::parse_iso8601(*since);
    } catch (const std::invalid_argument& e) {
        throw rpc_error(error_kind::invalid_params, std::string("params.since: ") + e.what());
    }
}
void to_json(nlohmann::json& j, const report_request& r) {
    j = nlohmann::json::object();
    if (r.since) j["since"] = text::format_iso8601(*r.since);
}

void from_json(const nlohmann::json& j, gc_request& r) {
    const auto& obj = params_object(j);
    read_field(obj, "older_than_s", r.older_than_s);
    read_field(obj, "dry_run", r.dry_run);
    // A century bounds the conversion to milliseconds.
    if (!(r.older_than_s >= 0 && r.older_than_s <= 100 * 365 * 86400.0))
        throw rpc_error(error_kind::invalid_params,
                        "params.older_than_s: must be between 0 and 100 years in seconds");
}
void to_json(nlohmann::json& j, const gc_request& r) {
    j = {{"older_than_s", r.older_than_s}, {"dry_run", r.dry_run}};
}

void activity::add(const activity& other) {
    attempts += other.attempts;
    iterations += other.iterations;
    retries += other.retries;
    commits += other.commits;
    files_changed += other.files_changed;
    insertions += other.insertions;
    deletions += other.deletions;
    usage.add(other.usage);
    for (const auto& [agent, used] : other.by_agent) by_agent[agent].add(used);
    agent_ms += other.agent_ms;
    for (const auto& [failure, count] : other.failures) failures[failure] += count;
    for (const auto& [verdict, count] : other.verdicts) verdicts[verdict] += count;
}

void add_totals(report& r) {
    r.loop_count = std::int64_t(r.loops.size());
    r.by_state.clear();
    r.totals = {};
    for (const auto& loop : r.loops) {
        ++r.by_state[std::string(to_string(loop.state))];
        r.totals.add(loop.activity);
    }
}

// An activity is flattened into the object that has it (a loop of the report, or its totals).
void to_json(nlohmann::json& j, const activity& a) {
    j["attempts"] = a.attempts;
    j["iterations"] = a.iterations;
    j["retries"] = a.retries;
    j["commits"] = a.commits;
    j["files_changed"] = a.files_changed;
    j["insertions"] = a.insertions;
    j["deletions"] = a.deletions;
    add_usage(j, a.usage);
    j["agent_time_s"] = seconds_of(a.agent_ms);
    j["failures"] = a.failures;
    j["verdicts"] = a.verdicts;
    nlohmann::json& by_agent = j["by_agent"] = nlohmann::json::object();
    for (const auto& [agent, used] : a.by_agent) add_usage(by_agent[agent], used);
}

void from_json(const nlohmann::json& j, activity& a) {
    a.attempts = j.value("attempts", std::int64_t(0));
    a.iterations = j.value("iterations", std::int64_t(0));
    a.retries = j.value("retries", std::int64_t(0));
    a.commits = j.value("commits", std::int64_t(0));
    a.files_changed = j.value("files_changed", std::int64_t(0));
    a.insertions = j.value("insertions", std::int64_t(0));
    a.deletions = j.value("deletions", std::int64_t(0));
    a.usage = read_usage(j);
    a.agent_ms = ms_of(j, "agent_time_s");
    a.failures = j.value("failures", std::map<std::string, std::int64_t>{});
    a.verdicts = j.value("verdicts", std::map<std::string, std::int64_t>{});
    if (auto by_agent = j.find("by_agent"); by_agent != j.end() && by_agent->is_object())
        for (const auto& [agent, used] : by_agent->items()) a.by_agent[agent] = read_usage(used);
}

void to_json(nlohmann::json& j, const report_loop& loop) {
    j = nlohmann::json::object();
    to_json(j, loop.activity);
    j["id"] = loop.id;
    j["name"] = loop.name;
    j["workspace"] = loop.workspace;
    j["agent"] = loop.agent;
    j["state"] = to_string(loop.state);
    j["stop_reason"] = loop.stop_reason;
    j["created_at"] = time_to_json(loop.created_at);
    j["started_at"] = time_to_json(loop.started_at);
    j["finished_at"] = time_to_json(loop.finished_at);
    j["iterations_total"] = loop.iterations_total;
    j["max_iterations"] = loop.max_iterations;
    j["duration_s"] = seconds_of(loop.duration_ms);
    j["head_before"] = loop.head_before;
    j["head_after"] = loop.head_after;
}

void from_json(const nlohmann::json& j, report_loop& loop) {
    from_json(j, loop.activity);
    loop.id = j.value("id", std::int64_t(0));
    loop.name = j.value("name", std::string());
    loop.workspace = j.value("workspace", std::string());
    loop.agent = j.value("agent", std::string());
    loop.state = loop_state_from_string(j.value("state", std::string("queued")));
    loop.stop_reason = j.value("stop_reason", std::string());
    loop.created_at = time_from_json(j, "created_at");
    loop.started_at = time_from_json(j, "started_at");
    loop.finished_at = time_from_json(j, "finished_at");
    loop.iterations_total = j.value("iterations_total", std::int64_t(0));
    loop.max_iterations = j.value("max_iterations", std::int64_t(0));
    loop.duration_ms = ms_of(j, "duration_s");
    loop.head_before = j.value("head_before", std::string());
    loop.head_after = j.value("head_after", std::string());
}

void to_json(nlohmann::json& j, const report& r) {
    nlohmann::json totals = nlohmann::json::object();
    to_json(totals, r.totals);
    totals["loops"] = r.loop_count;
    totals["by_state"] = r.by_state;
    j = nlohmann::json{{"since", time_to_json(r.since)},
                       {"until", time_to_json(r.until)},
                       {"loops", r.loops},
                       {"totals", std::move(totals)}};
}

void from_json(const nlohmann::json& j, report& r) {
    r.since = time_from_json(j, "since");
    r.until = time_from_json(j, "until");
    r.loops = j.value("loops", std::vector<report_loop>{});
    const nlohmann::json totals = j.value("totals", nlohmann::json::object());
    from_json(totals, r.totals);
    r.loop_count = totals.value("loops", std::int64_t(0));
    r.by_state = totals.value("by_state", std::map<std::string, std::int64_t>{});
}

void to_json(nlohmann::json& j, const gc_result& r) {
    j = nlohmann::json::object();
    j["dry_run"] = r.dry_run;
    j["before"] = time_to_json(r.before);
    j["kept_for_budgets"] = r.kept_for_budgets;
    j["loops"] = r.loop_ids.size();
    j["loop_ids"] = r.loop_ids;
    j["kept_for_worktrees"] = r.kept_for_worktrees;
    j["worktrees_removed"] = r.worktrees_removed;
    j["attempts"] = r.attempts;
    j["events"] = r.events;
    j["output_bytes"] = r.output_bytes;
}

void from_json(const nlohmann::json& j, gc_result& r) {
    r.dry_run = j.value("dry_run", false);
    r.before = time_from_json(j, "before");
    r.kept_for_budgets = j.value("kept_for_budgets", false);
    r.loop_ids = j.value("loop_ids", std::vector<std::int64_t>{});
    r.kept_for_worktrees = j.value("kept_for_worktrees", std::vector<std::int64_t>{});
    r.worktrees_removed = j.value("worktrees_removed", std::vector<std::int64_t>{});
    r.attempts = j.value("attempts", std::int64_t(0));
    r.events = j.value("events", std::int64_t(0));
    r.output_bytes = j.value("output_bytes", std::int64_t(0));
}

void to_json(nlohmann::json& j, const removal_result& r) {
    j = {{"id", r.id},
         {"attempts", r.attempts},
         {"events", r.events},
         {"output_bytes", r.output_bytes},
         {"worktree_removed", r.worktree_removed}};
}

void from_json(const nlohmann::json& j, removal_result& r) {
    r.id = j.value("id", std::int64_t(0));
    r.attempts = j.value("attempts", std::int64_t(0));
    r.events = j.value("events", std::int64_t(0));
    r.output_bytes = j.value("output_bytes", std::int64_t(0));
    r.worktree_removed = j.value("worktree_removed", false);
}

}  // namespace ralph::proto
