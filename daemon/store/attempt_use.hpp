// The budgets' reading of the store: the use of the attempts started in a window, computed from
// the attempts (so a restart resets nothing) and summed. Read from the attempt_use aggregate,
// which triggers keep (migrations.cpp, 12 → 13), whole minutes and hours at a time, so that the
// cost of a window does not grow with the attempts in it. Reached through store::attempt_use().
#pragma once

#include <cstdint>
#include <vector>

namespace ralph {

class store;

class attempt_use_table {
  public:
    explicit attempt_use_table(store& db) : db_(db) {}

    struct use_piece {
        std::int64_t start = 0;  // epoch ms: the attempt's start, or its slot's
        std::int64_t span = 0;   // 0: one attempt; else ms, a minute or an hour of attempts
        std::int64_t runs = 0;
        std::int64_t tokens = 0;  // input + output
        double cost_usd = 0;      // 0 for what reported none
    };
    // The sum of the attempts started at or after since_ms (of one loop unless 0), as one piece.
    use_piece use_since(std::int64_t since_ms, std::int64_t loop_id);
    // The same in pieces, oldest first: for all loops, one attempt at a time up to the first
    // whole minute, then whole minutes up to the first whole hour, then hours; for one loop,
    // its attempts (the last ones of its history, which start one after the other).
    std::vector<use_piece> use_pieces_since(std::int64_t since_ms, std::int64_t loop_id);
    // A minute's or an hour's piece in its finer pieces (attempts, minutes), oldest first.
    std::vector<use_piece> use_within(const use_piece& slot);

  private:
    store& db_;
};

}  // namespace ralph
