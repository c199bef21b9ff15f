// scheduler.get, scheduler.set, budget.get, budget.set, and debug.clock on a daemon started
// with --test-clock.
#include "daemon/clock.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/admission.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/store.hpp"
#include "proto/fields.hpp"
#include "proto/methods.hpp"

#include <limits>

namespace ralph::rpc {
namespace {

nlohmann::json scheduler_state(method_services& services) {
    const auto& settings = services.gate.scheduler_settings();
    nlohmann::json result = settings;
    const std::int64_t now = services.clock.now_ms();
    const std::int64_t opens = services.gate.window_opens_at(now);
    result["window_open"] = opens == now;
    result["window_opens_at"] =
        opens == now ? nlohmann::json(nullptr) : nlohmann::json(text::format_iso8601(opens));
    result["running"] = services.loops.running_count();
    result["loops_by_state"] = services.db.count_by_state();
    return result;
}

nlohmann::json budget_state(method_services& services, std::int64_t loop_id) {
    const std::int64_t now = services.clock.now_ms();
    std::optional<proto::loop_info> loop;
    if (loop_id != 0) loop = services.db.get_loop(loop_id);
    nlohmann::json holds = nlohmann::json::array();
    for (const auto& [agent, hold] : services.db.agent_holds(now))
        holds.push_back({{"agent", agent},
                         {"until", text::format_iso8601(hold.until_ms)},
                         {"reason", hold.reason}});
    return {{"now", text::format_iso8601(now)},
            {"limits", services.gate.budgets()},
            {"use", services.gate.budget_use(now, loop ? &*loop : nullptr)},
            {"holds", std::move(holds)}};
}

}  // namespace

void register_scheduler_methods(method_registry& registry, method_services& services) {
    registry.add(proto::method::scheduler_get,
                 [&services](const nlohmann::json& params, call_context&) {
                     proto::params_object(params);
                     return scheduler_state(services);
                 });
    registry.add(proto::method::scheduler_set,
                 [&services](const nlohmann::json& params, call_context&) {
                     proto::scheduler_settings settings = services.gate.scheduler_settings();
                     proto::apply_changes(params, settings);
                     services.gate.set_scheduler_settings(settings);
                     services.loops.reconsider();
                     return scheduler_state(services);
                 });
    registry.add(proto::method::budget_get,
                 [&services](const nlohmann::json& params, call_context&) {
                     std::int64_t loop_id = 0;
                     proto::read_field(proto::params_object(params), "id", loop_id);  // 0 = no loop
                     proto::check_range("id", loop_id, 0, std::numeric_limits<std::int64_t>::max());
                     return budget_state(services, loop_id);
                 });
    registry.add(proto::method::budget_set,
                 [&services](const nlohmann::json& params, call_context&) {
                     proto::budget_limits budgets = services.gate.budgets();
                     proto::apply_changes(params, budgets);
                     services.gate.set_budgets(budgets);
                     services.loops.reconsider();
                     return budget_state(services, 0);
                 });
    if (!services.clock.adjustable()) return;
    registry.add(proto::method::debug_clock,
                 [&services](const nlohmann::json& params, call_context&) {
                     const auto& obj = proto::params_object(params);
                     std::optional<std::int64_t> set_ms, advance_ms;
                     proto::read_field(obj, "set_ms", set_ms);
                     proto::read_field(obj, "advance_ms", advance_ms);
                     if (set_ms) services.clock.set(*set_ms);
                     if (advance_ms) services.clock.advance(*advance_ms);
                     services.loops.reconsider();
                     const std::int64_t now = services.clock.now_ms();
                     return nlohmann::json{{"now", text::format_iso8601(now)}, {"now_ms", now}};
                 });
}

}  // namespace ralph::rpc
