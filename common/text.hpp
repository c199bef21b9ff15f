// Text utilities shared by both programs: shell-like word splitting (without a shell),
// base64 for carrying raw agent bytes in JSON, UTF-8 repair, and time formatting.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::text {

// Splits a command template into words the way a POSIX shell would for plain words,
// single quotes, double quotes (with \" \\ \$ \` escapes) and backslash escapes — but nothing
// is ever expanded or executed. Throws std::invalid_argument on an unterminated quote.
std::vector<std::string> split_command_words(std::string_view command);
// Why `command` is not a usable command line ("" when it is): an unterminated quote, or no word.
std::string command_words_error(std::string_view command);
// `word` as one word of a command line, for split_command_words and POSIX shells alike: as it
// is when it is plainly safe, else in single quotes (a ' in it as '\'').
std::string shell_quote(std::string_view word);
// "a b c" (or with another separator), for messages: no quoting.
std::string join_words(const std::vector<std::string>& words, std::string_view separator = " ");

// Characters for trim: blanks within a line, and all ASCII whitespace.
inline constexpr std::string_view blanks = " \t";
inline constexpr std::string_view whitespace = " \t\r\n\f\v";
// `text` without the characters of `chars` at its start, its end, or both.
std::string_view trim_start(std::string_view text, std::string_view chars = whitespace);
std::string_view trim_end(std::string_view text, std::string_view chars = whitespace);
std::string_view trim(std::string_view text, std::string_view chars = whitespace);
// The first line of `text` that is not blank, from its first non-whitespace character to its end
// (the \r or \n is not part of it); "" when there is none.
std::string_view first_line(std::string_view text);
// first_line, cut to `limit` bytes at a character boundary and marked "…" when cut: a summary,
// or a quote in a stop reason.
std::string first_line_within(std::string_view text, std::size_t limit);

std::string base64_encode(std::string_view bytes);
// Appends the base64 of `bytes` to `out`, for a caller building a larger message around it.
void base64_append(std::string& out, std::string_view bytes);
// Throws std::invalid_argument on a character outside the base64 alphabet.
std::string base64_decode(std::string_view text);

// Replaces every invalid UTF-8 sequence with U+FFFD so the text can go into JSON.
std::string to_valid_utf8(std::string_view bytes);
// Length of `bytes` without a multi-byte UTF-8 sequence cut off at its end, so that a chunk
// boundary never splits a character (which to_valid_utf8 would turn into two U+FFFD).
std::size_t utf8_complete_prefix(std::string_view bytes);
// The first `limit` bytes of `bytes` at most, without a character cut off at their end.
std::string_view utf8_head(std::string_view bytes, std::size_t limit);

// ASCII character classes and case, whatever the locale: a byte >= 0x80 (UTF-8) is none of
// them and stays as it is.
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_alnum(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
// A blank within a line: space or tab.
constexpr bool is_blank(char c) { return c == ' ' || c == '\t'; }
// Any ASCII whitespace (`whitespace` above), as std::isspace in the C locale.
constexpr bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }
// `text` with A-Z made a-z; other bytes (UTF-8 included) as they are, whatever the locale.
std::string ascii_lower(std::string_view text);
// The value of `name` in a list of name=value pairs split by `separator` (a query string:
// '&'; a Cookie header: ';', blanks after it skipped); "" when it is not there.
std::string_view parameter_value(std::string_view list, std::string_view name, char separator);
// This machine's name (gethostname), "localhost" when it has none.
std::string host_name();

// Milliseconds since the Unix epoch.
std::int64_t now_ms();
// "2026-11-22T10:11:12.345Z"; an empty string for 0 (never happened).
std::string format_iso8601(std::int64_t epoch_ms);
// The longest duration parse_duration_seconds accepts: 100 years, so that any result converts
// to milliseconds in 64 bits (the daemon bounds each use further, e.g. a timeout to 7 days).
inline constexpr double max_duration_seconds = 100.0 * 365 * 86400;
// A duration at `pos`, advancing past it: numbers each followed by a unit ("1.5s", "15m",
// "2h30m", "5 minutes", "1 day"; ms, s, m, h, d and their words, any ASCII case, spaces allowed
// before a unit). A bare number is seconds and ends the duration, as does a word that is no
// unit. nullopt when no number starts at `pos`. No sign, no exponent; may return inf.
std::optional<double> scan_duration(std::string_view text, std::size_t& pos);
// The whole of `text` as a duration (scan_duration) in seconds, at most max_duration_seconds.
// Throws std::invalid_argument.
double parse_duration_seconds(std::string_view text);
// "1h02m", "3m05s", "42s".
std::string format_duration(std::int64_t ms);
// An ISO 8601 time: "2026-11-22T08:30:00.123Z", "2026-11-22T08:30", "2026-11-22 08:30:00+02:00",
// "2026-11-22" (midnight): 'T' (any case) or a space before the time; seconds, a fraction of any
// length ('.' or ','; milliseconds kept) and the zone (Z, ±HH, ±HHMM, ±HH:MM) optional.
struct iso8601_time {
    int year = 0, month = 0, day = 0;
    bool has_time = false;
    int hour = 0, minute = 0, second = 0, millis = 0;
    std::optional<int> offset_minutes;  // nullopt: no zone given
};
// The one at `pos` (a valid date and time), advancing past it; nullopt when none starts there.
std::optional<iso8601_time> scan_iso8601(std::string_view text, std::size_t& pos);
// Its epoch ms; without a zone, a local time when `no_zone_is_local`, else UTC (what agents
// mean). nullopt when the local time does not exist.
std::optional<std::int64_t> iso8601_epoch_ms(const iso8601_time& t, bool no_zone_is_local);
// The whole of `text` as an ISO 8601 time (scan_iso8601), local when it names no zone, in epoch
// ms. Throws std::invalid_argument.
std::int64_t parse_iso8601(std::string_view text);
// parse_iso8601 for times the API sent (format_iso8601's form): 0 for "" or anything invalid.
std::int64_t parse_iso8601_or_zero(std::string_view text);
// A point in time given either as an age before now_ms ("30m", "8h", "2d", "90" seconds: see
// parse_duration_seconds) or as an ISO 8601 time (parse_iso8601). Throws std::invalid_argument
// naming both forms.
std::int64_t parse_time_or_age(std::string_view text, std::int64_t now_ms);

}  // namespace ralph::text
