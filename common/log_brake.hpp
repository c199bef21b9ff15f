// How often one kind of log line that others can cause (a peer's junk, a stranger's refused
// request) is written: at most `lines` per `window`; the rest are counted, and the next line
// written says how many were left out. A flood then costs the log a few lines a minute, and its
// size is still told.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace ralph {

class log_brake {
  public:
    using clock = std::chrono::steady_clock;

    log_brake(std::size_t lines, std::chrono::seconds window) : lines_(lines), window_(window) {}

    // Whether a line may be written at `now`: then the note to end it with (how many lines were
    // left out before it, "" when none); nullopt when it is left out (and counted).
    std::optional<std::string> admit(clock::time_point now) {
        if (now - window_start_ >= window_) {
            window_start_ = now;
            written_ = 0;
        }
        if (written_ >= lines_) {
            ++left_out_;
            return std::nullopt;
        }
        ++written_;
        const std::size_t left_out = take_left_out();
        if (left_out == 0) return std::string();
        return fmt::format(" ({} more like it left out of the log before this one)", left_out);
    }
    std::optional<std::string> admit() { return admit(clock::now()); }

    // How many lines were left out since the last one written, forgotten from now on: for a last
    // word when the source goes away.
    std::size_t take_left_out() {
        const std::size_t left_out = left_out_;
        left_out_ = 0;
        return left_out;
    }

  private:
    std::size_t lines_;
    clock::duration window_;
    clock::time_point window_start_{};
    std::size_t written_ = 0;
    std::size_t left_out_ = 0;
};

}  // namespace ralph
