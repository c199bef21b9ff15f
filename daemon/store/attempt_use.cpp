// The attempts' use for the budgets (attempt_use.hpp): a rolling window of attempts, summed. The
// attempt_use table holds the sums of the attempts per minute and per hour of their start, kept
// by triggers (migrations.cpp, 12 → 13), so a window is read as the attempts of its first partial
// minute, then its whole minutes up to the first whole hour, then whole hours: at most a minute of
// attempts and 83 rows for a day, however many attempts it holds.
#include "daemon/store/attempt_use.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/store.hpp"

#include <algorithm>

namespace ralph {
namespace {

constexpr std::int64_t minute_ms = 60 * 1000;
constexpr std::int64_t hour_ms = 60 * minute_ms;

// The first slot of `span` that starts at or after `ms` (ms may be negative: a window longer than
// the clock's time since the epoch, in tests).
std::int64_t first_slot_from(std::int64_t ms, std::int64_t span) {
    return ms >= 0 ? (ms + span - 1) / span : -(-ms / span);
}

// ?1 = the window's start, ?2 = its first whole minute, ?3 = its first whole hour.
constexpr const char* window_pieces =
    "SELECT started_at AS start, 0, 1 AS runs, input_tokens + output_tokens AS tokens, "
    "ifnull(cost_usd, 0) AS cost FROM attempts WHERE started_at >= ?1 AND started_at < ?2 * 60000 "
    "UNION ALL SELECT slot * 60000, 60000, runs, tokens, cost FROM attempt_use "
    "WHERE span = 60000 AND slot >= ?2 AND slot < ?3 * 60 "
    "UNION ALL SELECT slot * 3600000, 3600000, runs, tokens, cost FROM attempt_use "
    "WHERE span = 3600000 AND slot >= ?3";

// ?1 = the loop, ?2 = the window's start. A loop's attempts start one after the other: those in
// the window are the ones after its last attempt that started before it, found by walking back
// from its newest (the (loop_id, id) index), not over its whole history.
constexpr const char* loop_window =
    "FROM attempts WHERE loop_id = ?1 AND started_at >= ?2 AND id > coalesce((SELECT id FROM "
    "attempts WHERE loop_id = ?1 AND started_at < ?2 ORDER BY id DESC LIMIT 1), 0)";

attempt_use_table::use_piece piece_from_row(SQLite::Statement& q) {
    return {q.getColumn(0).getInt64(), q.getColumn(1).getInt64(), q.getColumn(2).getInt64(),
            q.getColumn(3).getInt64(), q.getColumn(4).getDouble()};
}

// The parameters of loop_window (one loop's attempts since) or of window_pieces (everyone's).
void bind_window(SQLite::Statement& q, std::int64_t loop_id, std::int64_t since_ms) {
    if (loop_id != 0) {
        q.bind(1, loop_id);
        q.bind(2, since_ms);
    } else {
        q.bind(1, since_ms);
        q.bind(2, first_slot_from(since_ms, minute_ms));
        q.bind(3, first_slot_from(since_ms, hour_ms));
    }
}

}  // namespace

attempt_use_table::use_piece attempt_use_table::use_since(std::int64_t since_ms,
                                                          std::int64_t loop_id) {
    const bool one_loop = loop_id != 0;
    auto q = db_.prepared(
        one_loop ? std::string("SELECT count(*), total(input_tokens + output_tokens), "
                               "total(cost_usd) ") +
                       loop_window
                 : std::string("SELECT total(runs), total(tokens), total(cost) FROM (") +
                       window_pieces + ")");
    bind_window(q, loop_id, since_ms);
    q.executeStep();
    return {since_ms, 0, std::int64_t(q.getColumn(0).getDouble()),
            std::int64_t(q.getColumn(1).getDouble()), q.getColumn(2).getDouble()};
}

std::vector<attempt_use_table::use_piece> attempt_use_table::use_pieces_since(
    std::int64_t since_ms, std::int64_t loop_id) {
    const bool one_loop = loop_id != 0;
    auto q = db_.prepared(
        one_loop ? std::string("SELECT started_at, 0, 1, input_tokens + output_tokens, "
                               "ifnull(cost_usd, 0) ") +
                       loop_window + " ORDER BY id"
                 : std::string(window_pieces) + " ORDER BY 1");
    bind_window(q, loop_id, since_ms);
    std::vector<use_piece> pieces;
    while (q.executeStep()) pieces.push_back(piece_from_row(q));
    return pieces;
}

std::vector<attempt_use_table::use_piece> attempt_use_table::use_within(const use_piece& slot) {
    auto q = db_.prepared(
        slot.span == hour_ms
            ? "SELECT slot * 60000, 60000, runs, tokens, cost FROM attempt_use "
              "WHERE span = 60000 AND slot >= ?1 / 60000 AND slot < (?1 + 3600000) / 60000 "
              "ORDER BY slot"
            : "SELECT started_at, 0, 1, input_tokens + output_tokens, ifnull(cost_usd, 0) "
              "FROM attempts WHERE started_at >= ?1 AND started_at < ?1 + 60000 "
              "ORDER BY started_at");
    q.bind(1, slot.start);
    std::vector<use_piece> pieces;
    while (q.executeStep()) pieces.push_back(piece_from_row(q));
    return pieces;
}

}  // namespace ralph
