// The names of the enums of proto/types.hpp, one enum_name table each (common/enum_names.hpp):
// loop states, terminations, failure classes and attempt kinds, names the API and the database
// use; and the summary's fields (loop.list --fields), a table with each field's value.
#include "proto/types.hpp"

#include "common/enum_names.hpp"

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
std::string_view to_string(loop_state state) { return name_of(loop_state_names, state); }

loop_state loop_state_from_string(std::string_view name) {
    return parse(loop_state_names, name, "loop state");
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
}  // namespace ralph::proto
