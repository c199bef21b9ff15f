// Internal to the agent_stream parsers: the base classes every format builds on and the small
// helpers they share. Not for use outside common/agent_stream/.
//
// line_parser owns the byte-level rules (README, "Agents"): it cuts stdout into blocks of complete
// lines, skips oversize lines without buffering them, keeps a bounded tail of stderr, and
// guarantees that nothing a format does with its lines escapes as an exception. json_parser adds
// the JSON layer for the structured formats, one line at a time: a line that is not a JSON object
// with a string "type", or whose type the format does not know, becomes a raw event. The text
// format takes each block whole (no per-line work for a plain-text flood).
#pragma once

#include "common/agent_stream/agent_stream.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::agent_stream::detail {

using json = nlohmann::json;

class line_parser : public parser {
  public:
    void feed(std::string_view bytes, std::vector<event>& out) final;
    void feed_stderr(std::string_view bytes) final;
    void finish(std::vector<event>& out) final;
    const summary& result() const final { return summary_; }
    bool awaiting_tool_result() const override { return false; }

  protected:
    // One or more complete lines, each ending in '\n' (a last line without one gets it at
    // finish()) and none longer than max_line_bytes. Line ends are as the agent wrote them
    // ('\r' included). May throw: the caller then drops whatever events the block had appended.
    virtual void on_lines(std::string_view lines, std::vector<event>& out) = 0;
    // The stream ended: settle the final answer. Runs after the last line was parsed.
    virtual void on_finish(std::vector<event>& /*out*/) {}
    // The part of stdout (besides stderr) worth classifying at the end when the stream itself
    // stated no failure; structured formats have none.
    virtual std::string_view output_tail() const { return {}; }

    // Records an error for the summary. A definitive error (the run's own report of its failure)
    // replaces what earlier errors suggested when it classifies; any other error (a retry
    // notice) only fills an empty slot. A stated reset time is kept unless a later one is given.
    void note_failure(failure_hint hint, std::string_view message, std::int64_t resets_at_ms,
                      bool definitive);

    summary summary_;

  private:
    void process_lines(std::string_view lines, std::vector<event>& out);
    void report_skipped(std::vector<event>& out);

    std::string line_;               // the current unterminated line
    bool skipping_ = false;          // inside an oversize line: discard up to the next newline
    std::size_t skipped_bytes_ = 0;  // size of the oversize line so far
    std::string stderr_tail_;        // the last stderr_tail_bytes of stderr
    bool finished_ = false;
};

class json_parser : public line_parser {
  protected:
    // Handles one JSON object whose "type" is a string. Returns false for a type the format does
    // not know (the line then becomes a raw event). May throw: the line then becomes a raw event
    // and whatever events it had appended are dropped.
    virtual bool on_object(std::string_view type, const json& object, std::vector<event>& out) = 0;

  private:
    void on_lines(std::string_view lines, std::vector<event>& out) final;
    // One line without its newline and trailing '\r'.
    void on_line(std::string_view line, std::vector<event>& out);
};

std::unique_ptr<parser> make_claude_parser();
std::unique_ptr<parser> make_codex_parser();
std::unique_ptr<parser> make_opencode_parser();
std::unique_ptr<parser> make_gemini_parser();
std::unique_ptr<parser> make_text_parser(std::string prompt);

// Safe accessors: a missing member or a member of another type gives the empty value, never an
// exception (agents change their schemas; a wrong type must not lose the line's other facts).
const json* member(const json& object, std::string_view key);  // nullptr unless present
std::string string_member(const json& object, std::string_view key);
std::int64_t int_member(const json& object, std::string_view key);  // 0 unless a finite number
std::optional<double> number_member(const json& object, std::string_view key);
bool bool_member(const json& object, std::string_view key);

// `text` made valid UTF-8 and cut to at most max_bytes on a character boundary, "…" appended
// when cut.
std::string cut_text(std::string_view text, std::size_t max_bytes = max_event_text_bytes);
// Bytes of a tool result shown in a tool_result event.
constexpr std::size_t tool_excerpt_bytes = 200;
// A short description of a tool call's input: the path, command, pattern... it works on.
std::string tool_input_summary(const json& input);
// The failure an HTTP status means: 429 rate limit, 401/403 auth, 408 and 5xx transient.
failure_hint failure_from_status(std::int64_t status);

event make_event(event_kind kind, std::string text, std::string tool = {});
event make_error(std::string_view message, failure_hint hint);

// The failure the words of `lower` (lowercased text) name, by classify_error_text's rules, and
// where its deciding word starts (error_text.cpp); hint none when no word matches.
struct failure_match {
    failure_hint hint = failure_hint::none;
    std::size_t position = 0;
};
failure_match match_failure(std::string_view lower);

}  // namespace ralph::agent_stream::detail
