// The terminal of a full-screen view (`ralphctl top`): raw mode on the alternate screen, its
// size, the keys pressed, and a frame of lines drawn over the previous one. Nothing here knows
// what is shown.
#pragma once

#include <termios.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::client::terminal {

struct size {
    std::size_t rows = 24;
    std::size_t columns = 80;
};

// stdout's window; 24 x 80 when it is not a terminal.
size window_size();

// Writes all of `bytes` to stdout, unbuffered (a frame goes out whole, or the terminal is gone).
void write_all(std::string_view bytes);

// The terminal in raw mode (no echo, no line editing, no signals: Ctrl-C arrives as a key) on the
// alternate screen with the cursor hidden, for as long as the object lives; both are given back
// however it ends.
class raw_mode {
  public:
    raw_mode();
    ~raw_mode();
    raw_mode(const raw_mode&) = delete;
    raw_mode& operator=(const raw_mode&) = delete;

  private:
    termios saved_{};
};

// A key pressed: a character, or an arrow.
struct key {
    enum class kind { character, up, down, left, right } what = kind::character;
    char character = 0;  // kind::character: the byte (Ctrl-C is 0x03)
};

// The keys of what stdin gave at once; an escape sequence other than an arrow is skipped.
std::vector<key> decode_keys(std::string_view bytes);

// The keys pressed within `timeout`: none when it passed without one; nullopt when the terminal
// went away.
std::optional<std::vector<key>> read_keys(std::chrono::milliseconds timeout);

// The first `width` columns of `text` (code points, as display_width counts them); its colour
// escape sequences (CSI … m) take no column and are kept.
std::string_view clip(std::string_view text, std::size_t width);

// A line of a frame and how it is drawn.
struct line {
    std::string text;  // may hold colour escape sequences
    bool bold = false;
    bool highlighted = false;  // reverse video, colours kept
};

// One frame: `body` from the top (what does not fit is cut off, every line clipped to the width)
// and `footer` on the last lines (the status, the keys: dimmed after its first line), each line
// clearing what the previous frame left.
std::string draw(const std::vector<line>& body, const std::vector<line>& footer, size screen);

}  // namespace ralph::client::terminal
