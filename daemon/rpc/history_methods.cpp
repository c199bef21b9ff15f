// history.report (what the loops did since a time, summed from the persisted attempts) and
// history.gc (removes the loops that ended before a cutoff, with everything they left).
#include "common/text.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/store.hpp"
#include "proto/history.hpp"
#include "proto/methods.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

namespace ralph::rpc {
namespace {

using proto::error_kind;
using proto::rpc_error;

constexpr std::int64_t day_ms = 24 * 3600 * 1000;
// A --worktree loop's worktree holds its results, on its branch: the loop's history says what
// they are, so it stays as long as the worktree does.
bool worktree_exists(const store::ended_loop& loop) {
    std::error_code ec;
    return !loop.worktree_path.empty() && std::filesystem::exists(loop.worktree_path, ec);
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
        report.loops = services.db.report_loops(report.since, report.until);
        proto::add_totals(report);
        return report;
    });

    registry.add<proto::method::history_gc>(
        [&services](const proto::gc_request& params, call_context&) {
            const auto started = std::chrono::steady_clock::now();
            proto::gc_result result;
            result.dry_run = params.dry_run;
            const std::int64_t now = services.clock.now_ms();
            result.before = now - std::int64_t(params.older_than_s * 1000);
            // The global budgets count the attempts of their window (an hour, a day): removing
            // those would give the budget back. A loop's attempts all began before it ended, so
            // keeping the loops that ended within the longest window keeps them all.
            for (const proto::budget_use& budget : services.gate.budget_use(now)) {
                if (now - budget.window_ms >= result.before) continue;
                result.before = now - budget.window_ms;
                result.kept_for_budgets = true;
            }
            std::vector<std::int64_t> ids;
            for (const store::ended_loop& loop : services.db.loops_ended_before(result.before)) {
                // A loop whose runner is still finishing may yet write its last rows.
                if (services.loops.is_running(loop.id)) continue;
                if (worktree_exists(loop))
                    result.kept_for_worktrees.push_back(loop.id);
                else
                    ids.push_back(loop.id);
            }
            // Output index rows waiting for their batch must not outlive their loop's rows.
            services.output.flush();
            store::removal removal = services.db.remove_loops(ids, params.dry_run);
            result.loop_ids = std::move(removal.loop_ids);
            result.attempts = removal.attempts;
            result.events = removal.events;
            // The files go after the commit: a crash in between leaves files without rows
            // (harmless), never rows without their output.
            for (std::int64_t id : result.loop_ids)
                result.output_bytes +=
                    params.dry_run ? services.output.file_size(id) : services.forget_loop(id);
            if (!params.dry_run && !result.loop_ids.empty()) {
                services.db.truncate_wal();
                spdlog::info(
                    "history.gc: removed {} loop(s) that ended before {}: {} attempt(s), "
                    "{} event(s), {} bytes of output, in {} ms",
                    result.loop_ids.size(), text::format_iso8601(result.before), result.attempts,
                    result.events, result.output_bytes,
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count());
            }
            return result;
        });
}

}  // namespace ralph::rpc
