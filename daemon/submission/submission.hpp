// What a submit must pass before a loop exists (loop.submit), and the spec as it is stored: the
// workspace (an existing directory of the daemon's user, resolved without links), the prompt
// file, every bound, the agent's program, bwrap for --sandbox, the programs of --verify and
// --on-done (resolved now, so that what runs later is what was checked), and then the worktree a
// --worktree loop will get or the dirty check. The checks run in the order API.md gives, and the
// first refusal is a proto::rpc_error whose code and message the client shows as they are.
// With capacity.hpp (the dry run's answer), what a submit meets before a loop exists: the
// loop.submit handler parses, calls these and shapes the result.
#pragma once

#include "daemon/agents/agent.hpp"
#include "daemon/state_dir.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ralph {

// What the checks need of the daemon; nothing of it changes while they run, so they can run on
// any thread.
struct submission_context {
    std::int64_t loop_id = 0;        // the id the loop will get: names its worktree and branch
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
// alone. Reads the file system and the workspace's repository (libgit2: milliseconds, seconds
// on a large repository, hence off the io thread); changes nothing. Throws proto::rpc_error.
submission check_submission(proto::submit_params spec, const submission_context& ctx);
// Whether check_submission(spec) reads a repository (a --worktree loop, the dirty check of a
// workspace in git), which is worth a trip off the io thread; otherwise it costs a few stat calls.
bool check_reads_repository(const proto::submit_params& spec);

}  // namespace ralph
