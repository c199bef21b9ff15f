// The store's index of the persisted output (output_chunks, and each loop's committed end in
// loops.output_bytes), written and read by output_log, which needs nothing else of the store.
// Reached through store::output_index().
#pragma once

#include "proto/types.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ralph {

class store;

class output_index_table {
  public:
    explicit output_index_table(store& db) : db_(db) {}

    struct output_chunk_row {
        std::int64_t loop_id, attempt_id, offset, length, ts_ms;
        std::string stream;
    };
    // One transaction: inserts the rows and sets each loop's output_bytes.
    void record_output(const std::vector<output_chunk_row>& rows,
                       const std::map<std::int64_t, std::int64_t>& loop_ends);
    std::int64_t output_bytes(std::int64_t loop_id);
    // Where each attempt of the loop began writing its output, on which agent, and which attempt
    // it is, in order.
    struct attempt_start {
        std::int64_t attempt_id, output_start;
        std::string agent;
        std::int64_t iteration, attempt;
        proto::attempt_kind kind;
    };
    std::vector<attempt_start> attempt_starts(std::int64_t loop_id);

  private:
    store& db_;
};

}  // namespace ralph
