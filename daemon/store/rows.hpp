// Reading the store's rows, shared by its tables' files (loops.cpp, attempts.cpp, history.cpp).
#pragma once

#include "proto/types.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

namespace ralph {

// The usage columns (input_tokens, output_tokens, cost_usd, turns, tool_calls, in this order)
// of the current row, starting at column `first`.
proto::usage usage_from_row(SQLite::Statement& q, int first);

}  // namespace ralph
