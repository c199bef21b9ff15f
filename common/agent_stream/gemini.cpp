// Gemini CLI's `--output-format stream-json` (one JSON object per line).
//
// - init: a system event "session <id>, model <m>".
// - message role "user": the echoed prompt. No event, and never part of the final answer (it
//   contains the completion tag when the prompt does).
// - message role "assistant": with delta true the piece is appended to the current assistant
//   message, otherwise it starts a new one. The tag can be split across pieces ("<pro" +
//   "mise>..."): only the joined message is judged. One text event per message, when it ends (a
//   new message, a tool event, the result, the end of the stream), so it reads as one text.
// - tool_use: a tool_use event (tool = tool_name, text = what parameters work on), counted in
//   tool_calls. tool_result: a tool_result event (output excerpt, else error.message, else the
//   status). Both end the current assistant message: the final answer is the assistant text
//   after the last tool event.
// - turns: gemini states none; a turn is counted when assistant text or a tool call follows the
//   start or a tool result (one model response each).
// - error: an error event (a warning or a retried error), classified; it fills the summary's
//   failure only when nothing more telling is known.
// - result: stats.input_tokens / stats.output_tokens set the usage. status "success": the
//   current assistant message is the final answer. Otherwise an error event with
//   error.message, definitive, classified from its text. Gemini reports no cost.
#include "common/agent_stream/line.hpp"

#include "common/text.hpp"

#include <unordered_map>

namespace ralph::agent_stream::detail {
namespace {

class gemini_parser final : public json_parser {
  public:
    bool awaiting_tool_result() const override { return !tool_names_.empty(); }

  private:
    bool on_object(std::string_view type, const json& object, std::vector<event>& out) override {
        if (type == "init") {
            out.push_back(make_event(event_kind::system,
                                     cut_text("session " + string_member(object, "session_id") +
                                              ", model " + string_member(object, "model"))));
        } else if (type == "message") {
            if (string_member(object, "role") != "assistant") return true;
            if (!bool_member(object, "delta")) end_message(out);
            if (message_sent_) {
                message_.clear();
                message_sent_ = false;
            }
            message_ += string_member(object, "content");
            start_turn();
        } else if (type == "tool_use") {
            end_message(out);
            message_.clear();
            const std::string name = string_member(object, "tool_name");
            const json* parameters = member(object, "parameters");
            out.push_back(make_event(event_kind::tool_use,
                                     parameters ? tool_input_summary(*parameters) : std::string(),
                                     cut_text(name, 200)));
            ++summary_.tool_calls;
            tool_names_[string_member(object, "tool_id")] = name;
            start_turn();
        } else if (type == "tool_result") {
            end_message(out);
            message_.clear();
            on_tool_result(object, out);
            in_turn_ = false;
        } else if (type == "error") {
            std::string message = string_member(object, "message");
            if (message.empty()) message = "error";
            std::int64_t resets_at_ms = 0;
            const failure_hint hint = classify_error_text(message, text::now_ms(), resets_at_ms);
            note_failure(hint, message, resets_at_ms, false);
            out.push_back(make_error(message, hint));
        } else if (type == "result") {
            end_message(out);
            on_result(object, out);
        } else {
            return false;
        }
        return true;
    }

    void on_finish(std::vector<event>& out) override { end_message(out); }

    // The current assistant message ended: its text event, once. The message is kept as the
    // final answer until a tool event clears it or another message starts.
    void end_message(std::vector<event>& out) {
        if (!message_sent_ && !message_.empty())
            out.push_back(make_event(event_kind::text, cut_text(message_)));
        message_sent_ = true;
    }

    void start_turn() {
        if (in_turn_) return;
        in_turn_ = true;
        ++summary_.turns;
    }

    void on_tool_result(const json& object, std::vector<event>& out) {
        std::string tool;
        if (auto it = tool_names_.find(string_member(object, "tool_id")); it != tool_names_.end()) {
            tool = cut_text(it->second, 200);
            tool_names_.erase(it);
        }
        std::string result = string_member(object, "output");
        if (const json* error = member(object, "error"); error && result.empty())
            result = "error: " + string_member(*error, "message");
        if (result.empty()) result = string_member(object, "status");
        out.push_back(make_event(event_kind::tool_result, cut_text(result, tool_excerpt_bytes),
                                 std::move(tool)));
    }

    void on_result(const json& object, std::vector<event>& out) {
        event usage = make_event(event_kind::usage, {});
        if (const json* stats = member(object, "stats")) {
            usage.input_tokens = int_member(*stats, "input_tokens");
            usage.output_tokens = int_member(*stats, "output_tokens");
        }
        summary_.input_tokens = usage.input_tokens;
        summary_.output_tokens = usage.output_tokens;
        out.push_back(std::move(usage));

        if (string_member(object, "status") == "success") {
            summary_.final_answer = message_;
            summary_.has_final_answer = true;
            out.push_back(make_event(event_kind::final_answer, cut_text(message_)));
            return;
        }
        const json* error = member(object, "error");
        std::string message = error ? string_member(*error, "message") : std::string();
        if (message.empty()) message = "gemini failed: " + string_member(object, "status");
        std::int64_t resets_at_ms = 0;
        const failure_hint hint = classify_error_text(message, text::now_ms(), resets_at_ms);
        note_failure(hint, message, resets_at_ms, true);
        out.push_back(make_error(message, hint));
    }

    std::string message_;        // the current (or last) assistant message, deltas joined
    bool message_sent_ = false;  // its text event was emitted: the next piece starts a new one
    bool in_turn_ = false;
    std::unordered_map<std::string, std::string> tool_names_;  // tool_id → name, until its result
};

}  // namespace

std::unique_ptr<parser> make_gemini_parser() { return std::make_unique<gemini_parser>(); }

}  // namespace ralph::agent_stream::detail
