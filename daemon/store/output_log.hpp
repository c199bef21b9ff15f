// The persisted output of every loop: one append-only file per loop under <state>/output/,
// byte offsets continuing across iterations, and an index in SQLite (output_chunks) saying which
// attempt and stream each byte range came from and when. The bytes are written by the attempt's
// ralph-shim (common/shim_protocol.hpp), never by ralphd, so they outlive it; ralphd indexes them
// as the shim's journal announces them: the index rows and the loop's committed end are written in
// one transaction per flush (every flush_interval or when much is pending), and only then are
// subscribers told. So a byte reaches a tail client only after it is on disk and indexed. Readers
// never see past the committed end. Each attempt's bytes are in its agent's output format
// (span_at): a reader renders a judge's or a fallback's attempt of another CLI by its own, and
// draws a line where each attempt begins.
#pragma once

#include "common/agent_stream/agent_stream.hpp"
#include "common/asio.hpp"
#include "proto/types.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ralph {

class output_index_table;
class storage_health;

enum class output_stream { stdout_stream, stderr_stream, recovered };
std::string_view to_string(output_stream stream);

class output_log {
  public:
    using committed_callback = std::function<void(std::int64_t loop_id, std::int64_t end)>;

    output_log(net::io_context& io, output_index_table& index, storage_health& health,
               std::filesystem::path directory, committed_callback on_committed);
    ~output_log();
    output_log(const output_log&) = delete;
    output_log& operator=(const output_log&) = delete;

    // Indexes `length` bytes of `stream` that the attempt's shim wrote at `offset` of the loop's
    // file (the next ones after the loop's last indexed bytes).
    void index(std::int64_t loop_id, std::int64_t attempt_id, output_stream stream,
               std::int64_t offset, std::int64_t length);
    // Writes pending index rows and committed ends in one transaction, then notifies. A storage
    // error is reported to the storage_health; the rows wait for the next flush.
    void flush();
    // flush() for those that must not go on without it (gc, recover): a storage error is thrown.
    void write_pending();

    // End of the persisted, indexed output of the loop (0 when it has none).
    std::int64_t committed_end(std::int64_t loop_id) const;
    // Reads up to max_bytes from `offset`, never past the committed end. A file that is gone (gc
    // removed it while the disk was full and the rows stayed) is rpc_error(loop_not_found).
    std::string read(std::int64_t loop_id, std::int64_t offset, std::int64_t max_bytes) const;
    // The bytes from `offset` on of one attempt: the output format of the agent whose attempt
    // wrote them, which attempt that is (iteration 0: bytes before any attempt), and where they
    // end (where the next attempt's begin; INT64_MAX when none does).
    struct output_span {
        agent_stream::format format = agent_stream::format::text;
        std::int64_t end = 0;
        std::int64_t iteration = 0;
        std::int64_t attempt = 0;
        proto::attempt_kind kind = proto::attempt_kind::work;
    };
    output_span span_at(std::int64_t loop_id, std::int64_t offset) const;
    // Offset of the start of the last `lines` lines of the committed output.
    std::int64_t offset_of_last_lines(std::int64_t loop_id, std::int64_t lines) const;

    // Bytes in a loop's file past its committed end that no journal announced (an attempt of a
    // ralphd from before shims, a shim that died, a journal the disk refused) are indexed as
    // stream "recovered" of `attempt_id`. Flushes first.
    void recover(std::int64_t loop_id, std::int64_t attempt_id);

    std::filesystem::path file_of(std::int64_t loop_id) const;
    // Size of the loop's output file on disk (0 when it has none).
    std::int64_t file_size(std::int64_t loop_id) const;
    // The loop's history was removed (history.gc): forgets its committed end, so that readers
    // see no output; gc then deletes its file. The loop must not be running, and the index must
    // have been flushed before its rows were deleted.
    void forget(std::int64_t loop_id) {
        committed_.erase(loop_id);
        spans_.erase(loop_id);
    }

  private:
    struct pending_chunk {
        std::int64_t loop_id;
        std::int64_t attempt_id;
        output_stream stream;
        std::int64_t offset;
        std::int64_t length;
        std::int64_t ts_ms;
    };
    // A loop's output as span_at reads it: where each attempt's span begins, and the last attempt
    // the spans know of.
    struct format_spans {
        struct start {
            std::int64_t offset;
            output_span span;  // its `end` unused
        };
        std::vector<start> starts;
        std::int64_t last_attempt_id = 0;
    };
    void schedule_flush();
    // The attempt writes the loop's output: the cached spans are dropped (read again from the
    // attempts table when next needed) unless they know it.
    void attempt_writes(std::int64_t loop_id, std::int64_t attempt_id);

    output_index_table& index_;
    storage_health& health_;
    std::filesystem::path directory_;
    committed_callback on_committed_;
    net::steady_timer flush_timer_;
    bool flush_scheduled_ = false;
    std::vector<pending_chunk> pending_;
    std::int64_t pending_bytes_ = 0;
    mutable std::map<std::int64_t, std::int64_t> committed_;  // cache of loops.output_bytes
    // Made from the attempts' output_start and agent, per loop read since.
    mutable std::map<std::int64_t, format_spans> spans_;
};

}  // namespace ralph
