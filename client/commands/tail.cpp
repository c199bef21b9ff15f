// `ralphctl tail ID... [-f] [-n N] [--from-offset N] [--raw]`: a loop's output.
// Without -f: the output persisted so far, read page by page with loop.output, then exit 0.
// With -f (and for submit --follow/--wait): a WebSocket session with one loop.tail subscription
// per loop, printing bytes as they come until every loop has sent its final loop.state.
// Output is requested exact: base64-encoded pages, and -f's notifications as binary WebSocket
// messages (the "binary" encoding: no base64 to make and undo, a quarter less through ssh), so
// the bytes written are exactly those the agent wrote.
// A structured agent stream (claude, codex, opencode, gemini JSON lines) is rendered readably
// through common/agent_stream — assistant text, "● tool input", "  └ result", "✗ error" — unless
// --raw; plain-text agents' bytes are printed as they are. Each page and notification says the
// format of the attempt that wrote it, so a judge or fallback of another CLI renders too.
// Several loops: every line is prefixed with "[id] ", and a loop's partial line is held back
// until its end, so lines of different loops never mix.
// --json: NDJSON, one line per piece of output or state change, each the notification's params
// plus "event" ("loop.output" | "loop.state") and "schema_version"; data stays base64.
// Over ssh (--host ssh://…), a connection that breaks while following (ssh killed, the network
// or sshd's session gone) is made again, with pauses growing to 5 s for up to 30 s, and each loop
// followed on from the byte after the last one written: no gap, no byte twice. Its loops are
// the remote ralphd's and never notice.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/agent_stream/agent_stream.hpp"
#include "common/ssh_command.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <utility>

namespace ralph::client {
namespace {

// The largest page loop.output gives.
constexpr std::int64_t max_page_bytes = 4 << 20;

// Writes one loop's output to stdout, with a "[id] " prefix on every line when `prefixed`;
// rendered readably when `rendered` (each attempt's bytes by the format they come with), its
// control characters escaped (escape_controls; a character cut between two pieces waits for
// its end). --raw writes the bytes as they are.
class output_writer {
  public:
    output_writer(std::int64_t id, bool prefixed, bool rendered)
        : prefix_(prefixed ? fmt::format("[{}] ", id) : std::string()), rendered_(rendered) {}

    // `origin`: the attempt that wrote them; where the next begins, a line says which it is.
    void write(std::string_view bytes, std::string_view format,
               const proto::output_origin& origin) {
        if (rendered_)
            write_safely(renderer_.render(bytes, format, proto::output_section(origin)));
        else
            write_bytes(bytes);
    }

    // The loop has ended: a last line without a newline gets one.
    void finish() {
        if (rendered_) {
            write_safely(renderer_.finish());
            write_bytes(escape_controls(std::exchange(held_, {}), line_breaks::kept));
        }
        if (pending_.empty()) return;
        pending_.push_back('\n');
        std::fwrite(prefix_.data(), 1, prefix_.size(), stdout);
        std::fwrite(pending_.data(), 1, pending_.size(), stdout);
        pending_.clear();
    }

    // False when unprefixed output ended in the middle of a line.
    bool at_line_start() const { return at_line_start_; }

  private:
    void write_safely(std::string rendered) {
        held_ += rendered;
        std::size_t whole = text::utf8_complete_prefix(held_);
        // A CR may be the first half of a CRLF.
        if (whole > 0 && held_[whole - 1] == '\r') --whole;
        write_bytes(escape_controls(std::string_view(held_).substr(0, whole), line_breaks::kept));
        held_.erase(0, whole);
    }

    void write_bytes(std::string_view bytes) {
        if (prefix_.empty()) {
            std::fwrite(bytes.data(), 1, bytes.size(), stdout);
            if (!bytes.empty()) at_line_start_ = bytes.back() == '\n';
            return;
        }
        pending_.append(bytes);
        std::size_t start = 0;
        for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos;
             start = end + 1) {
            std::fwrite(prefix_.data(), 1, prefix_.size(), stdout);
            std::fwrite(pending_.data() + start, 1, end + 1 - start, stdout);
        }
        pending_.erase(0, start);
    }

    std::string prefix_;
    bool rendered_;
    agent_stream::output_renderer renderer_;
    std::string held_;  // rendered bytes that end inside a character
    std::string pending_;
    bool at_line_start_ = true;
};

// Whether the output is rendered: not with --raw or --json, nor when no output is asked for.
bool rendered(const client_context& ctx, const tail_selection& selection) {
    return !selection.raw && !ctx.json && selection.output;
}

// Parses a message that carries output in a "data" string: a loop.output page ("result") or
// notification ("params"). nlohmann lexes strings a byte at a time (~90 MB/s, most of the cost
// of tailing a busy loop), so the base64 "data" is cut out at memory speed first and only the
// small rest is parsed. Base64 holds no quote or backslash: a cut containing a backslash ended
// at an escaped quote, and such a message (or one whose "data" sits elsewhere) is parsed whole.
nlohmann::json parse_output_message(std::string_view text) {
    constexpr std::string_view key = R"("data":")";
    constexpr auto npos = std::string_view::npos;
    const std::size_t found = text.find(key);
    const std::size_t end = found == npos ? npos : text.find('"', found + key.size());
    if (end == npos) return parse_reply(text);
    const std::size_t start = found + key.size();
    const std::string_view data = text.substr(start, end - start);
    if (data.find('\\') != npos) return parse_reply(text);

    std::string rest;
    rest.reserve(text.size() - data.size());
    rest.append(text.substr(0, start)).append(text.substr(end));
    nlohmann::json message = parse_reply(rest);
    for (const char* member : {"result", "params"}) {
        auto holder = message.find(member);
        if (holder != message.end() && holder->is_object() &&
            holder->value("data", std::string("-")).empty()) {
            (*holder)["data"] = std::string(data);
            return message;
        }
    }
    return parse_reply(text);
}

proto::output_request selection_request(std::int64_t id, const tail_selection& selection) {
    proto::output_request request;
    request.id = id;
    request.encoding = proto::encoding::base64;
    request.offset = selection.offset;
    request.last_lines = selection.last_lines;
    return request;
}

// `tail --json`: a notification's params and the event it is, one JSON object per line.
void print_event(std::string_view event, nlohmann::json params) {
    params["event"] = event;
    print_json(std::move(params));
}

// Prints the output persisted up to now; a running loop's output written meanwhile is left
// for the next call (or for -f), so this always ends.
void print_persisted(const client_context& ctx, const std::vector<std::int64_t>& ids,
                     const tail_selection& selection) {
    connection daemon(ctx.socket);
    for (std::int64_t id : ids) {
        output_writer writer(id, ids.size() > 1, rendered(ctx, selection));
        proto::output_request request = selection_request(id, selection);
        request.max_bytes = max_page_bytes;
        std::optional<std::int64_t> end;
        for (;;) {
            using proto::method::loop_output;
            const auto page =
                result_of(parse_output_message(daemon.call_text<loop_output>(request)))
                    .get<loop_output::result>();
            if (!end) end = page.end_offset;
            if (page.next_offset > page.offset) {
                if (ctx.json)
                    print_event(proto::notification::loop_output,
                                proto::output_notification{
                                    id, page.offset, page.next_offset - page.offset, page.data,
                                    page.encoding, page.format, std::nullopt, page.origin});
                else
                    writer.write(proto::decode_output(page.data, page.encoding), page.format,
                                 page.origin);
            }
            if (page.final || page.next_offset >= *end || page.next_offset == page.offset) break;
            request.offset = page.next_offset;
            request.last_lines.reset();
        }
        writer.finish();
    }
    std::fflush(stdout);
}

std::string summary(const proto::state_notification& state) {
    return fmt::format("loop {} {}{}{} after {} iteration{}", state.id,
                       proto::to_string(state.state), state.stop_reason.empty() ? "" : ": ",
                       escape_controls(state.stop_reason), state.iterations,
                       state.iterations == 1 ? "" : "s");
}

// Waits shorter than this are not said while following (the delay between iterations, a
// retry's backoff).
constexpr std::int64_t noticed_wait_ms = 60 * 1000;

// "ralphctl: loop 4 is waiting until 14:05 (in 42 min): waiting for …; its output follows when
// it runs" (without `output`, as `wait` follows: "; waiting for it"), on stderr.
void say_waiting(std::int64_t id, const proto::loop_info& loop, bool output) {
    const std::string why = describe_wait(loop, nullptr, text::now_ms());
    fmt::print(stderr, "ralphctl: loop {} is {}{}{}; {}\n", id, proto::to_string(loop.state),
               why.empty() ? "" : (why.starts_with("until ") ? " " : ": "), escape_controls(why),
               output ? "its output follows when it runs" : "waiting for it");
}

// A loop followed by follow_loops.
struct followed_loop {
    output_writer writer;
    std::int64_t next_offset;  // where its output goes on
    bool started;              // its loop.tail was answered: next_offset is known
    bool ended;                // its final state has come
};

// "resume with: ralphctl tail -f --from-offset N ID", a line per loop that has not ended.
std::string resume_hint(const std::map<std::int64_t, followed_loop>& loops) {
    std::string hint;
    for (const auto& [id, loop] : loops) {
        if (loop.ended) continue;
        if (!hint.empty()) hint += '\n';
        hint +=
            fmt::format("resume with: ralphctl tail -f --from-offset {} {}", loop.next_offset, id);
    }
    return hint;
}

// Subscribes the session to each loop that has not ended: where its output goes on, or as
// `selection` says while its first loop.tail was not answered. The bytes come as they are
// ("binary"), but base64 for --json, which prints the notifications with their data.
void subscribe(const client_context& ctx, session& daemon,
               const std::map<std::int64_t, followed_loop>& loops,
               const tail_selection& selection) {
    for (const auto& [id, loop] : loops) {
        if (loop.ended) continue;
        proto::output_request request = selection_request(id, selection);
        request.output = selection.output;
        if (!ctx.json) request.encoding = proto::encoding::binary;
        if (loop.started) {
            request.offset = loop.next_offset;
            request.last_lines.reset();
        }
        daemon.send<proto::method::loop_tail>(request);
    }
}

// How long a broken ssh connection is tried again, and the pauses between the tries.
constexpr std::chrono::seconds reconnect_for{30};
constexpr std::chrono::milliseconds first_reconnect_pause{200};
constexpr std::chrono::milliseconds longest_reconnect_pause{5000};

// A new session subscribed to the loops, after the connection to ctx.socket broke (`lost`).
// The last failure (with the resume hint) once reconnect_for has passed.
std::unique_ptr<session> reconnect(const client_context& ctx, const client_error& lost,
                                   const std::map<std::int64_t, followed_loop>& loops,
                                   const tail_selection& selection) {
    fmt::print(stderr, "ralphctl: {}; connecting again\n", lost.what());
    const auto deadline = std::chrono::steady_clock::now() + reconnect_for;
    for (auto pause = first_reconnect_pause;;
         pause = std::min(2 * pause, longest_reconnect_pause)) {
        std::this_thread::sleep_for(pause);
        try {
            auto daemon = std::make_unique<session>(ctx.socket);
            subscribe(ctx, *daemon, loops, selection);
            fmt::print(stderr, "ralphctl: connected again to {}\n", ctx.socket);
            return daemon;
        } catch (const client_error& e) {
            if (e.code() != exit_code::unreachable ||
                std::chrono::steady_clock::now() + pause > deadline)
                throw client_error(e.code(), e.what(),
                                   selection.output ? resume_hint(loops) : std::string());
        }
    }
}

struct tail_options {
    std::vector<std::int64_t> ids;
    bool follow = false;
    std::optional<std::int64_t> lines;
    std::optional<std::int64_t> from_offset;
    bool raw = false;
};

int run_tail(const client_context& ctx, const tail_options& options) {
    // Each loop once, in the order given.
    std::vector<std::int64_t> ids;
    for (std::int64_t id : options.ids)
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    const tail_selection selection{options.from_offset, options.lines, true, options.raw};
    if (options.follow) return follow_loops(ctx, ids, selection);
    print_persisted(ctx, ids, selection);
    return exit_code::ok;
}

}  // namespace

int follow_loops(const client_context& ctx, const std::vector<std::int64_t>& ids,
                 const tail_selection& selection) {
    auto daemon = std::make_unique<session>(ctx.socket);
    std::map<std::int64_t, followed_loop> loops;
    for (std::int64_t id : ids)
        loops.emplace(id, followed_loop{output_writer(id, ids.size() > 1, rendered(ctx, selection)),
                                        selection.offset.value_or(0), false, false});
    subscribe(ctx, *daemon, loops, selection);
    // Only a connection over ssh breaks while its daemon runs on: one to a socket ends when
    // ralphd stops.
    const bool reconnects = ctx.socket.starts_with(ssh_scheme);

    // The worst outcome wins: cancelled (130) over failed (1) over completed (0).
    int code = exit_code::ok;
    std::size_t following = loops.size();
    while (following > 0) {
        session::message received;
        nlohmann::json message;
        try {
            received = daemon->receive();
            message = parse_output_message(received.json);
        } catch (const client_error& e) {
            if (e.code() != exit_code::unreachable) throw;
            if (reconnects) {
                daemon = reconnect(ctx, e, loops, selection);
                continue;
            }
            // A stopping daemon closes the session without final states: say where to go on.
            if (!selection.output) throw;
            throw client_error(e.code(), e.what(), resume_hint(loops));
        }
        const auto method = message.find("method");
        if (method == message.end()) {
            // The answer to a loop.tail request; an error (no such loop) ends the command.
            const auto started =
                result_of(std::move(message)).get<proto::method::loop_tail::result>();
            if (auto loop = loops.find(started.id); loop != loops.end()) {
                loop->second.next_offset = started.offset;
                loop->second.started = true;
            }
            if (started.state == proto::loop_state::queued ||
                started.state == proto::loop_state::waiting ||
                started.state == proto::loop_state::paused) {
                proto::loop_info loop;
                loop.state = started.state;
                loop.stop_reason = started.stop_reason;
                loop.resume_at = started.resume_at;
                say_waiting(started.id, loop, selection.output);
            }
            continue;
        }
        const nlohmann::json& params = message.at("params");
        if (*method == proto::notification::loop_output) {
            const auto output = params.get<proto::output_notification>();
            auto loop = loops.find(output.id);
            if (loop == loops.end()) continue;
            loop->second.next_offset = output.offset + output.length;
            if (ctx.json) {
                print_event(proto::notification::loop_output, params);
                continue;
            }
            std::string decoded;
            std::string_view bytes = received.bytes;
            if (output.encoding != proto::encoding::binary) {
                decoded = proto::decode_output(output.data, output.encoding);
                bytes = decoded;
            } else if (std::cmp_not_equal(bytes.size(), output.length)) {
                throw client_error(exit_code::failure,
                                   fmt::format("ralphd at {} sent {} bytes of loop {}'s output "
                                               "in a loop.output notification of length {}",
                                               ctx.socket, bytes.size(), output.id, output.length));
            }
            loop->second.writer.write(bytes, output.format, output.origin);
            std::fflush(stdout);
        } else if (*method == proto::notification::loop_state) {
            const auto state = params.get<proto::state_notification>();
            auto loop = loops.find(state.id);
            if (loop == loops.end()) continue;
            followed_loop& followed = loop->second;
            if (ctx.json) print_event(proto::notification::loop_state, params);
            // A wait long enough to notice (a usage limit, a budget, the time window; not the
            // delay between iterations or a retry's backoff) is said when it begins.
            if (!ctx.json && state.state == proto::loop_state::waiting &&
                state.resume_at - text::now_ms() >= noticed_wait_ms) {
                proto::loop_info loop;
                loop.state = state.state;
                loop.stop_reason = state.stop_reason;
                loop.resume_at = state.resume_at;
                say_waiting(state.id, loop, selection.output);
            }
            if (!state.final) continue;
            followed.ended = true;
            followed.writer.finish();
            std::fflush(stdout);
            // On a terminal, keep the summary off the end of an unfinished last line; a file
            // or a pipe gets the bytes exactly.
            if (!followed.writer.at_line_start() && ::isatty(STDOUT_FILENO) == 1)
                std::fputc('\n', stderr);
            fmt::print(stderr, "{}\n", summary(state));
            code = std::max(code, exit_code_for(state.state));
            --following;
        }
    }
    daemon->close();
    return code;
}

void register_tail_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<tail_options>();
    auto* cmd = app.add_subcommand("tail", "Print the output of loops");
    cmd->add_option("id", options->ids,
                    "Loop ids (HOST:ID for another host's); several are interleaved with [id] "
                    "prefixes")
        ->required()
        ->transform(loop_id(ctx));
    cmd->add_flag("-f,--follow", options->follow,
                  "Keep printing new output until the loops end; exit 0 completed, "
                  "1 exhausted/failed/stalled, 130 cancelled or Ctrl-C");
    auto* lines = cmd->add_option("-n,--lines", options->lines, "Start at the last N lines")
                      ->check(non_negative());
    cmd->add_option("--from-offset", options->from_offset,
                    "Start at this byte offset (where an earlier tail stopped)")
        ->check(non_negative())
        ->excludes(lines);
    cmd->add_flag("--raw", options->raw,
                  "Print the output exactly as the agent wrote it (structured agents' JSON lines "
                  "are otherwise rendered readably)");
    cmd->callback([&ctx, options] { ctx.exit_code = run_tail(ctx, *options); });
}

}  // namespace ralph::client
