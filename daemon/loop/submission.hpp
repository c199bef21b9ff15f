// What a submit must pass before a loop exists (loop.submit), and the spec as it is stored: the
// workspace (an existing directory of the daemon's user, resolved without links), the prompt
// file, every bound, the agent's program, bwrap for --sandbox, the programs of --verify and
// --on-done (resolved now, so that what runs later is what was checked), and then the worktree a
// --worktree loop will get or the dirty check. The checks run in the order API.md gives, and the
// first refusal is a proto::rpc_error whose code and message the client shows as they are.
#pragma once

#include "daemon/agents/agent.hpp"
#include "daemon/state_dir.hpp"
#include "proto/types.hpp"

#include <string>
#include <vector>

namespace ralph {

class store;

// What the checks need of the daemon.
struct submission_context {
    store& db;                       // the id the loop will get names its worktree and branch
    const agent_binaries& binaries;  // ralphd --agent-binary
    const state_dir& state;          // where --worktree loops get their worktrees
};

// A submit that passed the checks: the spec to insert and what the user should know.
struct submission {
    proto::submit_params spec;
    std::vector<std::string> warnings;
};

// Checks `spec` and completes it: the workspace canonical, the name defaulted to its directory's,
// the programs of verify_command and on_done absolute, the worktree_* fields set by the daemon
// alone. Reads the file system and the workspace's repository (libgit2: quick reads, on the
// calling thread); changes nothing. Throws proto::rpc_error.
submission check_submission(proto::submit_params spec, const submission_context& ctx);

}  // namespace ralph
