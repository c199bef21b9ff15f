#include "daemon/loop/completion.hpp"

#include "common/text.hpp"

#include <string>

namespace ralph {
namespace {

// Lower-cased `text` with whitespace runs collapsed to one space and trimmed.
std::string normalized(std::string_view text) {
    std::string out;
    bool pending_space = false;
    for (char c : text) {
        if (text::is_space(c)) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out.push_back(' ');
        pending_space = false;
        out.push_back(text::ascii_lower(c));
    }
    return out;
}

bool tag_at(std::string_view text, std::size_t pos, std::string_view tag) {
    if (pos + tag.size() > text.size()) return false;
    for (std::size_t k = 0; k < tag.size(); ++k)
        if (text::ascii_lower(text[pos + k]) != tag[k]) return false;
    return true;
}

}  // namespace

bool contains_promise(std::string_view text, std::string_view phrase) {
    constexpr std::string_view open = "<promise>";
    constexpr std::string_view close = "</promise>";
    const std::string wanted = normalized(phrase);
    // One forward pass: each position is compared with the two fixed tags, and each candidate
    // body (between the latest open tag and the next close tag) is normalized once, the bodies
    // being disjoint: linear time.
    std::size_t body = std::string_view::npos;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '<') continue;
        if (tag_at(text, i, open)) {
            body = i + open.size();
        } else if (body != std::string_view::npos && tag_at(text, i, close)) {
            if (normalized(text.substr(body, i - body)) == wanted) return true;
            body = std::string_view::npos;
        }
    }
    return false;
}

}  // namespace ralph
