// The daemon's wall clock (epoch ms): every timestamp ralphd records and every budget, hold and
// time-window decision reads it. Real time, unless ralphd runs with --test-clock: then the tests
// shift it through the debug.clock method (set or advance), so a test can jump hours ahead
// without sleeping (debug.clock has the scheduler look at the parked loops again: a loop parked
// until a reset or a budget frees up is queued at once). Times the shim and the agents give (an
// exit, a stated reset) are real and put on this clock (attempt.cpp, on_clock). Durations
// (timeouts, delays, retry backoffs, the SIGKILL grace) run on the steady clock and are not
// shifted.
#pragma once

#include "common/text.hpp"

#include <cstdint>

namespace ralph {

class wall_clock {
  public:
    // adjustable: --test-clock was given; start_ms: the time to start at (0 = real time).
    explicit wall_clock(bool adjustable = false, std::int64_t start_ms = 0)
        : adjustable_(adjustable), offset_ms_(start_ms == 0 ? 0 : start_ms - text::now_ms()) {}

    std::int64_t now_ms() const { return text::now_ms() + offset_ms_; }
    bool adjustable() const { return adjustable_; }
    void set(std::int64_t epoch_ms) { offset_ms_ = epoch_ms - text::now_ms(); }
    void advance(std::int64_t ms) { offset_ms_ += ms; }

  private:
    bool adjustable_;
    std::int64_t offset_ms_;
};

}  // namespace ralph
