// opencode's `opencode run --format json` (one JSON object per line).
//
// - step_start: nothing.
// - text: part.text → a text event; the last one is the candidate final answer.
// - tool_use (sent when a tool call ended): a tool_use event (tool = part.tool, text = what
//   part.state.input works on, else part.state.title), counted in tool_calls, then a
//   tool_result event with an excerpt of part.state.output (or "error: " + part.state.error).
//   A tool_use line whose status is still pending/running is ignored, so a call that is
//   reported again when it ends is counted once.
// - step_finish: part.tokens → usage (input = input + cache.read + cache.write, output =
//   output + reasoning), part.cost added to the cost, turns += 1.
// - error: error.name and error.data.message → an error event, definitive; the failure from
//   data.statusCode, else from the text, else transient when data.isRetryable;
//   ProviderAuthError is auth.
// opencode has no end-of-run event: at finish(), when some text was seen and no error, the last
// text part is the final answer.
#include "common/agent_stream/line.hpp"

#include "common/text.hpp"

#include <set>

namespace ralph::agent_stream::detail {
namespace {

class opencode_parser final : public json_parser {
  public:
    bool awaiting_tool_result() const override { return !running_calls_.empty(); }

  private:
    bool on_object(std::string_view type, const json& object, std::vector<event>& out) override {
        const json* part = member(object, "part");
        if (type == "step_start") {
            // Nothing worth showing.
        } else if (type == "text") {
            last_text_ = part ? string_member(*part, "text") : std::string();
            seen_text_ = true;
            if (!last_text_.empty())
                out.push_back(make_event(event_kind::text, cut_text(last_text_)));
        } else if (type == "tool_use") {
            if (part) on_tool(*part, out);
        } else if (type == "step_finish") {
            if (part) on_step_finish(*part, out);
        } else if (type == "error") {
            on_error(object, out);
        } else {
            return false;
        }
        return true;
    }

    void on_tool(const json& part, std::vector<event>& out) {
        const json* state = member(part, "state");
        if (!state) return;
        const std::string status = string_member(*state, "status");
        const std::string call = string_member(part, "callID");
        if (status == "pending" || status == "running") {
            running_calls_.insert(call);
            return;
        }
        running_calls_.erase(call);
        const std::string tool = cut_text(string_member(part, "tool"), 200);
        const json* input = member(*state, "input");
        std::string summary = input ? tool_input_summary(*input) : std::string();
        if (summary.empty()) summary = cut_text(string_member(*state, "title"), tool_excerpt_bytes);
        out.push_back(make_event(event_kind::tool_use, std::move(summary), tool));
        ++summary_.tool_calls;
        const std::string result = status == "error" ? "error: " + string_member(*state, "error")
                                                     : string_member(*state, "output");
        out.push_back(
            make_event(event_kind::tool_result, cut_text(result, tool_excerpt_bytes), tool));
    }

    void on_step_finish(const json& part, std::vector<event>& out) {
        event usage = make_event(event_kind::usage, {});
        if (const json* tokens = member(part, "tokens")) {
            usage.input_tokens = int_member(*tokens, "input");
            usage.output_tokens = int_member(*tokens, "output") + int_member(*tokens, "reasoning");
            if (const json* cache = member(*tokens, "cache"))
                usage.input_tokens += int_member(*cache, "read") + int_member(*cache, "write");
        }
        usage.cost_usd = number_member(part, "cost");
        summary_.input_tokens += usage.input_tokens;
        summary_.output_tokens += usage.output_tokens;
        if (usage.cost_usd) summary_.cost_usd = summary_.cost_usd.value_or(0) + *usage.cost_usd;
        ++summary_.turns;
        out.push_back(std::move(usage));
    }

    void on_error(const json& object, std::vector<event>& out) {
        error_seen_ = true;
        const json* error = member(object, "error");
        const json* data = error ? member(*error, "data") : nullptr;
        const std::string name = error ? string_member(*error, "name") : std::string();
        const std::string detail = data ? string_member(*data, "message") : std::string();
        std::string message = name.empty() ? "error" : name;
        if (!detail.empty()) message += ": " + detail;

        std::int64_t resets_at_ms = 0;
        const failure_hint from_text = classify_error_text(message, text::now_ms(), resets_at_ms);
        failure_hint hint =
            data ? failure_from_status(int_member(*data, "statusCode")) : failure_hint::none;
        if (hint == failure_hint::none && name == "ProviderAuthError") hint = failure_hint::auth;
        if (hint == failure_hint::none) hint = from_text;
        if (hint == failure_hint::none && data && bool_member(*data, "isRetryable"))
            hint = failure_hint::transient;
        note_failure(hint, message, resets_at_ms, true);
        out.push_back(make_error(message, hint));
    }

    void on_finish(std::vector<event>& out) override {
        if (!seen_text_ || error_seen_) return;
        summary_.final_answer = last_text_;
        summary_.has_final_answer = true;
        out.push_back(make_event(event_kind::final_answer, cut_text(last_text_)));
    }

    std::string last_text_;
    std::set<std::string> running_calls_;  // tool calls reported pending/running, not yet done
    bool seen_text_ = false;
    bool error_seen_ = false;
};

}  // namespace

std::unique_ptr<parser> make_opencode_parser() { return std::make_unique<opencode_parser>(); }

}  // namespace ralph::agent_stream::detail
