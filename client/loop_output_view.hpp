// The end of one loop's output as lines for a screen, read incrementally: what `ralphctl top`
// shows of its selected loop, rendered as `tail` renders it (a line where each attempt begins),
// with its last attempt. Reading runs on a host's question (a thread of a fleet) and touches no
// view: query() says what to read, read() reads it, apply() takes it.
#pragma once

#include "client/connection.hpp"
#include "common/agent_stream/agent_stream.hpp"
#include "proto/loop_api.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::client {

// A line for the screen: tabs as spaces, every other control character escaped
// (escape_controls): what a loop, an agent or a host wrote moves no cursor.
std::string screen_text(std::string_view line);

// What is read of the loop at a refresh, on its host's connection: its new output and, when its
// attempt count changed, its last attempt.
struct output_query {
    std::string host;  // "" with one host
    std::int64_t loop_id = 0;
    // Where its output is read from; none: `screen_lines` lines before the end.
    std::optional<std::int64_t> offset;
    std::size_t screen_lines = 0;
    std::int64_t attempts_seen = -1;  // the attempt count at which its last attempt was read
    std::int64_t attempts = -1;       // its attempt count now: read the last again if it differs
};

// What an output_query read.
struct output_read {
    output_query query;
    std::vector<proto::output_page> pages;  // a page per attempt, up to a refresh's bytes
    bool attempt_read = false;  // the attempts changed: `last_attempt` is the new last one
    std::optional<proto::attempt_info> last_attempt;
    std::string error;  // why it could not be read (the loop was just removed by gc…)
};

class output_view {
  public:
    // Loop `id` of `host` ("" with one host).
    void select(const std::string& host, std::int64_t id);

    std::int64_t loop_id() const { return loop_id_; }
    const std::string& host() const { return host_; }
    const std::deque<std::string>& lines() const { return lines_; }
    const std::string& partial() const { return partial_; }
    const std::optional<proto::attempt_info>& last_attempt() const { return last_attempt_; }

    // What the loop wrote since the last read; the first read starts `screen_lines` lines before
    // the end. Its attempt count is set by whoever knows it (the rows).
    output_query query(std::size_t screen_lines) const {
        return {host_, loop_id_, offset_, screen_lines, attempts_seen_, attempts_seen_};
    }

    // Reads `query` on `daemon`. A client_error other than a lost daemon is the read's `error`.
    static output_read read(connection& daemon, const output_query& query);

    // Takes what `read` read, unless the selection or the offset moved since it was asked;
    // returns why it could not be read ("" when it was, or is of no use now).
    std::string apply(const output_read& read);

  private:
    void add_text(std::string_view bytes);

    std::string host_;
    std::int64_t loop_id_ = 0;
    std::optional<std::int64_t> offset_;
    std::deque<std::string> lines_;
    std::string partial_;
    agent_stream::output_renderer renderer_;
    std::int64_t attempts_seen_ = -1;
    std::optional<proto::attempt_info> last_attempt_;
};

}  // namespace ralph::client
