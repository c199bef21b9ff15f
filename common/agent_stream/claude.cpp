// Claude Code's `--output-format stream-json --verbose` (one JSON object per line).
//
// - system/init: a system event "session <id>, model <m>"; other system subtypes: a system event
//   naming the subtype. system/api_retry: an error event classified from error_status (else the
//   error text, else transient: a retry is by nature a transient failure); it fills the
//   summary's failure only when nothing more telling is known.
// - assistant: each content item: text → text event; tool_use → tool_use event (tool = name,
//   text = what the input works on), counted in tool_calls. Per-message usage is not summed:
//   the result carries the run's totals.
// - user: tool_result items → tool_result event with an excerpt of the content, tool = the name
//   of the tool_use with that id ("error: " prefixed when is_error).
// - rate_limit_event: only status "rejected" → rate_limit event, resets_at_ms = resetsAt × 1000,
//   and the summary's failure (definitive).
// - result: usage (input = input + cache creation + cache read tokens), total_cost_usd and
//   num_turns replace the summary's values. Success (is_error false and a subtype not starting
//   with "error"): the result text is the final answer. Otherwise: an error event, the failure
//   from api_error_status (429, 401/403, 5xx) or else from the result text; no final answer
//   (claude reports API failures with subtype "success" but is_error true).
#include "common/agent_stream/line.hpp"

#include "common/text.hpp"

#include <unordered_map>

namespace ralph::agent_stream::detail {
namespace {

class claude_parser final : public json_parser {
  public:
    bool awaiting_tool_result() const override { return !tool_names_.empty(); }

  private:
    bool on_object(std::string_view type, const json& object, std::vector<event>& out) override {
        if (type == "system")
            on_system(object, out);
        else if (type == "assistant")
            on_assistant(object, out);
        else if (type == "user")
            on_user(object, out);
        else if (type == "rate_limit_event")
            on_rate_limit(object, out);
        else if (type == "result")
            on_result(object, out);
        else
            return false;
        return true;
    }

    void on_system(const json& object, std::vector<event>& out) {
        const std::string subtype = string_member(object, "subtype");
        if (subtype == "init") {
            out.push_back(make_event(event_kind::system,
                                     cut_text("session " + string_member(object, "session_id") +
                                              ", model " + string_member(object, "model"))));
        } else if (subtype == "api_retry") {
            const std::string error = string_member(object, "error");
            const std::int64_t status = int_member(object, "error_status");
            std::string message = "API retry " + std::to_string(int_member(object, "attempt")) +
                                  "/" + std::to_string(int_member(object, "max_retries")) + ": " +
                                  (error.empty() ? "error" : error);
            if (status != 0) message += " (HTTP " + std::to_string(status) + ")";
            std::int64_t resets_at_ms = 0;
            failure_hint hint = failure_from_status(status);
            if (hint == failure_hint::none)
                hint = classify_error_text(error, text::now_ms(), resets_at_ms);
            if (hint == failure_hint::none) hint = failure_hint::transient;
            note_failure(hint, message, resets_at_ms, false);
            out.push_back(make_error(message, hint));
        } else {
            out.push_back(make_event(event_kind::system, cut_text(subtype)));
        }
    }

    void on_assistant(const json& object, std::vector<event>& out) {
        const json* message = member(object, "message");
        const json* content = message ? member(*message, "content") : nullptr;
        if (!content || !content->is_array()) return;
        for (const json& item : *content) {
            const std::string type = string_member(item, "type");
            if (type == "text") {
                const std::string text = string_member(item, "text");
                if (!text.empty()) out.push_back(make_event(event_kind::text, cut_text(text)));
            } else if (type == "tool_use") {
                const std::string name = string_member(item, "name");
                const json* input = member(item, "input");
                out.push_back(make_event(event_kind::tool_use,
                                         input ? tool_input_summary(*input) : std::string(),
                                         cut_text(name, 200)));
                ++summary_.tool_calls;
                tool_names_[string_member(item, "id")] = name;
            }
        }
    }

    void on_user(const json& object, std::vector<event>& out) {
        const json* message = member(object, "message");
        const json* content = message ? member(*message, "content") : nullptr;
        if (!content || !content->is_array()) return;
        for (const json& item : *content) {
            if (string_member(item, "type") != "tool_result") continue;
            std::string tool;
            if (auto it = tool_names_.find(string_member(item, "tool_use_id"));
                it != tool_names_.end()) {
                tool = cut_text(it->second, 200);
                tool_names_.erase(it);
            }
            std::string excerpt = bool_member(item, "is_error") ? "error: " : "";
            excerpt += result_text(item);
            out.push_back(make_event(event_kind::tool_result, cut_text(excerpt, tool_excerpt_bytes),
                                     std::move(tool)));
        }
    }

    // A tool result's content: a string, or text blocks.
    static std::string result_text(const json& item) {
        const json* content = member(item, "content");
        if (!content) return {};
        if (content->is_string()) return content->get<std::string>();
        std::string text;
        if (content->is_array())
            for (const json& block : *content) {
                if (text.size() > tool_excerpt_bytes) break;
                if (!text.empty()) text += "\n";
                text += string_member(block, "text");
            }
        return text;
    }

    void on_rate_limit(const json& object, std::vector<event>& out) {
        const json* info = member(object, "rate_limit_info");
        if (!info || string_member(*info, "status") != "rejected") return;
        const std::string limit = string_member(*info, "rateLimitType");
        std::int64_t resets_at = int_member(*info, "resetsAt");
        // Claude states seconds; a value that can only be milliseconds is taken as such.
        if (resets_at > 0 && resets_at < 100'000'000'000) resets_at *= 1000;
        if (resets_at < 0) resets_at = 0;
        event e = make_event(event_kind::rate_limit,
                             cut_text("rate limit" + (limit.empty() ? "" : " (" + limit + ")") +
                                      " rejected the request"));
        e.resets_at_ms = resets_at;
        e.failure = failure_hint::rate_limit;
        note_failure(failure_hint::rate_limit, e.text, resets_at, true);
        out.push_back(std::move(e));
    }

    void on_result(const json& object, std::vector<event>& out) {
        event usage = make_event(event_kind::usage, {});
        if (const json* totals = member(object, "usage")) {
            usage.input_tokens = int_member(*totals, "input_tokens") +
                                 int_member(*totals, "cache_creation_input_tokens") +
                                 int_member(*totals, "cache_read_input_tokens");
            usage.output_tokens = int_member(*totals, "output_tokens");
        }
        usage.cost_usd = number_member(object, "total_cost_usd");
        summary_.input_tokens = usage.input_tokens;
        summary_.output_tokens = usage.output_tokens;
        if (usage.cost_usd) summary_.cost_usd = usage.cost_usd;
        summary_.turns = int_member(object, "num_turns");
        out.push_back(std::move(usage));

        const std::string subtype = string_member(object, "subtype");
        const std::string text = string_member(object, "result");
        if (!bool_member(object, "is_error") && !subtype.starts_with("error")) {
            summary_.final_answer = text;
            summary_.has_final_answer = true;
            out.push_back(make_event(event_kind::final_answer, cut_text(text)));
            return;
        }
        const std::string message = text.empty() ? "claude failed: " + subtype : text;
        std::int64_t resets_at_ms = 0;
        const failure_hint from_text = classify_error_text(message, text::now_ms(), resets_at_ms);
        failure_hint hint = failure_from_status(int_member(object, "api_error_status"));
        if (hint == failure_hint::none) hint = from_text;
        note_failure(hint, message, resets_at_ms, true);
        out.push_back(make_error(message, hint));
    }

    // tool_use id → tool name, until the tool's result arrives.
    std::unordered_map<std::string, std::string> tool_names_;
};

}  // namespace

std::unique_ptr<parser> make_claude_parser() { return std::make_unique<claude_parser>(); }

}  // namespace ralph::agent_stream::detail
