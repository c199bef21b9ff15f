// The attempts table, with the events and the steering hints (attempts.hpp).
#include "daemon/store/attempts.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/rows.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace ralph {
namespace {

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

std::int64_t attempt_table::begin_attempt(const proto::attempt_info& a,
                                          std::int64_t process_start_time) {
    SQLite::Transaction tx(db_.connection_);
    auto q = db_.prepared(
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
    std::int64_t id = db_.connection_.getLastInsertRowid();
    // A retry is a work attempt after the first of its iteration (a judge's comes after one).
    auto counters = db_.prepared(
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

void attempt_table::finish_attempt(const proto::attempt_info& a,
                                   const std::vector<proto::event_info>& last_events,
                                   const std::string& claimed_answer) {
    SQLite::Transaction tx(db_.connection_);
    auto q = db_.prepared(
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
    auto sums = db_.prepared(
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

void attempt_table::set_attempt_process(std::int64_t attempt_id, std::int64_t pid,
                                        std::int64_t process_start_time) {
    auto q = db_.prepared("UPDATE attempts SET pid = ?, process_start_time = ? WHERE id = ?");
    q.bind(1, pid);
    q.bind(2, process_start_time);
    q.bind(3, attempt_id);
    q.exec();
}

std::optional<proto::attempt_info> attempt_table::find_attempt(std::int64_t attempt_id) {
    auto q = db_.prepared(std::string("SELECT ") + attempt_columns + " FROM attempts WHERE id = ?");
    q.bind(1, attempt_id);
    if (!q.executeStep()) return std::nullopt;
    return attempt_from_row(q);
}

proto::attempt_info attempt_table::get_attempt(std::int64_t attempt_id) {
    auto attempt = find_attempt(attempt_id);
    if (!attempt) throw std::runtime_error("no attempt " + std::to_string(attempt_id));
    return *attempt;
}

std::int64_t attempt_table::stream_event_count(std::int64_t attempt_id) {
    auto q = db_.prepared("SELECT count(*) FROM events WHERE attempt_id = ? AND kind != 'refused'");
    q.bind(1, attempt_id);
    q.executeStep();
    return q.getColumn(0).getInt64();
}

std::vector<proto::attempt_info> attempt_table::attempts_of(std::int64_t loop_id) {
    auto q = db_.prepared(std::string("SELECT ") + attempt_columns +
                          " FROM attempts WHERE loop_id = ? ORDER BY id");
    q.bind(1, loop_id);
    std::vector<proto::attempt_info> attempts;
    while (q.executeStep()) attempts.push_back(attempt_from_row(q));
    return attempts;
}

std::vector<proto::attempt_info> attempt_table::attempts_in(std::int64_t loop_id,
                                                            std::int64_t iteration) {
    auto q = db_.prepared(std::string("SELECT ") + attempt_columns +
                          " FROM attempts WHERE loop_id = ?1 AND iteration = ?2 AND " +
                          after_earlier_iterations + " AND " + after_retry + " ORDER BY id");
    q.bind(1, loop_id);
    q.bind(2, iteration);
    std::vector<proto::attempt_info> attempts;
    while (q.executeStep()) attempts.push_back(attempt_from_row(q));
    return attempts;
}

std::string attempt_table::final_answer_of(std::int64_t attempt_id) {
    auto q = db_.prepared("SELECT final_answer FROM attempts WHERE id = ?");
    q.bind(1, attempt_id);
    return q.executeStep() ? q.getColumn(0).getString() : std::string();
}

std::optional<proto::agent_feedback> attempt_table::feedback_of(std::int64_t loop_id,
                                                                std::int64_t iteration) {
    auto q = db_.prepared(std::string("SELECT feedback FROM attempts WHERE loop_id = ?1 AND "
                                      "iteration = ?2 AND feedback != '' AND ") +
                          after_earlier_iterations + " ORDER BY id DESC LIMIT 1");
    q.bind(1, loop_id);
    q.bind(2, iteration);
    if (!q.executeStep()) return std::nullopt;
    return feedback_from_text(q.getColumn(0).getString());
}

std::string attempt_table::rejection_in(std::int64_t loop_id, std::int64_t iteration) {
    auto q = db_.prepared(std::string("SELECT verdict, verdict_reasons FROM attempts WHERE "
                                      "loop_id = ?1 AND iteration = ?2 AND kind = 'judge' AND "
                                      "verdict != '' AND ") +
                          after_earlier_iterations + " ORDER BY id DESC LIMIT 1");
    q.bind(1, loop_id);
    q.bind(2, iteration);
    if (!q.executeStep() || q.getColumn(0).getString() != "reject") return {};
    return q.getColumn(1).getString();
}

std::int64_t attempt_table::judge_rejections(std::int64_t loop_id) {
    auto q = db_.prepared(std::string("SELECT count(*) FROM attempts WHERE loop_id = ?1 AND kind = "
                                      "'judge' AND verdict = 'reject' AND ") +
                          after_retry);
    q.bind(1, loop_id);
    q.executeStep();
    return q.getColumn(0).getInt64();
}

std::int64_t attempt_table::iterations_without_progress(std::int64_t loop_id) {
    auto q = db_.prepared(std::string("SELECT progress FROM attempts WHERE loop_id = ?1 AND "
                                      "termination = 'exited' AND kind = 'work' AND ") +
                          after_retry + " ORDER BY id DESC");
    q.bind(1, loop_id);
    std::int64_t count = 0;
    while (q.executeStep() && !q.getColumn(0).isNull() && q.getColumn(0).getInt() == 0) ++count;
    return count;
}

void attempt_table::add_events(std::int64_t loop_id, const std::vector<proto::event_info>& events) {
    SQLite::Transaction tx(db_.connection_);
    insert_events(loop_id, events);
    tx.commit();
}

void attempt_table::insert_events(std::int64_t loop_id,
                                  const std::vector<proto::event_info>& events) {
    auto insert = db_.prepared(
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

std::vector<proto::event_info> attempt_table::events_of(std::int64_t loop_id,
                                                        std::int64_t iteration,
                                                        std::int64_t after_id, std::int64_t limit) {
    auto q = db_.prepared(
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

attempt_table::steering_hint attempt_table::add_steering(std::int64_t loop_id,
                                                         const std::string& text,
                                                         std::int64_t now_ms) {
    const proto::loop_info loop = db_.loops().get_loop(loop_id);
    if (proto::is_terminal(loop.state))
        throw proto::rpc_error(proto::error_kind::invalid_state,
                               "loop " + std::to_string(loop_id) + " has already ended (" +
                                   std::string(proto::to_string(loop.state)) + ")");
    auto q = db_.prepared("INSERT INTO steering (loop_id, text, created_at) VALUES (?, ?, ?)");
    q.bind(1, loop_id);
    q.bind(2, text);
    q.bind(3, now_ms);
    q.exec();
    steering_hint hint{db_.connection_.getLastInsertRowid(), loop.iterations + 1};
    // A loop's attempts run one after the other: only its last one may be running.
    auto last = db_.prepared(
        "SELECT iteration, termination FROM attempts WHERE loop_id = ? ORDER BY id DESC LIMIT 1");
    last.bind(1, loop_id);
    if (last.executeStep() && last.getColumn(0).getInt64() == hint.iteration &&
        proto::termination_from_string(last.getColumn(1).getString()) ==
            proto::termination::running)
        ++hint.iteration;
    return hint;
}

std::vector<std::string> attempt_table::steering_for(std::int64_t loop_id, std::int64_t iteration) {
    std::vector<std::string> hints;
    bool unassigned = false;
    {
        auto q = db_.prepared(
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
        auto assign =
            db_.prepared("UPDATE steering SET iteration = ? WHERE loop_id = ? AND iteration = 0");
        assign.bind(1, iteration);
        assign.bind(2, loop_id);
        assign.exec();
    }
    return hints;
}

std::vector<unfinished_attempt> attempt_table::unfinished_attempts() {
    auto q = db_.prepared(
        "SELECT id, loop_id, iteration, pid, process_start_time FROM attempts "
        "INDEXED BY attempts_running WHERE termination = 'running' ORDER BY id");
    std::vector<unfinished_attempt> result;
    while (q.executeStep())
        result.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
                          q.getColumn(2).getInt64(), q.getColumn(3).getInt64(),
                          q.getColumn(4).getInt64()});
    return result;
}

void attempt_table::interrupt_attempt(std::int64_t attempt_id, std::int64_t output_end,
                                      std::int64_t now_ms) {
    auto q = db_.prepared(
        "UPDATE attempts SET termination = 'interrupted', ended_at = ?, "
        "output_end = ?, error = 'ralphd stopped while the agent ran' WHERE id = ?");
    q.bind(1, now_ms);
    q.bind(2, output_end);
    q.bind(3, attempt_id);
    q.exec();
}

void attempt_table::discard_attempt(std::int64_t attempt_id) {
    SQLite::Transaction tx(db_.connection_);
    // The counts begin_attempt added, taken back.
    auto counters = db_.prepared(
        "UPDATE loops SET attempts = attempts - 1, retries = retries - (SELECT CASE WHEN "
        "attempt > 1 AND kind = 'work' THEN 1 ELSE 0 END FROM attempts WHERE id = ?1) "
        "WHERE id = (SELECT loop_id FROM attempts WHERE id = ?1)");
    counters.bind(1, attempt_id);
    counters.exec();
    auto q = db_.prepared("DELETE FROM attempts WHERE id = ?");
    q.bind(1, attempt_id);
    q.exec();
    tx.commit();
}

}  // namespace ralph
