#include "proto/daemon_api.hpp"

#include "common/text.hpp"
#include "proto/fields.hpp"

#include <limits>

namespace ralph::proto {

void from_json(const nlohmann::json& j, no_params&) { params_object(j); }
void to_json(nlohmann::json& j, const no_params&) { j = nlohmann::json::object(); }

void from_json(const nlohmann::json& j, shutdown_request& r) {
    read_field(params_object(j), "leave_running", r.leave_running);
}
void to_json(nlohmann::json& j, const shutdown_request& r) {
    j = {{"leave_running", r.leave_running}};
}

void from_json(const nlohmann::json&, done&) {}
void to_json(nlohmann::json& j, const done&) { j = nlohmann::json::object(); }

void from_json(const nlohmann::json& j, agent_list& r) {
    r.agents = read_or<std::vector<agent_info>>(j, "agents", {});
    r.environment = read_or<std::vector<std::string>>(j, "environment", {});
}
void to_json(nlohmann::json& j, const agent_list& r) {
    j = {{"agents", r.agents}, {"environment", r.environment}};
}

void from_json(const nlohmann::json& j, scheduler_changes& r) {
    const auto& obj = params_object(j);
    read_field(obj, "max_concurrent", r.max_concurrent);
    read_field(obj, "paused", r.paused);
    read_field(obj, "window", r.window);
    if (r.max_concurrent) check_range("max_concurrent", *r.max_concurrent, 1, 1000);
}
void to_json(nlohmann::json& j, const scheduler_changes& r) {
    j = nlohmann::json::object();
    if (r.max_concurrent) j["max_concurrent"] = *r.max_concurrent;
    if (r.paused) j["paused"] = *r.paused;
    if (r.window) j["window"] = *r.window;
}
scheduler_settings apply(const scheduler_changes& changes, scheduler_settings settings) {
    settings.max_concurrent = changes.max_concurrent.value_or(settings.max_concurrent);
    settings.paused = changes.paused.value_or(settings.paused);
    settings.window = changes.window.value_or(settings.window);
    return settings;
}

void from_json(const nlohmann::json& j, scheduler_state& r) {
    r.settings.max_concurrent = read_or<std::int64_t>(j, "max_concurrent", 1);
    r.settings.paused = read_or<bool>(j, "paused", false);
    r.settings.window = read_or<std::string>(j, "window", "");
    r.window_open = read_or<bool>(j, "window_open", true);
    r.window_opens_at = time_from_json(j, "window_opens_at");
    r.running = read_or<std::int64_t>(j, "running", 0);
    r.loops_by_state = read_or<std::map<std::string, std::int64_t>>(j, "loops_by_state", {});
}
void to_json(nlohmann::json& j, const scheduler_state& r) {
    to_json(j, r.settings);
    j["window_open"] = r.window_open;
    j["window_opens_at"] = time_to_json(r.window_opens_at);
    j["running"] = r.running;
    j["loops_by_state"] = r.loops_by_state;
}

void from_json(const nlohmann::json& j, budget_request& r) {
    read_field(params_object(j), "id", r.id);
    check_range("id", r.id, 0, std::numeric_limits<std::int64_t>::max());
}
void to_json(nlohmann::json& j, const budget_request& r) {
    j = nlohmann::json::object();
    if (r.id != 0) j["id"] = r.id;
}

void from_json(const nlohmann::json& j, budget_changes& r) {
    const auto& obj = params_object(j);
    read_field(obj, "iterations_per_hour", r.iterations_per_hour);
    read_field(obj, "iterations_per_day", r.iterations_per_day);
    read_field(obj, "tokens_per_day", r.tokens_per_day);
    read_field(obj, "cost_per_day_usd", r.cost_per_day_usd);
    // 0 = no limit.
    if (r.iterations_per_hour)
        check_range("iterations_per_hour", *r.iterations_per_hour, 0, max_count);
    if (r.iterations_per_day)
        check_range("iterations_per_day", *r.iterations_per_day, 0, max_count);
    if (r.tokens_per_day) check_range("tokens_per_day", *r.tokens_per_day, 0, max_tokens);
    if (r.cost_per_day_usd) check_range("cost_per_day_usd", *r.cost_per_day_usd, 0, max_cost_usd);
}
void to_json(nlohmann::json& j, const budget_changes& r) {
    j = nlohmann::json::object();
    if (r.iterations_per_hour) j["iterations_per_hour"] = *r.iterations_per_hour;
    if (r.iterations_per_day) j["iterations_per_day"] = *r.iterations_per_day;
    if (r.tokens_per_day) j["tokens_per_day"] = *r.tokens_per_day;
    if (r.cost_per_day_usd) j["cost_per_day_usd"] = *r.cost_per_day_usd;
}
budget_limits apply(const budget_changes& changes, budget_limits limits) {
    limits.iterations_per_hour = changes.iterations_per_hour.value_or(limits.iterations_per_hour);
    limits.iterations_per_day = changes.iterations_per_day.value_or(limits.iterations_per_day);
    limits.tokens_per_day = changes.tokens_per_day.value_or(limits.tokens_per_day);
    limits.cost_per_day_usd = changes.cost_per_day_usd.value_or(limits.cost_per_day_usd);
    return limits;
}

void from_json(const nlohmann::json& j, agent_hold& r) {
    const auto& obj = params_object(j);
    read_required(obj, "agent", r.agent);
    read_field(obj, "account", r.account);
    r.until = time_from_json(obj, "until");
    read_field(obj, "reason", r.reason);
    read_field(obj, "origin", r.origin);
    if (r.agent.empty() || r.account.empty())
        throw rpc_error(error_kind::invalid_params, "a hold names its agent and account");
}
void to_json(nlohmann::json& j, const agent_hold& r) {
    j = {{"agent", r.agent},
         {"account", r.account},
         {"until", time_to_json(r.until)},
         {"reason", r.reason},
         {"origin", r.origin}};
}

void from_json(const nlohmann::json& j, peer_link_request& r) {
    const auto& obj = params_object(j);
    read_required(obj, "host", r.host);
    r.holds = read_or<std::vector<agent_hold>>(obj, "holds", {});
}
void to_json(nlohmann::json& j, const peer_link_request& r) {
    j = {{"host", r.host}, {"holds", r.holds}};
}

void from_json(const nlohmann::json& j, peer_link_result& r) {
    r.host = read_or<std::string>(j, "host", "");
    r.holds = read_or<std::vector<agent_hold>>(j, "holds", {});
}
void to_json(nlohmann::json& j, const peer_link_result& r) {
    j = {{"host", r.host}, {"holds", r.holds}};
}

void from_json(const nlohmann::json& j, peer_hold_result& r) {
    r.changed = read_or<bool>(j, "changed", false);
}
void to_json(nlohmann::json& j, const peer_hold_result& r) { j = {{"changed", r.changed}}; }

void from_json(const nlohmann::json& j, budget_state& r) {
    r.now = time_from_json(j, "now");
    r.limits = read_or<budget_limits>(j, "limits", {});
    r.use = read_or<std::vector<budget_use>>(j, "use", {});
    r.holds = read_or<std::vector<agent_hold>>(j, "holds", {});
}
void to_json(nlohmann::json& j, const budget_state& r) {
    j = {{"now", time_to_json(r.now)}, {"limits", r.limits}, {"use", r.use}, {"holds", r.holds}};
}

void from_json(const nlohmann::json& j, notify_test_request& r) {
    const auto& obj = params_object(j);
    r.url = read_or<std::string>(obj, "url", "");
}
void to_json(nlohmann::json& j, const notify_test_request& r) { j = {{"url", r.url}}; }

void from_json(const nlohmann::json& j, notify_sent& r) {
    r.target = read_or<std::string>(j, "target", "");
    r.format = read_or<std::string>(j, "format", "");
    r.delivered = read_or<bool>(j, "delivered", false);
    r.status = read_or<int>(j, "status", 0);
    r.error = read_or<std::string>(j, "error", "");
}
void to_json(nlohmann::json& j, const notify_sent& r) {
    j = {{"target", r.target},
         {"format", r.format},
         {"delivered", r.delivered},
         {"status", r.status},
         {"error", r.error}};
}

void from_json(const nlohmann::json& j, notify_test_result& r) {
    r.sent = read_or<std::vector<notify_sent>>(j, "sent", {});
}
void to_json(nlohmann::json& j, const notify_test_result& r) { j = {{"sent", r.sent}}; }

void from_json(const nlohmann::json& j, web_info& r) {
    r.token = read_or<std::string>(j, "token", "");
    r.url = read_or<std::string>(j, "url", "");
}
void to_json(nlohmann::json& j, const web_info& r) { j = {{"token", r.token}, {"url", r.url}}; }

void from_json(const nlohmann::json& j, web_login_code& r) {
    r.url = read_or<std::string>(j, "url", "");
    r.expires_at = time_from_json(j, "expires_at");
}
void to_json(nlohmann::json& j, const web_login_code& r) {
    j = {{"url", r.url}, {"expires_at", time_to_json(r.expires_at)}};
}

void from_json(const nlohmann::json& j, clock_request& r) {
    const auto& obj = params_object(j);
    read_field(obj, "set_ms", r.set_ms);
    read_field(obj, "advance_ms", r.advance_ms);
}
void to_json(nlohmann::json& j, const clock_request& r) {
    j = nlohmann::json::object();
    if (r.set_ms) j["set_ms"] = *r.set_ms;
    if (r.advance_ms) j["advance_ms"] = *r.advance_ms;
}

void from_json(const nlohmann::json& j, clock_state& r) {
    r.now_ms = read_or<std::int64_t>(j, "now_ms", 0);
}
void to_json(nlohmann::json& j, const clock_state& r) {
    j = {{"now", text::format_iso8601(r.now_ms)}, {"now_ms", r.now_ms}};
}

}  // namespace ralph::proto
