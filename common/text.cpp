#include "common/text.hpp"

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>

namespace ralph::text {

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
                if (d == '"') { closed = true; ++i; break; }
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
}

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        std::uint32_t v = (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8) |
                          std::uint8_t(bytes[i + 2]);
        out.push_back(base64_alphabet[(v >> 18) & 63]);
        out.push_back(base64_alphabet[(v >> 12) & 63]);
        out.push_back(base64_alphabet[(v >> 6) & 63]);
        out.push_back(base64_alphabet[v & 63]);
    }
    std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t v = std::uint8_t(bytes[i]) << 16;
        if (rest == 2) v |= std::uint8_t(bytes[i + 1]) << 8;
        out.push_back(base64_alphabet[(v >> 18) & 63]);
        out.push_back(base64_alphabet[(v >> 12) & 63]);
        out.push_back(rest == 2 ? base64_alphabet[(v >> 6) & 63] : '=');
        out.push_back('=');
    }
    return out;
}

// Value of each base64 character, -1 for bytes outside the alphabet.
constexpr std::array<int, 256> base64_values = [] {
    std::array<int, 256> values{};
    values.fill(-1);
    for (int k = 0; k < 64; ++k) values[std::uint8_t(base64_alphabet[k])] = k;
    return values;
}();

std::string base64_decode(std::string_view text) {
    const auto& value = base64_values;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : text) {
        if (c == '=') break;
        int v = value[std::uint8_t(c)];
        if (v < 0) throw std::invalid_argument("invalid base64 character");
        acc = (acc << 6) | std::uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(char((acc >> bits) & 0xFF));
        }
    }
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
        if (c < 0x80) { out.push_back(char(c)); ++i; continue; }
        if ((c & 0xE0) == 0xC0) len = 2, min = 0x80;
        else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800;
        else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000;
        bool valid = len != 0 && i + len <= n;
        std::uint32_t cp = len ? (c & (0xFF >> (len + 1))) : 0;
        for (std::size_t k = 1; valid && k < len; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) valid = false;
            else cp = (cp << 6) | (s[i + k] & 0x3F);
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
    if (unit.empty() || unit == "s") return value;
    if (unit == "ms") return value / 1000;
    if (unit == "m") return value * 60;
    if (unit == "h") return value * 3600;
    if (unit == "d") return value * 86400;
    throw std::invalid_argument("invalid duration unit in '" + std::string(text) +
                                "' (use s, m, h or d)");
}

std::string format_duration(std::int64_t ms) {
    std::int64_t s = ms / 1000;
    char buffer[48];
    if (s >= 3600)
        std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60)
        std::snprintf(buffer, sizeof buffer, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else
        std::snprintf(buffer, sizeof buffer, "%llds", (long long)s);
    return buffer;
}

}  // namespace ralph::text
