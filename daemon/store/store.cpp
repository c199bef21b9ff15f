#include "daemon/store/store.hpp"

#include "daemon/store/migrations.hpp"
#include "daemon/store/query.hpp"
#include "daemon/store/rows.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

namespace ralph {
proto::usage usage_from_row(SQLite::Statement& q, int first) {
    proto::usage u;
    u.input_tokens = q.getColumn(first).getInt64();
    u.output_tokens = q.getColumn(first + 1).getInt64();
    if (!q.getColumn(first + 2).isNull()) u.cost_usd = q.getColumn(first + 2).getDouble();
    u.turns = q.getColumn(first + 3).getInt64();
    u.tool_calls = q.getColumn(first + 4).getInt64();
    return u;
}

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

constexpr const char* attempt_columns =
    "id, loop_id, iteration, attempt, argv, pid, started_at, ended_at, termination, exit_code, "
    "signal, completion_signal, error, output_start, output_end, failure, input_tokens, "
    "output_tokens, cost_usd, turns, tool_calls, summary, head_before, head_after, files_changed, "
    "insertions, deletions, progress, feedback, verify_exit, verify_output, agent, model, kind, "
    "verdict, verdict_reasons, tree_before, tree_after, completion_rule";

// Condition on attempts (?1 = loop_id, ?2 = iteration): after the last attempt of an earlier
// iteration. Attempts are numbered in iteration order, so with `iteration = ?2` it selects the
// iteration's attempts, and the (loop_id, id) index finds them by walking back from the newest
// attempt over the later iterations only, not over the loop's whole history.
constexpr const char* after_earlier_iterations =
    "id > coalesce((SELECT id FROM attempts WHERE loop_id = ?1 AND iteration < ?2 "
    "ORDER BY id DESC LIMIT 1), 0)";

// The attempts after the loop's last retry (loop.retry: the policy starts afresh from there);
// ?1 is the loop.
constexpr const char* after_retry = "id > (SELECT retried_after FROM loops WHERE id = ?1)";

// The feedback column: JSON, '' when the attempt gave none.
std::optional<proto::agent_feedback> feedback_from_text(const std::string& text) {
    if (text.empty()) return std::nullopt;
    const auto json = nlohmann::json::parse(text, nullptr, false);
    if (!json.is_object()) return std::nullopt;
    return json.get<proto::agent_feedback>();
}

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

proto::attempt_info attempt_from_row(SQLite::Statement& q) {
    proto::attempt_info a;
    a.id = q.getColumn(0).getInt64();
    a.loop_id = q.getColumn(1).getInt64();
    a.iteration = q.getColumn(2).getInt64();
    a.attempt = q.getColumn(3).getInt64();
    a.argv = nlohmann::json::parse(q.getColumn(4).getString()).get<std::vector<std::string>>();
    a.pid = q.getColumn(5).getInt64();
    a.started_at = q.getColumn(6).getInt64();
    a.ended_at = q.getColumn(7).getInt64();
    a.how = proto::termination_from_string(q.getColumn(8).getString());
    if (!q.getColumn(9).isNull()) a.exit_code = q.getColumn(9).getInt();
    if (!q.getColumn(10).isNull()) a.signal = q.getColumn(10).getInt();
    a.completion_signal = q.getColumn(11).getInt() != 0;
    a.error = q.getColumn(12).getString();
    a.output_start = q.getColumn(13).getInt64();
    a.output_end = q.getColumn(14).getInt64();
    a.failure = proto::failure_class_from_string(q.getColumn(15).getString());
    a.usage = usage_from_row(q, 16);
    a.summary = q.getColumn(21).getString();
    a.head_before = q.getColumn(22).getString();
    a.head_after = q.getColumn(23).getString();
    a.files_changed = q.getColumn(24).getInt64();
    a.insertions = q.getColumn(25).getInt64();
    a.deletions = q.getColumn(26).getInt64();
    if (!q.getColumn(27).isNull()) a.progress = q.getColumn(27).getInt() != 0;
    a.feedback = feedback_from_text(q.getColumn(28).getString());
    if (!q.getColumn(29).isNull()) a.verify_exit = q.getColumn(29).getInt();
    a.verify_output = q.getColumn(30).getString();
    a.agent = q.getColumn(31).getString();
    a.model = q.getColumn(32).getString();
    a.kind = proto::attempt_kind_from_string(q.getColumn(33).getString());
    a.verdict = q.getColumn(34).getString();
    a.verdict_reasons = q.getColumn(35).getString();
    a.tree_before = q.getColumn(36).getString();
    a.tree_after = q.getColumn(37).getString();
    a.completion_rule = q.getColumn(38).getString();
    return a;
}

}  // namespace

store::query store::prepared(std::string_view sql) {
    auto it = statements_.find(sql);
    if (it == statements_.end())
        it = statements_.try_emplace(std::string(sql), db_, std::string(sql)).first;
    if (it->second.in_use)
        throw std::logic_error("store: a statement was used again before its first use ended");
    it->second.statement.clearBindings();  // what a use leaves unbound is NULL, as when new
    return query(it->second);
}

store::store(const std::filesystem::path& db_path) try
    : db_(db_path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE) {
    // Another process may hold the database a moment (sqlite3, a backup): wait for it.
    db_.setBusyTimeout(5000);
    db_.exec("PRAGMA journal_mode = WAL");
    // The WAL and its index stay when ralphd closes the database: creating them takes room, and a
    // ralphd started on a full disk must still open it (it runs degraded: storage_health).
    int persist_wal = 1;
    sqlite3_file_control(db_.getHandle(), "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
    // WAL + NORMAL: a commit survives a crash of ralphd; only a power loss may lose the last
    // transactions, never corrupt the database.
    db_.exec("PRAGMA synchronous = NORMAL");
    db_.exec("PRAGMA foreign_keys = ON");
    // After every commit: the WAL's size is kept (gc paces itself by it) and the WAL checkpointed
    // when SQLite's automatic checkpoint would (at 1000 pages), unless an observer took that over
    // (wal_checkpointer). As SQLite's own does in this hook, after the commit.
    sqlite3_wal_hook(
        db_.getHandle(),
        [](void* self, sqlite3* handle, const char*, int pages) {
            store& db = *static_cast<store*>(self);
            db.wal_pages_ = pages;
            if (db.wal_observer_ ? db.wal_observer_(pages) : pages >= 1000)
                sqlite3_wal_checkpoint_v2(handle, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                          nullptr);
            return SQLITE_OK;
        },
        this);
    migrate();
} catch (const SQLite::Exception& e) {
    throw std::runtime_error("cannot open the database " + db_path.string() + ": " + e.what());
}

void store::on_wal_commit(std::function<bool(int pages_in_wal)> observer) {
    wal_observer_ = std::move(observer);
}

int store::latest_schema_version() { return static_cast<int>(schema_migrations().size()); }

int store::schema_version() { return db_.execAndGet("PRAGMA user_version").getInt(); }

void store::migrate() {
    const auto& migrations = schema_migrations();
    int version = schema_version();
    if (version > latest_schema_version())
        throw std::runtime_error("the database has schema version " + std::to_string(version) +
                                 ", newer than this ralphd understands (" +
                                 std::to_string(latest_schema_version()) + "): upgrade ralphd");
    for (; version < latest_schema_version(); ++version) {
        const migration& step = migrations[version];
        const std::string set_version = "PRAGMA user_version = " + std::to_string(version + 1);
        if (step.rewrites_file) {
            // Done again at the next start if ralphd stops before the version is set.
            spdlog::info(
                "database: rewriting {} once for schema version {}, which may take a "
                "while for a long history",
                db_.getFilename(), version + 1);
            db_.exec(std::string(step.sql));
            db_.exec(set_version);
            // The rewrite went through the WAL: its size back to nothing.
            db_.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        } else {
            SQLite::Transaction tx(db_);
            db_.exec(std::string(step.sql));
            db_.exec(set_version);
            tx.commit();
        }
        spdlog::info("database migrated to schema version {}", version + 1);
    }
}

std::int64_t store::next_loop_id() {
    return db_.execAndGet(std::string("SELECT ") + next_loop_id_sql).getInt64();
}

const proto::submit_params& store::remember_spec(std::int64_t id, proto::submit_params spec) {
    if (parsed_specs_.size() >= max_parsed_specs) parsed_specs_.clear();
    return parsed_specs_.insert_or_assign(id, std::move(spec)).first->second;
}

std::int64_t store::insert_loop(const proto::submit_params& spec, std::int64_t now_ms) {
    query q = prepared(std::string("INSERT INTO loops (id, name, workspace, agent, max_iterations, "
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
    const std::int64_t id = db_.getLastInsertRowid();
    remember_spec(id, spec);  // the submit reads its loop back at once, the runner soon after
    return id;
}

std::optional<std::int64_t> store::loop_with_idempotency_key(const std::string& key) {
    query q = prepared("SELECT id FROM loops WHERE idempotency_key = ?");
    q.bind(1, key);
    if (!q.executeStep()) return std::nullopt;
    return q.getColumn(0).getInt64();
}

std::optional<proto::loop_info> store::find_loop(std::int64_t id) {
    query q = prepared(std::string("SELECT ") + loop_columns + " FROM loops WHERE id = ?");
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

proto::loop_info store::get_loop(std::int64_t id) {
    auto loop = find_loop(id);
    if (!loop)
        throw proto::rpc_error(proto::error_kind::loop_not_found,
                               "no loop with id " + std::to_string(id));
    return *loop;
}

std::vector<proto::loop_info> store::list_loops(const std::vector<proto::loop_state>& states,
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
    query q = prepared(sql);
    q.bind(1, before_id > 0 ? before_id : std::numeric_limits<std::int64_t>::max());
    q.bind(2, limit > 0 ? limit : std::int64_t(-1));
    for (std::size_t i = 0; i < states.size(); ++i)
        q.bind(int(i + 3), std::string(proto::to_string(states[i])));
    std::vector<proto::loop_info> loops;
    while (q.executeStep()) loops.push_back(loop_from_row(q, nullptr));
    return loops;
}

std::vector<store::queued_loop> store::queued_loops() {
    query q = prepared(
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

std::map<std::string, std::int64_t> store::count_by_state() {
    query q = prepared("SELECT state, loops FROM loop_counts WHERE loops > 0");
    std::map<std::string, std::int64_t> counts;
    while (q.executeStep()) counts[q.getColumn(0).getString()] = q.getColumn(1).getInt64();
    return counts;
}

std::int64_t store::count_loops(const std::vector<proto::loop_state>& states) {
    const std::map<std::string, std::int64_t> counts = count_by_state();
    std::int64_t total = 0;
    for (const auto& [state, loops] : counts)
        if (states.empty() || std::any_of(states.begin(), states.end(), [&state = state](auto s) {
                return proto::to_string(s) == state;
            }))
            total += loops;
    return total;
}

proto::loop_state store::set_state(std::int64_t loop_id, proto::loop_event event,
                                   const std::string& stop_reason, std::int64_t resume_at_ms,
                                   std::int64_t now_ms) {
    query current = prepared("SELECT state FROM loops WHERE id = ?");
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
    query q = prepared(
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

void store::set_max_iterations(std::int64_t loop_id, std::int64_t max_iterations,
                               std::int64_t now_ms) {
    query q = prepared("UPDATE loops SET max_iterations = ?, updated_at = ? WHERE id = ?");
    q.bind(1, max_iterations);
    q.bind(2, now_ms);
    q.bind(3, loop_id);
    q.exec();
}

void store::set_iterations(std::int64_t loop_id, std::int64_t iterations, std::int64_t now_ms) {
    query q = prepared("UPDATE loops SET iterations = ?, updated_at = ? WHERE id = ?");
    q.bind(1, iterations);
    q.bind(2, now_ms);
    q.bind(3, loop_id);
    q.exec();
}

store::announced_wait store::announced_wait_of(std::int64_t loop_id) {
    query q = prepared("SELECT announced_wait, announced_ran FROM loops WHERE id = ?");
    q.bind(1, loop_id);
    if (!q.executeStep()) return {};
    return {q.getColumn(0).getString(), q.getColumn(1).getInt() != 0};
}

bool store::announce_wait(std::int64_t loop_id, const announced_wait& wait, std::int64_t until) {
    query last = prepared("UPDATE loops SET announced_wait = ?, announced_ran = ? WHERE id = ?");
    last.bind(1, wait.cause);
    last.bind(2, int(wait.ran_since));
    last.bind(3, loop_id);
    last.exec();
    query seen = prepared("INSERT OR IGNORE INTO announced_waits VALUES (?, ?, ?)");
    seen.bind(1, loop_id);
    seen.bind(2, wait.cause);
    seen.bind(3, until);
    return seen.exec() == 1;
}

void store::set_ran_since_announced(std::int64_t loop_id) {
    query q = prepared("UPDATE loops SET announced_ran = 1 WHERE id = ? AND announced_ran = 0");
    q.bind(1, loop_id);
    q.exec();
}

std::int64_t store::begin_attempt(const proto::attempt_info& a, std::int64_t process_start_time) {
    SQLite::Transaction tx(db_);
    query q = prepared(
        "INSERT INTO attempts (loop_id, iteration, attempt, argv, started_at, "
        "output_start, output_end, pid, process_start_time, agent, model, kind) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    q.bind(1, a.loop_id);
    q.bind(2, a.iteration);
    q.bind(3, a.attempt);
    q.bind(4, nlohmann::json(a.argv).dump());
    q.bind(5, a.started_at);
    q.bind(6, a.output_start);
    q.bind(7, a.output_start);
    q.bind(8, a.pid);
    q.bind(9, process_start_time);
    q.bind(10, a.agent);
    q.bind(11, a.model);
    q.bind(12, std::string(proto::to_string(a.kind)));
    q.exec();
    std::int64_t id = db_.getLastInsertRowid();
    // A retry is a work attempt after the first of its iteration (a judge's comes after one).
    query counters = prepared(
        "UPDATE loops SET attempts = attempts + 1, "
        "retries = retries + CASE WHEN ? > 1 AND ? = 'work' THEN 1 ELSE 0 END, updated_at = ? "
        "WHERE id = ?");
    counters.bind(1, a.attempt);
    counters.bind(2, std::string(proto::to_string(a.kind)));
    counters.bind(3, a.started_at);
    counters.bind(4, a.loop_id);
    counters.exec();
    tx.commit();
    return id;
}

void store::finish_attempt(const proto::attempt_info& a,
                           const std::vector<proto::event_info>& last_events,
                           const std::string& claimed_answer) {
    SQLite::Transaction tx(db_);
    query q = prepared(
        "UPDATE attempts SET ended_at = ?, termination = ?, exit_code = ?, signal = ?, "
        "completion_signal = ?, error = ?, output_end = ?, failure = ?, "
        "input_tokens = ?, output_tokens = ?, cost_usd = ?, turns = ?, "
        "tool_calls = ?, summary = ?, head_before = ?, head_after = ?, "
        "files_changed = ?, insertions = ?, deletions = ?, progress = ?, "
        "feedback = ?, verify_exit = ?, verify_output = ?, verdict = ?, verdict_reasons = ?, "
        "tree_before = ?, tree_after = ?, completion_rule = ?, final_answer = ? WHERE id = ?");
    q.bind(1, a.ended_at);
    q.bind(2, std::string(proto::to_string(a.how)));
    q.bind_optional(3, a.exit_code);
    q.bind_optional(4, a.signal);
    q.bind(5, a.completion_signal ? 1 : 0);
    q.bind(6, a.error);
    q.bind(7, a.output_end);
    q.bind(8, std::string(proto::to_string(a.failure)));
    q.bind(9, a.usage.input_tokens);
    q.bind(10, a.usage.output_tokens);
    q.bind_optional(11, a.usage.cost_usd);
    q.bind(12, a.usage.turns);
    q.bind(13, a.usage.tool_calls);
    q.bind(14, a.summary);
    q.bind(15, a.head_before);
    q.bind(16, a.head_after);
    q.bind(17, a.files_changed);
    q.bind(18, a.insertions);
    q.bind(19, a.deletions);
    q.bind_optional(20, a.progress);
    q.bind(21, a.feedback ? nlohmann::json(*a.feedback).dump() : std::string());
    q.bind_optional(22, a.verify_exit);
    q.bind(23, a.verify_output);
    q.bind(24, a.verdict);
    q.bind(25, a.verdict_reasons);
    q.bind(26, a.tree_before);
    q.bind(27, a.tree_after);
    q.bind(28, a.completion_rule);
    q.bind(29, claimed_answer);
    q.bind(30, a.id);
    q.exec();
    query sums = prepared(
        "UPDATE loops SET input_tokens = input_tokens + ?1, "
        "output_tokens = output_tokens + ?2, "
        "cost_usd = CASE WHEN ?3 IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ?3 END, "
        "turns = turns + ?4, tool_calls = tool_calls + ?5 WHERE id = ?6");
    sums.bind(1, a.usage.input_tokens);
    sums.bind(2, a.usage.output_tokens);
    sums.bind_optional(3, a.usage.cost_usd);
    sums.bind(4, a.usage.turns);
    sums.bind(5, a.usage.tool_calls);
    sums.bind(6, a.loop_id);
    sums.exec();
    insert_events(a.loop_id, last_events);
    tx.commit();
}

void store::set_attempt_process(std::int64_t attempt_id, std::int64_t pid,
                                std::int64_t process_start_time) {
    query q = prepared("UPDATE attempts SET pid = ?, process_start_time = ? WHERE id = ?");
    q.bind(1, pid);
    q.bind(2, process_start_time);
    q.bind(3, attempt_id);
    q.exec();
}

std::optional<proto::attempt_info> store::find_attempt(std::int64_t attempt_id) {
    query q = prepared(std::string("SELECT ") + attempt_columns + " FROM attempts WHERE id = ?");
    q.bind(1, attempt_id);
    if (!q.executeStep()) return std::nullopt;
    return attempt_from_row(q);
}

proto::attempt_info store::get_attempt(std::int64_t attempt_id) {
    auto attempt = find_attempt(attempt_id);
    if (!attempt) throw std::runtime_error("no attempt " + std::to_string(attempt_id));
    return *attempt;
}

std::int64_t store::stream_event_count(std::int64_t attempt_id) {
    query q = prepared("SELECT count(*) FROM events WHERE attempt_id = ? AND kind != 'refused'");
    q.bind(1, attempt_id);
    q.executeStep();
    return q.getColumn(0).getInt64();
}

std::vector<proto::attempt_info> store::attempts_of(std::int64_t loop_id) {
    query q = prepared(std::string("SELECT ") + attempt_columns +
                       " FROM attempts WHERE loop_id = ? ORDER BY id");
    q.bind(1, loop_id);
    std::vector<proto::attempt_info> attempts;
    while (q.executeStep()) attempts.push_back(attempt_from_row(q));
    return attempts;
}

std::vector<proto::attempt_info> store::attempts_in(std::int64_t loop_id, std::int64_t iteration) {
    query q = prepared(std::string("SELECT ") + attempt_columns +
                       " FROM attempts WHERE loop_id = ?1 AND iteration = ?2 AND " +
                       after_earlier_iterations + " AND " + after_retry + " ORDER BY id");
    q.bind(1, loop_id);
    q.bind(2, iteration);
    std::vector<proto::attempt_info> attempts;
    while (q.executeStep()) attempts.push_back(attempt_from_row(q));
    return attempts;
}

std::string store::final_answer_of(std::int64_t attempt_id) {
    query q = prepared("SELECT final_answer FROM attempts WHERE id = ?");
    q.bind(1, attempt_id);
    return q.executeStep() ? q.getColumn(0).getString() : std::string();
}

std::optional<proto::agent_feedback> store::feedback_of(std::int64_t loop_id,
                                                        std::int64_t iteration) {
    query q = prepared(std::string("SELECT feedback FROM attempts WHERE loop_id = ?1 AND "
                                   "iteration = ?2 AND feedback != '' AND ") +
                       after_earlier_iterations + " ORDER BY id DESC LIMIT 1");
    q.bind(1, loop_id);
    q.bind(2, iteration);
    if (!q.executeStep()) return std::nullopt;
    return feedback_from_text(q.getColumn(0).getString());
}

std::string store::rejection_in(std::int64_t loop_id, std::int64_t iteration) {
    query q = prepared(std::string("SELECT verdict, verdict_reasons FROM attempts WHERE "
                                   "loop_id = ?1 AND iteration = ?2 AND kind = 'judge' AND "
                                   "verdict != '' AND ") +
                       after_earlier_iterations + " ORDER BY id DESC LIMIT 1");
    q.bind(1, loop_id);
    q.bind(2, iteration);
    if (!q.executeStep() || q.getColumn(0).getString() != "reject") return {};
    return q.getColumn(1).getString();
}

std::int64_t store::judge_rejections(std::int64_t loop_id) {
    query q = prepared(std::string("SELECT count(*) FROM attempts WHERE loop_id = ?1 AND kind = "
                                   "'judge' AND verdict = 'reject' AND ") +
                       after_retry);
    q.bind(1, loop_id);
    q.executeStep();
    return q.getColumn(0).getInt64();
}

void store::set_loop_base(std::int64_t loop_id, const loop_base& base) {
    query q = prepared(
        "UPDATE loops SET base_head = ?, base_tree = ? "
        "WHERE id = ? AND base_head = '' AND base_tree = ''");
    q.bind(1, base.head);
    q.bind(2, base.tree);
    q.bind(3, loop_id);
    q.exec();
}

void store::set_landing(std::int64_t loop_id, const std::string& landing, std::int64_t now_ms) {
    query q = prepared("UPDATE loops SET landing = ?, updated_at = ? WHERE id = ?");
    q.bind(1, landing);
    q.bind(2, now_ms);
    q.bind(3, loop_id);
    q.exec();
}

store::loop_base store::base_of(std::int64_t loop_id) {
    query q = prepared("SELECT base_head, base_tree FROM loops WHERE id = ?");
    q.bind(1, loop_id);
    if (!q.executeStep()) return {};
    return {q.getColumn(0).getString(), q.getColumn(1).getString()};
}

std::int64_t store::iterations_without_progress(std::int64_t loop_id) {
    query q = prepared(std::string("SELECT progress FROM attempts WHERE loop_id = ?1 AND "
                                   "termination = 'exited' AND kind = 'work' AND ") +
                       after_retry + " ORDER BY id DESC");
    q.bind(1, loop_id);
    std::int64_t count = 0;
    while (q.executeStep() && !q.getColumn(0).isNull() && q.getColumn(0).getInt() == 0) ++count;
    return count;
}

void store::add_events(std::int64_t loop_id, const std::vector<proto::event_info>& events) {
    SQLite::Transaction tx(db_);
    insert_events(loop_id, events);
    tx.commit();
}

void store::insert_events(std::int64_t loop_id, const std::vector<proto::event_info>& events) {
    query insert = prepared(
        "INSERT INTO events (loop_id, attempt_id, ts, kind, tool, text) "
        "VALUES (?, ?, ?, ?, ?, ?)");
    for (const auto& e : events) {
        insert.bind(1, loop_id);
        insert.bind(2, e.attempt_id);
        insert.bind(3, e.ts);
        insert.bind(4, e.kind);
        insert.bind(5, e.tool);
        insert.bind(6, e.text);
        insert.exec();
        insert.reset();
    }
}

std::vector<proto::event_info> store::events_of(std::int64_t loop_id, std::int64_t iteration,
                                                std::int64_t after_id, std::int64_t limit) {
    query q = prepared(
        "SELECT e.id, e.attempt_id, a.iteration, e.ts, e.kind, e.tool, e.text "
        "FROM events e JOIN attempts a ON a.id = e.attempt_id "
        "WHERE e.loop_id = ?1 AND e.id > ?2 AND (?3 = 0 OR a.iteration = ?3) "
        "ORDER BY e.id LIMIT ?4");
    q.bind(1, loop_id);
    q.bind(2, after_id);
    q.bind(3, iteration);
    q.bind(4, limit);
    std::vector<proto::event_info> events;
    while (q.executeStep())
        events.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
                          q.getColumn(2).getInt64(), q.getColumn(3).getInt64(),
                          q.getColumn(4).getString(), q.getColumn(5).getString(),
                          q.getColumn(6).getString()});
    return events;
}

store::steering_hint store::add_steering(std::int64_t loop_id, const std::string& text,
                                         std::int64_t now_ms) {
    const proto::loop_info loop = get_loop(loop_id);
    if (proto::is_terminal(loop.state))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               "loop " + std::to_string(loop_id) + " has already ended (" +
                                   std::string(proto::to_string(loop.state)) + ")");
    query q = prepared("INSERT INTO steering (loop_id, text, created_at) VALUES (?, ?, ?)");
    q.bind(1, loop_id);
    q.bind(2, text);
    q.bind(3, now_ms);
    q.exec();
    steering_hint hint{db_.getLastInsertRowid(), loop.iterations + 1};
    // A loop's attempts run one after the other: only its last one may be running.
    query last = prepared(
        "SELECT iteration, termination FROM attempts WHERE loop_id = ? ORDER BY id DESC LIMIT 1");
    last.bind(1, loop_id);
    if (last.executeStep() && last.getColumn(0).getInt64() == hint.iteration &&
        proto::termination_from_string(last.getColumn(1).getString()) ==
            proto::termination::running)
        ++hint.iteration;
    return hint;
}

std::vector<std::string> store::steering_for(std::int64_t loop_id, std::int64_t iteration) {
    std::vector<std::string> hints;
    bool unassigned = false;
    {
        query q = prepared(
            "SELECT text, iteration FROM steering WHERE loop_id = ?1 AND "
            "iteration IN (0, ?2) ORDER BY id");
        q.bind(1, loop_id);
        q.bind(2, iteration);
        while (q.executeStep()) {
            hints.push_back(q.getColumn(0).getString());
            unassigned = unassigned || q.getColumn(1).getInt64() == 0;
        }
    }
    // A write only when there are new hints: most iterations have none.
    if (unassigned) {
        query assign =
            prepared("UPDATE steering SET iteration = ? WHERE loop_id = ? AND iteration = 0");
        assign.bind(1, iteration);
        assign.bind(2, loop_id);
        assign.exec();
    }
    return hints;
}

bool store::hold_agent(const proto::agent_hold& hold) {
    query q = prepared(
        "INSERT INTO agent_holds (agent, account, until, reason, origin) "
        "VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT (agent, account) DO UPDATE SET until = ?3, reason = ?4, origin = ?5 "
        "WHERE excluded.until > agent_holds.until");
    q.bind(1, hold.agent);
    q.bind(2, hold.account);
    q.bind(3, hold.until);
    q.bind(4, hold.reason);
    q.bind(5, hold.origin);
    return q.exec() > 0;
}

namespace {

proto::agent_hold read_hold(SQLite::Statement& row) {
    return {row.getColumn(0).getString(), row.getColumn(1).getString(), row.getColumn(2).getInt64(),
            row.getColumn(3).getString(), row.getColumn(4).getString()};
}

}  // namespace

std::optional<proto::agent_hold> store::agent_hold_of(const std::string& agent,
                                                      const std::string& account,
                                                      std::int64_t now_ms) {
    query q = prepared(
        "SELECT agent, account, until, reason, origin FROM agent_holds "
        "WHERE agent = ? AND account = ? AND until > ?");
    q.bind(1, agent);
    q.bind(2, account);
    q.bind(3, now_ms);
    if (!q.executeStep()) return std::nullopt;
    return read_hold(q);
}

std::vector<proto::agent_hold> store::agent_holds(std::int64_t now_ms) {
    query q = prepared(
        "SELECT agent, account, until, reason, origin FROM agent_holds WHERE until > ? "
        "ORDER BY until, agent, account");
    q.bind(1, now_ms);
    std::vector<proto::agent_hold> result;
    while (q.executeStep()) result.push_back(read_hold(q));
    return result;
}

std::optional<nlohmann::json> store::setting(const std::string& key) {
    query q = prepared("SELECT value FROM settings WHERE key = ?");
    q.bind(1, key);
    if (!q.executeStep()) return std::nullopt;
    return nlohmann::json::parse(q.getColumn(0).getString());
}

void store::set_setting(const std::string& key, const nlohmann::json& value) {
    query q = prepared(
        "INSERT INTO settings (key, value) VALUES (?1, ?2) "
        "ON CONFLICT (key) DO UPDATE SET value = ?2");
    q.bind(1, key);
    q.bind(2, value.dump());
    q.exec();
}

void store::probe_write(std::int64_t now_ms) { set_setting("storage_probe", now_ms); }

void store::add_notification(const std::string& target, const std::string& body,
                             std::int64_t now_ms) {
    query q = prepared("INSERT INTO notifications (target, body, created_at) VALUES (?, ?, ?)");
    q.bind(1, target);
    q.bind(2, body);
    q.bind(3, now_ms);
    q.exec();
}

std::vector<std::string> store::notification_targets() {
    query q = prepared("SELECT DISTINCT target FROM notifications ORDER BY target");
    std::vector<std::string> targets;
    while (q.executeStep()) targets.push_back(q.getColumn(0).getString());
    return targets;
}

std::optional<store::outbox_entry> store::next_notification(const std::string& target) {
    query q = prepared(
        "SELECT id, body, created_at, tries FROM notifications WHERE target = ? "
        "ORDER BY id LIMIT 1");
    q.bind(1, target);
    if (!q.executeStep()) return std::nullopt;
    return outbox_entry{q.getColumn(0).getInt64(), target, q.getColumn(1).getString(),
                        q.getColumn(2).getInt64(), q.getColumn(3).getInt64()};
}

void store::remove_notification(std::int64_t id) {
    query q = prepared("DELETE FROM notifications WHERE id = ?");
    q.bind(1, id);
    q.exec();
}

void store::notification_failed(std::int64_t id, const std::string& error) {
    query q = prepared("UPDATE notifications SET tries = tries + 1, last_error = ? WHERE id = ?");
    q.bind(1, error);
    q.bind(2, id);
    q.exec();
}

void store::in_transaction(const std::function<void()>& work) {
    SQLite::Transaction tx(db_);
    work();
    tx.commit();
}

std::vector<unfinished_attempt> store::unfinished_attempts() {
    query q = prepared(
        "SELECT id, loop_id, iteration, pid, process_start_time FROM attempts "
        "INDEXED BY attempts_running WHERE termination = 'running' ORDER BY id");
    std::vector<unfinished_attempt> result;
    while (q.executeStep())
        result.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
                          q.getColumn(2).getInt64(), q.getColumn(3).getInt64(),
                          q.getColumn(4).getInt64()});
    return result;
}

void store::interrupt_attempt(std::int64_t attempt_id, std::int64_t output_end,
                              std::int64_t now_ms) {
    query q = prepared(
        "UPDATE attempts SET termination = 'interrupted', ended_at = ?, "
        "output_end = ?, error = 'ralphd stopped while the agent ran' WHERE id = ?");
    q.bind(1, now_ms);
    q.bind(2, output_end);
    q.bind(3, attempt_id);
    q.exec();
}

void store::discard_attempt(std::int64_t attempt_id) {
    SQLite::Transaction tx(db_);
    // The counts begin_attempt added, taken back.
    query counters = prepared(
        "UPDATE loops SET attempts = attempts - 1, retries = retries - (SELECT CASE WHEN "
        "attempt > 1 AND kind = 'work' THEN 1 ELSE 0 END FROM attempts WHERE id = ?1) "
        "WHERE id = (SELECT loop_id FROM attempts WHERE id = ?1)");
    counters.bind(1, attempt_id);
    counters.exec();
    query q = prepared("DELETE FROM attempts WHERE id = ?");
    q.bind(1, attempt_id);
    q.exec();
    tx.commit();
}

void store::record_output(const std::vector<output_chunk_row>& rows,
                          const std::map<std::int64_t, std::int64_t>& loop_ends) {
    SQLite::Transaction tx(db_);
    query insert = prepared(
        "INSERT INTO output_chunks (loop_id, offset, length, attempt_id, stream, ts) "
        "VALUES (?, ?, ?, ?, ?, ?)");
    for (const auto& row : rows) {
        insert.bind(1, row.loop_id);
        insert.bind(2, row.offset);
        insert.bind(3, row.length);
        insert.bind(4, row.attempt_id);
        insert.bind(5, row.stream);
        insert.bind(6, row.ts_ms);
        insert.exec();
        insert.reset();
    }
    query end = prepared("UPDATE loops SET output_bytes = ? WHERE id = ?");
    for (const auto& [loop_id, bytes] : loop_ends) {
        end.bind(1, bytes);
        end.bind(2, loop_id);
        end.exec();
        end.reset();
    }
    tx.commit();
}

std::int64_t store::output_bytes(std::int64_t loop_id) {
    query q = prepared("SELECT output_bytes FROM loops WHERE id = ?");
    q.bind(1, loop_id);
    return q.executeStep() ? q.getColumn(0).getInt64() : 0;
}

std::vector<store::attempt_start> store::attempt_starts(std::int64_t loop_id) {
    query q = prepared(
        "SELECT id, output_start, agent, iteration, attempt, kind FROM attempts WHERE loop_id = ? "
        "ORDER BY output_start, id");
    q.bind(1, loop_id);
    std::vector<attempt_start> starts;
    while (q.executeStep())
        starts.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
                          q.getColumn(2).getString(), q.getColumn(3).getInt64(),
                          q.getColumn(4).getInt64(),
                          proto::attempt_kind_from_string(q.getColumn(5).getString())});
    return starts;
}

}  // namespace ralph
