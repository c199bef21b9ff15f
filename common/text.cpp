#include "common/text.hpp"

#include <unistd.h>
#include <array>
#include <charconv>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <optional>

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

std::string ascii_lower(std::string_view text) {
    std::string lowered(text);
    for (char& c : lowered) c = ascii_lower(c);
    return lowered;
}

std::string_view parameter_value(std::string_view list, std::string_view name, char separator) {
    while (!list.empty()) {
        std::string_view pair = list.substr(0, list.find(separator));
        list.remove_prefix(std::min(list.size(), pair.size() + 1));
        while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
        if (pair.size() > name.size() && pair.substr(0, name.size()) == name &&
            pair[name.size()] == '=')
            return pair.substr(name.size() + 1);
    }
    return {};
}

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
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

std::string shell_quote(std::string_view word) {
    if (!word.empty() &&
        word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789-_./:@%+=,") == std::string_view::npos)
        return std::string(word);
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string_view("'\\''") : std::string_view(&c, 1);
    return quoted + "'";
}

std::string_view trim_start(std::string_view text, std::string_view chars) {
    const auto first = text.find_first_not_of(chars);
    return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

std::string_view trim_end(std::string_view text, std::string_view chars) {
    const auto last = text.find_last_not_of(chars);
    return last == std::string_view::npos ? std::string_view() : text.substr(0, last + 1);
}

std::string_view trim(std::string_view text, std::string_view chars) {
    return trim_end(trim_start(text, chars), chars);
}

std::string_view first_line(std::string_view text) {
    const std::string_view rest = trim_start(text);
    return rest.substr(0, rest.find_first_of("\r\n"));
}

std::string first_line_within(std::string_view text, std::size_t limit) {
    const std::string_view line = first_line(text);
    if (line.size() <= limit) return std::string(line);
    return std::string(utf8_head(line, limit)) + "…";
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

std::string_view utf8_head(std::string_view bytes, std::size_t limit) {
    if (bytes.size() <= limit) return bytes;
    bytes = bytes.substr(0, limit);
    return bytes.substr(0, utf8_complete_prefix(bytes));
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

namespace {

// Seconds per unit word (ASCII case ignored), 0 for a word that is not a unit.
double unit_seconds(std::string_view unit) {
    struct unit_name {
        std::string_view name;
        double seconds;
    };
    // clang-format off
    static constexpr unit_name units[] = {
        {"ms", 0.001}, {"millisecond", 0.001}, {"milliseconds", 0.001},
        {"s", 1}, {"sec", 1}, {"secs", 1}, {"second", 1}, {"seconds", 1},
        {"m", 60}, {"min", 60}, {"mins", 60}, {"minute", 60}, {"minutes", 60},
        {"h", 3600}, {"hr", 3600}, {"hrs", 3600}, {"hour", 3600}, {"hours", 3600},
        {"d", 86400}, {"day", 86400}, {"days", 86400},
    };
    // clang-format on
    std::string lowered(unit);
    for (char& c : lowered) c = ascii_lower(c);
    for (const auto& u : units)
        if (u.name == lowered) return u.seconds;
    return 0;
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::optional<double> scan_duration(std::string_view text, std::size_t& pos) {
    double total = 0;
    bool any = false;
    while (pos < text.size() && is_digit(text[pos])) {
        double value = 0;
        // Digits and a fraction, no sign or exponent; a number too large for a double is inf.
        auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), value,
                                         std::chars_format::fixed);
        if (ec == std::errc::result_out_of_range) value = HUGE_VAL;
        pos = std::size_t(end - text.data());
        std::size_t unit_start = pos;
        while (unit_start < text.size() && text[unit_start] == ' ') ++unit_start;
        std::size_t unit_end = unit_start;
        while (unit_end < text.size() && is_letter(text[unit_end])) ++unit_end;
        const double seconds = unit_seconds(text.substr(unit_start, unit_end - unit_start));
        total += value * (seconds > 0 ? seconds : 1);
        any = true;
        if (seconds == 0) break;  // a bare number or an unknown word ends the duration
        pos = unit_end;
    }
    if (!any) return std::nullopt;
    return total;
}

double parse_duration_seconds(std::string_view text) {
    std::size_t pos = 0;
    const std::optional<double> seconds = scan_duration(text, pos);
    if (!seconds || pos != text.size())
        throw std::invalid_argument("invalid duration '" + std::string(text) +
                                    "' (e.g. 90, 90s, 15m, 2h30m, 1d)");
    if (!(*seconds <= max_duration_seconds))
        throw std::invalid_argument("duration '" + std::string(text) +
                                    "' is too long (at most 100 years)");
    return *seconds;
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

// Consumes `c` (either case for a letter) at `pos` if it is there.
bool skip(std::string_view text, std::size_t& pos, char c) {
    if (pos >= text.size() || ascii_lower(text[pos]) != ascii_lower(c)) return false;
    ++pos;
    return true;
}

}  // namespace

std::optional<iso8601_time> scan_iso8601(std::string_view text, std::size_t& pos) {
    std::size_t at = pos;
    iso8601_time t;
    t.year = read_digits(text, at, 4);
    const bool dash1 = skip(text, at, '-');
    t.month = read_digits(text, at, 2);
    const bool dash2 = skip(text, at, '-');
    t.day = read_digits(text, at, 2);
    if (t.year < 0 || !dash1 || t.month < 0 || !dash2 || t.day < 0) return std::nullopt;
    std::size_t time_at = at;
    if (skip(text, time_at, 'T') || skip(text, time_at, ' ')) {
        const int hour = read_digits(text, time_at, 2);
        const bool colon = skip(text, time_at, ':');
        const int minute = read_digits(text, time_at, 2);
        if (hour >= 0 && colon && minute >= 0) {  // else the date stands alone
            at = time_at;
            t.has_time = true;
            t.hour = hour;
            t.minute = minute;
            if (skip(text, at, ':')) {
                t.second = read_digits(text, at, 2);
                if (t.second < 0) return std::nullopt;
                if (skip(text, at, '.') || skip(text, at, ',')) {
                    // A fraction of any length; milliseconds are kept.
                    std::size_t digits = 0;
                    for (; at < text.size() && is_digit(text[at]); ++at, ++digits)
                        if (digits < 3) t.millis = t.millis * 10 + (text[at] - '0');
                    if (digits == 0) return std::nullopt;
                    for (; digits < 3; ++digits) t.millis *= 10;
                }
            }
        }
    }
    if (skip(text, at, 'Z')) {
        t.offset_minutes = 0;
    } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
        const int sign = text[at++] == '-' ? -1 : 1;
        const int zone_hours = read_digits(text, at, 2);
        int zone_minutes = 0;
        std::size_t minutes_at = at;
        skip(text, minutes_at, ':');
        if (const int m = read_digits(text, minutes_at, 2); m >= 0) {
            zone_minutes = m;
            at = minutes_at;
        }
        if (zone_hours < 0 || zone_hours > 23 || zone_minutes > 59) return std::nullopt;
        t.offset_minutes = sign * (zone_hours * 60 + zone_minutes);
    }
    using namespace std::chrono;
    const year_month_day date{std::chrono::year{t.year}, std::chrono::month{unsigned(t.month)},
                              std::chrono::day{unsigned(t.day)}};
    if (!date.ok() || t.hour > 23 || t.minute > 59 || t.second > 59) return std::nullopt;
    pos = at;
    return t;
}

std::optional<std::int64_t> iso8601_epoch_ms(const iso8601_time& t, bool no_zone_is_local) {
    using namespace std::chrono;
    std::int64_t seconds = 0;
    if (t.offset_minutes || !no_zone_is_local) {
        const year_month_day date{std::chrono::year{t.year}, std::chrono::month{unsigned(t.month)},
                                  std::chrono::day{unsigned(t.day)}};
        seconds = std::int64_t(sys_days(date).time_since_epoch().count()) * 86400 + t.hour * 3600 +
                  t.minute * 60 + t.second - t.offset_minutes.value_or(0) * 60;
    } else {
        std::tm tm{};
        tm.tm_year = t.year - 1900;
        tm.tm_mon = t.month - 1;
        tm.tm_mday = t.day;
        tm.tm_hour = t.hour;
        tm.tm_min = t.minute;
        tm.tm_sec = t.second;
        tm.tm_isdst = -1;  // the local rules say whether summer time applies
        const std::time_t local = std::mktime(&tm);
        if (local == std::time_t(-1)) return std::nullopt;
        seconds = std::int64_t(local);
    }
    return seconds * 1000 + t.millis;
}

std::int64_t parse_iso8601(std::string_view text) {
    std::size_t pos = 0;
    const std::optional<iso8601_time> t = scan_iso8601(text, pos);
    const std::optional<std::int64_t> ms =
        t && pos == text.size() ? iso8601_epoch_ms(*t, true) : std::nullopt;
    if (!ms)
        throw std::invalid_argument("invalid time '" + std::string(text) +
                                    "' (expected ISO 8601, e.g. 2026-11-22T08:30:00Z)");
    return *ms;
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
