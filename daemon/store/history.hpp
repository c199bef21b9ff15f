// The store's queries over the history (history.report and history.gc, loop.remove): the report
// of what loops did in a time window, summed by SQLite so that a long history is never loaded,
// and the removal of loops that ended, with every row of theirs in every table. Reached through
// store::history(); gc.hpp holds the policy of what goes when.
#pragma once

#include "proto/history.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

class store;

class loop_history {
  public:
    explicit loop_history(store& db) : db_(db) {}

    // Every loop active in [since_ms, until_ms] — submitted, ended, or with an attempt that
    // started, ended or still runs in it — by id, with its attempts in the window summed in
    // SQL (no attempt row is loaded).
    std::vector<proto::report_loop> report_loops(std::int64_t since_ms, std::int64_t until_ms);
    // The loops in an end state that finished before cutoff_ms, oldest first: the first `limit`
    // (0: all) after the one `after` names (finished_at and id; {0, 0}: from the first).
    struct ended_loop {
        std::int64_t id = 0;
        std::int64_t finished_at = 0;
        std::string worktree_path;  // "" unless it ran in a --worktree
        // Of its spec, for gc to remove a merged worktree (workspace::remove_worktree).
        std::string worktree_source;
        std::string worktree_branch;
        std::string worktree_target;
        bool delete_branch = false;
        std::string pr_remote;  // "" = none
    };
    struct gc_cursor {
        std::int64_t finished_at = 0;
        std::int64_t id = 0;
    };
    std::vector<ended_loop> loops_ended_before(std::int64_t cutoff_ms, gc_cursor after,
                                               std::int64_t limit);
    // The loop when it is in an end state (loop.remove), else nullopt.
    std::optional<ended_loop> ended_loop_of(std::int64_t loop_id);
    struct removal {
        std::vector<std::int64_t> loop_ids;  // those still in an end state, thus removed
        std::int64_t attempts = 0;
        std::int64_t events = 0;
    };
    // In one transaction, deletes the loops that are (still) in an end state with their
    // attempts, events, steering hints and output index; with dry_run only counts them.
    removal remove_loops(const std::vector<std::int64_t>& loop_ids, bool dry_run);

  private:
    store& db_;
};

}  // namespace ralph
