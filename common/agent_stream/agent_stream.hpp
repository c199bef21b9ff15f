// Reading what agent CLIs print (README, "Agents"). One parser per output format turns an agent's
// stdout into events (assistant text, tool use, tool result, token usage, cost, final answer,
// errors, rate limits) and a running summary of the attempt. Both programs use it: ralphd to
// account for and judge each attempt, ralphctl to render a structured stream readably in `tail`.
// This folder, common/agent_stream/, holds it: this header, the format-independent half
// (agent_stream.cpp), one file per format (claude, codex, opencode, gemini, text) and what they
// share (line.hpp).
//
// Invariants: bytes arrive in pieces of any size (a line may be split anywhere, even inside a
// UTF-8 character); a malformed, truncated, unknown or oversize line never throws, stalls or
// loses the parser: it becomes a `raw` event (oversize lines are reported, not buffered whole).
// Memory per parser is bounded by max_line_bytes plus the final answer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::agent_stream {

// The output formats ralph can read. `text` is any plain-text agent (aider, kiro, command).
enum class format { text, claude, codex, opencode, gemini };
std::string_view to_string(format value);
// Throws std::invalid_argument for an unknown name.
format format_from_string(std::string_view name);

// What an error in the stream says about the failure, for the runner's retry policy.
enum class failure_hint {
    none,
    rate_limit,  // 429, rate/usage limit, quota: wait for the reset, burn no retry
    transient,   // 5xx, overloaded, network/connection errors: short backoff, retry
    auth,        // 401/403, invalid or missing credentials, not logged in: stop the loop
    config,      // the agent's setup: a missing environment variable, an unknown model: stop
};
std::string_view to_string(failure_hint value);

enum class event_kind {
    system,        // session start and similar bookkeeping (model, session id)
    text,          // assistant text (a whole message, or a delta piece for gemini)
    tool_use,      // the agent called a tool
    tool_result,   // a tool's result came back
    usage,         // token usage and/or cost report
    error,         // the agent or its API reported an error
    rate_limit,    // the provider's rate/usage limit was hit (resets_at_ms when stated)
    final_answer,  // the agent's final answer of this run
    raw,           // a line that is not (valid, known) structured output; kept as is
};
std::string_view to_string(event_kind value);

struct event {
    event_kind kind = event_kind::raw;
    std::string text;  // the message, tool input summary, result excerpt, raw line...
    std::string tool;  // tool_use / tool_result: the tool's name when known
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::optional<double> cost_usd;
    std::int64_t resets_at_ms = 0;  // rate_limit: epoch ms of the stated reset, 0 = unknown
    failure_hint failure = failure_hint::none;  // error / rate_limit
};

// What a run said about itself so far.
struct summary {
    std::int64_t input_tokens = 0;  // all input tokens, cache reads and writes included
    std::int64_t output_tokens = 0;
    std::optional<double> cost_usd;  // only when the agent reports it
    std::int64_t turns = 0;
    std::int64_t tool_calls = 0;
    // The text completion is judged on: the agent's own final answer, never the echoed prompt,
    // tool input or tool output.
    std::string final_answer;
    bool has_final_answer = false;              // the format's end-of-run answer was seen
    failure_hint failure = failure_hint::none;  // the most telling error seen, if any
    std::string error;                          // its message
    std::int64_t resets_at_ms = 0;              // rate limit reset, 0 = not stated
};

// Lines longer than this are not buffered: the parser reports them as a raw event giving their
// size and skips to the next newline.
constexpr std::size_t max_line_bytes = 16 << 20;
// Event texts are cut to this many bytes (on a UTF-8 boundary), with "…" appended.
constexpr std::size_t max_event_text_bytes = 16 << 10;

class parser {
  public:
    virtual ~parser() = default;
    // Feeds a piece of the agent's stdout; appends the events of every line it completes.
    virtual void feed(std::string_view bytes, std::vector<event>& out) = 0;
    // Feeds a piece of the agent's stderr (kept, bounded, for error classification only).
    virtual void feed_stderr(std::string_view bytes) = 0;
    // The stream ended (the process exited): parses a last unterminated line, settles the
    // final answer, and classifies errors found in the tail of stderr/stdout.
    virtual void finish(std::vector<event>& out) = 0;
    virtual const summary& result() const = 0;
    // A tool call was seen whose result has not come yet: the agent is silent because a tool
    // runs, not because it hangs (the inactivity timeout does not apply).
    virtual bool awaiting_tool_result() const = 0;
};

// `prompt` is the exact prompt the agent got: a text-format parser judges completion only on
// the output after the last echo of it.
std::unique_ptr<parser> make_parser(format value, std::string prompt = {});

// Classifies an error message (API error text, stderr). When it states a reset time ("resets at
// 2026-11-23T04:00:00Z", "try again in 5 minutes", "retry after 30s", an epoch "resetsAt"), that
// is stored in resets_at_ms, computed from now_ms.
failure_hint classify_error_text(std::string_view text, std::int64_t now_ms,
                                 std::int64_t& resets_at_ms);

// One human-readable line (no trailing newline) for `ralphctl tail`, e.g.
// "● Write ralph-progress.txt", "  └ File created", "✗ API Error: 429 …". Empty for events
// not worth showing (usage, system bookkeeping).
std::string render(const event& e);
// render() of each event worth showing, each line ending in a newline.
std::string render_lines(const std::vector<event>& events);

// A loop's output made readable, for `ralphctl tail` and `top`. Each piece comes with the output
// format of the attempt that wrote it (loop.output's "format"): text is passed on as it is, a
// structured stream becomes render_lines() of its events, and when the format changes (a judge
// or a fallback agent of another CLI) what the previous parser held is rendered first. A format
// this program does not know (a newer ralphd's) is shown as text. Each piece also names its
// `section` (proto::output_section: "iteration 3", "iteration 3 · attempt 2"): where a new one
// begins, a line "── iteration 3 ──" is drawn (on a line of its own) and the attempt's stream is
// parsed afresh; "" draws nothing.
class output_renderer {
  public:
    std::string render(std::string_view bytes, std::string_view format_name,
                       std::string_view section = {});
    // The output ended: what the parser still held (a last line without a newline).
    std::string finish();

  private:
    // Rendered text, noting whether it ended a line.
    std::string& note(std::string& rendered);

    format format_ = format::text;
    std::unique_ptr<parser> parser_;  // null for text
    std::vector<event> events_;
    std::string section_;        // the section of the last piece
    bool at_line_start_ = true;  // the text rendered so far ends with a newline (or is none)
};

}  // namespace ralph::agent_stream
