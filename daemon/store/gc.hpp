// history.gc's retention policy (ARCHITECTURE.md, "History: report and gc"): which loops go —
// those in an end state that finished before the cutoff, never within the longest window of the
// global budgets, never one whose worktree still exists or whose runner is still finishing — and
// the order of their removal: the output index flushed, the rows deleted in one transaction, and
// only then the files, so that a crash in between leaves files without rows, never the reverse.
#pragma once

#include "proto/history.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace ralph {

class store;
class output_log;
class storage_health;

// What gc works on; owned by the daemon.
struct gc_context {
    store& db;
    output_log& output;
    storage_health& health;
    // The loop's runner still exists (scheduler::is_running): it may yet write its last rows.
    std::function<bool(std::int64_t loop_id)> is_running;
    // Removes what the daemon keeps of a loop outside the database once its rows are gone, or
    // when the database cannot change (a full disk: the rows go at the next gc) — its output file,
    // last prompt and scratch directory; its tails end. Returns the bytes of output.
    std::function<std::int64_t(std::int64_t loop_id)> forget_loop;
};

// Removes (with request.dry_run, only counts) the history of the loops that ended more than
// request.older_than_s before now_ms, or before the start of the longest window of `budgets`
// (the global budgets that are set: admission::budget_use) when that is earlier. When the
// storage refuses the removal (a full disk), the loops' output files — most of the space they
// take — are removed all the same, and rpc_error(storage_unavailable) says so: their rows go at
// the next gc.
proto::gc_result collect_garbage(const proto::gc_request& request, std::int64_t now_ms,
                                 const std::vector<proto::budget_use>& budgets,
                                 const gc_context& ctx);

}  // namespace ralph
