// classify_error_text (agent_stream.hpp): what an agent's error text says — a failure class and
// the reset time it states — split from agent_stream.cpp.
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
#include "common/text.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace ralph::agent_stream {

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

}  // namespace

namespace detail {

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

}  // namespace detail

namespace {

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
    return detail::match_failure(lower).hint;
}

}  // namespace ralph::agent_stream
