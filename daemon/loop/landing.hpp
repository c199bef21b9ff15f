// Landing a --worktree loop's work on the branch it started from (submit --merge when the loop
// completes, `ralphctl merge` = loop.merge later): the worktree's uncommitted work is committed
// on the loop's branch, which is then merged into the loop's worktree_target
// (workspace::merge_branch: a fast-forward when possible, else a merge commit; never into a work
// tree with uncommitted changes; a conflict changes nothing). One landing at a time in the
// process: two loops landing on one branch would race on its work tree.
#pragma once

#include "proto/types.hpp"

#include <string>

namespace ralph {

struct landing {
    bool merged = false;  // the branch's commits are in the target now (or were already)
    std::string text;     // loop_info::landing: what happened, or why not
};

// BLOCKS (libgit2 reads and writes the repository): call it off the io thread.
landing land_branch(const proto::loop_info& loop);

}  // namespace ralph
