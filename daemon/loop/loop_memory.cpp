#include "daemon/loop/loop_memory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "common/enum_names.hpp"
#include "common/safe_open.hpp"
#include "common/text.hpp"
#include "common/unique_fd.hpp"

namespace ralph {
namespace {

namespace fs = std::filesystem;

bool starts_with_ci(std::string_view text, std::size_t pos, std::string_view lowered) {
    if (pos > text.size() || text.size() - pos < lowered.size()) return false;
    for (std::size_t k = 0; k < lowered.size(); ++k)
        if (text::ascii_lower(text[pos + k]) != lowered[k]) return false;
    return true;
}

// Whether `<name>` (close: `</name>`) starts at text[pos], `name` being lower case.
// Returns the tag's length, or 0.
std::size_t tag_length_at(std::string_view text, std::size_t pos, std::string_view name,
                          bool close) {
    std::size_t i = pos;
    if (i >= text.size() || text[i] != '<') return 0;
    ++i;
    if (close) {
        if (i >= text.size() || text[i] != '/') return 0;
        ++i;
    }
    if (!starts_with_ci(text, i, name)) return 0;
    i += name.size();
    if (i >= text.size() || text[i] != '>') return 0;
    return i + 1 - pos;
}

// The bodies of the `<name>…</name>` blocks in `text`, in order, for any of the lower-case
// `names` (aliases of one tag: an open tag of one alias may be closed by another).
// One forward pass: a close tag ends the block of the latest open tag, an open tag without a
// close is dropped. Each position is compared with a fixed, small set of tags: linear time.
template <std::size_t N>
std::vector<std::string_view> find_blocks(std::string_view text,
                                          const std::array<std::string_view, N>& names) {
    std::vector<std::string_view> bodies;
    std::size_t body = std::string_view::npos;
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] != '<') {
            ++i;
            continue;
        }
        std::size_t length = 0;
        const bool close = i + 1 < text.size() && text[i + 1] == '/';
        for (std::string_view name : names) {
            length = tag_length_at(text, i, name, close);
            if (length != 0) break;
        }
        if (length == 0) {
            ++i;
            continue;
        }
        if (!close) {
            body = i + length;
        } else if (body != std::string_view::npos) {
            bodies.push_back(text.substr(body, i - body));
            body = std::string_view::npos;
        }
        i += length;
    }
    return bodies;
}

std::vector<std::string_view> find_blocks(std::string_view text, std::string_view name) {
    return find_blocks(text, std::array<std::string_view, 1>{name});
}

// At most `limit` bytes of `bytes`, cut at a character boundary, as valid UTF-8, trimmed.
// The raw text is cut first so that a huge block is never copied whole.
std::string bounded_text(std::string_view bytes, std::size_t limit) {
    bytes = text::trim(bytes);
    std::string out = text::to_valid_utf8(text::utf8_head(bytes, limit));
    // Each invalid byte became a 3-byte U+FFFD: cut again.
    out.resize(text::utf8_head(out, limit).size());
    return std::string(text::trim(out));
}

// ---- feedback ----

enum class field { score, summary, improvements, next_steps, ideas, blockers };
constexpr std::size_t field_count = 6;

std::string* field_text(proto::agent_feedback& fb, field f, std::string& score_text) {
    switch (f) {
        case field::score:
            return &score_text;
        case field::summary:
            return &fb.summary;
        case field::improvements:
            return &fb.improvements;
        case field::next_steps:
            return &fb.next_steps;
        case field::ideas:
            return &fb.ideas;
        case field::blockers:
            return &fb.blockers;
    }
    return &score_text;
}

// Sub-tag syntax: the last block of each known sub-tag. Returns false if the body has none.
bool read_sub_tags(std::string_view body, proto::agent_feedback& fb) {
    struct sub_tag {
        field which;
        std::array<std::string_view, 2> names;
    };
    static constexpr std::array<sub_tag, field_count> sub_tags{{
        {field::score, {"score", "score"}},
        {field::summary, {"summary", "summary"}},
        {field::improvements, {"improvements", "improvements"}},
        {field::next_steps, {"next_steps", "next-steps"}},
        {field::ideas, {"ideas", "ideas"}},
        {field::blockers, {"blockers", "blockers"}},
    }};
    bool found = false;
    std::string score_text;
    for (const sub_tag& tag : sub_tags) {
        const auto blocks = find_blocks(body, tag.names);
        if (blocks.empty()) continue;
        found = true;
        *field_text(fb, tag.which, score_text) =
            bounded_text(blocks.back(), max_feedback_field_bytes);
    }
    fb.score = parse_score(score_text);
    return found;
}

// The known key a `key: value` line starts with, and the value. A key is at most a few words,
// compared after lower-casing, with `_`, `-` and blanks alike and markdown bold (`*`) dropped.
std::optional<std::pair<field, std::string_view>> parse_key_line(std::string_view line) {
    std::string_view s = text::trim_start(line);
    // A list marker: "- Score: 7".
    if (s.size() >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && text::is_blank(s[1]))
        s = text::trim_start(s.substr(2));
    // Markdown emphasis or a heading: "**Score:** 7", "__Score__: 7", "### Score: 7".
    while (!s.empty() && (s[0] == '*' || s[0] == '_' || s[0] == '#' || text::is_blank(s[0])))
        s.remove_prefix(1);
    constexpr std::size_t max_key_length = 32;  // keeps the work per line bounded
    const std::size_t colon = s.substr(0, max_key_length + 1).find(':');
    if (colon == std::string_view::npos) return std::nullopt;

    std::string key;
    for (char c : s.substr(0, colon)) {
        if (c == '*') continue;
        if (c == '_' || c == '-' || text::is_blank(c)) {
            if (!key.empty() && key.back() != ' ') key.push_back(' ');
            continue;
        }
        c = text::ascii_lower(c);
        if (c < 'a' || c > 'z') return std::nullopt;
        key.push_back(c);
    }
    if (!key.empty() && key.back() == ' ') key.pop_back();

    static constexpr std::array<enum_name<field>, 10> known{{
        {field::score, "score"},
        {field::summary, "summary"},
        {field::improvements, "improvements"},
        {field::improvements, "improvement"},
        {field::next_steps, "next steps"},
        {field::next_steps, "next step"},
        {field::ideas, "ideas"},
        {field::ideas, "idea"},
        {field::blockers, "blockers"},
        {field::blockers, "blocker"},
    }};
    const std::optional<field> which = find_value(known, key);
    if (!which) return std::nullopt;
    std::string_view value = text::trim_start(s.substr(colon + 1));
    // The closing emphasis of "**Score:** 7".
    if (value.substr(0, 2) == "**" || value.substr(0, 2) == "__")
        value = text::trim_start(value.substr(2));
    return std::pair{*which, value};
}

// `key: value` syntax; a line that starts no known key continues the current value.
void read_key_lines(std::string_view body, proto::agent_feedback& fb) {
    std::array<std::string, field_count> values;
    std::optional<field> current;
    std::size_t pos = 0;
    while (pos < body.size()) {
        std::size_t end = body.find('\n', pos);
        if (end == std::string_view::npos) end = body.size();
        std::string_view line = body.substr(pos, end - pos);
        pos = end + 1;
        if (auto key = parse_key_line(line)) {
            current = key->first;
            values[std::size_t(key->first)] = std::string(key->second);
        } else if (current) {
            std::string& value = values[std::size_t(*current)];
            // Bounded so that a huge body costs no more than a field can keep.
            if (value.size() > 2 * max_feedback_field_bytes) continue;
            value.push_back('\n');
            value.append(text::trim(line));
        }
    }
    std::string score_text;
    for (std::size_t f = 0; f < field_count; ++f)
        *field_text(fb, field(f), score_text) = bounded_text(values[f], max_feedback_field_bytes);
    fb.score = parse_score(score_text);
}

// ---- files ----

[[noreturn]] void throw_io_error(const std::string& action, const fs::path& file, int error) {
    throw std::runtime_error("cannot " + action + " " + file.string() + ": " +
                             std::generic_category().message(error));
}

void write_all(int fd, std::string_view data, const std::string& action, const fs::path& file) {
    while (!data.empty()) {
        const ssize_t written = ::write(fd, data.data(), data.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            throw_io_error(action, file, errno);
        }
        data.remove_prefix(std::size_t(written));
    }
}

// ---- YAML ----

void append_hex_escape(std::string& out, unsigned value) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\x%02X", value & 0xFF);
    out += buffer;
}

}  // namespace

// ---- notes ----

std::vector<std::string> extract_notes(std::string_view answer) {
    std::vector<std::string> notes;
    for (std::string_view body : find_blocks(answer, "ralph_notes")) {
        std::string note = bounded_text(body, max_note_bytes);
        if (!note.empty()) notes.push_back(std::move(note));
    }
    return notes;
}

// ---- feedback ----

std::optional<int> parse_score(std::string_view text) {
    std::string_view s = text::trim(text);
    while (!s.empty() && s[0] == '*') s.remove_prefix(1);  // "**7**/10"
    if (s.empty() || !text::is_digit(s[0])) return std::nullopt;

    // The integer part, saturated above 10 so that a long run of digits cannot overflow.
    int whole = 0;
    std::size_t i = 0;
    for (; i < s.size() && text::is_digit(s[i]); ++i)
        whole = std::min(whole * 10 + (s[i] - '0'), 11);
    bool has_fraction = false;
    if (i + 1 < s.size() && s[i] == '.' && text::is_digit(s[i + 1])) {
        for (++i; i < s.size() && text::is_digit(s[i]); ++i)
            has_fraction = has_fraction || s[i] != '0';
    }
    if (whole > 10 || (whole == 10 && has_fraction)) return std::nullopt;

    std::string_view rest = s.substr(i);
    while (!rest.empty() && rest[0] == '*') rest.remove_prefix(1);
    std::string_view after_blanks = text::trim_start(rest);
    if (!after_blanks.empty() && after_blanks[0] == '/') {
        // Only "out of 10" is a score on our scale.
        rest = text::trim_start(after_blanks.substr(1));
        if (rest.substr(0, 2) != "10") return std::nullopt;
        rest.remove_prefix(2);
    }
    // What follows must not continue the number: "7/100", "7.5.3", "7/10/2".
    if (!rest.empty()) {
        const char c = rest[0];
        if (text::is_digit(c) || c == '/' ||
            (c == '.' && rest.size() > 1 && text::is_digit(rest[1])))
            return std::nullopt;
    }
    return whole;
}

std::optional<proto::agent_feedback> extract_feedback(std::string_view answer) {
    static constexpr std::array<std::string_view, 2> names{"ralph-feedback", "ralph_feedback"};
    const auto blocks = find_blocks(answer, names);
    if (blocks.empty()) return std::nullopt;
    proto::agent_feedback fb;
    if (!read_sub_tags(blocks.back(), fb)) read_key_lines(blocks.back(), fb);
    if (fb.empty()) return std::nullopt;
    return fb;
}

std::string describe_for_prompt(const proto::agent_feedback& fb) {
    std::string out;
    if (fb.score) out += "Score: " + std::to_string(*fb.score) + "/10\n";
    const std::pair<std::string_view, const std::string&> fields[] = {
        {"Summary", fb.summary}, {"Improvements", fb.improvements}, {"Next steps", fb.next_steps},
        {"Ideas", fb.ideas},     {"Blockers", fb.blockers},
    };
    for (const auto& [label, value] : fields) {
        if (value.empty()) continue;
        out += label;
        // A list reads better starting on its own line than after the label.
        out += value.find('\n') == std::string::npos ? ": " : ":\n";
        out += value;
        out += '\n';
    }
    return out;
}

// ---- completion rules ----

std::optional<std::string> extract_status(std::string_view answer, std::string_view tag) {
    if (tag.empty()) return std::nullopt;
    std::string name;
    for (char c : tag) name.push_back(text::ascii_lower(c));
    const auto blocks = find_blocks(answer, name);
    if (blocks.empty()) return std::nullopt;
    return bounded_text(blocks.back(), max_note_bytes);
}

bool status_matches(std::string_view status, std::string_view value) {
    status = text::trim(status);
    value = text::trim(value);
    if (status.size() != value.size()) return false;
    for (std::size_t i = 0; i < status.size(); ++i)
        if (text::ascii_lower(status[i]) != text::ascii_lower(value[i])) return false;
    return true;
}

std::string outside_quotes(std::string_view text) {
    std::string out(text);
    // The bodies of the blocks that quote: the judge's reasons, the worker's answer.
    for (std::string_view name : {std::string_view("ralph_reasons"), std::string_view("answer")})
        for (std::string_view body : find_blocks(text, name))
            std::fill_n(out.begin() + (body.data() - text.data()), body.size(), ' ');
    // Line by line: fences, blockquotes, inline code spans.
    std::size_t fence_length = 0;  // inside a fence of this many fence_char when not 0
    char fence_char = 0;
    std::size_t pos = 0;
    while (pos < out.size()) {
        std::size_t end = out.find('\n', pos);
        if (end == std::string::npos) end = out.size();
        std::size_t i = pos;
        while (i < end && text::is_blank(out[i])) ++i;
        std::size_t run = 0;
        while (i + run < end && (out[i + run] == '`' || out[i + run] == '~') &&
               out[i + run] == out[i])
            ++run;
        const bool fence_line = run >= 3;
        const char first = i < end ? out[i] : '\0';
        const bool closes =
            fence_length != 0 && fence_line && first == fence_char && run >= fence_length;
        if (fence_length != 0 || fence_line || first == '>') {
            std::fill(out.begin() + std::ptrdiff_t(pos), out.begin() + std::ptrdiff_t(end), ' ');
            if (closes) {
                fence_length = 0;
            } else if (fence_length == 0 && fence_line) {
                fence_length = run;
                fence_char = first;
            }
        } else {
            // Inline code: from a backtick to the next one on the line.
            std::size_t open = std::string::npos;
            for (std::size_t k = pos; k < end; ++k) {
                if (out[k] != '`') continue;
                if (open == std::string::npos) {
                    open = k;
                } else {
                    std::fill(out.begin() + std::ptrdiff_t(open),
                              out.begin() + std::ptrdiff_t(k) + 1, ' ');
                    open = std::string::npos;
                }
            }
        }
        pos = end + 1;
    }
    return out;
}

std::optional<judge_verdict> extract_verdict(std::string_view answer) {
    const std::string own = outside_quotes(answer);
    const auto said = find_blocks(own, "ralph_verdict");
    if (said.empty()) return std::nullopt;
    judge_verdict verdict;
    for (std::size_t k = 0; k < said.size(); ++k) {
        bool accepts = false;
        if (status_matches(said[k], "ACCEPT"))
            accepts = true;
        else if (!status_matches(said[k], "REJECT"))
            return std::nullopt;
        if (k > 0 && accepts != verdict.accepted) return std::nullopt;
        verdict.accepted = accepts;
    }
    verdict.reasons =
        extract_status(answer, "ralph_reasons").value_or(bounded_text(answer, max_note_bytes));
    return verdict;
}

bool contains_substring_ci(std::string_view text, std::string_view needle) {
    if (needle.empty()) return false;
    std::string pattern;
    pattern.reserve(needle.size());
    for (char c : needle) pattern.push_back(text::ascii_lower(c));
    // KMP failure table: fail[k] is the length of the longest proper prefix of pattern[0..k]
    // that is also its suffix.
    std::vector<std::size_t> fail(pattern.size(), 0);
    for (std::size_t k = 1, matched = 0; k < pattern.size(); ++k) {
        while (matched > 0 && pattern[k] != pattern[matched]) matched = fail[matched - 1];
        if (pattern[k] == pattern[matched]) ++matched;
        fail[k] = matched;
    }
    std::size_t matched = 0;
    for (char raw : text) {
        const char c = text::ascii_lower(raw);
        while (matched > 0 && c != pattern[matched]) matched = fail[matched - 1];
        if (c == pattern[matched]) ++matched;
        if (matched == pattern.size()) return true;
    }
    return false;
}

backlog_progress count_checkboxes(std::string_view markdown) {
    backlog_progress progress;
    bool in_fence = false;
    char fence_char = 0;
    std::size_t fence_length = 0;
    std::size_t pos = 0;
    while (pos < markdown.size()) {
        std::size_t end = markdown.find('\n', pos);
        if (end == std::string_view::npos) end = markdown.size();
        std::string_view line = markdown.substr(pos, end - pos);
        pos = end + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

        std::size_t i = 0;
        while (i < line.size() && text::is_blank(line[i])) ++i;
        const std::string_view s = line.substr(i);

        // A fence: three or more backticks or tildes; it is closed by a fence of the same
        // character, at least as long, with nothing after it.
        if (!s.empty() && (s[0] == '`' || s[0] == '~')) {
            std::size_t run = 0;
            while (run < s.size() && s[run] == s[0]) ++run;
            if (run >= 3) {
                if (!in_fence) {
                    in_fence = true;
                    fence_char = s[0];
                    fence_length = run;
                    continue;
                }
                if (s[0] == fence_char && run >= fence_length &&
                    text::trim(s.substr(run)).empty()) {
                    in_fence = false;
                    continue;
                }
            }
        }
        if (in_fence) continue;

        // The list marker: "-", "*", "+", or up to 9 digits and "." or ")".
        std::size_t k = 0;
        if (!s.empty() && (s[0] == '-' || s[0] == '*' || s[0] == '+')) {
            k = 1;
        } else {
            while (k < s.size() && k < 9 && text::is_digit(s[k])) ++k;
            if (k == 0 || k >= s.size() || (s[k] != '.' && s[k] != ')')) continue;
            ++k;
        }
        if (k >= s.size() || !text::is_blank(s[k])) continue;
        while (k < s.size() && text::is_blank(s[k])) ++k;

        // The checkbox, then whitespace or the end of the line.
        if (s.size() - k < 3 || s[k] != '[' || s[k + 2] != ']') continue;
        if (k + 3 < s.size() && !text::is_blank(s[k + 3])) continue;
        const char mark = s[k + 1];
        if (mark == ' ') {
            ++progress.open;
        } else if (mark == 'x' || mark == 'X') {
            ++progress.done;
        }
    }
    return progress;
}

// ---- files ----

void append_notes(const std::filesystem::path& dir, const std::filesystem::path& notes_file,
                  std::int64_t iteration, const std::vector<std::string>& notes,
                  std::int64_t now_ms) {
    if (notes.empty()) return;
    std::string section =
        "\n## Iteration " + std::to_string(iteration) + " — " + text::format_iso8601(now_ms) + "\n";
    for (const std::string& note : notes) section += "\n" + note + "\n";

    // O_APPEND and a single write: the file is only ever extended, and an agent appending to it
    // at the same time cannot have its text interleaved inside our section.
    unique_fd fd = safe_open::for_writing(dir, notes_file, O_WRONLY | O_CREAT | O_APPEND);
    const fs::path shown = dir / notes_file;
    write_all(fd.get(), section, "append notes to", shown);
    if (fd.close() != 0) throw_io_error("append notes to", shown, errno);
}

std::string yaml_quote(std::string_view text) {
    const std::string valid = text::to_valid_utf8(text);
    const std::string_view s = valid;
    std::string out = "\"";
    out.reserve(s.size() + 2);
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        const auto next = [&](std::size_t k) {
            return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
        };
        switch (c) {
            case '\\':
                out += "\\\\";
                continue;
            case '"':
                out += "\\\"";
                continue;
            case '\0':
                out += "\\0";
                continue;
            case '\t':
                out += "\\t";
                continue;
            case '\n':
                out += "\\n";
                continue;
            case '\r':
                out += "\\r";
                continue;
            default:
                break;
        }
        if (c < 0x20 || c == 0x7F) {
            append_hex_escape(out, c);
        } else if (c == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) {
            // C1 controls (U+0080..U+009F) are not printable YAML characters.
            append_hex_escape(out, next(1));
            i += 1;
        } else if (c == 0xE2 && next(1) == 0x80 && (next(2) == 0xA8 || next(2) == 0xA9)) {
            // Line and paragraph separators: some YAML 1.1 parsers read them as line breaks.
            out += next(2) == 0xA8 ? "\\u2028" : "\\u2029";
            i += 2;
        } else if (c == 0xEF && next(1) == 0xBB && next(2) == 0xBF) {
            out += "\\uFEFF";  // a byte order mark inside a scalar is not allowed
            i += 2;
        } else if (c == 0xEF && next(1) == 0xBF && (next(2) == 0xBE || next(2) == 0xBF)) {
            out += next(2) == 0xBE ? "\\uFFFE" : "\\uFFFF";  // non-characters
            i += 2;
        } else {
            out.push_back(char(c));
        }
    }
    out += '"';
    return out;
}

std::string render_loop_state(const loop_state_file& state) {
    std::string out = "---\n";
    out += "loop_id: " + std::to_string(state.loop_id) + "\n";
    out += "name: " + yaml_quote(state.name) + "\n";
    out += "iteration: " + std::to_string(state.iteration) + "\n";
    out += "max_iterations: " + std::to_string(state.max_iterations) + "\n";
    out += "min_iterations: " + std::to_string(state.min_iterations) + "\n";
    out += "completion_signal: " + yaml_quote(state.completion_signal) + "\n";
    out += "started_at: " + yaml_quote(state.started_at) + "\n";
    if (const auto& fb = state.previous_feedback) {
        out += "previous_feedback:\n";
        out += "  score: " + (fb->score ? std::to_string(*fb->score) : std::string("null")) + "\n";
        out += "  summary: " + yaml_quote(fb->summary) + "\n";
        out += "  improvements: " + yaml_quote(fb->improvements) + "\n";
        out += "  next_steps: " + yaml_quote(fb->next_steps) + "\n";
        out += "  ideas: " + yaml_quote(fb->ideas) + "\n";
        out += "  blockers: " + yaml_quote(fb->blockers) + "\n";
    } else {
        out += "previous_feedback: null\n";
    }
    out += "---\n\n";

    // The body refers to the front matter instead of repeating its values, so that no
    // user-supplied text needs markdown escaping.
    out += "# Ralph loop state\n\n";
    out += "This file is written by ralph before every iteration; do not edit it.\n\n";
    out +=
        "- `iteration` is the current iteration; `max_iterations` is the last one (0 means no "
        "limit).\n";
    out +=
        "- Completion is accepted only from iteration `min_iterations` on, and only when the "
        "work is truly done: then give `completion_signal` in your final answer.\n";
    out +=
        "- `previous_feedback` is what the previous iteration said about its own work "
        "(null on the first iteration).\n";
    return out;
}

void overwrite_file(const std::filesystem::path& dir, const std::filesystem::path& file,
                    std::string_view content) {
    // Not O_TRUNC: ext4 (auto_da_alloc) writes out a file truncated to zero and rewritten when
    // it is closed, milliseconds each time. Nor a new file renamed over the old one: ext4 writes
    // that out at once too, and creating, renaming and removing names cost more than the rest
    // of an iteration's file work.
    unique_fd fd = safe_open::for_writing(dir, file, O_WRONLY | O_CREAT);
    const fs::path shown = dir / file;
    write_all(fd.get(), content, "write", shown);
    if (::ftruncate(fd.get(), off_t(content.size())) != 0) throw_io_error("write", shown, errno);
    if (fd.close() != 0) throw_io_error("write", shown, errno);
}

}  // namespace ralph
