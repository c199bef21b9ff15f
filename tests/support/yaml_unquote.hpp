// Test support: a YAML double-quoted scalar read back, for the escapes yaml_quote
// (daemon/loop/loop_memory) may write: \\ \" \0 \t \n \r \xXX \uXXXX. nullopt for anything
// else: a missing or unescaped quote, a raw control character or line break, another escape.
// Shared by tests/unit/loop_memory_test.cpp and tests/fuzz/fuzz_tags.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ralph::test {

namespace detail {

inline int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Code points up to U+FFFF, all that \x and \u can give.
inline void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(char(cp));
    } else if (cp < 0x800) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    }
}

}  // namespace detail

inline std::optional<std::string> yaml_unquote(std::string_view quoted) {
    if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') return std::nullopt;
    const std::string_view s = quoted.substr(1, quoted.size() - 2);
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c < 0x20 || c == 0x7F) return std::nullopt;
        if (c != '\\') {
            out.push_back(char(c));
            continue;
        }
        if (++i == s.size()) return std::nullopt;
        const char escape = s[i];
        const std::size_t digits = escape == 'x' ? 2 : escape == 'u' ? 4 : 0;
        if (digits > 0) {
            if (s.size() - i - 1 < digits) return std::nullopt;
            std::uint32_t cp = 0;
            for (std::size_t k = 1; k <= digits; ++k) {
                const int value = detail::hex_value(s[i + k]);
                if (value < 0) return std::nullopt;
                cp = cp * 16 + std::uint32_t(value);
            }
            detail::append_utf8(out, cp);
            i += digits;
            continue;
        }
        switch (escape) {
            case '\\':
            case '"':
                out.push_back(escape);
                break;
            case '0':
                out.push_back('\0');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'n':
                out.push_back('\n');
                break;
            case 'r':
                out.push_back('\r');
                break;
            default:
                return std::nullopt;
        }
    }
    return out;
}

}  // namespace ralph::test
