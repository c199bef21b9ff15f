// Requests and results of the history methods (proto/API.md): history.report, what the loops
// did in a time window, and history.gc, what pruning the old history removed (and loop.remove,
// the same for one loop). The daemon
// computes them from the persisted attempts; ralphctl report and gc read them back with
// from_json. The conventions of proto/loop_api.hpp.
#pragma once

#include "proto/types.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ralph::proto {

// history.report: the window starts at `since` (default: a day before now).
struct report_request {
    std::optional<std::int64_t> since;  // epoch ms; sent as ISO 8601
    bool operator==(const report_request&) const = default;
};
void from_json(const nlohmann::json& j, report_request& r);
void to_json(nlohmann::json& j, const report_request& r);

// history.gc: the loops that ended more than `older_than_s` ago (at most a century).
struct gc_request {
    double older_than_s = 30 * 86400.0;
    bool dry_run = false;  // only say what would be removed
    bool operator==(const gc_request&) const = default;
};
void from_json(const nlohmann::json& j, gc_request& r);
void to_json(nlohmann::json& j, const gc_request& r);

// What a set of attempts did: summed over one loop's attempts in the window, or over every
// loop of a report.
struct activity {
    std::int64_t attempts = 0;
    std::int64_t iterations = 0;     // distinct iterations that had an attempt
    std::int64_t retries = 0;        // work attempts that were retries (attempt number > 1)
    std::int64_t commits = 0;        // attempts after which HEAD had moved
    std::int64_t files_changed = 0;  // summed over the attempts: a file changed twice counts twice
    std::int64_t insertions = 0;
    std::int64_t deletions = 0;
    proto::usage usage;
    std::map<std::string, proto::usage> by_agent;  // `usage` by the agent the attempts ran on
    std::int64_t agent_ms = 0;  // how long the agents ran (a running attempt: until now)
    std::map<std::string, std::int64_t> failures;  // failure class → attempts
    std::map<std::string, std::int64_t> verdicts;  // a judge's verdict (accept, reject) → attempts

    void add(const activity& other);
    bool operator==(const activity&) const = default;
};

// One loop of a report: who it is, where it stands, and what it did in the window.
struct report_loop {
    std::int64_t id = 0;
    std::string name;
    std::string workspace;
    std::string agent;
    loop_state state = loop_state::queued;
    std::string stop_reason;
    std::int64_t created_at = 0;
    std::int64_t started_at = 0;
    std::int64_t finished_at = 0;
    std::int64_t iterations_total = 0;  // iterations finished over the loop's whole life
    std::int64_t max_iterations = 0;
    std::int64_t duration_ms = 0;  // started → finished (or the report's end); 0: never ran
    std::string head_before;       // HEAD before the window's first attempt that had one
    std::string head_after;        // HEAD after its last attempt that had one
    proto::activity activity;      // the attempts in the window
    bool operator==(const report_loop&) const = default;
};

struct report {
    std::int64_t since = 0;  // the window: [since, until]
    std::int64_t until = 0;
    std::vector<report_loop> loops;  // by id
    // Over every loop of the report.
    std::int64_t loop_count = 0;
    std::map<std::string, std::int64_t> by_state;
    proto::activity totals;
    bool operator==(const report&) const = default;
};

// Sums the loops into loop_count, by_state and totals.
void add_totals(report& r);

void to_json(nlohmann::json& j, const activity& a);
void from_json(const nlohmann::json& j, activity& a);
void to_json(nlohmann::json& j, const report_loop& loop);
void from_json(const nlohmann::json& j, report_loop& loop);
void to_json(nlohmann::json& j, const report& r);
void from_json(const nlohmann::json& j, report& r);

// What history.gc removed (or, with dry_run, would remove).
struct gc_result {
    bool dry_run = false;
    std::int64_t before = 0;             // loops that ended before this time
    bool kept_for_budgets = false;       // `before` is earlier than asked: a global budget
                                         // still counts the agent runs of later loops
    std::vector<std::int64_t> loop_ids;  // oldest first
    std::vector<std::int64_t> kept_for_worktrees;  // ended before, but their worktree exists
    // Ended before, and their worktree removed (their branch merged, nothing uncommitted): the
    // loops are in loop_ids too.
    std::vector<std::int64_t> worktrees_removed;
    std::int64_t attempts = 0;
    std::int64_t events = 0;
    std::int64_t output_bytes = 0;  // the loops' output files on disk
    bool operator==(const gc_result&) const = default;
};

void to_json(nlohmann::json& j, const gc_result& r);
void from_json(const nlohmann::json& j, gc_result& r);

// loop.remove: what removing one ended loop (as history.gc does) took away.
struct removal_result {
    std::int64_t id = 0;
    std::int64_t attempts = 0;
    std::int64_t events = 0;
    std::int64_t output_bytes = 0;
    bool worktree_removed = false;  // its worktree went first (branch merged or pushed, clean)
    bool operator==(const removal_result&) const = default;
};
void to_json(nlohmann::json& j, const removal_result& r);
void from_json(const nlohmann::json& j, removal_result& r);

}  // namespace ralph::proto
