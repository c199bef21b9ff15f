// libFuzzer target: the agent stream parsers of common/agent_stream (claude, codex, opencode and
// gemini JSON lines, and the text format) on arbitrary output, then ralphctl's render_lines.
//
// Input: one byte choosing the format, 8 bytes choosing how stdout and stderr are cut into
// pieces, one byte for how often stderr is repeated (up to 128 KiB: past the 64 KiB stderr
// tail, trimmed in steps beyond 80 KiB), then the sections stdout, stderr and the prompt
// (fuzz_input.hpp).
//
// Oracles, from agent_stream.hpp and the line discipline of agent_stream.cpp:
// - nothing throws (an exception out of the target is a crash);
// - the way stdout and stderr are cut into pieces never changes the events or the summary:
//   the stream is parsed twice, whole and in the pieces the input chose;
// - bytes fed after finish() are ignored;
// - every text the parser returns (events, final answer, error) and what render_lines makes of
//   the events is valid UTF-8 (it goes into JSON and the terminal as is).
#include "common/agent_stream/agent_stream.hpp"
#include "common/text.hpp"
#include "fuzz_input.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace ralph;
using namespace ralph::agent_stream;

struct parsed {
    std::vector<event> events;
    summary result;
};

// Feeds the pieces of stdout and stderr in turn, as the runner's two pipe readers may.
parsed parse(format value, std::string_view prompt, const std::vector<std::string_view>& out,
             const std::vector<std::string_view>& err) {
    auto parser = make_parser(value, std::string(prompt));
    parsed p;
    for (std::size_t i = 0; i < out.size() || i < err.size(); ++i) {
        if (i < out.size()) parser->feed(out[i], p.events);
        if (i < err.size()) parser->feed_stderr(err[i]);
        (void)parser->awaiting_tool_result();
    }
    parser->finish(p.events);
    const std::size_t settled = p.events.size();
    parser->feed("{\"type\":\"result\"}\nlate line\n", p.events);
    parser->finish(p.events);
    fuzz::check(p.events.size() == settled, "events after finish()");
    p.result = parser->result();
    return p;
}

std::vector<std::string_view> whole(std::string_view bytes) {
    if (bytes.empty()) return {};
    return {bytes};
}

// Reset times stated as "in 5 minutes" are computed from the clock when the line is parsed: the
// two parses may differ by the time between them.
bool same_reset(std::int64_t a, std::int64_t b, std::int64_t slack_ms) {
    if ((a == 0) != (b == 0)) return false;
    return a - b <= slack_ms && b - a <= slack_ms;
}

bool same_event(const event& a, const event& b, std::int64_t slack_ms) {
    return a.kind == b.kind && a.text == b.text && a.tool == b.tool &&
           a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
           a.cost_usd == b.cost_usd && a.failure == b.failure &&
           same_reset(a.resets_at_ms, b.resets_at_ms, slack_ms);
}

bool same_summary(const summary& a, const summary& b, std::int64_t slack_ms) {
    return a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
           a.cost_usd == b.cost_usd && a.turns == b.turns && a.tool_calls == b.tool_calls &&
           a.final_answer == b.final_answer && a.has_final_answer == b.has_final_answer &&
           a.failure == b.failure && a.error == b.error &&
           same_reset(a.resets_at_ms, b.resets_at_ms, slack_ms);
}

void check_utf8(const parsed& p) {
    for (const event& e : p.events) {
        fuzz::check(fuzz::is_valid_utf8(e.text), "event text is not valid UTF-8", e.text);
        fuzz::check(fuzz::is_valid_utf8(e.tool), "event tool is not valid UTF-8", e.tool);
    }
    fuzz::check(fuzz::is_valid_utf8(p.result.final_answer), "final answer is not valid UTF-8",
                p.result.final_answer);
    fuzz::check(fuzz::is_valid_utf8(p.result.error), "summary error is not valid UTF-8",
                p.result.error);
    const std::string rendered = render_lines(p.events);
    fuzz::check(fuzz::is_valid_utf8(rendered), "render_lines is not valid UTF-8", rendered);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::input_reader input(std::string_view(reinterpret_cast<const char*>(data), size));
    static constexpr format formats[] = {format::claude, format::codex, format::opencode,
                                         format::gemini, format::text};
    const format value = formats[input.take_byte() % std::size(formats)];
    const std::uint64_t seed = input.take_u64();
    const std::uint8_t err_repeats = input.take_byte();
    const auto sections = fuzz::split_sections(input.rest(), 3);
    const std::string_view out = sections[0], prompt = sections[2];
    const std::string err = fuzz::repeated(sections[1], err_repeats, 128 << 10);

    const std::int64_t before = text::now_ms();
    const parsed at_once = parse(value, prompt, whole(out), whole(err));
    const parsed in_pieces =
        parse(value, prompt, fuzz::split_pieces(out, seed), fuzz::split_pieces(err, ~seed));
    const std::int64_t slack_ms = text::now_ms() - before;

    fuzz::check(at_once.events.size() == in_pieces.events.size(),
                "the pieces changed the number of events");
    for (std::size_t i = 0; i < at_once.events.size(); ++i)
        fuzz::check(same_event(at_once.events[i], in_pieces.events[i], slack_ms),
                    "the pieces changed an event", at_once.events[i].text);
    fuzz::check(same_summary(at_once.result, in_pieces.result, slack_ms),
                "the pieces changed the summary", at_once.result.final_answer);
    check_utf8(at_once);
    return 0;
}
