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

// BLOCKS (libgit2 reads and writes the repository): call it off the io thread.
landing land_branch(const proto::loop_info& loop);

// How much of the end of the loop's notes its pull request's body quotes.
inline constexpr std::size_t max_pull_request_notes_bytes = 4096;

// What opening a pull request runs its helpers with.
struct pull_request_tools {
    net::io_context& io;
    net::thread_pool& blocking;
    child_reaper& reaper;
    std::chrono::milliseconds time_limit{120000};  // for each of git push and gh pr create
};
// Commits, pushes and opens the pull request of the loop's branch (`body` its text); the
// landing's text names its URL ("pull request https://... (ralph/loop-7 pushed to origin)") or
// says why there is none.
awaitable<landing> open_pull_request(const pull_request_tools& tools, const proto::loop_info& loop,
                                     const std::string& body);
// The pull request's body: the loop's outcome, iterations, tokens and cost, the judge's
// verdicts, and the end of its notes.
std::string pull_request_body(const proto::loop_info& loop,
                              const std::vector<proto::attempt_info>& attempts,
                              const std::string& notes);

}  // namespace ralph
