// The output_chunks table and the loops' committed ends (output_index.hpp).
#include "daemon/store/output_index.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/store.hpp"

namespace ralph {

void output_index_table::record_output(const std::vector<output_chunk_row>& rows,
                                       const std::map<std::int64_t, std::int64_t>& loop_ends) {
    SQLite::Transaction tx(db_.connection_);
    auto insert = db_.prepared(
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
    auto end = db_.prepared("UPDATE loops SET output_bytes = ? WHERE id = ?");
    for (const auto& [loop_id, bytes] : loop_ends) {
        end.bind(1, bytes);
        end.bind(2, loop_id);
        end.exec();
        end.reset();
    }
    tx.commit();
}

std::int64_t output_index_table::output_bytes(std::int64_t loop_id) {
    auto q = db_.prepared("SELECT output_bytes FROM loops WHERE id = ?");
    q.bind(1, loop_id);
    return q.executeStep() ? q.getColumn(0).getInt64() : 0;
}

std::vector<output_index_table::attempt_start> output_index_table::attempt_starts(
    std::int64_t loop_id) {
    auto q = db_.prepared(
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
