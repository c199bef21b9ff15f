#include "daemon/agents/config_text.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace ralph::config_text {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

void add_unique(std::vector<std::string>& names, std::string_view name) {
    if (!is_variable_name(name)) return;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
}

void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
        out += char(code);
    } else if (code < 0x800) {
        out += char(0xC0 | (code >> 6));
        out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += char(0xE0 | (code >> 12));
        out += char(0x80 | ((code >> 6) & 0x3F));
        out += char(0x80 | (code & 0x3F));
    } else {
        out += char(0xF0 | (code >> 18));
        out += char(0x80 | ((code >> 12) & 0x3F));
        out += char(0x80 | ((code >> 6) & 0x3F));
        out += char(0x80 | (code & 0x3F));
    }
}

// A recursive-descent reader of the TOML a config file uses. Each read_* returns false on
// something it cannot read; the document reader then stops.
class toml_reader {
  public:
    explicit toml_reader(std::string_view text) : text_(text) {}

    std::vector<toml_string> read() {
        std::vector<std::string> table;
        while (skip_blank_lines()) {
            const bool ok = peek() == '[' ? read_header(table) : read_keyval(table, 0);
            if (!ok || !end_of_line()) break;
        }
        return std::move(strings_);
    }

  private:
    // Deeper arrays and inline tables than any configuration has: the reader stops there.
    static constexpr int max_depth = 32;

    bool at_end() const { return pos_ >= text_.size(); }
    char peek(std::size_t ahead = 0) const {
        return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
    }
    bool starts_with(std::string_view s) const { return text_.substr(pos_).starts_with(s); }

    void skip_spaces() {
        while (peek() == ' ' || peek() == '\t') ++pos_;
    }
    void skip_comment() {
        if (peek() == '#')
            while (!at_end() && peek() != '\n') ++pos_;
    }
    // Spaces, comments and line breaks; false at the end of the text.
    bool skip_blank_lines() {
        while (true) {
            skip_spaces();
            skip_comment();
            if (at_end()) return false;
            if (peek() != '\n' && peek() != '\r') return true;
            ++pos_;
        }
    }
    // What may follow a header or a key/value: spaces, a comment, the end of the line.
    bool end_of_line() {
        skip_spaces();
        skip_comment();
        if (peek() == '\r') ++pos_;
        if (at_end()) return true;
        if (peek() != '\n') return false;
        ++pos_;
        return true;
    }

    bool read_header(std::vector<std::string>& table) {
        ++pos_;
        const bool array_of_tables = peek() == '[';
        if (array_of_tables) ++pos_;
        std::vector<std::string> key;
        if (!read_key(key)) return false;
        skip_spaces();
        if (peek() != ']') return false;
        ++pos_;
        if (array_of_tables) {
            if (peek() != ']') return false;
            ++pos_;
        }
        table = std::move(key);
        return true;
    }

    bool read_key(std::vector<std::string>& key) {
        while (true) {
            skip_spaces();
            std::string part;
            if (!read_simple_key(part)) return false;
            key.push_back(std::move(part));
            skip_spaces();
            if (peek() != '.') return true;
            ++pos_;
        }
    }

    bool read_simple_key(std::string& out) {
        if (peek() == '"') return read_basic_string(out);
        if (peek() == '\'') return read_literal_string(out);
        const std::size_t start = pos_;
        while (is_word(peek()) || peek() == '-') ++pos_;
        out.assign(text_.substr(start, pos_ - start));
        return pos_ > start;
    }

    bool read_keyval(const std::vector<std::string>& table, int depth) {
        std::vector<std::string> path = table;
        if (!read_key(path)) return false;
        skip_spaces();
        if (peek() != '=') return false;
        ++pos_;
        skip_spaces();
        return read_value(path, depth);
    }

    bool read_value(const std::vector<std::string>& path, int depth) {
        if (depth > max_depth) return false;
        const char c = peek();
        if (c == '"' || c == '\'') {
            std::string value;
            if (!read_string(value)) return false;
            strings_.push_back({path, std::move(value)});
            return true;
        }
        if (c == '[') return read_items(']', [&] { return read_value(path, depth + 1); });
        if (c == '{') return read_items('}', [&] { return read_keyval(path, depth + 1); });
        // A number, boolean or date: up to what ends a value.
        const std::size_t start = pos_;
        while (!at_end() && std::string_view(",]}#\r\n").find(peek()) == std::string_view::npos)
            ++pos_;
        return pos_ > start;
    }

    // [value, …] or {key = value, …}: items between commas, a trailing comma allowed, spread
    // over lines (leniently, for an inline table).
    template <typename ReadItem>
    bool read_items(char close, ReadItem read_item) {
        ++pos_;
        while (true) {
            if (!skip_blank_lines()) return false;
            if (peek() == close) break;
            if (!read_item() || !skip_blank_lines()) return false;
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != close) return false;
            break;
        }
        ++pos_;
        return true;
    }

    bool read_string(std::string& out) {
        if (starts_with("\"\"\"")) return read_multiline(out, '"');
        if (starts_with("'''")) return read_multiline(out, '\'');
        return peek() == '"' ? read_basic_string(out) : read_literal_string(out);
    }

    bool read_literal_string(std::string& out) {
        ++pos_;
        const std::size_t end = text_.find_first_of("'\n", pos_);
        if (end == std::string_view::npos || text_[end] != '\'') return false;
        out.assign(text_.substr(pos_, end - pos_));
        pos_ = end + 1;
        return true;
    }

    bool read_basic_string(std::string& out) {
        ++pos_;
        while (true) {
            if (at_end() || peek() == '\n') return false;
            const char c = text_[pos_++];
            if (c == '"') return true;
            if (c != '\\') {
                out += c;
            } else if (!read_escape(out)) {
                return false;
            }
        }
    }

    // """…""" or '''…''': a line break right after the opening is dropped; in a basic one, a
    // backslash at the end of a line drops the line break and the blanks after it. Up to two
    // more quotes before the closing three belong to the string.
    bool read_multiline(std::string& out, char quote) {
        pos_ += 3;
        if (peek() == '\r' && peek(1) == '\n')
            pos_ += 2;
        else if (peek() == '\n')
            ++pos_;
        const std::string closing(3, quote);
        while (true) {
            if (at_end()) return false;
            if (starts_with(closing)) {
                std::size_t extra = 0;
                while (extra < 2 && peek(3 + extra) == quote) ++extra;
                out.append(extra, quote);
                pos_ += 3 + extra;
                return true;
            }
            const char c = text_[pos_++];
            if (quote == '\'' || c != '\\') {
                out += c;
                continue;
            }
            std::size_t after = pos_;
            while (after < text_.size() && (text_[after] == ' ' || text_[after] == '\t')) ++after;
            if (after < text_.size() && (text_[after] == '\n' || text_[after] == '\r')) {
                pos_ = after;
                while (!at_end() &&
                       std::string_view(" \t\r\n").find(peek()) != std::string_view::npos)
                    ++pos_;
                continue;
            }
            if (!read_escape(out)) return false;
        }
    }

    // After a backslash.
    bool read_escape(std::string& out) {
        if (at_end()) return false;
        const char c = text_[pos_++];
        if (c == 'u') return read_code_point(out, 4);
        if (c == 'U') return read_code_point(out, 8);
        static constexpr std::string_view escaped = "btnfre\"\\";
        static constexpr std::string_view meant = "\b\t\n\f\r\x1b\"\\";
        const auto at = escaped.find(c);
        if (at == std::string_view::npos) return false;
        out += meant[at];
        return true;
    }

    bool read_code_point(std::string& out, std::size_t digits) {
        std::uint32_t code = 0;
        for (std::size_t i = 0; i < digits; ++i) {
            const char c = peek();
            int value = -1;
            if (is_digit(c))
                value = c - '0';
            else if (c >= 'a' && c <= 'f')
                value = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F')
                value = c - 'A' + 10;
            if (value < 0) return false;
            code = code * 16 + std::uint32_t(value);
            ++pos_;
        }
        if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
        append_utf8(out, code);
        return true;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    std::vector<toml_string> strings_;
};

// `text` without a trailing comment (" #…") and surrounding blanks.
std::string_view trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r");
    return text.substr(first, last - first + 1);
}

// Calls `on_line` with each line of `text`.
template <typename OnLine>
void for_each_line(std::string_view text, OnLine on_line) {
    while (!text.empty()) {
        const auto newline = text.find('\n');
        on_line(text.substr(0, newline));
        if (newline == std::string_view::npos) break;
        text.remove_prefix(newline + 1);
    }
}

}  // namespace

bool is_variable_name(std::string_view name) {
    if (name.empty() || is_digit(name.front())) return false;
    return std::all_of(name.begin(), name.end(), is_word);
}

std::vector<toml_string> toml_strings(std::string_view text) { return toml_reader(text).read(); }

std::vector<std::string> opencode_references(std::string_view text) {
    // opencode's own pattern, /\{env:([^}]+)\}/g.
    std::vector<std::string> names;
    for (auto at = text.find("{env:"); at != std::string_view::npos; at = text.find("{env:", at)) {
        at += 5;
        const auto end = text.find('}', at);
        if (end == std::string_view::npos) break;
        add_unique(names, text.substr(at, end - at));
        at = end + 1;
    }
    return names;
}

std::vector<std::string> dollar_references(std::string_view text) {
    std::vector<std::string> names;
    for (auto at = text.find('$'); at != std::string_view::npos; at = text.find('$', at)) {
        ++at;
        if (at < text.size() && text[at] == '{') {
            const auto end = text.find('}', at);
            if (end == std::string_view::npos) break;
            std::string_view inside = text.substr(at + 1, end - at - 1);
            // ${NAME:-default}, ${NAME-default}, ${NAME:=x}...: the name is the word first.
            std::size_t word = 0;
            while (word < inside.size() && is_word(inside[word])) ++word;
            if (word == inside.size() ||
                std::string_view(":-=?+").find(inside[word]) != std::string_view::npos)
                add_unique(names, inside.substr(0, word));
            at = end + 1;
        } else {
            std::size_t end = at;
            while (end < text.size() && is_word(text[end])) ++end;
            add_unique(names, text.substr(at, end - at));
            at = end;
        }
    }
    return names;
}

dotenv_file read_dotenv(std::string_view text) {
    dotenv_file file;
    for_each_line(text, [&file](std::string_view line) {
        line = trimmed(line);
        if (line.empty() || line.front() == '#') return;
        if (line.starts_with("export ")) line = trimmed(line.substr(7));
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) return;
        const std::string_view key = trimmed(line.substr(0, eq));
        const std::string_view value = trimmed(line.substr(eq + 1));
        // python-dotenv expands ${NAME} (its only form) except in single quotes.
        if (!value.starts_with('\'')) {
            for (auto at = value.find("${"); at != std::string_view::npos;
                 at = value.find("${", at + 2)) {
                std::size_t end = at + 2;
                while (end < value.size() && is_word(value[end])) ++end;
                const std::string name(value.substr(at + 2, end - at - 2));
                if (std::find(file.defined.begin(), file.defined.end(), name) == file.defined.end())
                    add_unique(file.referenced, name);
            }
        }
        add_unique(file.defined, key);
    });
    return file;
}

std::string yaml_top_level_value(std::string_view text, std::string_view key) {
    std::string found;
    for_each_line(text, [&](std::string_view line) {
        if (!line.starts_with(key)) return;  // top level: no indentation
        std::string_view rest = line.substr(key.size());
        const auto colon = rest.find_first_not_of(" \t");
        if (colon == std::string_view::npos || rest[colon] != ':') return;
        rest = rest.substr(colon + 1);
        if (!rest.empty() && rest.front() != ' ' && rest.front() != '\t' && rest.front() != '\r')
            return;  // "model:x" is not the key "model"
        std::string_view value = trimmed(rest);
        if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
            const auto close = value.find(value.front(), 1);
            if (close == std::string_view::npos) return;
            found.assign(value.substr(1, close - 1));
            return;
        }
        // A comment begins with " #".
        if (const auto comment = value.find(" #"); comment != std::string_view::npos)
            value = trimmed(value.substr(0, comment));
        if (value.starts_with('#') || value.starts_with('[') || value.starts_with('{') ||
            value.starts_with('|') || value.starts_with('>'))
            value = {};
        found.assign(value);
    });
    return found;
}

}  // namespace ralph::config_text
