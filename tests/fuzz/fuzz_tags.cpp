// libFuzzer target: the parsers of what an agent writes in its final answer, all untrusted text:
// the promise (daemon/loop/completion), status, a judge's verdict, notes, feedback, score,
// checkboxes and the YAML quoting of .ralph/loop.md (daemon/loop/loop_memory), and the UTF-8
// repair they rely on.
//
// Input: one byte for how often the text is repeated for the tag parsers (up to 256 KiB: past
// the notes' and fields' bounds, and long enough for a cost that is not linear to exceed
// -timeout), then the sections text, phrase and tag (fuzz_input.hpp); the phrase serves as the
// promise phrase, the status value and the legacy substring, the tag as the status tag.
//
// Oracles, from completion.hpp and loop_memory.hpp: nothing throws; every string returned is
// valid UTF-8 and within its documented bound; the completion signal the prompt asks for,
// appended to any answer, completes (promise and status); contains_substring_ci agrees with a
// naive search; yaml_quote gives one line that reads back as the (repaired) input, and no value
// changes the shape of loop.md; feedback survives its storage form; a verdict appended to any
// answer is its verdict. Linear time is checked by
// libFuzzer's -timeout.
#include "common/text.hpp"
#include "daemon/loop/completion.hpp"
#include "daemon/loop/loop_memory.hpp"
#include "fuzz_input.hpp"
#include "tests/support/yaml_unquote.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace ralph;

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_trimmed(std::string_view s) {
    return s.empty() || (!is_space(s.front()) && !is_space(s.back()));
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// A text the parsers return: valid UTF-8, trimmed, at most `limit` bytes.
void check_kept_text(std::string_view s, std::size_t limit, std::string_view what) {
    fuzz::check(fuzz::is_valid_utf8(s), what, s);
    fuzz::check(is_trimmed(s), what, s);
    fuzz::check(s.size() <= limit, what, s);
}

void check_utf8_repair(std::string_view bytes) {
    const std::string repaired = text::to_valid_utf8(bytes);
    fuzz::check(fuzz::is_valid_utf8(repaired), "to_valid_utf8 gave invalid UTF-8", repaired);
    if (fuzz::is_valid_utf8(bytes))
        fuzz::check(repaired == bytes, "to_valid_utf8 changed valid UTF-8", bytes);
    const std::size_t whole = text::utf8_complete_prefix(bytes);
    fuzz::check(whole <= bytes.size() && bytes.size() - whole <= 3,
                "utf8_complete_prefix cut more than a character");
}

void check_promise(std::string_view text, std::string_view phrase) {
    (void)contains_promise(text, phrase);
    // The signal the prompt asks for, at the end of any answer, completes the loop. (A phrase
    // holding a tag of its own is another question.)
    if (phrase.find('<') == std::string_view::npos) {
        const std::string signal =
            std::string(text) + "<promise>" + std::string(phrase) + "</promise>";
        fuzz::check(contains_promise(signal, phrase), "the promise asked for does not complete");
    }
}

void check_status(std::string_view text, std::string_view tag, std::string_view value) {
    if (auto status = extract_status(text, tag)) {
        check_kept_text(*status, max_note_bytes, "status");
        (void)status_matches(*status, value);
    }
    // <TAG>VALUE</TAG>, as the prompt spells it, at the end of any answer, completes the loop.
    const bool plain_tag =
        !tag.empty() && tag.front() != '/' && tag.find_first_of("<>") == std::string_view::npos;
    const bool plain_value = value.find('<') == std::string_view::npos &&
                             fuzz::is_valid_utf8(value) && value.size() <= max_note_bytes;
    if (plain_tag && plain_value) {
        const std::string answer = std::string(text) + "<" + std::string(tag) + ">" +
                                   std::string(value) + "</" + std::string(tag) + ">";
        const auto status = extract_status(answer, tag);
        fuzz::check(status && status_matches(*status, value),
                    "the status asked for does not complete", answer);
    }
}

// A verdict's reasons are kept text. A verdict added at the end of any answer is that verdict or
// none (the answer said the other one, or left a quote open): never the other verdict — unless
// the answer gave that one itself and left a quote open that takes in what is added (a code
// fence never closed): then the answer's own stands. Added to an answer that quotes nothing and
// tags nothing, as the judge's prompt spells it, it is the verdict.
void check_verdict(std::string_view text) {
    const auto own = extract_verdict(text);
    if (own) check_kept_text(own->reasons, max_note_bytes, "verdict reasons");
    const bool plain = text.find_first_of("<>`~") == std::string_view::npos;
    for (const bool accept : {true, false}) {
        const std::string answer = std::string(text) + "\n<ralph_verdict>" +
                                   (accept ? "ACCEPT" : "REJECT") + "</ralph_verdict>";
        const auto verdict = extract_verdict(answer);
        fuzz::check(
            !verdict || verdict->accepted == accept || (own && own->accepted == verdict->accepted),
            "the other verdict was taken", answer);
        fuzz::check(!plain || (verdict && verdict->accepted == accept),
                    "the verdict given is not the verdict", answer);
    }
}

void check_substring(std::string_view text, std::string_view needle) {
    const bool found = contains_substring_ci(text, needle);
    if (text.size() * needle.size() > (1 << 22)) return;  // the naive search is quadratic
    const bool naive = !needle.empty() && std::search(text.begin(), text.end(), needle.begin(),
                                                      needle.end(), [](char a, char b) {
                                                          return ascii_lower(a) == ascii_lower(b);
                                                      }) != text.end();
    fuzz::check(found == naive, "contains_substring_ci disagrees with a naive search");
}

void check_notes(std::string_view text) {
    for (const std::string& note : extract_notes(text)) {
        fuzz::check(!note.empty(), "an empty note");
        check_kept_text(note, max_note_bytes, "note");
    }
}

std::optional<proto::agent_feedback> check_feedback(std::string_view text) {
    std::optional<proto::agent_feedback> fb = extract_feedback(text);
    if (!fb) return fb;
    fuzz::check(!fb->empty(), "an empty feedback");
    fuzz::check(!fb->score || (*fb->score >= 0 && *fb->score <= 10), "score out of 0..10");
    for (const std::string* field :
         {&fb->summary, &fb->improvements, &fb->next_steps, &fb->ideas, &fb->blockers})
        check_kept_text(*field, max_feedback_field_bytes, "feedback field");
    const auto stored = nlohmann::json(*fb).get<proto::agent_feedback>();
    fuzz::check(stored == *fb, "feedback changed through its storage form");
    const std::string described = describe_for_prompt(*fb);
    fuzz::check(fuzz::is_valid_utf8(described), "describe_for_prompt is not valid UTF-8");
    return fb;
}

void check_score(std::string_view text) {
    if (auto score = parse_score(text))
        fuzz::check(*score >= 0 && *score <= 10, "parse_score out of 0..10");
}

void check_checkboxes(std::string_view text) {
    const backlog_progress progress = count_checkboxes(text);
    const auto lines = std::count(text.begin(), text.end(), '\n') + 1;
    fuzz::check(progress.open >= 0 && progress.done >= 0 && progress.open + progress.done <= lines,
                "more checkboxes than lines");
}

// Code points YAML does not allow unescaped, or that some parsers read as line breaks.
bool is_unprintable(std::uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

// The code points of valid UTF-8.
std::vector<std::uint32_t> code_points(std::string_view s) {
    std::vector<std::uint32_t> cps;
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t length = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        std::uint32_t cp = length == 1 ? c : c & (0x7F >> length);
        for (std::size_t k = 1; k < length; ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        cps.push_back(cp);
        i += length;
    }
    return cps;
}

void check_yaml_quote(std::string_view text) {
    const std::string quoted = yaml_quote(text);
    fuzz::check(fuzz::is_valid_utf8(quoted), "yaml_quote is not valid UTF-8", quoted);
    for (std::uint32_t cp : code_points(quoted))
        fuzz::check(!is_unprintable(cp), "yaml_quote left a character unescaped", quoted);
    const auto read_back = test::yaml_unquote(quoted);
    fuzz::check(read_back.has_value(), "yaml_quote wrote what YAML cannot read", quoted);
    fuzz::check(*read_back == text::to_valid_utf8(text), "yaml_quote does not read back", quoted);
}

void check_loop_state(std::string_view text, std::string_view phrase,
                      const std::optional<proto::agent_feedback>& fb) {
    loop_state_file state;
    state.name = std::string(text);
    state.completion_signal = std::string(phrase);
    state.started_at = std::string(phrase);
    state.previous_feedback = fb;
    const std::string rendered = render_loop_state(state);
    fuzz::check(fuzz::is_valid_utf8(rendered), "loop.md is not valid UTF-8");

    // The same file with empty values has the same lines: no value ended one early.
    loop_state_file blank;
    if (fb) blank.previous_feedback = proto::agent_feedback{};
    const std::string reference = render_loop_state(blank);
    fuzz::check(std::count(rendered.begin(), rendered.end(), '\n') ==
                    std::count(reference.begin(), reference.end(), '\n'),
                "a value changed the lines of loop.md", rendered);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::input_reader input(std::string_view(reinterpret_cast<const char*>(data), size));
    const std::uint8_t repeats = input.take_byte();
    const auto sections = fuzz::split_sections(input.rest(), 3);
    const std::string_view once = sections[0], phrase = sections[1], tag = sections[2];
    // The tag parsers get the repeated text; what works character by character, with no bound
    // to reach, gets it once (yaml_quote of a large text costs most and finds nothing more).
    const std::string text = fuzz::repeated(once, repeats, 256 << 10);

    check_promise(text, phrase);
    check_status(text, tag, phrase);
    check_verdict(text);
    check_substring(text, phrase);
    check_notes(text);
    const std::optional<proto::agent_feedback> fb = check_feedback(text);
    check_checkboxes(text);
    check_score(once);
    check_score(phrase);
    check_utf8_repair(once);
    check_yaml_quote(once);
    check_loop_state(once, phrase, fb);
    return 0;
}
