// The loops table (loops.hpp).
#include "daemon/store/loops.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/rows.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ralph {
namespace {

constexpr const char* loop_columns =
    "id, name, workspace, agent, max_iterations, min_iterations, priority, spec, state, "
    "stop_reason, iterations, attempts, retries, created_at, started_at, finished_at, updated_at, "
    "resume_at, output_bytes, input_tokens, output_tokens, cost_usd, turns, tool_calls, "
    "worktree_path, worktree_branch, landing";

// A new loop's id: one more than the largest there is or ever was (remove_loops records the
// largest it removed), so that an id names one loop for good — its output file, its worktree
// and branch, a tail still following it. Written out so that next_loop_id() and insert_loop()
// agree by construction.
constexpr const char* next_loop_id_sql =
    "(SELECT max(coalesce((SELECT max(id) FROM loops), 0), "
    "coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'removed_loop_id'), 0)) + "
    "1)";

// The loop of a row; its spec is `spec` (the row's, parsed) with the columns' values, or only
// the columns' values when null.
proto::loop_info loop_from_row(SQLite::Statement& q, const proto::submit_params* spec) {
    proto::loop_info loop;
    loop.id = q.getColumn(0).getInt64();
    if (spec) loop.spec = *spec;
    loop.spec.name = q.getColumn(1).getString();
    loop.spec.workspace = q.getColumn(2).getString();
    loop.spec.agent = q.getColumn(3).getString();
    loop.spec.max_iterations = q.getColumn(4).getInt64();
    loop.spec.min_iterations = q.getColumn(5).getInt64();
    loop.spec.priority = q.getColumn(6).getInt64();
    loop.state = proto::loop_state_from_string(q.getColumn(8).getString());
    loop.stop_reason = q.getColumn(9).getString();
    loop.iterations = q.getColumn(10).getInt64();
    loop.attempts = q.getColumn(11).getInt64();
    loop.retries = q.getColumn(12).getInt64();
    loop.created_at = q.getColumn(13).getInt64();
    loop.started_at = q.getColumn(14).getInt64();
    loop.finished_at = q.getColumn(15).getInt64();
    loop.updated_at = q.getColumn(16).getInt64();
    loop.resume_at = q.getColumn(17).getInt64();
    loop.output_bytes = q.getColumn(18).getInt64();
    loop.usage = usage_from_row(q, 19);
    loop.spec.worktree_path = q.getColumn(24).getString();
    loop.spec.worktree_branch = q.getColumn(25).getString();
    loop.landing = q.getColumn(26).getString();
    return loop;
}

}  // namespace

std::int64_t loop_table::next_loop_id() {
    return db_.connection_.execAndGet(std::string("SELECT ") + next_loop_id_sql).getInt64();
}

const proto::submit_params& loop_table::remember_spec(std::int64_t id, proto::submit_params spec) {
    if (parsed_specs_.size() >= max_parsed_specs) parsed_specs_.clear();
    return parsed_specs_.insert_or_assign(id, std::move(spec)).first->second;
}

std::int64_t loop_table::insert_loop(const proto::submit_params& spec, std::int64_t now_ms) {
    auto q =
        db_.prepared(std::string("INSERT INTO loops (id, name, workspace, agent, max_iterations, "
                                 "min_iterations, priority, spec, state, created_at, "
                                 "updated_at, worktree_path, worktree_branch, idempotency_key) "
                                 "VALUES (") +
                     next_loop_id_sql + ", ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)");
    q.bind(1, spec.name);
    q.bind(2, spec.workspace);
    q.bind(3, spec.agent);
    q.bind(4, spec.max_iterations);
    q.bind(5, spec.min_iterations);
    q.bind(6, spec.priority);
    q.bind(7, nlohmann::json(spec).dump());
    q.bind(8, now_ms);
    q.bind(9, now_ms);
    q.bind(10, spec.worktree_path);
    q.bind(11, spec.worktree_branch);
    // Left unbound (NULL) without a key: the unique index allows any number of those.
    if (!spec.idempotency_key.empty()) q.bind(12, spec.idempotency_key);
    q.exec();
    const std::int64_t id = db_.connection_.getLastInsertRowid();
    remember_spec(id, spec);  // the submit reads its loop back at once, the runner soon after
    return id;
}

std::optional<std::int64_t> loop_table::loop_with_idempotency_key(const std::string& key) {
    auto q = db_.prepared("SELECT id FROM loops WHERE idempotency_key = ?");
    q.bind(1, key);
    if (!q.executeStep()) return std::nullopt;
    return q.getColumn(0).getInt64();
}

std::optional<proto::loop_info> loop_table::find_loop(std::int64_t id) {
    auto q = db_.prepared(std::string("SELECT ") + loop_columns + " FROM loops WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return std::nullopt;
    // A loop's spec never changes after its submit, and ids are not given again: kept from the
    // insert or parsed at the first read (a runner reads its loop at every iteration).
    auto spec = parsed_specs_.find(id);
    const proto::submit_params& parsed =
        spec != parsed_specs_.end()
            ? spec->second
            : remember_spec(
                  id,
                  nlohmann::json::parse(q.getColumn(7).getString()).get<proto::submit_params>());
    return loop_from_row(q, &parsed);
}

proto::loop_info loop_table::get_loop(std::int64_t id) {
    auto loop = find_loop(id);
    if (!loop)
        throw proto::rpc_error(proto::error_kind::loop_not_found,
                               "no loop with id " + std::to_string(id));
    return *loop;
}

std::vector<proto::loop_info> loop_table::list_loops(const std::vector<proto::loop_state>& states,
                                                     std::int64_t limit, std::int64_t before_id) {
    // ?1 = before (a bound past every id when 0), ?2 = limit (-1: none); ?3... the states. The
    // ids of each state are a range of the (state, id) index read newest first and cut at the
    // limit, and only the page's rows are read: a page costs the same whatever the history and
    // the queue hold.
    std::string sql = std::string("SELECT ") + loop_columns + " FROM loops WHERE ";
    if (states.empty()) {
        sql += "id < ?1";
    } else {
        sql += "id IN (";
        for (std::size_t i = 0; i < states.size(); ++i)
            sql += fmt::format(
                "{}SELECT id FROM (SELECT id FROM loops WHERE state = ?{} AND "
                "id < ?1 ORDER BY id DESC LIMIT ?2)",
                i ? " UNION ALL " : "", i + 3);
        sql += " ORDER BY id DESC LIMIT ?2)";
    }
    sql += " ORDER BY id DESC LIMIT ?2";
    auto q = db_.prepared(sql);
    q.bind(1, before_id > 0 ? before_id : std::numeric_limits<std::int64_t>::max());
    q.bind(2, limit > 0 ? limit : std::int64_t(-1));
    for (std::size_t i = 0; i < states.size(); ++i)
        q.bind(int(i + 3), std::string(proto::to_string(states[i])));
    std::vector<proto::loop_info> loops;
    while (q.executeStep()) loops.push_back(loop_from_row(q, nullptr));
    return loops;
}

std::vector<loop_table::queued_loop> loop_table::queued_loops() {
    auto q = db_.prepared(
        "SELECT id, workspace, agent, ifnull(json_extract(spec, '$.fallback'), '[]'), "
        "ifnull(json_extract(spec, '$.command'), ''), ifnull(json_extract(spec, '$.quota_key'), "
        "''), ifnull(json_extract(spec, '$.judge'), '') != '' AND EXISTS (SELECT 1 FROM attempts "
        "WHERE loop_id = loops.id AND iteration = loops.iterations + 1) "
        "FROM loops WHERE state = 'queued' ORDER BY priority DESC, id");
    std::vector<queued_loop> loops;
    while (q.executeStep()) {
        // What quotas_of reads of a spec, without parsing the rest.
        proto::submit_params spec;
        spec.agent = q.getColumn(2).getString();
        for (const auto& fallback : nlohmann::json::parse(q.getColumn(3).getString()))
            spec.fallback.push_back(fallback.get<std::string>());
        spec.command = q.getColumn(4).getString();
        spec.quota_key = q.getColumn(5).getString();
        loops.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getString(),
                         proto::quotas_of(spec), q.getColumn(6).getInt() != 0});
    }
    return loops;
}

std::map<std::string, std::int64_t> loop_table::count_by_state() {
    auto q = db_.prepared("SELECT state, loops FROM loop_counts WHERE loops > 0");
    std::map<std::string, std::int64_t> counts;
    while (q.executeStep()) counts[q.getColumn(0).getString()] = q.getColumn(1).getInt64();
    return counts;
}

std::int64_t loop_table::count_loops(const std::vector<proto::loop_state>& states) {
    const std::map<std::string, std::int64_t> counts = count_by_state();
    std::int64_t total = 0;
    for (const auto& [state, loops] : counts)
        if (states.empty() || std::any_of(states.begin(), states.end(), [&state = state](auto s) {
                return proto::to_string(s) == state;
            }))
            total += loops;
    return total;
}

proto::loop_state loop_table::set_state(std::int64_t loop_id, proto::loop_event event,
                                        const std::string& stop_reason, std::int64_t resume_at_ms,
                                        std::int64_t now_ms) {
    auto current = db_.prepared("SELECT state FROM loops WHERE id = ?");
    current.bind(1, loop_id);
    if (!current.executeStep())
        throw std::logic_error(
            fmt::format("loop {}: cannot {}: no such loop", loop_id, proto::to_string(event)));
    const proto::loop_state from = proto::loop_state_from_string(current.getColumn(0).getString());
    current.reset();
    const std::optional<proto::loop_state> to = proto::next_state(from, event);
    if (!to)
        throw std::logic_error(fmt::format("loop {}: the state machine has no {} from {}", loop_id,
                                           proto::to_string(event), proto::to_string(from)));
    auto q = db_.prepared(
        "UPDATE loops SET state = ?1, stop_reason = ?2, resume_at = ?3, updated_at = ?4, "
        "started_at = CASE WHEN ?1 = 'running' AND started_at = 0 THEN ?4 ELSE started_at END, "
        "finished_at = CASE WHEN ?5 THEN ?4 ELSE 0 END, "
        "retried_after = CASE WHEN ?7 THEN coalesce((SELECT max(id) FROM attempts WHERE "
        "loop_id = ?6), 0) ELSE retried_after END "
        "WHERE id = ?6");
    q.bind(1, std::string(proto::to_string(*to)));
    q.bind(2, stop_reason);
    q.bind(3, resume_at_ms);
    q.bind(4, now_ms);
    q.bind(5, proto::is_terminal(*to) ? 1 : 0);
    q.bind(6, loop_id);
    q.bind(7, event == proto::loop_event::retry ? 1 : 0);
    q.exec();
    return *to;
}

void loop_table::set_max_iterations(std::int64_t loop_id, std::int64_t max_iterations,
                                    std::int64_t now_ms) {
    auto q = db_.prepared("UPDATE loops SET max_iterations = ?, updated_at = ? WHERE id = ?");
    q.bind(1, max_iterations);
    q.bind(2, now_ms);
    q.bind(3, loop_id);
    q.exec();
}

void loop_table::set_iterations(std::int64_t loop_id, std::int64_t iterations,
                                std::int64_t now_ms) {
    auto q = db_.prepared("UPDATE loops SET iterations = ?, updated_at = ? WHERE id = ?");
    q.bind(1, iterations);
    q.bind(2, now_ms);
    q.bind(3, loop_id);
    q.exec();
}

loop_table::announced_wait loop_table::announced_wait_of(std::int64_t loop_id) {
    auto q = db_.prepared("SELECT announced_wait, announced_ran FROM loops WHERE id = ?");
    q.bind(1, loop_id);
    if (!q.executeStep()) return {};
    return {q.getColumn(0).getString(), q.getColumn(1).getInt() != 0};
}

bool loop_table::announce_wait(std::int64_t loop_id, const announced_wait& wait,
                               std::int64_t until) {
    auto last = db_.prepared("UPDATE loops SET announced_wait = ?, announced_ran = ? WHERE id = ?");
    last.bind(1, wait.cause);
    last.bind(2, int(wait.ran_since));
    last.bind(3, loop_id);
    last.exec();
    auto seen = db_.prepared("INSERT OR IGNORE INTO announced_waits VALUES (?, ?, ?)");
    seen.bind(1, loop_id);
    seen.bind(2, wait.cause);
    seen.bind(3, until);
    return seen.exec() == 1;
}

void loop_table::set_ran_since_announced(std::int64_t loop_id) {
    auto q = db_.prepared("UPDATE loops SET announced_ran = 1 WHERE id = ? AND announced_ran = 0");
    q.bind(1, loop_id);
    q.exec();
}

void loop_table::set_loop_base(std::int64_t loop_id, const loop_base& base) {
    auto q = db_.prepared(
        "UPDATE loops SET base_head = ?, base_tree = ? "
        "WHERE id = ? AND base_head = '' AND base_tree = ''");
    q.bind(1, base.head);
    q.bind(2, base.tree);
    q.bind(3, loop_id);
    q.exec();
}

void loop_table::set_landing(std::int64_t loop_id, const std::string& landing,
                             std::int64_t now_ms) {
    auto q = db_.prepared("UPDATE loops SET landing = ?, updated_at = ? WHERE id = ?");
    q.bind(1, landing);
    q.bind(2, now_ms);
    q.bind(3, loop_id);
    q.exec();
}

loop_table::loop_base loop_table::base_of(std::int64_t loop_id) {
    auto q = db_.prepared("SELECT base_head, base_tree FROM loops WHERE id = ?");
    q.bind(1, loop_id);
    if (!q.executeStep()) return {};
    return {q.getColumn(0).getString(), q.getColumn(1).getString()};
}

}  // namespace ralph
