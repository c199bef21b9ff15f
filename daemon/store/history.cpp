// The store's queries over the history (history.hpp): the report of what loops did in a time
// window, summed by SQLite so that a long history is never loaded, and the pruning of loops that
// ended long ago.
//
// "An attempt in the window" [since, until]: it started or ended in it, or it still runs. The
// attempts of one loop run one after the other, so a loop has one exactly when its last
// attempt does — one index lookup per loop instead of a scan of its attempts — and its attempts
// in the window are those after its last one that is not. Every read is bounded by the window:
// the loops a report looks at are those that ended in it, those that have not ended, and those
// of the attempts that started in it or still run (a loop submitted in the window has either
// ended in it or not ended), each found through an index.
#include "daemon/store/history.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/rows.hpp"
#include "daemon/store/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace ralph {
namespace {

// ?1 = the loop, ?2 = since: its attempts in the window, found by walking back from its newest
// attempt to the last one that is not in it (the (loop_id, id) index).
constexpr const char* attempt_in_window =
    "loop_id = ?1 AND (started_at >= ?2 OR ended_at >= ?2 OR ended_at = 0) AND id > "
    "coalesce((SELECT id FROM attempts WHERE loop_id = ?1 AND started_at < ?2 AND ended_at < ?2 "
    "AND ended_at != 0 ORDER BY id DESC LIMIT 1), 0)";

// "'completed', 'exhausted', ...": the end states (proto::is_terminal), or the others, for an SQL
// IN list.
std::string states_sql(bool ended) {
    std::string list;
    for (int i = 0; i <= static_cast<int>(proto::loop_state::stalled); ++i) {
        const auto state = static_cast<proto::loop_state>(i);
        if (proto::is_terminal(state) != ended) continue;
        if (!list.empty()) list += ", ";
        list += "'" + std::string(proto::to_string(state)) + "'";
    }
    return list;
}

// The tables holding a loop's history besides its row in `loops`, children first.
constexpr std::array<const char*, 5> loop_history_tables{"events", "output_chunks", "steering",
                                                         "announced_waits", "attempts"};

// An ended loop's columns for gc, in loop_history::ended_loop's order, from `loops`; a spec is read
// only for a --worktree loop.
constexpr const char* ended_loop_columns =
    "SELECT id, finished_at, worktree_path, "
    "CASE WHEN worktree_path = '' THEN '' ELSE ifnull(json_extract(spec, "
    "'$.worktree_source'), '') END, worktree_branch, CASE WHEN worktree_path = '' THEN '' "
    "ELSE ifnull(json_extract(spec, '$.worktree_target'), '') END, CASE WHEN worktree_path = "
    "'' THEN 0 ELSE ifnull(json_extract(spec, '$.delete_branch'), 0) END, CASE WHEN "
    "worktree_path = '' THEN '' ELSE ifnull(json_extract(spec, '$.pr'), '') END FROM loops ";

loop_history::ended_loop ended_loop_from_row(SQLite::Statement& q) {
    return {q.getColumn(0).getInt64(),    q.getColumn(1).getInt64(),  q.getColumn(2).getString(),
            q.getColumn(3).getString(),   q.getColumn(4).getString(), q.getColumn(5).getString(),
            q.getColumn(6).getInt() != 0, q.getColumn(7).getString()};
}

}  // namespace

std::vector<proto::report_loop> loop_history::report_loops(std::int64_t since_ms,
                                                           std::int64_t until_ms) {
    SQLite::Statement loops(
        db_.connection_,
        "SELECT l.id, l.name, l.workspace, l.agent, l.state, l.stop_reason, "
        "l.created_at, l.started_at, l.finished_at, l.iterations, l.max_iterations "
        "FROM loops l WHERE l.id IN ("
        "SELECT id FROM loops WHERE finished_at >= ?1 "
        "UNION SELECT id FROM loops WHERE state IN (" +
            states_sql(false) +
            ") "
            "UNION SELECT loop_id FROM attempts WHERE started_at >= ?1 "
            "UNION SELECT loop_id FROM attempts WHERE termination = 'running') "
            "AND (l.created_at >= ?1 OR l.finished_at >= ?1 OR "
            "(SELECT a.started_at >= ?1 OR a.ended_at >= ?1 OR a.ended_at = 0 "
            " FROM attempts a WHERE a.loop_id = l.id ORDER BY a.id DESC LIMIT 1)) "
            "ORDER BY l.id");
    loops.bind(1, since_ms);
    // ?1 loop, ?2 since, ?3 until (the end of an attempt still running); {0}: in the window.
    SQLite::Statement sums(
        db_.connection_,
        fmt::format(
            "SELECT count(*), count(DISTINCT iteration), ifnull(sum(attempt > 1 AND kind = "
            "'work'), 0), "
            "ifnull(sum(head_before != '' AND head_after != '' AND head_before != head_after), 0), "
            "ifnull(sum(files_changed), 0), ifnull(sum(insertions), 0), ifnull(sum(deletions), 0), "
            "ifnull(sum(input_tokens), 0), ifnull(sum(output_tokens), 0), sum(cost_usd), "
            "ifnull(sum(turns), 0), ifnull(sum(tool_calls), 0), "
            "ifnull(sum(CASE WHEN ended_at > 0 THEN ended_at ELSE ?3 END - started_at), 0), "
            "ifnull((SELECT head_before FROM attempts WHERE {0} "
            "        AND head_before != '' ORDER BY id LIMIT 1), ''), "
            "ifnull((SELECT head_after FROM attempts WHERE {0} "
            "        AND head_after != '' ORDER BY id DESC LIMIT 1), '') "
            "FROM attempts WHERE {0}",
            attempt_in_window));
    SQLite::Statement by_agent(
        db_.connection_,
        fmt::format("SELECT agent, ifnull(sum(input_tokens), 0), ifnull(sum(output_tokens), "
                    "0), sum(cost_usd), ifnull(sum(turns), 0), ifnull(sum(tool_calls), 0) "
                    "FROM attempts WHERE {0} GROUP BY agent",
                    attempt_in_window));
    SQLite::Statement failures(db_.connection_,
                               fmt::format("SELECT failure, count(*) FROM attempts WHERE {0} "
                                           "AND failure != '' GROUP BY failure",
                                           attempt_in_window));
    SQLite::Statement verdicts(db_.connection_,
                               fmt::format("SELECT verdict, count(*) FROM attempts WHERE {0} "
                                           "AND verdict != '' GROUP BY verdict",
                                           attempt_in_window));

    std::vector<proto::report_loop> result;
    while (loops.executeStep()) {
        proto::report_loop loop;
        loop.id = loops.getColumn(0).getInt64();
        loop.name = loops.getColumn(1).getString();
        loop.workspace = loops.getColumn(2).getString();
        loop.agent = loops.getColumn(3).getString();
        loop.state = proto::loop_state_from_string(loops.getColumn(4).getString());
        loop.stop_reason = loops.getColumn(5).getString();
        loop.created_at = loops.getColumn(6).getInt64();
        loop.started_at = loops.getColumn(7).getInt64();
        loop.finished_at = loops.getColumn(8).getInt64();
        loop.iterations_total = loops.getColumn(9).getInt64();
        loop.max_iterations = loops.getColumn(10).getInt64();
        if (loop.started_at > 0)
            loop.duration_ms =
                (loop.finished_at > 0 ? loop.finished_at : until_ms) - loop.started_at;

        sums.reset();
        sums.bind(1, loop.id);
        sums.bind(2, since_ms);
        sums.bind(3, until_ms);
        sums.executeStep();
        proto::activity& a = loop.activity;
        a.attempts = sums.getColumn(0).getInt64();
        a.iterations = sums.getColumn(1).getInt64();
        a.retries = sums.getColumn(2).getInt64();
        a.commits = sums.getColumn(3).getInt64();
        a.files_changed = sums.getColumn(4).getInt64();
        a.insertions = sums.getColumn(5).getInt64();
        a.deletions = sums.getColumn(6).getInt64();
        a.usage = usage_from_row(sums, 7);
        a.agent_ms = sums.getColumn(12).getInt64();
        loop.head_before = sums.getColumn(13).getString();
        loop.head_after = sums.getColumn(14).getString();

        by_agent.reset();
        by_agent.bind(1, loop.id);
        by_agent.bind(2, since_ms);
        while (by_agent.executeStep())
            a.by_agent[by_agent.getColumn(0).getString()] = usage_from_row(by_agent, 1);
        failures.reset();
        failures.bind(1, loop.id);
        failures.bind(2, since_ms);
        while (failures.executeStep())
            a.failures[failures.getColumn(0).getString()] = failures.getColumn(1).getInt64();
        verdicts.reset();
        verdicts.bind(1, loop.id);
        verdicts.bind(2, since_ms);
        while (verdicts.executeStep())
            a.verdicts[verdicts.getColumn(0).getString()] = verdicts.getColumn(1).getInt64();
        result.push_back(std::move(loop));
    }
    return result;
}

std::vector<loop_history::ended_loop> loop_history::loops_ended_before(std::int64_t cutoff_ms,
                                                                       gc_cursor after,
                                                                       std::int64_t limit) {
    // The (finished_at) index, from the cursor on.
    auto q = db_.prepared(std::string(ended_loop_columns) +
                          "INDEXED BY loops_by_finished WHERE finished_at > 0 AND finished_at < ?1 "
                          "AND finished_at >= ?2 AND (finished_at > ?2 OR id > ?3) AND state IN (" +
                          states_sql(true) + ") ORDER BY finished_at, id LIMIT ?4");
    q.bind(1, cutoff_ms);
    q.bind(2, after.finished_at);
    q.bind(3, after.id);
    q.bind(4, limit > 0 ? limit : std::int64_t(-1));
    std::vector<ended_loop> loops;
    while (q.executeStep()) loops.push_back(ended_loop_from_row(q));
    return loops;
}

std::optional<loop_history::ended_loop> loop_history::ended_loop_of(std::int64_t loop_id) {
    auto q = db_.prepared(std::string(ended_loop_columns) + "WHERE id = ? AND state IN (" +
                          states_sql(true) + ")");
    q.bind(1, loop_id);
    if (!q.executeStep()) return std::nullopt;
    return ended_loop_from_row(q);
}

loop_history::removal loop_history::remove_loops(const std::vector<std::int64_t>& loop_ids,
                                                 bool dry_run) {
    SQLite::Transaction tx(db_.connection_);
    removal removed;
    for (std::int64_t id : loop_ids) {
        {
            auto state_of = db_.prepared("SELECT state FROM loops WHERE id = ?");
            state_of.bind(1, id);
            if (!state_of.executeStep() || !proto::is_terminal(proto::loop_state_from_string(
                                               state_of.getColumn(0).getString())))
                continue;
        }
        removed.loop_ids.push_back(id);
        if (dry_run) {
            auto counts = db_.prepared(
                "SELECT (SELECT count(*) FROM attempts WHERE loop_id = ?1), "
                "(SELECT count(*) FROM events WHERE loop_id = ?1)");
            counts.bind(1, id);
            counts.executeStep();
            removed.attempts += counts.getColumn(0).getInt64();
            removed.events += counts.getColumn(1).getInt64();
            continue;
        }
        // Children first; the loop last, so that a table added later without ON DELETE CASCADE
        // fails the whole removal (foreign keys are on) instead of leaving orphans.
        for (const char* table : loop_history_tables) {
            auto remove = db_.prepared(std::string("DELETE FROM ") + table + " WHERE loop_id = ?");
            remove.bind(1, id);
            const std::int64_t rows = remove.exec();
            if (table == std::string_view("attempts")) removed.attempts += rows;
            if (table == std::string_view("events")) removed.events += rows;
        }
        auto remove = db_.prepared("DELETE FROM loops WHERE id = ?");
        remove.bind(1, id);
        remove.exec();
    }
    if (dry_run || removed.loop_ids.empty()) return removed;
    // The ids stay taken (next_loop_id_sql).
    auto mark_removed = db_.prepared(
        "INSERT INTO settings (key, value) VALUES ('removed_loop_id', ?1) "
        "ON CONFLICT (key) DO UPDATE SET value = max(CAST(value AS INTEGER), ?1)");
    mark_removed.bind(1, *std::max_element(removed.loop_ids.begin(), removed.loop_ids.end()));
    mark_removed.exec();
    tx.commit();
    return removed;
}

}  // namespace ralph
