#include "daemon/store/output_log.hpp"

#include "daemon/state_dir.hpp"

#include "common/enum_names.hpp"
#include "common/text.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/store/output_index.hpp"
#include "daemon/store/storage_health.hpp"
#include "proto/errors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>
#include <system_error>

namespace ralph {
namespace {

// Index rows are committed at this pace, so a flood costs one SQLite transaction per interval.
constexpr auto flush_interval = std::chrono::milliseconds(50);
// ... or sooner when this much is waiting, to keep tail latency and recovery gaps small.
constexpr std::int64_t flush_threshold_bytes = 8 << 20;

struct fd_guard {
    int fd;
    ~fd_guard() {
        if (fd >= 0) ::close(fd);
    }
};

// The output format of an agent's attempts; text for an agent this ralphd does not know.
agent_stream::format format_of_agent(const std::string& name) {
    try {
        return find_agent(name).output_format();
    } catch (const proto::rpc_error&) {
        return agent_stream::format::text;
    }
}

constexpr std::array<enum_name<output_stream>, 3> output_stream_names{{
    {output_stream::stdout_stream, "stdout"},
    {output_stream::stderr_stream, "stderr"},
    {output_stream::recovered, "recovered"},
}};
static_assert(names_in_order(output_stream_names, output_stream::recovered));

}  // namespace

std::string_view to_string(output_stream stream) { return name_of(output_stream_names, stream); }

output_log::output_log(net::io_context& io, output_index_table& index, storage_health& health,
                       std::filesystem::path directory, committed_callback on_committed)
    : index_(index),
      health_(health),
      directory_(std::move(directory)),
      on_committed_(std::move(on_committed)),
      flush_timer_(io) {
    std::filesystem::create_directories(directory_);
}

output_log::~output_log() = default;

std::filesystem::path output_log::file_of(std::int64_t loop_id) const {
    return directory_ / state_dir::output_file_name(loop_id);
}

std::int64_t output_log::file_size(std::int64_t loop_id) const {
    struct stat st {};
    return ::stat(file_of(loop_id).c_str(), &st) == 0 ? std::int64_t(st.st_size) : 0;
}

void output_log::index(std::int64_t loop_id, std::int64_t attempt_id, output_stream stream,
                       std::int64_t offset, std::int64_t length) {
    if (length <= 0) return;
    attempt_writes(loop_id, attempt_id);
    // Coalesce with the previous pending chunk of the same attempt and stream.
    const bool continues_last = !pending_.empty() && pending_.back().loop_id == loop_id &&
                                pending_.back().attempt_id == attempt_id &&
                                pending_.back().stream == stream &&
                                pending_.back().offset + pending_.back().length == offset;
    if (continues_last)
        pending_.back().length += length;
    else
        pending_.push_back({loop_id, attempt_id, stream, offset, length, text::now_ms()});
    pending_bytes_ += length;
    schedule_flush();
}

void output_log::attempt_writes(std::int64_t loop_id, std::int64_t attempt_id) {
    const auto cached = spans_.find(loop_id);
    if (cached != spans_.end() && cached->second.last_attempt_id != attempt_id)
        spans_.erase(cached);
}

void output_log::schedule_flush() {
    if (pending_bytes_ >= flush_threshold_bytes) {
        flush();
        return;
    }
    if (flush_scheduled_) return;
    flush_scheduled_ = true;
    flush_timer_.expires_after(flush_interval);
    flush_timer_.async_wait([this](boost::system::error_code ec) {
        flush_scheduled_ = false;
        if (!ec) flush();
    });
}

void output_log::flush() {
    try {
        write_pending();
    } catch (const std::exception& e) {
        if (!health_.failed(e)) throw;
    }
}

void output_log::write_pending() {
    if (pending_.empty()) return;
    std::vector<output_index_table::output_chunk_row> rows;
    rows.reserve(pending_.size());
    std::map<std::int64_t, std::int64_t> ends;
    for (const auto& chunk : pending_) {
        rows.push_back({chunk.loop_id, chunk.attempt_id, chunk.offset, chunk.length, chunk.ts_ms,
                        std::string(to_string(chunk.stream))});
        ends[chunk.loop_id] = chunk.offset + chunk.length;
    }
    index_.record_output(rows, ends);
    pending_.clear();
    pending_bytes_ = 0;
    for (const auto& [loop_id, end] : ends) {
        committed_[loop_id] = end;
        on_committed_(loop_id, end);
    }
}

std::int64_t output_log::committed_end(std::int64_t loop_id) const {
    auto it = committed_.find(loop_id);
    if (it != committed_.end()) return it->second;
    std::int64_t end = index_.output_bytes(loop_id);
    committed_[loop_id] = end;
    return end;
}

std::string output_log::read(std::int64_t loop_id, std::int64_t offset,
                             std::int64_t max_bytes) const {
    std::int64_t end = committed_end(loop_id);
    if (offset >= end || max_bytes <= 0) return {};
    std::int64_t count = std::min(max_bytes, end - offset);
    fd_guard file{::open(file_of(loop_id).c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0 && errno == ENOENT)
        throw proto::rpc_error(proto::error_kind::loop_not_found,
                               "the output of loop " + std::to_string(loop_id) +
                                   " was removed by gc; its record goes at the next gc");
    if (file.fd < 0)
        throw std::system_error(errno, std::generic_category(),
                                "cannot read output file " + file_of(loop_id).string());
    std::string bytes(std::size_t(count), '\0');
    std::size_t got = 0;
    while (got < bytes.size()) {
        ssize_t n = ::pread(file.fd, bytes.data() + got, bytes.size() - got, off_t(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += std::size_t(n);
    }
    bytes.resize(got);
    return bytes;
}

output_log::output_span output_log::span_at(std::int64_t loop_id, std::int64_t offset) const {
    auto cached = spans_.find(loop_id);
    if (cached == spans_.end()) {
        format_spans spans;
        for (const auto& attempt : index_.attempt_starts(loop_id)) {
            auto& starts = spans.starts;
            // An attempt that began where this one does wrote nothing.
            if (!starts.empty() && starts.back().offset == attempt.output_start) starts.pop_back();
            starts.push_back({attempt.output_start,
                              {format_of_agent(attempt.agent), 0, attempt.iteration,
                               attempt.attempt, attempt.kind}});
            spans.last_attempt_id = attempt.attempt_id;
        }
        cached = spans_.emplace(loop_id, std::move(spans)).first;
    }
    const auto& starts = cached->second.starts;
    const auto next = std::upper_bound(
        starts.begin(), starts.end(), offset,
        [](std::int64_t at, const format_spans::start& start) { return at < start.offset; });
    output_span span = next == starts.begin() ? output_span{} : std::prev(next)->span;
    span.end = next == starts.end() ? std::numeric_limits<std::int64_t>::max() : next->offset;
    return span;
}

std::int64_t output_log::offset_of_last_lines(std::int64_t loop_id, std::int64_t lines) const {
    std::int64_t end = committed_end(loop_id);
    if (lines <= 0) return end;
    // Walk backwards in blocks, counting newlines; a trailing newline ends the last line.
    constexpr std::int64_t block = 64 << 10;
    std::int64_t newlines_needed = lines + 1;
    std::int64_t pos = end;
    while (pos > 0) {
        std::int64_t start = std::max<std::int64_t>(0, pos - block);
        std::string bytes = read(loop_id, start, pos - start);
        for (std::int64_t i = std::int64_t(bytes.size()) - 1; i >= 0; --i) {
            if (bytes[std::size_t(i)] != '\n') continue;
            if (start + i == end - 1) continue;  // the final newline
            if (--newlines_needed == 1) return start + i + 1;
        }
        pos = start;
    }
    return 0;
}

void output_log::recover(std::int64_t loop_id, std::int64_t attempt_id) {
    write_pending();
    attempt_writes(loop_id, attempt_id);
    std::int64_t end = committed_end(loop_id);
    struct stat st {};
    if (::stat(file_of(loop_id).c_str(), &st) != 0 || st.st_size <= end) return;
    std::int64_t extra = st.st_size - end;
    index_.record_output({{loop_id, attempt_id, end, extra, text::now_ms(),
                           std::string(to_string(output_stream::recovered))}},
                         {{loop_id, st.st_size}});
    committed_[loop_id] = st.st_size;
    spdlog::info("loop {}: indexed {} bytes of output that no journal announced", loop_id, extra);
}

}  // namespace ralph
