// scheduler.get, scheduler.set, budget.get, budget.set, and debug.clock on a daemon started
// with --test-clock.
#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/store.hpp"
#include "proto/methods.hpp"

#include <optional>

namespace ralph::rpc {
namespace {

proto::scheduler_state scheduler_state(method_services& services) {
    proto::scheduler_state state;
    state.settings = services.gate.scheduler_settings();
    const std::int64_t now = services.clock.now_ms();
    const std::int64_t opens = services.gate.window_opens_at(now);
    state.window_open = opens == now;
    state.window_opens_at = opens == now ? 0 : opens;
    state.running = std::int64_t(services.loops.running_count());
    state.loops_by_state = services.db.loops().count_by_state();
    return state;
}

proto::budget_state budget_state(method_services& services, std::int64_t loop_id) {
    proto::budget_state state;
    state.now = services.clock.now_ms();
    std::optional<proto::loop_info> loop;
    if (loop_id != 0) loop = services.db.loops().get_loop(loop_id);
    for (auto& hold : services.db.holds().agent_holds(state.now))
        if (hold.account == services.gate.account()) state.holds.push_back(std::move(hold));
    state.limits = services.gate.budgets();
    state.use = services.gate.budget_use(state.now, loop ? &*loop : nullptr);
    return state;
}

}  // namespace

void register_scheduler_methods(method_registry& registry, method_services& services) {
    using namespace proto::method;
    registry.add<scheduler_get>(
        [&services](const proto::no_params&, call_context&) { return scheduler_state(services); });
    registry.add<scheduler_set>(
        [&services](const proto::scheduler_changes& changes, call_context&) {
            services.gate.set_scheduler_settings(
                proto::apply(changes, services.gate.scheduler_settings()));
            services.loops.reconsider();
            return scheduler_state(services);
        });
    registry.add<budget_get>([&services](const proto::budget_request& request, call_context&) {
        return budget_state(services, request.id);
    });
    registry.add<budget_set>([&services](const proto::budget_changes& changes, call_context&) {
        services.gate.set_budgets(proto::apply(changes, services.gate.budgets()));
        services.loops.reconsider();
        return budget_state(services, 0);
    });
    if (!services.clock.adjustable()) return;
    registry.add<debug_clock>([&services](const proto::clock_request& request, call_context&) {
        if (request.set_ms) services.clock.set(*request.set_ms);
        if (request.advance_ms) services.clock.advance(*request.advance_ms);
        services.loops.reconsider();
        return proto::clock_state{services.clock.now_ms()};
    });
}

}  // namespace ralph::rpc
