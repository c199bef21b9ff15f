// history.gc's retention policy (docs/design/history.md; loop.remove removes
// one loop the same way): which loops go —
// those in an end state that finished before the cutoff, never within the longest window of the
// global budgets, never one whose runner is still finishing, nor one whose worktree still exists
// unless its branch is merged into the branch it started from and it has nothing uncommitted
// (then the worktree goes first, on the pool thread, with its branch on --delete-branch) — and
// the order of their removal: the output index flushed, the rows deleted, and only then the files,
// so that a crash in between leaves files without rows, never the reverse. Nobody notices it,
// whatever it removes: the loops are read a batch at a time, their rows go in transactions of
// about 2 ms of the io thread each (the store is the io thread's) with its other calls served
// between them, the WAL is checkpointed on the pool thread whenever it reaches 8 MiB, the files
// are deleted on the API's pool thread, and then the freed pages go back to the file system a
// step at a time (incremental_vacuum) and the memory to the system (bench/README.md, "scale").
#pragma once

#include "common/asio.hpp"
#include "proto/history.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace ralph {

class store;
class output_log;
class storage_health;

// What a loop leaves outside the database: its output file, and its runner's last prompt and
// scratch directory.
struct loop_files {
    std::filesystem::path output;
    std::filesystem::path prompt;
    std::filesystem::path scratch;
};

// Deletes the files of loops whose history is gone; returns the bytes of output deleted. A file
// that cannot be deleted is logged. Runs on any thread.
std::int64_t delete_loop_files(const std::vector<loop_files>& loops);

// What gc works on; owned by the daemon.
struct gc_context {
    store& db;
    output_log& output;
    storage_health& health;
    net::thread_pool& blocking;  // where the files are deleted
    // The loop's runner still exists (scheduler::is_running): it may yet write its last rows.
    std::function<bool(std::int64_t loop_id)> is_running;
    // Forgets a loop once its rows are gone, or when the database cannot change (a full disk: the
    // rows go at the next gc): its tails end, readers see no output. Returns its files.
    std::function<loop_files(std::int64_t loop_id)> forget_loop;
};

// Removes (with request.dry_run, only counts) the history of the loops that ended more than
// request.older_than_s before now_ms, or before the start of the longest window of `budgets`
// (the global budgets that are set: admission::budget_use) when that is earlier. When the
// storage refuses the removal (a full disk), the loops' output files — most of the space they
// take — are deleted all the same, and rpc_error(storage_unavailable) says so: the rows not yet
// removed go at the next gc. The arguments must outlive the call.
awaitable<proto::gc_result> collect_garbage(const proto::gc_request& request, std::int64_t now_ms,
                                            const std::vector<proto::budget_use>& budgets,
                                            const gc_context& ctx);

// loop.remove: the one loop `loop_id` removed as collect_garbage removes a loop (its worktree
// first, when its branch is merged or pushed and it has nothing uncommitted), whenever it ended.
// Throws rpc_error(invalid_state), saying what to do, for a loop that has not ended or whose
// worktree holds work that would be lost; loop_not_found for an unknown id.
awaitable<proto::removal_result> remove_loop(std::int64_t loop_id, const gc_context& ctx);

}  // namespace ralph
