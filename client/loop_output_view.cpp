// The end of a loop's output for a screen (see loop_output_view.hpp).
#include "client/loop_output_view.hpp"

#include "client/output.hpp"
#include "proto/methods.hpp"

#include <utility>

namespace ralph::client {
namespace {

// Output lines kept for the loop (more than any screen shows).
constexpr std::size_t kept_output_lines = 500;
// Bytes of new output read per refresh; a loop that writes faster is shown from its end.
constexpr std::int64_t refresh_bytes = 256 << 10;

}  // namespace

std::string screen_text(std::string_view line) {
    std::string expanded;
    expanded.reserve(line.size());
    for (const char c : line) {
        if (c == '\t')
            expanded.append("    ");
        else
            expanded.push_back(c);
    }
    return escape_controls(expanded);
}

void output_view::select(const std::string& host, std::int64_t id) {
    if (id == loop_id_ && host == host_) return;
    host_ = host;
    loop_id_ = id;
    offset_.reset();
    lines_.clear();
    partial_.clear();
    renderer_ = agent_stream::output_renderer();
    attempts_seen_ = -1;
    last_attempt_.reset();
}

output_read output_view::read(connection& daemon, const output_query& query) {
    output_read read{query, {}, false, {}, {}};
    try {
        proto::output_request request;
        request.id = query.loop_id;
        request.offset = query.offset;
        if (!request.offset) {
            // A structured stream needs whole lines from their start: begin at a line
            // boundary, a few screens back (a JSON line may render as nothing).
            proto::output_request start;
            start.id = query.loop_id;
            start.last_lines = std::int64_t(query.screen_lines * 4);
            start.max_bytes = 1;
            request.offset = daemon.call<proto::method::loop_output>(start).offset;
        }
        // A page holds one attempt's bytes: read on to the end, or refresh_bytes.
        std::int64_t budget = refresh_bytes;
        do {
            request.max_bytes = budget;
            read.pages.push_back(daemon.call<proto::method::loop_output>(request));
            const proto::output_page& page = read.pages.back();
            budget -= page.next_offset - page.offset;
            request.offset = page.next_offset;
        } while (budget > 0 && read.pages.back().next_offset < read.pages.back().end_offset &&
                 read.pages.back().next_offset > read.pages.back().offset);
        if (query.attempts != query.attempts_seen) {
            auto all = daemon.call<proto::method::loop_iterations>({query.loop_id}).attempts;
            read.attempt_read = true;
            if (!all.empty()) read.last_attempt = std::move(all.back());
        }
    } catch (const client_error& e) {
        if (e.code() == exit_code::unreachable) throw;
        read.error = e.what();
    }
    return read;
}

std::string output_view::apply(const output_read& read) {
    const output_query& asked = read.query;
    if (asked.host != host_ || asked.loop_id != loop_id_ || asked.offset != offset_) return "";
    if (!read.error.empty()) return read.error;
    for (const proto::output_page& page : read.pages)
        add_text(renderer_.render(page.data, page.format, proto::output_section(page.origin)));
    const proto::output_page& page = read.pages.back();
    // Far behind (a flood): skip to the last page instead of reading everything.
    offset_ = page.end_offset - page.next_offset > refresh_bytes ? page.end_offset - refresh_bytes
                                                                 : page.next_offset;
    if (read.attempt_read) {
        attempts_seen_ = asked.attempts;
        last_attempt_ = read.last_attempt;
    }
    return "";
}

void output_view::add_text(std::string_view bytes) {
    partial_.append(bytes);
    std::size_t start = 0;
    for (std::size_t end; (end = partial_.find('\n', start)) != std::string::npos;
         start = end + 1) {
        lines_.push_back(screen_text(std::string_view(partial_).substr(start, end - start)));
        if (lines_.size() > kept_output_lines) lines_.pop_front();
    }
    partial_.erase(0, start);
}

}  // namespace ralph::client
