// submit --sandbox (SPEC §9, SECURITY.md): the agent, its --verify check and the loop's hooks
// run under bubblewrap. What they see:
// - the whole filesystem read-only, with fresh /dev, a /proc of their own PID namespace (no
//   other process, ralphd's included, is visible or reachable) and an empty /tmp;
// - hidden behind empty tmpfs: ralph's own directories (the socket's directory, the state
//   directory with the database and every loop's output) and the workspaces of the other loops
//   that have not ended — nothing of ralph is reachable, so the agent cannot submit a loop
//   without --sandbox or read another loop's secrets;
// - writable: its workspace, its repository's git directory (to commit), its own config and
//   cache paths under $HOME (agent::home_state_paths) and its private TMPDIR; but read-only on
//   top: the git directory's `config` and `hooks` (nothing the agent writes there runs later,
//   neither for ralph nor for the user), a `.git` pointer file of a linked worktree, and the
//   prompt file;
// - the host's network, unless --sandbox=offline (a network namespace with loopback only).
// The bwrap process stays in the agent's process group, so a cancel or a timeout ends it and
// everything inside like any agent; when the agent exits, bwrap (PID 1 of the namespace) exits
// and the kernel ends whatever the agent left inside, setsid or not.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ralph::sandbox {

// "bwrap" on `search_path`, or a proto::rpc_error(agent_unavailable) saying how to install it.
std::string find_bwrap(const std::string& search_path);

// What one sandbox shows of the filesystem, and its network.
struct layout {
    std::vector<std::filesystem::path> writable;   // bound read-write
    std::vector<std::filesystem::path> read_only;  // bound read-only (over a writable parent)
    std::vector<std::filesystem::path> hidden;     // an empty tmpfs over each
    bool offline = false;                          // no network but its own loopback
};

// The paths an attempt may write: `workspace`, `git_dir` and `tmpdir` when not empty, and each
// of `home_paths` (relative to HOME in the agent's environment `env`) that exists; a path inside
// another one is left out.
std::vector<std::filesystem::path> writable_paths(const std::filesystem::path& workspace,
                                                  const std::filesystem::path& git_dir,
                                                  const std::filesystem::path& tmpdir,
                                                  const std::vector<std::string>& env,
                                                  const std::vector<std::string>& home_paths);

// What stays read-only inside a writable git directory `git_dir` and workspace: the git
// directory's config and hooks (the hooks directory is created when missing, so that the agent
// cannot add one), and the workspace's `.git` when it is a file (a linked worktree's pointer).
std::vector<std::filesystem::path> protected_git_paths(const std::filesystem::path& workspace,
                                                       const std::filesystem::path& git_dir);

// `argv` wrapped in bwrap: `bwrap [namespaces] [mounts] --chdir cwd -- argv...`. The mounts are
// applied parent first (sorted by path; at one path: hidden, then writable, then read-only), so
// that the most specific rule wins whatever the order of the lists. Paths that do not exist
// (hidden ones: that are not directories) are left out.
std::vector<std::string> wrap(const std::string& bwrap, const layout& view, const std::string& cwd,
                              const std::vector<std::string>& argv);

}  // namespace ralph::sandbox
