// What a loop's work lands with: the body of its pull request, and a merge that cannot land.
// (Merging is tested against git in workspace_test.cpp, both end to end with git push and a fake
// gh in tests/integration/test_landing.py.)
#include "daemon/loop/landing.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using ralph::proto::attempt_info;
using ralph::proto::loop_info;

namespace {

loop_info judged_loop() {
    loop_info loop;
    loop.id = 7;
    loop.spec.agent = "codex";
    loop.spec.judge = "claude";
    loop.stop_reason = "judge claude accepted the completion claimed in iteration 4";
    loop.iterations = 4;
    loop.attempts = 6;
    loop.usage.input_tokens = 120000;
    loop.usage.output_tokens = 3400;
    loop.usage.cost_usd = 1.234;
    return loop;
}

attempt_info verdict(const std::string& which, const std::string& reasons) {
    attempt_info attempt;
    attempt.kind = ralph::proto::attempt_kind::judge;
    attempt.verdict = which;
    attempt.verdict_reasons = reasons;
    return attempt;
}

}  // namespace

TEST_CASE("landing: a pull request's body says what the loop did, its judge and its notes") {
    const std::vector<attempt_info> attempts = {
        attempt_info{}, verdict("reject", "The tests fail."), verdict("accept", "")};
    const std::string body = ralph::pull_request_body(judged_loop(), attempts, "- parser done\n");
    CHECK(body ==
          "ralph loop 7 (codex): judge claude accepted the completion claimed in iteration 4.\n"
          "\n"
          "- 4 iteration(s), 6 agent run(s), 120000 input and 3400 output tokens, $1.23\n"
          "- judge claude: 1 accepted, 1 rejected\n"
          "\n"
          "The judge's last reasons to reject:\n"
          "\n"
          "The tests fail.\n"
          "\n"
          "## The loop's last notes\n"
          "\n"
          "- parser done\n"
          "\n");

    loop_info plain;
    plain.id = 3;
    plain.spec.agent = "command";
    const std::string short_body = ralph::pull_request_body(plain, {}, "");
    CHECK(short_body ==
          "ralph loop 3 (command): completed.\n\n- 0 iteration(s), 0 agent run(s), "
          "0 input and 0 output tokens\n");
}

TEST_CASE("landing: a loop that was on no branch at submit is not merged, and says why") {
    loop_info loop = judged_loop();
    loop.spec.worktree_branch = "ralph/loop-7";
    const ralph::landing landed = ralph::land_branch(loop);
    CHECK_FALSE(landed.landed);
    CHECK(landed.text == "not merged: the workspace was on no branch (a detached HEAD) at submit");
}
