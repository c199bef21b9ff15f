// history.report (what the loops did since a time, summed from the persisted attempts),
// history.gc (removes the loops that ended before a cutoff, with everything they left) and
// loop.remove (one ended loop, removed the same way).
#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/gc.hpp"
#include "daemon/store/store.hpp"
#include "proto/history.hpp"
#include "proto/methods.hpp"

namespace ralph::rpc {
namespace {

using proto::error_kind;
using proto::rpc_error;

constexpr std::int64_t day_ms = 24 * 3600 * 1000;

gc_context gc_context_of(method_services& services) {
    return {services.db,
            services.output,
            services.health,
            services.blocking,
            [&services](std::int64_t id) { return services.loops.is_running(id); },
            services.forget_loop};
}

// history.gc: the policy's inputs held here while collect_garbage runs.
awaitable<proto::gc_result> collect_garbage(const proto::gc_request& params,
                                            method_services& services) {
    const std::int64_t now = services.clock.now_ms();
    const std::vector<proto::budget_use> budgets = services.gate.budget_use(now);
    const gc_context ctx = gc_context_of(services);
    co_return co_await ralph::collect_garbage(params, now, budgets, ctx);
}

awaitable<proto::removal_result> remove_loop(const proto::loop_id_request& request,
                                             method_services& services) {
    const gc_context ctx = gc_context_of(services);
    co_return co_await ralph::remove_loop(request.id, ctx);
}

}  // namespace

void register_history_methods(method_registry& registry, method_services& services) {
    registry.add<proto::method::history_report>([&services](const proto::report_request& params,
                                                            call_context&) {
        proto::report report;
        report.until = services.clock.now_ms();
        report.since = params.since.value_or(report.until - day_ms);
        if (report.since > report.until)
            throw rpc_error(error_kind::invalid_params, "params.since: must not be in the future");
        report.loops = services.db.history().report_loops(report.since, report.until);
        proto::add_totals(report);
        return report;
    });

    registry.add<proto::method::history_gc>(
        [&services](const proto::gc_request& params, call_context&) {
            return collect_garbage(params, services);
        });

    registry.add<proto::method::loop_remove>(
        [&services](const proto::loop_id_request& request, call_context&) {
            return remove_loop(request, services);
        });
}

}  // namespace ralph::rpc
