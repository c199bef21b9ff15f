#include "proto/loop_api.hpp"

#include "common/text.hpp"
#include "proto/errors.hpp"
#include "proto/field_names.hpp"
#include "proto/fields.hpp"

#include <limits>
#include <stdexcept>

namespace ralph::proto {
namespace {

constexpr std::int64_t max_int = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t max_steering_bytes = 64 << 10;
constexpr std::int64_t max_output_page = 4 << 20;
constexpr std::int64_t max_diff_bytes = 4 << 20;

loop_state state_or_queued(const nlohmann::json& j) {
    return loop_state_from_string(read_or<std::string>(j, "state", "queued"));
}

// A list of names (of states, fields...) as the values `from_string` makes of them; an unknown
// name is invalid_params naming the field.
template <typename T>
std::vector<T> read_names(const nlohmann::json& obj, const char* field,
                          T (*from_string)(std::string_view)) {
    std::vector<std::string> names;
    read_field(obj, field, names);
    std::vector<T> values;
    for (const auto& name : names) {
        try {
            values.push_back(from_string(name));
        } catch (const std::invalid_argument& e) {
            throw rpc_error(error_kind::invalid_params,
                            std::string("params.") + field + ": " + e.what());
        }
    }
    return values;
}

template <typename T>
nlohmann::json names_of(const std::vector<T>& values) {
    nlohmann::json names = nlohmann::json::array();
    for (T value : values) names.push_back(to_string(value));
    return names;
}

}  // namespace

void from_json(const nlohmann::json& j, loop_id_request& r) {
    read_loop_id(params_object(j), field_name::id, r.id);
}
void to_json(nlohmann::json& j, const loop_id_request& r) { j = {{field_name::id, r.id}}; }

void from_json(const nlohmann::json& j, extend_request& r) {
    const auto& obj = params_object(j);
    read_loop_id(obj, field_name::id, r.id);
    read_required(obj, "by", r.by);
    check_range("by", r.by, 1, max_iterations);
}
void to_json(nlohmann::json& j, const extend_request& r) {
    j = {{field_name::id, r.id}, {"by", r.by}};
}

void from_json(const nlohmann::json& j, host_capacity& c) {
    c.max_concurrent = read_or<std::int64_t>(j, "max_concurrent", 1);
    c.running = read_or<std::int64_t>(j, "running", 0);
    c.free_slots = read_or<std::int64_t>(j, "free_slots", 0);
    c.queued = read_or<std::int64_t>(j, "queued", 0);
    c.scheduler_held = read_or<bool>(j, "scheduler_held", false);
    c.scheduler_held_reason = read_or<std::string>(j, "scheduler_held_reason", "");
    c.workspace_busy = read_or<bool>(j, "workspace_busy", false);
    c.agent_held = read_or<bool>(j, "agent_held", false);
    c.agent_held_until = time_from_json(j, "agent_held_until");
}
void to_json(nlohmann::json& j, const host_capacity& c) {
    j = nlohmann::json::object();
    j["max_concurrent"] = c.max_concurrent;
    j["running"] = c.running;
    j["free_slots"] = c.free_slots;
    j["queued"] = c.queued;
    j["scheduler_held"] = c.scheduler_held;
    j["scheduler_held_reason"] = c.scheduler_held_reason;
    j["workspace_busy"] = c.workspace_busy;
    j["agent_held"] = c.agent_held;
    j["agent_held_until"] = time_to_json(c.agent_held_until);
}

void from_json(const nlohmann::json& j, submit_result& r) {
    from_json(j, r.loop);
    r.created = read_or<bool>(j, "created", true);
    r.warnings = read_or<std::vector<std::string>>(j, "warnings", {});
    if (const auto it = j.find("capacity"); it != j.end() && it->is_object())
        r.capacity = it->get<host_capacity>();
}
void to_json(nlohmann::json& j, const submit_result& r) {
    to_json(j, r.loop);
    j["created"] = r.created;
    j["warnings"] = r.warnings;
    if (r.capacity) j["capacity"] = *r.capacity;
}

void from_json(const nlohmann::json& j, dirty_workspace& d) {
    d.changes = read_or<std::vector<std::string>>(j, "changes", {});
}
void to_json(nlohmann::json& j, const dirty_workspace& d) { j = {{"changes", d.changes}}; }

void from_json(const nlohmann::json& j, list_request& r) {
    const auto& obj = params_object(j);
    r.states = read_names(obj, "states", loop_state_from_string);
    read_field(obj, field_name::limit, r.limit);
    check_range(field_name::limit, r.limit, 0, max_int);
    read_field(obj, "before", r.before);
    check_range("before", r.before, 0, max_int);
    r.fields = read_names(obj, "fields", summary_field_from_string);
}
void to_json(nlohmann::json& j, const list_request& r) {
    j = nlohmann::json::object();
    if (!r.states.empty()) j["states"] = names_of(r.states);
    if (r.limit != 0) j[field_name::limit] = r.limit;
    if (r.before != 0) j["before"] = r.before;
    if (!r.fields.empty()) j["fields"] = names_of(r.fields);
}

void from_json(const nlohmann::json& j, loop_list& r) {
    r.loops = read_or<std::vector<loop_info>>(j, "loops", {});
    if (const auto total = j.find("total"); total != j.end() && total->is_number_integer())
        r.total = total->get<std::int64_t>();
}
void to_json(nlohmann::json& j, const loop_list& r) {
    nlohmann::json loops = nlohmann::json::array();
    for (const auto& loop : r.loops) loops.push_back(summary_json(loop, r.fields));
    j = {{"loops", std::move(loops)}};
    if (r.total) j["total"] = *r.total;
}

void from_json(const nlohmann::json& j, loop_detail& r) {
    from_json(j, r.loop);
    r.agent = read_or<agent_info>(j, "agent_info", {});
}
void to_json(nlohmann::json& j, const loop_detail& r) {
    to_json(j, r.loop);
    j["agent_info"] = r.agent;
}

void from_json(const nlohmann::json& j, attempt_list& r) {
    r.attempts = read_or<std::vector<attempt_info>>(j, "attempts", {});
}
void to_json(nlohmann::json& j, const attempt_list& r) { j = {{"attempts", r.attempts}}; }

void from_json(const nlohmann::json& j, diff_request& r) {
    const auto& obj = params_object(j);
    read_loop_id(obj, field_name::id, r.id);
    read_required(obj, "attempt", r.attempt);
    read_field(obj, "max_bytes", r.max_bytes);
    check_range("attempt", r.attempt, 1, max_int);
    check_range("max_bytes", r.max_bytes, 1, max_diff_bytes);
}
void to_json(nlohmann::json& j, const diff_request& r) {
    j = {{field_name::id, r.id}, {"attempt", r.attempt}, {"max_bytes", r.max_bytes}};
}

void from_json(const nlohmann::json& j, attempt_diff& r) {
    r.id = read_or<std::int64_t>(j, "id", 0);
    r.attempt = read_or<std::int64_t>(j, "attempt", 0);
    r.iteration = read_or<std::int64_t>(j, "iteration", 0);
    r.diff = read_or<std::string>(j, "diff", "");
    r.cut = read_or<bool>(j, "cut", false);
    r.error = read_or<std::string>(j, "error", "");
}
void to_json(nlohmann::json& j, const attempt_diff& r) {
    j = {{"id", r.id},     {"attempt", r.attempt}, {"iteration", r.iteration},
         {"diff", r.diff}, {"cut", r.cut},         {"error", r.error}};
}

void from_json(const nlohmann::json& j, steer_request& r) {
    const auto& obj = params_object(j);
    read_loop_id(obj, "id", r.id);
    read_required(obj, "text", r.text);
    if (text::trim(r.text).empty())
        throw rpc_error(error_kind::invalid_params, "params.text: must not be empty");
    if (r.text.size() > max_steering_bytes)
        throw rpc_error(error_kind::invalid_params, "params.text: at most 64 KiB");
}
void to_json(nlohmann::json& j, const steer_request& r) { j = {{"id", r.id}, {"text", r.text}}; }

void from_json(const nlohmann::json& j, steer_result& r) {
    r.id = read_or<std::int64_t>(j, "id", 0);
    r.steering_id = read_or<std::int64_t>(j, "steering_id", 0);
    r.next_iteration = read_or<std::int64_t>(j, "next_iteration", 0);
}
void to_json(nlohmann::json& j, const steer_result& r) {
    j = {{"id", r.id}, {"steering_id", r.steering_id}, {"next_iteration", r.next_iteration}};
}

void from_json(const nlohmann::json& j, landing_result& r) {
    r.loop = read_or<loop_info>(j, "loop", {});
    r.landed = read_or<bool>(j, "landed", false);
}
void to_json(nlohmann::json& j, const landing_result& r) {
    j = nlohmann::json::object();
    j["loop"] = r.loop;
    j["landed"] = r.landed;
}

void from_json(const nlohmann::json& j, events_request& r) {
    const auto& obj = params_object(j);
    read_loop_id(obj, "id", r.id);
    read_field(obj, "iteration", r.iteration);
    read_field(obj, "after", r.after);
    read_field(obj, "limit", r.limit);
    check_range("iteration", r.iteration, 0, max_int);
    check_range("after", r.after, 0, max_int);
    check_range("limit", r.limit, 1, 10000);
}
void to_json(nlohmann::json& j, const events_request& r) {
    j = {{"id", r.id}, {"iteration", r.iteration}, {"after", r.after}, {"limit", r.limit}};
}

void from_json(const nlohmann::json& j, event_list& r) {
    r.events = read_or<std::vector<event_info>>(j, "events", {});
    r.next_after = read_or<std::int64_t>(j, "next_after", 0);
}
void to_json(nlohmann::json& j, const event_list& r) {
    j = {{"events", r.events}, {"next_after", r.next_after}};
}

void from_json(const nlohmann::json& j, output_request& r) {
    const auto& obj = params_object(j);
    read_loop_id(obj, field_name::id, r.id);
    read_field(obj, "offset", r.offset);
    read_field(obj, field_name::last_lines, r.last_lines);
    read_field(obj, "max_bytes", r.max_bytes);
    read_field(obj, "encoding", r.encoding);
    read_field(obj, "output", r.output);
    read_field(obj, "render", r.render);
    if (r.offset) check_range("offset", *r.offset, 0, max_int);
    if (r.last_lines) check_range(field_name::last_lines, *r.last_lines, 0, max_int);
    check_range("max_bytes", r.max_bytes, 1, max_output_page);
    if (r.encoding != encoding::utf8 && r.encoding != encoding::base64 &&
        r.encoding != encoding::binary)
        throw rpc_error(error_kind::invalid_params,
                        "params.encoding: must be \"utf8\", \"base64\" or \"binary\"");
}
void to_json(nlohmann::json& j, const output_request& r) {
    j = {{field_name::id, r.id},
         {"max_bytes", r.max_bytes},
         {"encoding", r.encoding},
         {"output", r.output}};
    if (r.render) j["render"] = true;
    if (r.offset) j["offset"] = *r.offset;
    if (r.last_lines) j[field_name::last_lines] = *r.last_lines;
}

std::string output_section(const output_origin& origin) {
    if (origin.iteration <= 0) return {};
    std::string section = "iteration " + std::to_string(origin.iteration);
    if (origin.kind == attempt_kind::judge) return section + " · judge";
    if (origin.attempt > 1) section += " · attempt " + std::to_string(origin.attempt);
    return section;
}

namespace {

// An output_origin is three members of a page or notification: "iteration", "attempt", "kind"
// (none from a ralphd that does not say).
output_origin origin_of(const nlohmann::json& j) {
    output_origin origin;
    origin.iteration = read_or<std::int64_t>(j, "iteration", 0);
    origin.attempt = read_or<std::int64_t>(j, "attempt", 0);
    try {
        origin.kind = attempt_kind_from_string(read_or<std::string>(j, "kind", "work"));
    } catch (const std::invalid_argument&) {
        // a newer ralphd's kind of attempt: its output is shown as a worker's
    }
    return origin;
}

void add_origin(nlohmann::json& j, const output_origin& origin) {
    j["iteration"] = origin.iteration;
    j["attempt"] = origin.attempt;
    j["kind"] = to_string(origin.kind);
}

}  // namespace

void from_json(const nlohmann::json& j, output_page& r) {
    r.id = read_or<std::int64_t>(j, "id", 0);
    r.offset = read_or<std::int64_t>(j, "offset", 0);
    r.next_offset = read_or<std::int64_t>(j, "next_offset", 0);
    r.end_offset = read_or<std::int64_t>(j, "end_offset", 0);
    r.data = read_or<std::string>(j, "data", "");
    r.encoding = read_or<std::string>(j, "encoding", encoding::utf8);
    r.format = read_or<std::string>(j, "format", "text");
    r.state = state_or_queued(j);
    r.final = read_or<bool>(j, "final", false);
    r.origin = origin_of(j);
}
void to_json(nlohmann::json& j, const output_page& r) {
    j = {{"id", r.id},
         {"offset", r.offset},
         {"next_offset", r.next_offset},
         {"end_offset", r.end_offset},
         {"data", r.data},
         {"encoding", r.encoding},
         {"format", r.format},
         {"state", to_string(r.state)},
         {"final", r.final}};
    add_origin(j, r.origin);
}

void from_json(const nlohmann::json& j, tail_started& r) {
    r.id = read_or<std::int64_t>(j, "id", 0);
    r.offset = read_or<std::int64_t>(j, "offset", 0);
    r.state = state_or_queued(j);
    r.stop_reason = read_or<std::string>(j, "stop_reason", "");
    r.resume_at = time_from_json(j, "resume_at");
}
void to_json(nlohmann::json& j, const tail_started& r) {
    j = {{"id", r.id},
         {"offset", r.offset},
         {"state", to_string(r.state)},
         {"stop_reason", r.stop_reason},
         {"resume_at", time_to_json(r.resume_at)}};
}

void from_json(const nlohmann::json& j, subscription& r) {
    r.subscribed = read_or<bool>(j, "subscribed", false);
}
void to_json(nlohmann::json& j, const subscription& r) { j = {{"subscribed", r.subscribed}}; }

void from_json(const nlohmann::json& j, output_notification& n) {
    n.id = read_or<std::int64_t>(j, "id", 0);
    n.offset = read_or<std::int64_t>(j, "offset", 0);
    n.length = read_or<std::int64_t>(j, "length", 0);
    n.data = read_or<std::string>(j, "data", "");
    n.encoding = read_or<std::string>(j, "encoding", encoding::utf8);
    n.format = read_or<std::string>(j, "format", "text");
    if (j.contains("text")) n.text = j.at("text").get<std::string>();
    n.origin = origin_of(j);
}
void to_json(nlohmann::json& j, const output_notification& n) {
    j = {{"id", n.id},     {"offset", n.offset},     {"length", n.length},
         {"data", n.data}, {"encoding", n.encoding}, {"format", n.format}};
    if (n.text) j["text"] = *n.text;
    add_origin(j, n.origin);
}

void from_json(const nlohmann::json& j, state_notification& n) {
    n.id = read_or<std::int64_t>(j, "id", 0);
    n.state = state_or_queued(j);
    n.stop_reason = read_or<std::string>(j, "stop_reason", "");
    n.iterations = read_or<std::int64_t>(j, "iterations", 0);
    n.final = read_or<bool>(j, "final", false);
    n.resume_at = time_from_json(j, "resume_at");
}
void to_json(nlohmann::json& j, const state_notification& n) {
    j = {{"id", n.id},
         {"state", to_string(n.state)},
         {"stop_reason", n.stop_reason},
         {"resume_at", time_to_json(n.resume_at)},
         {"iterations", n.iterations},
         {"final", n.final}};
}

std::size_t sendable_length(std::string_view bytes, std::string_view encoding) {
    if (encoding != encoding::utf8) return bytes.size();
    std::size_t whole = text::utf8_complete_prefix(bytes);
    return whole > 0 ? whole : bytes.size();
}

std::string encode_output(std::string_view bytes, std::string_view encoding) {
    return encoding == encoding::base64 ? text::base64_encode(bytes) : text::to_valid_utf8(bytes);
}

std::string decode_output(std::string_view data, std::string_view encoding) {
    return encoding == encoding::base64 ? text::base64_decode(data) : std::string(data);
}

}  // namespace ralph::proto
