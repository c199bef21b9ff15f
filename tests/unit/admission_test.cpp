// The daily time window of the scheduler (daemon/scheduler/admission): parsing and when it next
// opens, in UTC and across midnight. Budgets are tested end to end (test_scheduler.py).
#include "daemon/admission/admission.hpp"
#include "proto/errors.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>

namespace {

// Epoch ms of 2026-11-22 at HH:MM UTC (plus days).
std::int64_t at(int hours, int minutes, int days = 0) {
    const std::int64_t midnight = 1795305600000;  // 2026-11-22T00:00:00Z
    return midnight + ((days * 24 + hours) * 60 + minutes) * 60000LL;
}

struct utc {
    utc() {
        ::setenv("TZ", "UTC", 1);
        ::tzset();
    }
};

}  // namespace

TEST_CASE("a time window is HH:MM-HH:MM; anything else is a clear invalid_params") {
    auto window = ralph::parse_time_window("01:30-07:05");
    REQUIRE(window);
    CHECK(window->start_minute == 90);
    CHECK(window->end_minute == 425);
    CHECK_FALSE(ralph::parse_time_window(""));
    for (const char* bad : {"1:00-07:00", "01:00", "01:00-24:00", "25:00-01:00", "01:60-02:00",
                            "ab:cd-01:00", "01:00-01:00", "01:00-07:00 "}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(ralph::parse_time_window(bad), ralph::proto::rpc_error);
    }
}

TEST_CASE("the window is open at its start, closed at its end, and opens next at its start") {
    utc zone;
    auto window = *ralph::parse_time_window("01:00-07:00");
    CHECK(ralph::next_window_open(window, at(1, 0)) == at(1, 0));
    CHECK(ralph::next_window_open(window, at(6, 59)) == at(6, 59));
    CHECK(ralph::next_window_open(window, at(7, 0)) == at(1, 0, 1));
    CHECK(ralph::next_window_open(window, at(0, 59)) == at(1, 0));
    CHECK(ralph::next_window_open(window, at(12, 0)) == at(1, 0, 1));
}

TEST_CASE("a window across midnight") {
    utc zone;
    auto window = *ralph::parse_time_window("22:00-07:00");
    CHECK(ralph::next_window_open(window, at(23, 0)) == at(23, 0));
    CHECK(ralph::next_window_open(window, at(3, 0)) == at(3, 0));
    CHECK(ralph::next_window_open(window, at(7, 0)) == at(22, 0));
    CHECK(ralph::next_window_open(window, at(21, 59)) == at(22, 0));
}
