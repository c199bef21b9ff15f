#include "daemon/store/gc.hpp"

#include "common/text.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace ralph {
namespace {

// A loop of a long night holds thousands of rows (events, output chunks): a transaction of ten
// keeps the io thread's other calls waiting for milliseconds, not seconds.
constexpr std::size_t loops_per_transaction = 10;

// A --worktree loop's worktree holds its results, on its branch: the loop's history says what
// they are, so it stays as long as the worktree does.
bool worktree_exists(const store::ended_loop& loop) {
    std::error_code ec;
    return !loop.worktree_path.empty() && std::filesystem::exists(loop.worktree_path, ec);
}

// Unless its branch has work that is neither in the branch it started from nor pushed (to its
// --pr remote, else origin), or the worktree has uncommitted changes: then nothing is lost with
// it, and it goes (with its branch on --delete-branch). Returns whether it is gone (with dry_run:
// would go). Blocks (libgit2).
bool remove_merged_worktree(const store::ended_loop& loop, bool dry_run) {
    std::string error;
    const std::string remote = loop.pr_remote.empty() ? proto::default_pr_remote : loop.pr_remote;
    const bool merged = !loop.worktree_target.empty() &&
                        workspace::is_merged(loop.worktree_source, loop.worktree_branch,
                                             loop.worktree_target, error);
    if (!merged && !workspace::is_pushed(loop.worktree_source, loop.worktree_branch, remote, error))
        return false;
    if (dry_run) return !workspace::check_dirty(loop.worktree_path).dirty;
    if (std::string failed = workspace::remove_worktree(loop.worktree_source, loop.worktree_path,
                                                        loop.worktree_branch, loop.delete_branch);
        !failed.empty())
        spdlog::warn("loop {}: {}", loop.id, failed);
    return !worktree_exists(loop);
}

// Sorts the loops of `ended` whose worktree exists into result.worktrees_removed (removed now,
// on the pool thread; with dry_run, would be) and result.kept_for_worktrees.
awaitable<void> sort_worktrees(const std::vector<store::ended_loop>& ended, bool dry_run,
                               const gc_context& ctx, proto::gc_result& result) {
    if (std::none_of(ended.begin(), ended.end(), worktree_exists)) co_return;
    const proto::gc_result sorted = co_await off_thread(ctx.blocking, [&ended, dry_run] {
        proto::gc_result worktree_loops;
        for (const store::ended_loop& loop : ended)
            if (worktree_exists(loop))
                (remove_merged_worktree(loop, dry_run) ? worktree_loops.worktrees_removed
                                                       : worktree_loops.kept_for_worktrees)
                    .push_back(loop.id);
        return worktree_loops;
    });
    result.worktrees_removed = sorted.worktrees_removed;
    result.kept_for_worktrees = sorted.kept_for_worktrees;
}

// Removes the loops `ids` (those still in an end state): their rows in transactions of ten, then
// their files; adds what went to `result` (with dry_run, what would go).
awaitable<void> remove_history(const std::vector<std::int64_t>& ids, bool dry_run,
                               const gc_context& ctx, proto::gc_result& result) {
    const auto executor = co_await net::this_coro::executor;
    std::string refused;  // why the storage refused a removal
    try {
        // Output index rows waiting for their batch must not outlive their loop's rows.
        ctx.output.write_pending();
    } catch (const std::exception& e) {
        if (dry_run || !ctx.health.failed(e)) throw;
        refused = e.what();
    }
    for (std::size_t first = 0; refused.empty() && first < ids.size();
         first += loops_per_transaction) {
        const std::vector<std::int64_t> some(
            ids.begin() + static_cast<std::ptrdiff_t>(first),
            ids.begin() +
                static_cast<std::ptrdiff_t>(std::min(ids.size(), first + loops_per_transaction)));
        try {
            store::removal removal = ctx.db.remove_loops(some, dry_run);
            result.loop_ids.insert(result.loop_ids.end(), removal.loop_ids.begin(),
                                   removal.loop_ids.end());
            result.attempts += removal.attempts;
            result.events += removal.events;
        } catch (const std::exception& e) {
            if (dry_run || !ctx.health.failed(e)) throw;
            refused = e.what();
        }
        // The other calls go on between two transactions.
        co_await net::post(executor, use_awaitable);
    }

    if (dry_run) {
        for (std::int64_t id : result.loop_ids) result.output_bytes += ctx.output.file_size(id);
        co_return;
    }
    // The files go after the commit: a crash in between leaves files without rows (harmless),
    // never rows without their output. When the database refused the removal: the files of
    // every loop, whose rows go at the next gc; most of the space is theirs.
    const std::vector<std::int64_t>& forgotten = refused.empty() ? result.loop_ids : ids;
    std::vector<loop_files> files;
    for (std::int64_t id : forgotten) files.push_back(ctx.forget_loop(id));
    const std::int64_t deleted =
        co_await off_thread(ctx.blocking, [&files] { return delete_loop_files(files); });
    if (!refused.empty())
        throw proto::rpc_error(
            proto::error_kind::storage_unavailable,
            fmt::format("the database cannot be changed ({}): the output files of {} loop(s) were "
                        "removed ({} bytes freed); the records not yet removed go at the next gc",
                        refused, forgotten.size(), deleted));
    result.output_bytes += deleted;
    if (!result.loop_ids.empty()) ctx.db.truncate_wal();
}

}  // namespace

std::int64_t delete_loop_files(const std::vector<loop_files>& loops) {
    std::int64_t bytes = 0;
    for (const loop_files& loop : loops) {
        std::error_code ec;
        const std::uintmax_t size = std::filesystem::file_size(loop.output, ec);
        if (std::filesystem::remove(loop.output, ec))
            bytes += static_cast<std::int64_t>(size == static_cast<std::uintmax_t>(-1) ? 0 : size);
        if (ec)
            spdlog::warn("cannot delete output file {}: {}", loop.output.string(), ec.message());
        std::filesystem::remove(loop.prompt, ec);
        if (ec)
            spdlog::warn("cannot delete prompt file {}: {}", loop.prompt.string(), ec.message());
        std::filesystem::remove_all(loop.scratch, ec);
        if (ec)
            spdlog::warn("cannot delete scratch directory {}: {}", loop.scratch.string(),
                         ec.message());
    }
    return bytes;
}

awaitable<proto::gc_result> collect_garbage(const proto::gc_request& request, std::int64_t now_ms,
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

    std::vector<store::ended_loop> ended;
    for (store::ended_loop& loop : ctx.db.loops_ended_before(result.before))
        if (!ctx.is_running(loop.id)) ended.push_back(std::move(loop));
    co_await sort_worktrees(ended, request.dry_run, ctx, result);
    std::vector<std::int64_t> ids;
    for (const store::ended_loop& loop : ended)
        if (std::find(result.kept_for_worktrees.begin(), result.kept_for_worktrees.end(),
                      loop.id) == result.kept_for_worktrees.end())
            ids.push_back(loop.id);

    co_await remove_history(ids, request.dry_run, ctx, result);
    if (!request.dry_run && !result.loop_ids.empty())
        spdlog::info(
            "history.gc: removed {} loop(s) that ended before {}: {} attempt(s), {} event(s), {} "
            "bytes of output, in {} ms",
            result.loop_ids.size(), text::format_iso8601(result.before), result.attempts,
            result.events, result.output_bytes,
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count());
    co_return result;
}

awaitable<proto::removal_result> remove_loop(std::int64_t loop_id, const gc_context& ctx) {
    const proto::loop_info loop = ctx.db.get_loop(loop_id);  // loop_not_found for an unknown id
    if (!proto::is_terminal(loop.state))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot remove loop {}: it is {}, not ended (cancel it "
                                           "first: ralphctl cancel {})",
                                           loop_id, proto::to_string(loop.state), loop_id));
    const std::optional<store::ended_loop> ended_loop = ctx.db.ended_loop_of(loop_id);
    if (!ended_loop || ctx.is_running(loop_id))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot remove loop {}: its agent is still being "
                                           "stopped; try again in a moment",
                                           loop_id));
    const std::vector<store::ended_loop> ended{*ended_loop};
    proto::gc_result removed;
    co_await sort_worktrees(ended, false, ctx, removed);
    if (!removed.kept_for_worktrees.empty())
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot remove loop {}: its worktree {} has work that is neither merged "
                        "nor pushed, or uncommitted changes (land it first: ralphctl merge {}, or "
                        "ralphctl pr {}; or remove the worktree: git worktree remove {})",
                        loop_id, ended_loop->worktree_path, loop_id, loop_id,
                        ended_loop->worktree_path));
    const std::vector<std::int64_t> ids{loop_id};
    co_await remove_history(ids, false, ctx, removed);
    // It was taken back to the queue (loop.retry) while its worktree was checked.
    if (removed.loop_ids.empty())
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot remove loop {}: it is no longer ended", loop_id));
    spdlog::info("loop.remove: removed loop {}: {} attempt(s), {} event(s), {} bytes of output",
                 loop_id, removed.attempts, removed.events, removed.output_bytes);
    co_return proto::removal_result{loop_id, removed.attempts, removed.events, removed.output_bytes,
                                    !removed.worktrees_removed.empty()};
}

}  // namespace ralph
