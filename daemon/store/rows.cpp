// Reading the store's rows, shared by its tables (rows.hpp).
#include "daemon/store/rows.hpp"

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

}  // namespace ralph
