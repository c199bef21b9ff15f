#include "daemon/store/gc.hpp"

#include "common/text.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

namespace ralph {
namespace {

// A --worktree loop's worktree holds its results, on its branch: the loop's history says what
// they are, so it stays as long as the worktree does.
bool worktree_exists(const store::ended_loop& loop) {
    std::error_code ec;
    return !loop.worktree_path.empty() && std::filesystem::exists(loop.worktree_path, ec);
}

}  // namespace

proto::gc_result collect_garbage(const proto::gc_request& request, std::int64_t now_ms,
                                 const std::vector<proto::budget_use>& budgets,
                                 const gc_context& ctx) {
    const auto started = std::chrono::steady_clock::now();
    proto::gc_result result;
    result.dry_run = request.dry_run;
    result.before = now_ms - std::int64_t(request.older_than_s * 1000);
    // The global budgets count the attempts of their window (an hour, a day): removing those
    // would give the budget back. A loop's attempts all began before it ended, so keeping the
    // loops that ended within the longest window keeps them all.
    for (const proto::budget_use& budget : budgets) {
        if (now_ms - budget.window_ms >= result.before) continue;
        result.before = now_ms - budget.window_ms;
        result.kept_for_budgets = true;
    }
    std::vector<std::int64_t> ids;
    for (const store::ended_loop& loop : ctx.db.loops_ended_before(result.before)) {
        if (ctx.is_running(loop.id)) continue;
        if (worktree_exists(loop))
            result.kept_for_worktrees.push_back(loop.id);
        else
            ids.push_back(loop.id);
    }
    store::removal removal;
    try {
        // Output index rows waiting for their batch must not outlive their loop's rows.
        ctx.output.write_pending();
        removal = ctx.db.remove_loops(ids, request.dry_run);
    } catch (const std::exception& e) {
        if (request.dry_run || !ctx.health.failed(e)) throw;
        // What the loops hold outside the database, their tails ended: most of the space.
        std::int64_t freed = 0;
        for (std::int64_t id : ids) freed += ctx.forget_loop(id);
        throw proto::rpc_error(
            proto::error_kind::storage_unavailable,
            fmt::format("the database cannot be changed ({}): the output files of {} loop(s) were "
                        "removed ({} bytes freed); their records go at the next gc",
                        e.what(), ids.size(), freed));
    }
    result.loop_ids = std::move(removal.loop_ids);
    result.attempts = removal.attempts;
    result.events = removal.events;
    // The files go after the commit: a crash in between leaves files without rows (harmless),
    // never rows without their output.
    for (std::int64_t id : result.loop_ids)
        result.output_bytes += request.dry_run ? ctx.output.file_size(id) : ctx.forget_loop(id);
    if (!request.dry_run && !result.loop_ids.empty()) {
        ctx.db.truncate_wal();
        spdlog::info(
            "history.gc: removed {} loop(s) that ended before {}: {} attempt(s), {} event(s), {} "
            "bytes of output, in {} ms",
            result.loop_ids.size(), text::format_iso8601(result.before), result.attempts,
            result.events, result.output_bytes,
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count());
    }
    return result;
}

}  // namespace ralph
