// Landing a --worktree loop's work: on the branch it started from (submit --merge when the loop
// completes, `ralphctl merge` = loop.merge later), or as a pull request (submit --pr, `ralphctl
// pr` = loop.pr). Either way the worktree's uncommitted work is committed on the loop's branch
// first.
// - A merge goes into the loop's worktree_target (workspace::merge_branch: a fast-forward when
//   possible, else a merge commit; never into a work tree with uncommitted changes; a conflict
//   changes nothing). One landing at a time in the process: two loops landing on one branch
//   would race on its work tree.
// - A pull request: the branch is pushed with `git push` (the user's git, so that their SSH
//   agent, keys and credential helpers work; no hook: --no-verify, core.hooksPath=/dev/null),
//   then opened with `gh pr create` (the GitHub CLI, logged in by the user), both in the
//   workspace as submitted, with ralphd's environment, stdin /dev/null, no prompt, and a time
//   limit. Its title is the loop's name, its body what the loop did (pull_request_body).
#pragma once

#include "common/asio.hpp"
#include "proto/types.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace ralph {

class child_reaper;

struct landing {
    bool landed = false;  // merged (or in the target already), or the pull request opened
    std::string text;     // loop_info::landing: what happened, or why not
};

// What landing runs its work with: libgit2 on the pool, git push and gh as helpers.
struct landing_tools {
    net::io_context& io;
    net::thread_pool& blocking;
    child_reaper& reaper;
    std::chrono::milliseconds time_limit{120000};  // for each of git push and gh pr create
};
enum class landing_way { merge, pull_request };
// Lands the loop's work (`attempts` its attempts, for a pull request's body) one `way`: the
// landing's text says what came of it — "merged into main (fast-forward) at 0123456789ab",
// "pull request https://... (ralph/loop-7 pushed to origin)" — or why not.
awaitable<landing> land(const landing_tools& tools, const proto::loop_info& loop,
                        const std::vector<proto::attempt_info>& attempts, landing_way way);

// How much of the end of the loop's notes, and of the judge's last reasons to reject, its pull
// request's body quotes.
inline constexpr std::size_t max_pull_request_quote_bytes = 4096;
// The pull request's body: the loop's outcome, iterations, tokens and cost, the judge's
// verdicts, and the end of its notes.
std::string pull_request_body(const proto::loop_info& loop,
                              const std::vector<proto::attempt_info>& attempts,
                              const std::string& notes);

}  // namespace ralph
