// Plain-text agents (aider, kiro, any command): their stdout is the answer.
//
// - Lines go into a window of the last 256 KiB of stdout (each line's trailing '\r' left out,
//   trimmed on a UTF-8 boundary), a whole block of lines at a time: a flooding agent costs a
//   copy and a few searches per piece it writes, not work per line. Lines produce no events:
//   the raw output is shown as it is.
// - The final answer, settled at finish(), is the window's text after the last occurrence of the
//   exact prompt (with '\r' removed), or the whole window when the prompt never appeared; it is
//   always there (has_final_answer), since exit is the only end marker. The prompt is searched
//   as lines arrive, so an echo later trimmed from the window still counts; a prompt longer
//   than the window cannot be recognized.
// - aider's usage lines ("Tokens: 2.1k sent, 56 cache write, 7 cache hit, 345 received.
//   Cost: $0.01 message, $0.02 session.") give a usage event: input = sent + cache write +
//   cache hit, output = received (k and M suffixes, thousands commas), cost = the message cost,
//   all added to the summary, and turns += 1 (one line per model exchange). Only a line that
//   holds "Tokens:" is looked at.
// - At finish(), when the run stated no failure, the stderr tail and then the last 8 KiB of
//   the answer are classified (the runner heeds it only for a non-zero exit).
#include "common/agent_stream/line.hpp"

#include "common/text.hpp"

#include <string.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ralph::agent_stream::detail {
namespace {

constexpr std::size_t window_bytes = 256 << 10;
// The window is trimmed only when it exceeds its size by this much, so trimming is amortized: a
// flood moves each byte about once more.
constexpr std::size_t window_slack = window_bytes;
constexpr std::size_t classified_tail_bytes = 8 << 10;

// Position of `needle` in `haystack` at or after `from`, npos when absent. glibc's memmem is
// linear in the worst case and skips ahead on long needles.
std::size_t find_bytes(std::string_view haystack, std::string_view needle, std::size_t from) {
    if (from > haystack.size()) return std::string_view::npos;
    const void* found =
        ::memmem(haystack.data() + from, haystack.size() - from, needle.data(), needle.size());
    return found ? std::size_t(static_cast<const char*>(found) - haystack.data())
                 : std::string_view::npos;
}

// Whether `text` starts with exactly three digits, as after a thousands separator.
bool is_thousands(std::string_view text) {
    return text.size() >= 3 && text::is_digit(text[0]) && text::is_digit(text[1]) &&
           text::is_digit(text[2]) && (text.size() == 3 || !text::is_digit(text[3]));
}

// A token count at the start of `text`: "345", "1,234", "2.1k", "1.2M". Advances `text`.
std::optional<std::int64_t> read_count(std::string_view& text) {
    std::string digits;
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (text::is_digit(text[pos])) {
            digits.push_back(text[pos++]);
        } else if (text[pos] == ',' && !digits.empty() && is_thousands(text.substr(pos + 1))) {
            ++pos;
        } else if (text[pos] == '.' && pos + 1 < text.size() && text::is_digit(text[pos + 1])) {
            digits.push_back(text[pos++]);
        } else {
            break;
        }
    }
    if (digits.empty() || digits.size() > 30) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    if (pos < text.size() && (text[pos] == 'k' || text[pos] == 'K'))
        value *= 1e3, ++pos;
    else if (pos < text.size() && text[pos] == 'M')
        value *= 1e6, ++pos;
    if (!std::isfinite(value) || value > 1e15) return std::nullopt;
    text.remove_prefix(pos);
    return std::int64_t(std::llround(value));
}

// aider's "Tokens: ... Cost: $x message, $y session." line; nullopt for any other line.
std::optional<event> parse_aider_usage(std::string_view line) {
    line = text::trim(line, text::blanks);
    if (!line.starts_with("Tokens:")) return std::nullopt;
    std::string_view rest = line.substr(7);
    event usage = make_event(event_kind::usage, {});
    bool any = false;
    // "<count> <label>" items separated by ", ", the list ended by ". ".
    while (true) {
        rest = text::trim(rest, text::blanks);
        auto count = read_count(rest);
        if (!count) break;
        const auto end = rest.find_first_of(",.");
        const std::string_view label = text::trim(rest.substr(0, end), text::blanks);
        if (label == "sent" || label == "cache write" || label == "cache hit")
            usage.input_tokens += *count, any = true;
        else if (label == "received")
            usage.output_tokens += *count, any = true;
        if (end == std::string_view::npos) break;
        const bool last = rest[end] == '.';
        rest.remove_prefix(end + 1);
        if (last) break;
    }
    if (const auto cost = rest.find("Cost: $"); cost != std::string_view::npos) {
        std::string_view amount = rest.substr(cost + 7);
        double value = 0;
        const auto [end, ec] = std::from_chars(amount.data(), amount.data() + amount.size(), value);
        amount.remove_prefix(std::size_t(end - amount.data()));
        if (ec == std::errc() && std::isfinite(value) &&
            text::trim(amount, text::blanks).starts_with("message"))
            usage.cost_usd = value, any = true;
    }
    if (!any) return std::nullopt;
    return usage;
}

class text_parser final : public line_parser {
  public:
    explicit text_parser(std::string prompt) {
        for (char c : prompt)
            if (c != '\r') prompt_.push_back(c);
    }

  private:
    void on_lines(std::string_view lines, std::vector<event>& out) override {
        // Of a block longer than the window (an agent that floods) only its end is kept: its
        // last window_bytes, and before them as much of an echo of the prompt as may end there.
        // What the window lost (an earlier echo too) it would have lost at its next trim.
        if (const std::size_t keep = window_bytes + prompt_.size(); lines.size() > keep) {
            window_.clear();
            answer_start_ = 0;
            scan_from_ = 0;
            append_to_window(lines.substr(lines.size() - keep));
        } else {
            append_to_window(lines);
        }
        find_prompt();
        if (window_.size() > window_bytes + window_slack) trim_window();
        add_usage(lines, out);
    }

    // Appends the lines with each line's trailing '\r' left out.
    void append_to_window(std::string_view lines) {
        for (auto end = lines.find("\r\n"); end != std::string_view::npos;
             end = lines.find("\r\n")) {
            window_.append(lines.substr(0, end));
            lines.remove_prefix(end + 1);
        }
        window_.append(lines);
    }

    // Moves answer_start_ past the last echo of the prompt in the part not searched yet.
    void find_prompt() {
        if (prompt_.empty()) return;
        for (auto pos = find_bytes(window_, prompt_, scan_from_); pos != std::string::npos;
             pos = find_bytes(window_, prompt_, pos + 1))
            answer_start_ = pos + prompt_.size();
        // An echo still to come can begin no earlier than this.
        if (window_.size() >= prompt_.size())
            scan_from_ = std::max(scan_from_, window_.size() - prompt_.size() + 1);
    }

    // The usage events of aider's lines among `lines`, in order.
    void add_usage(std::string_view lines, std::vector<event>& out) {
        constexpr std::string_view marker = "Tokens:";
        // (find: memchr for the 'T', which is rare, beats memmem on a short needle.)
        for (auto at = lines.find(marker); at != std::string_view::npos;) {
            const auto before = lines.rfind('\n', at);
            const std::size_t start = before == std::string_view::npos ? 0 : before + 1;
            const std::size_t end = std::min(lines.find('\n', at), lines.size());
            std::string_view line = lines.substr(start, end - start);
            if (line.ends_with('\r')) line.remove_suffix(1);
            if (auto usage = parse_aider_usage(line)) {
                summary_.input_tokens += usage->input_tokens;
                summary_.output_tokens += usage->output_tokens;
                if (usage->cost_usd)
                    summary_.cost_usd = summary_.cost_usd.value_or(0) + *usage->cost_usd;
                ++summary_.turns;
                out.push_back(std::move(*usage));
            }
            at = lines.find(marker, end + 1);
        }
    }

    void trim_window() {
        std::size_t cut = window_.size() - window_bytes;
        for (int k = 0; k < 3 && cut < window_.size() &&
                        (static_cast<unsigned char>(window_[cut]) & 0xC0) == 0x80;
             ++k)
            ++cut;  // do not start the window inside a character
        window_.erase(0, cut);
        answer_start_ = answer_start_ > cut ? answer_start_ - cut : 0;
        scan_from_ = scan_from_ > cut ? scan_from_ - cut : 0;
    }

    std::string_view answer() const { return std::string_view(window_).substr(answer_start_); }

    void on_finish(std::vector<event>& out) override {
        if (window_.size() > window_bytes) trim_window();
        summary_.final_answer = text::to_valid_utf8(answer());
        summary_.has_final_answer = true;
        out.push_back(make_event(event_kind::final_answer, cut_text(summary_.final_answer)));
    }

    std::string_view output_tail() const override {
        const std::string_view text = answer();
        return text.size() > classified_tail_bytes
                   ? text.substr(text.size() - classified_tail_bytes)
                   : text;
    }

    std::string prompt_;
    std::string window_;            // the last window_bytes (+ slack) of stdout
    std::size_t answer_start_ = 0;  // just after the last echo of the prompt in window_
    std::size_t scan_from_ = 0;     // where the search for the next echo resumes
};

}  // namespace

std::unique_ptr<parser> make_text_parser(std::string prompt) {
    return std::make_unique<text_parser>(std::move(prompt));
}

}  // namespace ralph::agent_stream::detail
