// The format-independent half of agent_stream: names, rendering, the shared helpers of
// line.hpp, and the line discipline every parser obeys (error_text.cpp: the error classification).
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
#include "common/agent_stream/agent_stream.hpp"

#include "common/agent_stream/line.hpp"
#include "common/enum_names.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <array>
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
