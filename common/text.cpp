#include "common/text.hpp"

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>

namespace ralph::text {

std::string join_words(const std::vector<std::string>& words, std::string_view separator) {
    // (fmt::join trips a false -Wstringop-overflow of GCC 12 at -O3.)
    std::string joined;
    for (const auto& word : words) {
        if (!joined.empty()) joined += separator;
        joined += word;
    }
    return joined;
}

std::vector<std::string> split_command_words(std::string_view command) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false;
    std::size_t i = 0;
    const std::size_t n = command.size();
    while (i < n) {
        char c = command[i];
        if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) words.push_back(std::move(word)), word.clear(), in_word = false;
            ++i;
        } else if (c == '\'') {
            auto close = command.find('\'', i + 1);
            if (close == std::string_view::npos)
                throw std::invalid_argument("unterminated single quote in command");
            word.append(command.substr(i + 1, close - i - 1));
            in_word = true;
            i = close + 1;
        } else if (c == '"') {
            ++i;
            bool closed = false;
            while (i < n) {
                char d = command[i];
                if (d == '"') {
                    closed = true;
                    ++i;
                    break;
                }
                if (d == '\\' && i + 1 < n &&
                    (command[i + 1] == '"' || command[i + 1] == '\\' || command[i + 1] == '$' ||
                     command[i + 1] == '`')) {
                    word.push_back(command[i + 1]);
                    i += 2;
                } else if (d == '\\' && i + 1 < n && command[i + 1] == '\n') {
                    i += 2;  // line continuation
                } else {
                    word.push_back(d);
                    ++i;
                }
            }
            if (!closed) throw std::invalid_argument("unterminated double quote in command");
            in_word = true;
        } else if (c == '\\') {
            if (i + 1 < n && command[i + 1] != '\n') word.push_back(command[i + 1]), in_word = true;
            i += 2;
        } else {
            word.push_back(c);
            in_word = true;
            ++i;
        }
    }
    if (in_word) words.push_back(std::move(word));
    return words;
}

namespace {

constexpr char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The two characters of every 12-bit value: one lookup writes half a group.
constexpr auto base64_pairs = [] {
    std::array<std::array<char, 2>, 4096> pairs{};
    for (std::size_t v = 0; v < pairs.size(); ++v)
        pairs[v] = {base64_alphabet[v >> 6], base64_alphabet[v & 63]};
    return pairs;
}();

// Bit 24 marks a character outside the alphabet: no valid group of 24 bits reaches it.
constexpr std::uint32_t base64_invalid = 1u << 24;

// For each position in a group of 4 characters, each character's 6 bits already shifted into
// their place in the group's 24 bits, so that a group is 4 lookups or-ed together.
constexpr auto base64_values = [] {
    std::array<std::array<std::uint32_t, 256>, 4> values{};
    for (std::size_t position = 0; position < 4; ++position) {
        values[position].fill(base64_invalid);
        for (std::uint32_t k = 0; k < 64; ++k)
            values[position][std::uint8_t(base64_alphabet[k])] = k << (18 - 6 * position);
    }
    return values;
}();

}  // namespace

std::string command_words_error(std::string_view command) {
    try {
        if (split_command_words(command).empty()) return "empty command";
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return {};
}

std::string base64_encode(std::string_view bytes) {
    std::string out;
    base64_append(out, bytes);
    return out;
}

// The tail of a busy loop goes through here (and base64_decode in the client) at hundreds of
// MB/s, so a group is written with two table lookups straight into the sized string.
void base64_append(std::string& out, std::string_view bytes) {
    const std::size_t start = out.size();
    out.resize(start + (bytes.size() + 2) / 3 * 4);
    char* o = out.data() + start;
    const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    std::size_t i = 0;
    for (; i + 2 < n; i += 3, o += 4) {
        const std::uint32_t v =
            (std::uint32_t(in[i]) << 16) | (std::uint32_t(in[i + 1]) << 8) | in[i + 2];
        std::memcpy(o, base64_pairs[v >> 12].data(), 2);
        std::memcpy(o + 2, base64_pairs[v & 0xFFF].data(), 2);
    }
    if (i < n) {
        const bool two = i + 1 < n;
        const std::uint32_t v =
            (std::uint32_t(in[i]) << 16) | (two ? std::uint32_t(in[i + 1]) << 8 : 0);
        o[0] = base64_alphabet[v >> 18];
        o[1] = base64_alphabet[(v >> 12) & 63];
        o[2] = two ? base64_alphabet[(v >> 6) & 63] : '=';
        o[3] = '=';
    }
}

std::string base64_decode(std::string_view text) {
    // Padding ends the data; anything after it is ignored.
    text = text.substr(0, text.find('='));
    const auto* in = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    const auto& value = base64_values;
    std::string out;
    out.resize(n / 4 * 3 + 2);
    char* o = out.data();
    std::size_t i = 0;
    std::uint32_t v = 0;
    for (; i + 3 < n; i += 4, o += 3) {
        v = value[0][in[i]] | value[1][in[i + 1]] | value[2][in[i + 2]] | value[3][in[i + 3]];
        if (v & base64_invalid) break;
        o[0] = char(v >> 16);
        o[1] = char((v >> 8) & 0xFF);
        o[2] = char(v & 0xFF);
    }
    // An unpadded end: 2 characters hold 1 byte, 3 hold 2, a lone one holds none.
    const std::size_t rest = n - i;
    if (rest < 4) {
        v = 0;
        for (std::size_t k = 0; k < rest; ++k) v |= value[k][in[i + k]];
    }
    if (v & base64_invalid) throw std::invalid_argument("invalid base64 character");
    if (rest == 2 || rest == 3) *o++ = char(v >> 16);
    if (rest == 3) *o++ = char((v >> 8) & 0xFF);
    out.resize(std::size_t(o - out.data()));
    return out;
}

std::string to_valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    std::size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        std::size_t len = 0;
        std::uint32_t min = 0;
        if (c < 0x80) {
            out.push_back(char(c));
            ++i;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            len = 2, min = 0x80;
        else if ((c & 0xF0) == 0xE0)
            len = 3, min = 0x800;
        else if ((c & 0xF8) == 0xF0)
            len = 4, min = 0x10000;
        bool valid = len != 0 && i + len <= n;
        std::uint32_t cp = len ? (c & (0xFF >> (len + 1))) : 0;
        for (std::size_t k = 1; valid && k < len; ++k) {
            if ((s[i + k] & 0xC0) != 0x80)
                valid = false;
            else
                cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (valid && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) valid = false;
        if (valid) {
            out.append(bytes.substr(i, len));
            i += len;
        } else {
            out.append("\xEF\xBF\xBD");
            ++i;
        }
    }
    return out;
}

std::size_t utf8_complete_prefix(std::string_view bytes) {
    const std::size_t size = bytes.size();
    for (std::size_t back = 1; back <= 4 && back <= size; ++back) {
        const auto byte = static_cast<unsigned char>(bytes[size - back]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: its lead byte is further back
        const std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
        return length > back ? size - back : size;
    }
    return size;
}

std::int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_iso8601(std::int64_t epoch_ms) {
    if (epoch_ms == 0) return {};
    std::time_t seconds = epoch_ms / 1000;
    std::tm tm{};
    ::gmtime_r(&seconds, &tm);
    char buffer[40];
    std::size_t len = std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buffer + len, sizeof buffer - len, ".%03dZ", int(epoch_ms % 1000));
    return buffer;
}

double parse_duration_seconds(std::string_view text) {
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || value < 0 || !std::isfinite(value))
        throw std::invalid_argument("invalid duration '" + std::string(text) + "'");
    std::string_view unit(end, text.data() + text.size() - end);
    double seconds = 0;
    if (unit.empty() || unit == "s")
        seconds = value;
    else if (unit == "ms")
        seconds = value / 1000;
    else if (unit == "m")
        seconds = value * 60;
    else if (unit == "h")
        seconds = value * 3600;
    else if (unit == "d")
        seconds = value * 86400;
    else
        throw std::invalid_argument("invalid duration unit in '" + std::string(text) +
                                    "' (use s, m, h or d)");
    if (seconds > max_duration_seconds)
        throw std::invalid_argument("duration '" + std::string(text) +
                                    "' is too long (at most 100 years)");
    return seconds;
}

std::string format_duration(std::int64_t ms) {
    std::int64_t s = ms / 1000;
    char buffer[48];
    if (s >= 3600)
        std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", (long long)(s / 3600),
                      (long long)(s % 3600 / 60));
    else if (s >= 60)
        std::snprintf(buffer, sizeof buffer, "%lldm%02llds", (long long)(s / 60),
                      (long long)(s % 60));
    else
        std::snprintf(buffer, sizeof buffer, "%llds", (long long)s);
    return buffer;
}

namespace {

// Reads exactly `count` decimal digits at `pos` (advancing it); -1 when they are not there.
int read_digits(std::string_view text, std::size_t& pos, std::size_t count) {
    if (pos + count > text.size()) return -1;
    int value = 0;
    for (std::size_t i = 0; i < count; ++i) {
        char c = text[pos + i];
        if (c < '0' || c > '9') return -1;
        value = value * 10 + (c - '0');
    }
    pos += count;
    return value;
}

// Consumes `c` at `pos` if it is there.
bool skip(std::string_view text, std::size_t& pos, char c) {
    if (pos >= text.size() || text[pos] != c) return false;
    ++pos;
    return true;
}

}  // namespace

std::int64_t parse_iso8601(std::string_view text) {
    const auto invalid = [&] {
        return std::invalid_argument("invalid time '" + std::string(text) +
                                     "' (expected ISO 8601, e.g. 2026-11-22T08:30:00Z)");
    };
    std::size_t pos = 0;
    const int year = read_digits(text, pos, 4);
    const bool dash1 = skip(text, pos, '-');
    const int month = read_digits(text, pos, 2);
    const bool dash2 = skip(text, pos, '-');
    const int day = read_digits(text, pos, 2);
    if (year < 0 || !dash1 || month < 0 || !dash2 || day < 0) throw invalid();
    int hour = 0, minute = 0, second = 0, millis = 0;
    if (skip(text, pos, 'T') || skip(text, pos, 't') || skip(text, pos, ' ')) {
        hour = read_digits(text, pos, 2);
        if (!skip(text, pos, ':')) throw invalid();
        minute = read_digits(text, pos, 2);
        if (skip(text, pos, ':')) {
            second = read_digits(text, pos, 2);
            if (skip(text, pos, '.') || skip(text, pos, ',')) {
                // A fraction of any length; milliseconds are kept.
                std::size_t digits = 0;
                for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++digits)
                    if (digits < 3) millis = millis * 10 + (text[pos] - '0');
                if (digits == 0) throw invalid();
                for (; digits < 3; ++digits) millis *= 10;
            }
        }
        if (hour < 0 || minute < 0 || second < 0) throw invalid();
    }
    bool has_zone = false;
    int offset_minutes = 0;
    if (skip(text, pos, 'Z') || skip(text, pos, 'z')) {
        has_zone = true;
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        const int sign = text[pos++] == '-' ? -1 : 1;
        const int zone_hours = read_digits(text, pos, 2);
        int zone_minutes = 0;
        if (pos < text.size()) {
            skip(text, pos, ':');
            zone_minutes = read_digits(text, pos, 2);
        }
        if (zone_hours < 0 || zone_hours > 23 || zone_minutes < 0 || zone_minutes > 59)
            throw invalid();
        has_zone = true;
        offset_minutes = sign * (zone_hours * 60 + zone_minutes);
    }
    if (pos != text.size() || hour > 23 || minute > 59 || second > 59) throw invalid();
    using namespace std::chrono;
    const year_month_day date{std::chrono::year{year}, std::chrono::month{unsigned(month)},
                              std::chrono::day{unsigned(day)}};
    if (!date.ok()) throw invalid();
    std::int64_t seconds = 0;
    if (has_zone) {
        seconds = std::int64_t(sys_days(date).time_since_epoch().count()) * 86400 + hour * 3600 +
                  minute * 60 + second - offset_minutes * 60;
    } else {
        std::tm tm{};
        tm.tm_year = year - 1900;
        tm.tm_mon = month - 1;
        tm.tm_mday = day;
        tm.tm_hour = hour;
        tm.tm_min = minute;
        tm.tm_sec = second;
        tm.tm_isdst = -1;  // the local rules say whether summer time applies
        const std::time_t local = std::mktime(&tm);
        if (local == std::time_t(-1)) throw invalid();
        seconds = std::int64_t(local);
    }
    return seconds * 1000 + millis;
}

std::int64_t parse_iso8601_or_zero(std::string_view text) {
    if (text.empty()) return 0;
    try {
        return parse_iso8601(text);
    } catch (const std::invalid_argument&) {
        return 0;
    }
}

std::int64_t parse_time_or_age(std::string_view text, std::int64_t now_ms) {
    try {
        return now_ms - std::int64_t(parse_duration_seconds(text) * 1000);
    } catch (const std::invalid_argument&) {
    }
    try {
        return parse_iso8601(text);
    } catch (const std::invalid_argument&) {
    }
    throw std::invalid_argument("invalid time '" + std::string(text) +
                                "': give an age (30m, 8h, 2d) or an ISO 8601 time "
                                "(2026-11-22T08:00, 2026-11-22T08:00:00Z)");
}

}  // namespace ralph::text
