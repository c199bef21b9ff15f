#include "daemon/store/gc.hpp"

#include "common/text.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/wal_checkpointer.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

namespace ralph {
namespace {

// Each step of gc's work on the database (a transaction removing loops, a step of the vacuum)
// takes as much as fit in this much of the io thread's time and of the WAL at the pace of the step
// before (a short loop has a few dozen rows, a long night's thousands), and is followed by a
// pause as long as it took: a call that comes meanwhile waits for one step at most, and gc never
// takes more than half of the io thread.
constexpr auto step_time = std::chrono::microseconds(1000);
constexpr auto longest_pause = std::chrono::milliseconds(50);
constexpr std::int64_t step_wal_pages = 500;  // 2 MiB
constexpr std::int64_t max_loops_per_transaction = 200;
// The ended loops are read this many at a time (the (finished_at) index, from a cursor).
constexpr std::int64_t loops_per_batch = 500;
// What the removal deletes goes through the WAL, which SQLite starts over only after a checkpoint
// that copied all of it: past this many pages (8 MiB) gc waits for one, on the pool thread,
// before it goes on, so the WAL stays this small whatever gc removes.
constexpr int wal_pages_before_checkpoint = 2000;
// Pages given back to the file system in the first step of the vacuum.
constexpr std::int64_t first_vacuum_pages = 64;
// SQLite's page cache while gc works (2 MiB otherwise): a removal touches the pages of every
// index of the tables it deletes from, which a small cache reads again and again (most of the
// io thread's time in a year's removal).
constexpr std::int64_t gc_cache_kib = 64 * 1024;

// The io thread's CPU time so far: a step's pause is as long as the step used of it, whatever the
// machine's load made it take.
std::chrono::nanoseconds thread_cpu_time() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// SQLite's larger page cache for the time gc works; the smaller one and its memory back after.
class larger_cache {
  public:
    explicit larger_cache(store& db) : db_(db) { db_.set_cache_kib(gc_cache_kib); }
    ~larger_cache() { db_.set_cache_kib(0); }
    larger_cache(const larger_cache&) = delete;
    larger_cache& operator=(const larger_cache&) = delete;

  private:
    store& db_;
};

// How much the next step takes: as much as fit in step_time and step_wal_pages at the last step's
// pace, between 1 and `most`.
class pacer {
  public:
    pacer(store& db, std::int64_t first, std::int64_t most) : db_(db), next_(first), most_(most) {}
    std::int64_t next() const { return next_; }
    // The io thread's CPU time the last step took.
    std::chrono::nanoseconds took() const { return took_; }
    // Runs a step of `work` that does `amount` and returns it.
    template <typename Work>
    auto step(std::int64_t amount, Work&& work) {
        const auto t0 = thread_cpu_time();
        const int pages_before = db_.wal_pages();
        auto result = work();
        took_ = thread_cpu_time() - t0;
        const auto us = std::max<std::int64_t>(
            1, std::chrono::duration_cast<std::chrono::microseconds>(took_).count());
        // (A WAL started over during the step holds only what came after.)
        const int pages_after = db_.wal_pages();
        const std::int64_t pages =
            std::max(1, pages_after >= pages_before ? pages_after - pages_before : pages_after);
        next_ = std::clamp<std::int64_t>(
            std::min(amount * step_time.count() / us, amount * step_wal_pages / pages), 1, most_);
        return result;
    }

  private:
    store& db_;
    std::int64_t next_;
    std::int64_t most_;
    std::chrono::nanoseconds took_{};
};

// Lets the io thread's other work run for as long as the last step took, and keeps the WAL small:
// when it has grown past wal_pages_before_checkpoint, waits for a checkpoint that copies all of
// it (on the pool thread, through a connection of its own: the store's is the io thread's). A
// checkpoint that another one (wal_checkpointer's) or a reader kept from finishing is tried again
// a little later.
awaitable<void> pause_for_others(const gc_context& ctx, const pacer& last) {
    const auto executor = co_await net::this_coro::executor;
    net::steady_timer others(
        executor, std::min<std::chrono::steady_clock::duration>(last.took(), longest_pause));
    co_await others.async_wait(use_awaitable);
    if (ctx.db.wal_pages() < wal_pages_before_checkpoint) co_return;
    const std::string path = ctx.db.path();
    for (int tries = 0; tries < 100; ++tries) {
        if (co_await off_thread(ctx.blocking, [&path] { return checkpoint_wal(path); })) co_return;
        net::steady_timer pause(executor, std::chrono::milliseconds(10));
        co_await pause.async_wait(use_awaitable);
    }
}

// A --worktree loop's worktree holds its results, on its branch: the loop's history says what
// they are, so it stays as long as the worktree does.
bool worktree_exists(const loop_history::ended_loop& loop) {
    std::error_code ec;
    return !loop.worktree_path.empty() && std::filesystem::exists(loop.worktree_path, ec);
}

// Unless its branch has work that is neither in the branch it started from nor pushed (to its
// --pr remote, else origin), or the worktree has uncommitted changes: then nothing is lost with
// it, and it goes (with its branch on --delete-branch). Returns whether it is gone (with dry_run:
// would go). Blocks (libgit2).
bool remove_merged_worktree(const loop_history::ended_loop& loop, bool dry_run) {
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

// The ended loops' ids but those whose worktree stays (result.kept_for_worktrees); the worktrees
// that are merged or pushed go first, on the pool thread (result.worktrees_removed).
awaitable<std::vector<std::int64_t>> sort_worktrees(
    const std::vector<loop_history::ended_loop>& ended, const proto::gc_request& request,
    proto::gc_result& result, const gc_context& ctx) {
    std::vector<std::int64_t> kept;
    if (std::any_of(ended.begin(), ended.end(), worktree_exists)) {
        const bool dry_run = request.dry_run;
        const proto::gc_result sorted = co_await off_thread(ctx.blocking, [&ended, dry_run] {
            proto::gc_result worktree_loops;
            for (const loop_history::ended_loop& loop : ended)
                if (worktree_exists(loop))
                    (remove_merged_worktree(loop, dry_run) ? worktree_loops.worktrees_removed
                                                           : worktree_loops.kept_for_worktrees)
                        .push_back(loop.id);
            return worktree_loops;
        });
        result.worktrees_removed.insert(result.worktrees_removed.end(),
                                        sorted.worktrees_removed.begin(),
                                        sorted.worktrees_removed.end());
        result.kept_for_worktrees.insert(result.kept_for_worktrees.end(),
                                         sorted.kept_for_worktrees.begin(),
                                         sorted.kept_for_worktrees.end());
        kept = sorted.kept_for_worktrees;
    }
    std::vector<std::int64_t> ids;
    for (const loop_history::ended_loop& loop : ended)
        if (std::find(kept.begin(), kept.end(), loop.id) == kept.end()) ids.push_back(loop.id);
    co_return ids;
}

// Gives the database's free pages back to the file system a step at a time (incremental_vacuum;
// the file shrinks as the WAL is checkpointed).
awaitable<void> vacuum_in_steps(const gc_context& ctx) {
    pacer pages(ctx.db, first_vacuum_pages, std::int64_t(1) << 20);
    for (std::int64_t left = ctx.db.free_pages(); left > 0;) {
        const std::int64_t before = left;
        const std::int64_t n = pages.next();
        left = pages.step(n, [&ctx, n] { return ctx.db.vacuum_some(n); });
        co_await pause_for_others(ctx, pages);
        if (left >= before) break;  // a database without auto_vacuum keeps its free pages
    }
}

// Gives the WAL's pages to the database file, and the memory SQLite and the allocator kept to
// the system (a removal of a year's history grew ralphd by 200 MiB, which stayed:
// bench/README.md).
awaitable<void> give_back_memory(const gc_context& ctx) {
    const std::string path = ctx.db.path();
    co_await off_thread(ctx.blocking, [&path] { return checkpoint_wal(path); });
    ctx.db.release_memory();
    co_await off_thread(ctx.blocking, [] { return ::malloc_trim(0); });
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

    std::string refused;                      // why the storage refused a removal
    std::int64_t forgotten = 0, deleted = 0;  // the loops whose files went, and their bytes
    try {
        // Output index rows waiting for their batch must not outlive their loop's rows.
        ctx.output.write_pending();
    } catch (const std::exception& e) {
        if (request.dry_run || !ctx.health.failed(e)) throw;
        refused = e.what();
    }
    std::optional<larger_cache> cache;
    cache.emplace(ctx.db);
    pacer loops_per_transaction(ctx.db, 10, max_loops_per_transaction);
    loop_history::gc_cursor cursor;
    for (;;) {
        std::vector<loop_history::ended_loop> ended =
            ctx.db.history().loops_ended_before(result.before, cursor, loops_per_batch);
        if (ended.empty()) break;
        cursor = {ended.back().finished_at, ended.back().id};
        std::erase_if(ended, [&ctx](const auto& loop) { return ctx.is_running(loop.id); });
        const std::vector<std::int64_t> ids = co_await sort_worktrees(ended, request, result, ctx);

        // The rows go in transactions, the files of each after its commit: a crash in between
        // leaves files without rows (harmless), never rows without their output. When the
        // database refused a removal: the files of every loop all the same, whose rows go at the
        // next gc; most of the space is theirs.
        std::vector<loop_files> files;
        std::vector<std::int64_t> counted;  // a dry run's: the loops whose files it measures
        for (std::size_t first = 0; first < ids.size();) {
            const std::size_t n = std::min<std::size_t>(ids.size() - first,
                                                        std::size_t(loops_per_transaction.next()));
            const std::vector<std::int64_t> some(ids.begin() + std::ptrdiff_t(first),
                                                 ids.begin() + std::ptrdiff_t(first + n));
            first += n;
            std::vector<std::int64_t> gone;
            if (refused.empty()) {
                try {
                    const bool dry_run = request.dry_run;
                    loop_history::removal removal =
                        loops_per_transaction.step(std::int64_t(n), [&ctx, &some, dry_run] {
                            return ctx.db.history().remove_loops(some, dry_run);
                        });
                    result.loop_ids.insert(result.loop_ids.end(), removal.loop_ids.begin(),
                                           removal.loop_ids.end());
                    result.attempts += removal.attempts;
                    result.events += removal.events;
                    gone = std::move(removal.loop_ids);
                } catch (const std::exception& e) {
                    if (request.dry_run || !ctx.health.failed(e)) throw;
                    refused = e.what();
                }
            }
            if (!refused.empty()) gone = some;
            if (request.dry_run) {
                counted.insert(counted.end(), gone.begin(), gone.end());
            } else {
                for (std::int64_t id : gone) files.push_back(ctx.forget_loop(id));
                forgotten += std::int64_t(gone.size());
            }
            co_await pause_for_others(ctx, loops_per_transaction);
        }
        if (request.dry_run) {
            const output_log& output = ctx.output;
            result.output_bytes += co_await off_thread(ctx.blocking, [&output, &counted] {
                std::int64_t bytes = 0;
                for (std::int64_t id : counted) bytes += output.file_size(id);
                return bytes;
            });
        } else if (!files.empty()) {
            deleted +=
                co_await off_thread(ctx.blocking, [&files] { return delete_loop_files(files); });
        }
    }
    if (!refused.empty())
        throw proto::rpc_error(
            proto::error_kind::storage_unavailable,
            fmt::format("the database cannot be changed ({}): the output files of {} loop(s) were "
                        "removed ({} bytes freed); the records not yet removed go at the next gc",
                        refused, forgotten, deleted));
    if (request.dry_run) co_return result;
    result.output_bytes = deleted;
    if (!result.loop_ids.empty()) {
        co_await vacuum_in_steps(ctx);
        cache.reset();
        co_await give_back_memory(ctx);
        spdlog::info(
            "history.gc: removed {} loop(s) that ended before {}: {} attempt(s), {} event(s), {} "
            "bytes of output, in {} ms",
            result.loop_ids.size(), text::format_iso8601(result.before), result.attempts,
            result.events, result.output_bytes,
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count());
    }
    co_return result;
}

awaitable<proto::removal_result> remove_loop(std::int64_t loop_id, const gc_context& ctx) {
    const proto::loop_info loop =
        ctx.db.loops().get_loop(loop_id);  // loop_not_found for an unknown id
    if (!proto::is_terminal(loop.state))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot remove loop {}: it is {}, not ended (cancel it "
                                           "first: ralphctl cancel {})",
                                           loop_id, proto::to_string(loop.state), loop_id));
    const std::optional<loop_history::ended_loop> ended_loop =
        ctx.db.history().ended_loop_of(loop_id);
    if (!ended_loop || ctx.is_running(loop_id))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               fmt::format("cannot remove loop {}: its agent is still being "
                                           "stopped; try again in a moment",
                                           loop_id));
    const std::vector<loop_history::ended_loop> ended{*ended_loop};
    const proto::gc_request request;  // not a dry run
    proto::gc_result sorted;
    const std::vector<std::int64_t> ids = co_await sort_worktrees(ended, request, sorted, ctx);
    if (ids.empty())
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot remove loop {}: its worktree {} has work that is neither merged "
                        "nor pushed, or uncommitted changes (land it first: ralphctl merge {}, or "
                        "ralphctl pr {}; or remove the worktree: git worktree remove {})",
                        loop_id, ended_loop->worktree_path, loop_id, loop_id,
                        ended_loop->worktree_path));
    // As collect_garbage removes a loop: its output index written, its rows in one transaction,
    // then its files.
    ctx.output.write_pending();
    const loop_history::removal removal = ctx.db.history().remove_loops(ids, false);
    // It was taken back to the queue (loop.retry) while its worktree was checked.
    if (removal.loop_ids.empty())
        throw proto::rpc_error(
            proto::error_kind::invalid_state,
            fmt::format("cannot remove loop {}: it is no longer ended", loop_id));
    const std::vector<loop_files> files{ctx.forget_loop(loop_id)};
    const std::int64_t deleted =
        co_await off_thread(ctx.blocking, [&files] { return delete_loop_files(files); });
    spdlog::info("loop.remove: removed loop {}: {} attempt(s), {} event(s), {} bytes of output",
                 loop_id, removal.attempts, removal.events, deleted);
    co_return proto::removal_result{loop_id, removal.attempts, removal.events, deleted,
                                    !sorted.worktrees_removed.empty()};
}

}  // namespace ralph
