#include "daemon/loop/completion.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using ralph::contains_promise;

TEST_CASE("completion: the exact tag completes") {
    CHECK(contains_promise("All done.\n<promise>COMPLETE</promise>\n", "COMPLETE"));
}

TEST_CASE("completion: tag and phrase match without regard to case") {
    CHECK(contains_promise("<PROMISE>complete</Promise>", "COMPLETE"));
    CHECK(contains_promise("<promise>All Tasks Done</promise>", "all tasks done"));
}

TEST_CASE("completion: whitespace around and inside the phrase is tolerated") {
    CHECK(contains_promise("<promise>\n   COMPLETE \t\n</promise>", "COMPLETE"));
    CHECK(contains_promise("<promise>all\n  tasks   done</promise>", "all tasks done"));
}

TEST_CASE("completion: another phrase, a missing close tag or a bare phrase do not complete") {
    CHECK_FALSE(contains_promise("<promise>NOT COMPLETE</promise>", "COMPLETE"));
    CHECK_FALSE(contains_promise("<promise>COMPLETE", "COMPLETE"));
    CHECK_FALSE(contains_promise("COMPLETE", "COMPLETE"));
    CHECK_FALSE(contains_promise("<promise>COMPLETELY</promise>", "COMPLETE"));
    CHECK_FALSE(contains_promise("", "COMPLETE"));
}

TEST_CASE("completion: a later tag after a non-matching one still completes") {
    CHECK(contains_promise("<promise>WIP</promise> then <promise>COMPLETE</promise>", "COMPLETE"));
    CHECK(contains_promise("<promise><promise>COMPLETE</promise>", "COMPLETE"));
}

TEST_CASE("completion: matching is linear even on adversarial input") {
    std::string hostile;
    for (int i = 0; i < 200000; ++i) hostile += "<promise><promise";
    hostile += "</promise>";
    auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(contains_promise(hostile, "COMPLETE"));
    auto elapsed = std::chrono::steady_clock::now() - start;
    // 3.4 MB: a quadratic matcher would take minutes here.
    CHECK(elapsed < std::chrono::seconds(2));
}
