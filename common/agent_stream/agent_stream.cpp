// The format-independent half of agent_stream: names, error classification, rendering, the
// shared helpers of line.hpp, and the line discipline every parser obeys.
//
// Line discipline (line_parser):
// - A line ends at '\n'; one trailing '\r' is stripped (by the format, which gets line ends as
//   written). Only complete lines are parsed, so the way stdout is cut into pieces never changes
//   the events. Complete lines go to the format in blocks (as many as a piece holds).
// - A line longer than max_line_bytes is never buffered whole: once it is known to be too long
//   the bytes are dropped up to the next newline, and one raw event "[line of N bytes skipped]"
//   gives its size (N excludes the newline).
// - finish() parses a last unterminated line as any other (a truncated JSON line becomes raw).
//   Bytes fed after finish() are ignored.
// - Whatever a format's handler throws (a field of an unexpected type, a bad_alloc) is caught:
//   json_parser drops the events the line had appended and makes the line one raw event; a
//   block that throws anyway loses its events and is reported as one raw event.
// - stderr is only kept as its last 64 KiB. At finish(), when the stream stated no failure, the
//   stderr tail (then the format's output tail) is classified with classify_error_text; the
//   line that matched becomes summary.error. No event is emitted for it.
//
// JSON layer (json_parser): a line is parsed as JSON; when that fails and the line is not valid
// UTF-8, it is parsed again with invalid bytes replaced by U+FFFD, so one bad byte in a message
// does not lose the event (nlohmann rejects invalid UTF-8 in strings). Anything but an object
// with a string "type" the format knows becomes a raw event. Blank lines are ignored.
//
// classify_error_text: ASCII-case-insensitive keyword rules, each a plain substring search, so
// linear in the text. Rate limit words win over configuration words, which win over auth words,
// which win over transient words.
// Status numbers (429, 401, 500...) count only as whole tokens: not next to a letter or digit,
// nor part of a decimal number. Reset times, first match wins: an epoch after "resetsAt"/
// "resets_at" or "usage limit reached|" (seconds; values above 1e11 are taken as ms), an
// ISO 8601 time after "resets at"/"reset at" (UTC unless an offset is given), then a duration
// after "try again in", "retry after", "retry-after:", "retry in", "resets in" (units ms, s, m,
// h, d and their long forms; a bare number is seconds; "1m30s" is summed). resets_at_ms is left
// unchanged when the text states no reset time.
#include "common/agent_stream/agent_stream.hpp"

#include "common/agent_stream/line.hpp"
#include "common/enum_names.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ralph::agent_stream {

namespace {

constexpr std::array<enum_name<format>, 5> format_names{{
    {format::text, "text"},
    {format::claude, "claude"},
    {format::codex, "codex"},
    {format::opencode, "opencode"},
    {format::gemini, "gemini"},
}};
static_assert(names_in_order(format_names, format::gemini));

constexpr std::array<enum_name<failure_hint>, 5> failure_hint_names{{
    {failure_hint::none, "none"},
    {failure_hint::rate_limit, "rate_limit"},
    {failure_hint::transient, "transient"},
    {failure_hint::auth, "auth"},
    {failure_hint::config, "config"},
}};
static_assert(names_in_order(failure_hint_names, failure_hint::config));

constexpr std::array<enum_name<event_kind>, 9> event_kind_names{{
    {event_kind::system, "system"},
    {event_kind::text, "text"},
    {event_kind::tool_use, "tool_use"},
    {event_kind::tool_result, "tool_result"},
    {event_kind::usage, "usage"},
    {event_kind::error, "error"},
    {event_kind::rate_limit, "rate_limit"},
    {event_kind::final_answer, "final_answer"},
    {event_kind::raw, "raw"},
}};
static_assert(names_in_order(event_kind_names, event_kind::raw));

}  // namespace

std::string_view to_string(format value) { return name_of(format_names, value); }

format format_from_string(std::string_view name) {
    return parse(format_names, name, "agent output format");
}

std::string_view to_string(failure_hint value) { return name_of(failure_hint_names, value); }

std::string_view to_string(event_kind value) { return name_of(event_kind_names, value); }

// ---------------------------------------------------------------------------------------------
// Error classification

namespace {

// clang-format off
constexpr std::string_view rate_limit_words[] = {
    "429", "rate limit", "rate_limit", "rate-limit", "ratelimit", "usage limit",
    "too many requests", "quota", "hit your limit", "resource_exhausted",
};
constexpr std::string_view auth_words[] = {
    "401", "403", "unauthorized", "forbidden", "authentication", "invalid api key",
    "invalid x-api-key", "invalid_api_key", "api key not valid", "not logged in", "please login",
    "please log in", "please run /login", "credit balance is too low", "permission_denied",
    "invalid auth method selected",
};
// What the CLIs say of their setup: codex's "Missing environment variable: `NAME`." (a model
// provider's env_key), aider's "Missing these environment variables:", and unknown models: the
// OpenAI API's model_not_found ("The model `x` does not exist or you do not have access to
// it."), Claude Code's "It may not exist or you may not have access to it", the Anthropic API's
// not_found_error, Gemini's "models/x is not found for API version", opencode's
// ProviderModelNotFoundError; and gemini-cli's refusal to run headless in a folder its user has
// not trusted ("Gemini CLI is not running in a trusted directory").
constexpr std::string_view config_words[] = {
    "missing environment variable", "missing these environment variables", "model_not_found",
    "model not found", "modelnotfound", "does not exist or you do not have access",
    "may not exist or you may not have access", "not_found_error", "is not found for api version",
    "not running in a trusted directory",
};
constexpr std::string_view transient_words[] = {
    "500", "502", "503", "504", "529", "overloaded", "internal server error", "bad gateway",
    "service unavailable", "timeout", "timed out", "econnrefused", "connectionrefused",
    "connection refused", "unable to connect", "econnreset", "connection reset", "network",
    "reconnecting", "socket hang up", "fetch failed", "high demand",
};
// clang-format on

// Whether the digits at [pos, pos + len) stand alone: "(429)", "code":500, but not 15003,
// "e500" or 1.500.
bool is_whole_number(std::string_view text, std::size_t pos, std::size_t len) {
    const std::size_t end = pos + len;
    if (pos > 0) {
        const char before = text[pos - 1];
        if (text::is_alnum(before)) return false;
        if (before == '.' && pos > 1 && text::is_digit(text[pos - 2])) return false;
    }
    if (end < text.size()) {
        const char after = text[end];
        if (text::is_alnum(after)) return false;
        if (after == '.' && end + 1 < text.size() && text::is_digit(text[end + 1])) return false;
    }
    return true;
}

// Position of the first match of any of `words` in `lower`, npos when none.
template <std::size_t n>
std::size_t find_first(std::string_view lower, const std::string_view (&words)[n]) {
    std::size_t first = std::string_view::npos;
    for (std::string_view word : words) {
        const bool numeric = text::is_digit(word.front());
        for (std::size_t pos = lower.find(word); pos != std::string_view::npos && pos < first;
             pos = lower.find(word, pos + 1)) {
            if (!numeric || is_whole_number(lower, pos, word.size())) {
                first = pos;
                break;
            }
        }
    }
    return first;
}

struct failure_match {
    failure_hint hint = failure_hint::none;
    std::size_t position = 0;  // where the deciding word starts
};

failure_match match_failure(std::string_view lower) {
    if (auto pos = find_first(lower, rate_limit_words); pos != std::string_view::npos)
        return {failure_hint::rate_limit, pos};
    if (auto pos = find_first(lower, config_words); pos != std::string_view::npos)
        return {failure_hint::config, pos};
    if (auto pos = find_first(lower, auth_words); pos != std::string_view::npos)
        return {failure_hint::auth, pos};
    if (auto pos = find_first(lower, transient_words); pos != std::string_view::npos)
        return {failure_hint::transient, pos};
    return {};
}

void skip_spaces(std::string_view text, std::size_t& pos) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
}

// Reads up to `max_digits` digits at pos; nullopt when there is none.
std::optional<std::int64_t> read_digits(std::string_view text, std::size_t& pos,
                                        std::size_t max_digits) {
    std::int64_t value = 0;
    std::size_t count = 0;
    while (pos < text.size() && text::is_digit(text[pos]) && count < max_digits) {
        value = value * 10 + (text[pos] - '0');
        ++pos, ++count;
    }
    if (count == 0) return std::nullopt;
    return value;
}

std::int64_t epoch_to_ms(std::int64_t value) {
    return value > 100'000'000'000 ? value : value * 1000;
}

// `"resetsat": 1763830800` (the text is lowercased) or "usage limit reached|1763830800".
std::optional<std::int64_t> epoch_reset(std::string_view lower) {
    for (std::string_view key : {"resetsat", "resets_at", "usage limit reached|"}) {
        for (std::size_t pos = lower.find(key); pos != std::string_view::npos;
             pos = lower.find(key, pos + 1)) {
            std::size_t at = pos + key.size();
            while (at < lower.size() && (lower[at] == '"' || lower[at] == '\'' ||
                                         lower[at] == ':' || lower[at] == '=' || lower[at] == ' '))
                ++at;
            if (auto value = read_digits(lower, at, 15); value && *value > 0)
                return epoch_to_ms(*value);
        }
    }
    return std::nullopt;
}

std::optional<std::int64_t> iso_reset(std::string_view lower) {
    for (std::string_view key : {"resets at", "reset at"}) {
        for (std::size_t pos = lower.find(key); pos != std::string_view::npos;
             pos = lower.find(key, pos + 1)) {
            std::size_t at = pos + key.size();
            skip_spaces(lower, at);
            // A date and a time; without a zone, UTC.
            if (auto t = text::scan_iso8601(lower, at); t && t->has_time)
                if (auto ms = text::iso8601_epoch_ms(*t, false)) return ms;
        }
    }
    return std::nullopt;
}

std::optional<std::int64_t> relative_reset(std::string_view lower, std::int64_t now_ms) {
    for (std::string_view key :
         {"try again in", "retry after", "retry-after:", "retry in", "resets in"}) {
        for (std::size_t pos = lower.find(key); pos != std::string_view::npos;
             pos = lower.find(key, pos + 1)) {
            std::size_t at = pos + key.size();
            skip_spaces(lower, at);
            if (auto seconds = text::scan_duration(lower, at); seconds && *seconds < 1e9)
                return now_ms + std::int64_t(std::llround(*seconds * 1000));
        }
    }
    return std::nullopt;
}

}  // namespace

failure_hint classify_error_text(std::string_view text, std::int64_t now_ms,
                                 std::int64_t& resets_at_ms) {
    const std::string lower = text::ascii_lower(text);
    std::optional<std::int64_t> reset = epoch_reset(lower);
    if (!reset) reset = iso_reset(lower);
    if (!reset) reset = relative_reset(lower, now_ms);
    if (reset) resets_at_ms = *reset;
    return match_failure(lower).hint;
}

// ---------------------------------------------------------------------------------------------
// Rendering

namespace {

// The first non-empty line of `text`, cut to max_bytes; "…" when anything was left out.
std::string first_line(std::string_view text, std::size_t max_bytes) {
    const auto start = text.find_first_not_of("\r\n");
    text.remove_prefix(start == std::string_view::npos ? text.size() : start);
    const auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string out = detail::cut_text(line, max_bytes);
    const bool more = newline != std::string_view::npos &&
                      text.find_first_not_of(" \t\r\n", newline) != std::string_view::npos;
    if (more && !out.ends_with("…")) out += "…";
    return out;
}

// `text` on one line: line breaks become spaces.
std::string joined_lines(std::string_view text, std::size_t max_bytes) {
    std::string joined;
    joined.reserve(std::min(text.size(), max_bytes + 1));
    for (char c : text.substr(0, max_bytes + 1)) {
        if (c == '\r') continue;
        joined.push_back(c == '\n' ? ' ' : c);
    }
    return detail::cut_text(joined, max_bytes);
}

}  // namespace

std::string render(const event& e) {
    switch (e.kind) {
        case event_kind::text:
        case event_kind::raw:
            return e.text;
        case event_kind::tool_use:
            return "● " + (e.tool.empty() ? std::string("tool") : e.tool) +
                   (e.text.empty() ? "" : " " + first_line(e.text, 200));
        case event_kind::tool_result:
            return "  └ " + first_line(e.text, 120);
        case event_kind::error:
            return "✗ " + joined_lines(e.text, 500);
        case event_kind::rate_limit:
            return e.resets_at_ms > 0
                       ? "✗ rate limit hit; resets at " + text::format_iso8601(e.resets_at_ms)
                       : "✗ rate limit hit";
        case event_kind::final_answer:  // its text was shown by the text events before it
        case event_kind::usage:
        case event_kind::system:
            return {};
    }
    return {};
}

std::string render_lines(const std::vector<event>& events) {
    std::string lines;
    for (const auto& e : events) {
        std::string line = render(e);
        if (line.empty()) continue;
        lines.append(line);
        if (line.back() != '\n') lines.push_back('\n');
    }
    return lines;
}

std::string output_renderer::render(std::string_view bytes, std::string_view format_name,
                                    std::string_view section) {
    format value = format::text;
    try {
        value = format_from_string(format_name);
    } catch (const std::invalid_argument&) {
        // a newer ralphd's format: shown as text
    }
    std::string rendered;
    if (!section.empty() && section != section_) {
        // Another attempt: the last one's held line first, then the line between them.
        rendered = finish();
        if (!rendered.empty()) at_line_start_ = rendered.back() == '\n';
        if (!at_line_start_) rendered += '\n';
        rendered.append("── ").append(section).append(" ──\n");
        section_ = section;
    } else if (value != format_) {
        rendered = finish();
    }
    if (value != format_) {
        format_ = value;
        if (value != format::text) parser_ = make_parser(value);
    }
    if (!parser_) return note(rendered.append(bytes));
    parser_->feed(bytes, events_);
    rendered += render_lines(events_);
    events_.clear();
    return note(rendered);
}

std::string& output_renderer::note(std::string& rendered) {
    if (!rendered.empty()) at_line_start_ = rendered.back() == '\n';
    return rendered;
}

std::string output_renderer::finish() {
    if (!parser_) return {};
    parser_->finish(events_);
    std::string rendered = render_lines(events_);
    events_.clear();
    parser_.reset();
    format_ = format::text;
    return rendered;
}

std::unique_ptr<parser> make_parser(format value, std::string prompt) {
    switch (value) {
        case format::claude:
            return detail::make_claude_parser();
        case format::codex:
            return detail::make_codex_parser();
        case format::opencode:
            return detail::make_opencode_parser();
        case format::gemini:
            return detail::make_gemini_parser();
        case format::text:
            break;
    }
    return detail::make_text_parser(std::move(prompt));
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

namespace detail {

const json* member(const json& object, std::string_view key) {
    if (!object.is_object()) return nullptr;
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value && value->is_string() ? value->get<std::string>() : std::string();
}

std::optional<double> number_member(const json& object, std::string_view key) {
    const json* value = member(object, key);
    if (!value || !value->is_number()) return std::nullopt;
    const double number = value->get<double>();
    if (!std::isfinite(number)) return std::nullopt;
    return number;
}

std::int64_t int_member(const json& object, std::string_view key) {
    const json* value = member(object, key);
    if (!value) return 0;
    if (value->is_number_unsigned()) {
        const auto number = value->get<std::uint64_t>();
        return number > std::uint64_t(std::numeric_limits<std::int64_t>::max())
                   ? std::numeric_limits<std::int64_t>::max()
                   : std::int64_t(number);
    }
    if (value->is_number_integer()) return value->get<std::int64_t>();
    if (value->is_number_float()) {
        const double number = value->get<double>();
        if (!std::isfinite(number) || std::fabs(number) > 9e18) return 0;
        return std::llround(number);
    }
    return 0;
}

bool bool_member(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value && value->is_boolean() && value->get<bool>();
}

std::string cut_text(std::string_view input, std::size_t max_bytes) {
    bool cut = input.size() > max_bytes;
    std::string out = text::to_valid_utf8(text::utf8_head(input, max_bytes));
    if (out.size() > max_bytes) {  // replacement characters made it longer
        out.resize(text::utf8_head(out, max_bytes).size());
        cut = true;
    }
    if (cut) out += "…";
    return out;
}

std::string tool_input_summary(const json& input) {
    // What a tool works on, most telling first. Claude and gemini say file_path, opencode
    // filePath, gemini's read tool absolute_path.
    static constexpr std::string_view keys[] = {
        "file_path", "filePath", "absolute_path", "notebook_path", "command", "pattern",
        "path",      "url",      "query",         "description",   "prompt",
    };
    for (std::string_view key : keys)
        if (const json* value = member(input, key); value && value->is_string())
            return cut_text(value->get_ref<const std::string&>(), tool_excerpt_bytes);
    if (input.is_object())
        for (const auto& item : input.items())
            if (item.value().is_string())
                return cut_text(item.value().get_ref<const std::string&>(), tool_excerpt_bytes);
    return {};
}

failure_hint failure_from_status(std::int64_t status) {
    if (status == 429) return failure_hint::rate_limit;
    if (status == 401 || status == 403) return failure_hint::auth;
    if (status == 408 || (status >= 500 && status <= 599)) return failure_hint::transient;
    return failure_hint::none;
}

event make_event(event_kind kind, std::string text, std::string tool) {
    event e;
    e.kind = kind;
    e.text = std::move(text);
    e.tool = std::move(tool);
    return e;
}

event make_error(std::string_view message, failure_hint hint) {
    event e = make_event(event_kind::error, cut_text(message));
    e.failure = hint;
    return e;
}

// ---------------------------------------------------------------------------------------------
// line_parser

namespace {
constexpr std::size_t stderr_tail_bytes = 64 << 10;
// A line buffer that grew past this is released after use rather than kept for the next line.
constexpr std::size_t line_capacity_kept = 1 << 20;
}  // namespace

void line_parser::feed(std::string_view bytes, std::vector<event>& out) {
    if (finished_) return;
    while (!bytes.empty()) {
        if (skipping_) {
            const auto newline = bytes.find('\n');
            skipped_bytes_ += std::min(newline, bytes.size());
            if (newline == std::string_view::npos) return;
            report_skipped(out);
            bytes.remove_prefix(newline + 1);
        } else if (!line_.empty()) {
            // The rest of the line begun in an earlier piece.
            const auto newline = bytes.find('\n');
            const std::string_view piece = bytes.substr(0, newline);
            if (line_.size() + piece.size() > max_line_bytes) {
                skipping_ = true;
                skipped_bytes_ = line_.size();
                std::string().swap(line_);
                continue;
            }
            line_.append(piece);
            if (newline == std::string_view::npos) return;
            line_.push_back('\n');
            process_lines(line_, out);
            if (line_.capacity() > line_capacity_kept) std::string().swap(line_);
            line_.clear();
            bytes.remove_prefix(newline + 1);
        } else {
            // The common case, without a copy: the complete lines at the front as one block. A
            // block of at most max_line_bytes + 1 bytes holds no line longer than the limit.
            const auto last_newline = bytes.substr(0, max_line_bytes + 1).rfind('\n');
            if (last_newline == std::string_view::npos) {
                if (bytes.size() > max_line_bytes) {
                    skipping_ = true;  // the first line is too long; its size is counted above
                    continue;
                }
                line_.assign(bytes);
                return;
            }
            process_lines(bytes.substr(0, last_newline + 1), out);
            bytes.remove_prefix(last_newline + 1);
        }
    }
}

void line_parser::feed_stderr(std::string_view bytes) {
    if (bytes.size() >= stderr_tail_bytes) {
        stderr_tail_.assign(bytes.substr(bytes.size() - stderr_tail_bytes));
        return;
    }
    stderr_tail_.append(bytes);
    // Trim in steps of a quarter so appending stays amortized linear.
    if (stderr_tail_.size() > stderr_tail_bytes + stderr_tail_bytes / 4)
        stderr_tail_.erase(0, stderr_tail_.size() - stderr_tail_bytes);
}

void line_parser::finish(std::vector<event>& out) {
    if (finished_) return;
    finished_ = true;
    if (skipping_) {
        report_skipped(out);
    } else if (!line_.empty()) {
        line_.push_back('\n');
        process_lines(line_, out);
        std::string().swap(line_);
    }
    const std::size_t before = out.size();
    try {
        on_finish(out);
    } catch (const std::exception&) {
        out.resize(before);
    }
    if (summary_.failure != failure_hint::none) return;
    // The last stderr_tail_bytes, however stderr arrived: feed_stderr trims only in steps.
    std::string_view stderr_tail = stderr_tail_;
    if (stderr_tail.size() > stderr_tail_bytes)
        stderr_tail.remove_prefix(stderr_tail.size() - stderr_tail_bytes);
    for (std::string_view tail : {stderr_tail, output_tail()}) {
        const std::string lower = text::ascii_lower(tail);
        const failure_match match = match_failure(lower);
        if (match.hint == failure_hint::none) continue;
        // The message is the line that matched.
        const auto start = tail.rfind('\n', match.position);
        const auto line_start = start == std::string_view::npos ? 0 : start + 1;
        const auto line_end = tail.find('\n', match.position);
        std::int64_t resets_at_ms = 0;
        classify_error_text(tail, text::now_ms(), resets_at_ms);
        note_failure(match.hint, tail.substr(line_start, line_end - line_start), resets_at_ms,
                     false);
        return;
    }
}

void line_parser::note_failure(failure_hint hint, std::string_view message,
                               std::int64_t resets_at_ms, bool definitive) {
    if (resets_at_ms > 0) summary_.resets_at_ms = resets_at_ms;
    if (definitive) {
        if (hint != failure_hint::none) summary_.failure = hint;
        summary_.error = cut_text(message);
    } else if (summary_.failure == failure_hint::none && hint != failure_hint::none) {
        summary_.failure = hint;
        summary_.error = cut_text(message);
    } else if (summary_.error.empty()) {
        summary_.error = cut_text(message);
    }
}

void line_parser::process_lines(std::string_view lines, std::vector<event>& out) {
    const std::size_t before = out.size();
    try {
        on_lines(lines, out);
    } catch (const std::exception&) {
        out.resize(before);
        out.push_back(make_event(
            event_kind::raw, "[" + std::to_string(lines.size()) + " bytes of output not parsed]"));
    }
}

void line_parser::report_skipped(std::vector<event>& out) {
    out.push_back(make_event(event_kind::raw,
                             "[line of " + std::to_string(skipped_bytes_) + " bytes skipped]"));
    skipping_ = false;
    skipped_bytes_ = 0;
}

void json_parser::on_lines(std::string_view lines, std::vector<event>& out) {
    while (!lines.empty()) {
        const auto newline = lines.find('\n');
        std::string_view line = lines.substr(0, newline);
        lines.remove_prefix(std::min(newline + 1, lines.size()));
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::size_t before = out.size();
        try {
            on_line(line, out);
        } catch (const std::exception&) {
            out.resize(before);
            out.push_back(make_event(event_kind::raw, cut_text(line)));
        }
    }
}

void json_parser::on_line(std::string_view line, std::vector<event>& out) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    json object = json::parse(line, nullptr, false);
    if (object.is_discarded()) {
        const std::string repaired = text::to_valid_utf8(line);
        if (repaired != line) object = json::parse(repaired, nullptr, false);
    }
    const json* type = member(object, "type");
    if (type && type->is_string() && on_object(type->get_ref<const std::string&>(), object, out))
        return;
    out.push_back(make_event(event_kind::raw, cut_text(line)));
}

}  // namespace detail
}  // namespace ralph::agent_stream
