// Codex's `codex exec --json` (one JSON object per line).
//
// - thread.started: a system event "thread <id>". turn.started: starts collecting the turn's
//   agent messages (no event). item.updated: ignored.
// - item.completed agent_message: a text event; the turn's last one is its answer.
//   reasoning and todo_list items: nothing (not shown).
// - Tool items (command_execution "shell", file_change "edit", mcp_tool_call "<server>.<tool>",
//   web_search): a tool_use event when the item starts, or when it completes without having
//   been seen starting; counted once either way. On completion a tool_result event: for a
//   command "exit <code>: <output excerpt>", otherwise the item's status.
// - error items and `{"type":"error"}` lines: error events (codex says "Reconnecting..." there
//   while it retries); classified from the message, defaulting to transient; they fill the
//   summary's failure only when nothing more telling is known.
// - turn.completed: usage (input = input_tokens, of which cached_input_tokens are a part;
//   output = output_tokens) is added to the summary, turns += 1, and when the turn produced an
//   agent message that last message becomes the final answer (has_final_answer).
// - turn.failed: an error event with error.message, definitive for the summary.
// Codex reports no cost.
#include "common/agent_stream/line.hpp"

#include "common/text.hpp"

#include <unordered_set>

namespace ralph::agent_stream::detail {
namespace {

class codex_parser final : public json_parser {
  public:
    bool awaiting_tool_result() const override { return !started_items_.empty(); }

  private:
    bool on_object(std::string_view type, const json& object, std::vector<event>& out) override {
        if (type == "thread.started") {
            out.push_back(make_event(event_kind::system,
                                     cut_text("thread " + string_member(object, "thread_id"))));
        } else if (type == "turn.started") {
            turn_message_.clear();
            turn_has_message_ = false;
        } else if (type == "item.started" || type == "item.completed") {
            const json* item = member(object, "item");
            return item && on_item(*item, type == "item.completed", out);
        } else if (type == "item.updated") {
            // Progress of an item already shown (todo lists); its completion tells the outcome.
        } else if (type == "turn.completed") {
            on_turn_completed(object, out);
        } else if (type == "turn.failed") {
            const json* error = member(object, "error");
            std::string message = error ? string_member(*error, "message") : std::string();
            if (message.empty()) message = "turn failed";
            std::int64_t resets_at_ms = 0;
            const failure_hint hint = classify_error_text(message, text::now_ms(), resets_at_ms);
            note_failure(hint, message, resets_at_ms, true);
            out.push_back(make_error(message, hint));
        } else if (type == "error") {
            on_error_message(string_member(object, "message"), out);
        } else {
            return false;
        }
        return true;
    }

    // Returns false for an item type codex is not known to send.
    bool on_item(const json& item, bool completed, std::vector<event>& out) {
        const std::string type = string_member(item, "type");
        const std::string id = string_member(item, "id");
        if (type == "agent_message") {
            if (!completed) return true;
            turn_message_ = string_member(item, "text");
            turn_has_message_ = true;
            out.push_back(make_event(event_kind::text, cut_text(turn_message_)));
        } else if (type == "reasoning" || type == "todo_list") {
            // Not shown.
        } else if (type == "error") {
            if (completed) on_error_message(string_member(item, "message"), out);
        } else if (type == "command_execution") {
            tool_item(id, completed, "shell", string_member(item, "command"), out);
            if (completed) {
                std::string result = string_member(item, "status");
                if (const json* code = member(item, "exit_code"); code && code->is_number())
                    result = "exit " + std::to_string(int_member(item, "exit_code"));
                const std::string output = string_member(item, "aggregated_output");
                if (!output.empty()) result += ": " + output;
                out.push_back(make_event(event_kind::tool_result,
                                         cut_text(result, tool_excerpt_bytes), "shell"));
            }
        } else if (type == "file_change") {
            std::string paths;
            if (const json* changes = member(item, "changes"); changes && changes->is_array())
                for (const json& change : *changes) {
                    if (paths.size() > tool_excerpt_bytes) break;
                    if (!paths.empty()) paths += ", ";
                    paths += string_member(change, "path");
                }
            tool_item(id, completed, "edit", paths, out);
            if (completed) completed_status(item, "edit", out);
        } else if (type == "mcp_tool_call") {
            const std::string tool =
                string_member(item, "server") + "." + string_member(item, "tool");
            const json* arguments = member(item, "arguments");
            tool_item(id, completed, tool, arguments ? tool_input_summary(*arguments) : "", out);
            if (completed) completed_status(item, tool, out);
        } else if (type == "web_search") {
            tool_item(id, completed, "web_search", string_member(item, "query"), out);
            if (completed) completed_status(item, "web_search", out);
        } else {
            return false;
        }
        return true;
    }

    // The tool_use event of a tool item, once per item.
    void tool_item(const std::string& id, bool completed, const std::string& tool,
                   const std::string& summary, std::vector<event>& out) {
        const bool first_sight =
            completed ? started_items_.erase(id) == 0 : started_items_.insert(id).second;
        if (!first_sight) return;
        out.push_back(make_event(event_kind::tool_use, cut_text(summary, tool_excerpt_bytes),
                                 cut_text(tool, 200)));
        ++summary_.tool_calls;
    }

    void completed_status(const json& item, const std::string& tool, std::vector<event>& out) {
        std::string status = string_member(item, "status");
        if (const json* error = member(item, "error")) {
            const std::string message = string_member(*error, "message");
            if (!message.empty()) status += ": " + message;
        }
        out.push_back(make_event(event_kind::tool_result,
                                 cut_text(status.empty() ? "done" : status, tool_excerpt_bytes),
                                 cut_text(tool, 200)));
    }

    void on_error_message(std::string message, std::vector<event>& out) {
        if (message.empty()) message = "error";
        std::int64_t resets_at_ms = 0;
        failure_hint hint = classify_error_text(message, text::now_ms(), resets_at_ms);
        if (hint == failure_hint::none) hint = failure_hint::transient;
        note_failure(hint, message, resets_at_ms, false);
        out.push_back(make_error(message, hint));
    }

    void on_turn_completed(const json& object, std::vector<event>& out) {
        event usage = make_event(event_kind::usage, {});
        if (const json* totals = member(object, "usage")) {
            usage.input_tokens = int_member(*totals, "input_tokens");
            usage.output_tokens = int_member(*totals, "output_tokens");
        }
        summary_.input_tokens += usage.input_tokens;
        summary_.output_tokens += usage.output_tokens;
        ++summary_.turns;
        out.push_back(std::move(usage));
        if (turn_has_message_) {
            summary_.final_answer = turn_message_;
            summary_.has_final_answer = true;
            out.push_back(make_event(event_kind::final_answer, cut_text(turn_message_)));
        }
    }

    std::string turn_message_;  // the current turn's last agent message
    bool turn_has_message_ = false;
    std::unordered_set<std::string> started_items_;  // tool items started, not yet completed
};

}  // namespace

std::unique_ptr<parser> make_codex_parser() { return std::make_unique<codex_parser>(); }

}  // namespace ralph::agent_stream::detail
