// What a loop's work lands with: the body of its pull request, and a loop that cannot land.
// (Merging is tested against git in workspace_test.cpp, both end to end with git push and a fake
// gh in tests/integration/test_landing.py.)
#include "daemon/loop/landing.hpp"
#include "daemon/process/child_reaper.hpp"

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

TEST_CASE("landing: a loop that was on no branch at submit lands neither way, and says why") {
    loop_info loop = judged_loop();
    loop.spec.worktree_branch = "ralph/loop-7";
    ralph::net::io_context io;
    ralph::child_reaper reaper(io);
    ralph::net::thread_pool pool(1);
    const ralph::landing_tools tools{io, pool, reaper};
    const std::vector<attempt_info> attempts;  // outlives the coroutines, which refer to it
    std::vector<ralph::landing> landed;
    for (ralph::landing_way way : {ralph::landing_way::merge, ralph::landing_way::pull_request})
        ralph::net::co_spawn(io, ralph::land(tools, loop, attempts, way),
                             [&](std::exception_ptr error, ralph::landing result) {
                                 CHECK_FALSE(error);
                                 landed.push_back(result);
                                 if (landed.size() == 2)
                                     io.stop();  // the reaper's wait for SIGCHLD never ends
                             });
    io.run();
    REQUIRE(landed.size() == 2);
    CHECK_FALSE(landed[0].landed);
    CHECK(landed[0].text ==
          "not merged: the workspace was on no branch (a detached HEAD) at submit");
    CHECK_FALSE(landed[1].landed);
    CHECK(landed[1].text ==
          "no pull request: the workspace was on no branch (a detached HEAD) at submit");
}
