// Text utilities shared by both programs: shell-like word splitting (without a shell),
// base64 for carrying raw agent bytes in JSON, UTF-8 repair, and time formatting.
#pragma once

#include <cstdint>
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
// "a b c" (or with another separator), for messages: no quoting.
std::string join_words(const std::vector<std::string>& words, std::string_view separator = " ");

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

// Milliseconds since the Unix epoch.
std::int64_t now_ms();
// "2026-11-22T10:11:12.345Z"; an empty string for 0 (never happened).
std::string format_iso8601(std::int64_t epoch_ms);
// The longest duration parse_duration_seconds accepts: 100 years, so that any result converts
// to milliseconds in 64 bits (the daemon bounds each use further, e.g. a timeout to 7 days).
inline constexpr double max_duration_seconds = 100.0 * 365 * 86400;
// Parses durations like "90", "90s", "15m", "2h", "1d" into seconds. Throws std::invalid_argument.
double parse_duration_seconds(std::string_view text);
// "1h02m", "3m05s", "42s".
std::string format_duration(std::int64_t ms);
// Parses an ISO 8601 date and time into epoch ms: "2026-11-22T08:30:00.123Z", "2026-11-22T08:30",
// "2026-11-22 08:30:00+02:00", "2026-11-22" (midnight). Without a zone (Z or ±HH[:MM]) the time
// is local. Throws std::invalid_argument.
std::int64_t parse_iso8601(std::string_view text);
// parse_iso8601 for times the API sent (format_iso8601's form): 0 for "" or anything invalid.
std::int64_t parse_iso8601_or_zero(std::string_view text);
// A point in time given either as an age before now_ms ("30m", "8h", "2d", "90" seconds: see
// parse_duration_seconds) or as an ISO 8601 time (parse_iso8601). Throws std::invalid_argument
// naming both forms.
std::int64_t parse_time_or_age(std::string_view text, std::int64_t now_ms);

}  // namespace ralph::text
