#include "daemon/loop/landing.hpp"

#include "daemon/workspace/workspace.hpp"

#include <fmt/format.h>

#include <mutex>

namespace ralph {

landing land_branch(const proto::loop_info& loop) {
    static std::mutex one_at_a_time;
    const std::lock_guard<std::mutex> lock(one_at_a_time);
    const proto::submit_params& spec = loop.spec;
    if (spec.worktree_target.empty())
        return {false, "not merged: the workspace was on no branch (a detached HEAD) at submit"};
    std::error_code ec;
    if (std::filesystem::exists(spec.worktree_path, ec)) {
        std::string error;
        workspace::commit_all(
            spec.workspace,
            fmt::format("ralph loop {}: the uncommitted work at its end\n\nLoop: {}\n", loop.id,
                        spec.name),
            error);
        if (!error.empty()) return {false, "not merged: " + error};
    }
    const workspace::merge_outcome outcome = workspace::merge_branch(
        spec.worktree_source, spec.worktree_branch, spec.worktree_target,
        fmt::format("Merge branch '{}' into {}\n\nralph loop {}: {}\n", spec.worktree_branch,
                    spec.worktree_target, loop.id, spec.name));
    return {outcome.merged(), workspace::describe_merge(outcome, spec.worktree_target)};
}

}  // namespace ralph
