// The terminal of a full-screen view (see terminal.hpp).
#include "client/terminal.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

namespace ralph::client::terminal {
namespace {

constexpr std::string_view reset = "\x1b[0m";

// The length of the CSI sequence (ESC [ parameters, a final byte 0x40..0x7e) at text[i], or 0.
std::size_t csi_length(std::string_view text, std::size_t i) {
    if (i + 1 >= text.size() || text[i] != '\x1b' || text[i + 1] != '[') return 0;
    std::size_t end = i + 2;
    while (end < text.size() && (text[end] < 0x40 || text[end] > 0x7e)) ++end;
    return end < text.size() ? end + 1 - i : 0;
}

}  // namespace

size window_size() {
    winsize window{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &window) != 0 || window.ws_row == 0 ||
        window.ws_col == 0)
        return {};
    return {window.ws_row, window.ws_col};
}

void write_all(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
        if (n <= 0) return;
        bytes.remove_prefix(std::size_t(n));
    }
}

raw_mode::raw_mode() {
    ::tcgetattr(STDIN_FILENO, &saved_);
    termios raw = saved_;
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN);
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    write_all("\x1b[?1049h\x1b[?25l");
}

raw_mode::~raw_mode() {
    write_all("\x1b[?25h\x1b[?1049l");
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
}

std::vector<key> decode_keys(std::string_view bytes) {
    std::vector<key> keys;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (const std::size_t csi = csi_length(bytes, i); csi > 0) {
            // ESC [ A..D: the arrows; other sequences (function keys…) are not keys of ours.
            if (csi == 3 && bytes[i + 2] >= 'A' && bytes[i + 2] <= 'D') {
                constexpr key::kind arrows[] = {key::kind::up, key::kind::down, key::kind::right,
                                                key::kind::left};
                keys.push_back({arrows[bytes[i + 2] - 'A'], 0});
            }
            i += csi - 1;
            continue;
        }
        keys.push_back({key::kind::character, bytes[i]});
    }
    return keys;
}

std::optional<std::vector<key>> read_keys(std::chrono::milliseconds timeout) {
    pollfd input{STDIN_FILENO, POLLIN, 0};
    if (::poll(&input, 1, int(std::max<std::int64_t>(timeout.count(), 0))) <= 0)
        return std::vector<key>();
    char bytes[64];
    const ssize_t n = ::read(STDIN_FILENO, bytes, sizeof bytes);
    if (n <= 0) return std::nullopt;
    return decode_keys(std::string_view(bytes, std::size_t(n)));
}

std::string_view clip(std::string_view text, std::size_t width) {
    std::size_t columns = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (const std::size_t csi = csi_length(text, i); csi > 0) {
            i += csi - 1;
            continue;
        }
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (columns == width) return text.substr(0, i);
        ++columns;
    }
    return text;
}

std::string draw(const std::vector<line>& body, const std::vector<line>& footer, size screen) {
    auto append_line = [&screen](std::string& out, const line& l, bool dim) {
        std::string attributes;
        if (l.highlighted) attributes += "\x1b[7m";
        if (l.bold) attributes += "\x1b[1m";
        if (dim) attributes += "\x1b[2m";
        out += attributes;
        std::string_view text = clip(l.text, screen.columns);
        // A colour's end resets every attribute: the line's own are set again after it.
        for (std::size_t at; !attributes.empty() && (at = text.find(reset)) != text.npos;) {
            out.append(text.substr(0, at + reset.size())).append(attributes);
            text.remove_prefix(at + reset.size());
        }
        out.append(text);
        if (!attributes.empty() || l.text.find('\x1b') != std::string::npos) out += reset;
        out += "\x1b[K";
    };
    std::string out = "\x1b[H";
    const std::size_t room = screen.rows > footer.size() ? screen.rows - footer.size() : 0;
    for (std::size_t i = 0; i < body.size() && i < room; ++i) {
        append_line(out, body[i], false);
        out += "\r\n";
    }
    out += "\x1b[J";
    for (std::size_t i = 0; i < footer.size() && room + i < screen.rows; ++i) {
        out += fmt::format("\x1b[{};1H", room + i + 1);
        append_line(out, footer[i], i > 0);
    }
    return out;
}

}  // namespace ralph::client::terminal
