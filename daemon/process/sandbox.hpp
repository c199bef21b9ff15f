// submit --sandbox (SECURITY.md, README "Sandbox"): the agent, its --verify check and the loop's
// hooks run under bubblewrap. What they see:
// - the whole filesystem read-only, with fresh /dev, a /proc of their own PID namespace (no
//   other process, ralphd's included, is visible or reachable) and an empty /tmp;
// - hidden behind empty tmpfs: ralph's own directories (the socket's directory, the state
//   directory with the database and every loop's output) and the workspaces of the other loops
//   that have not ended — nothing of ralph is reachable, so the agent cannot submit a loop
//   without --sandbox or read another loop's secrets;
// - writable: its workspace, its repository's git directories (to commit), its own config and
//   cache paths under $HOME (agent::home_state_paths) and its private TMPDIR; but read-only on
//   top: the git directory's `config`, `hooks` and `info` (nothing the agent writes there runs
//   later, neither for ralph nor for the user), a linked worktree's `.git` pointer file and the
//   `commondir` and `gitdir` files of its own git directory, and the prompt file. Each git
//   directory is a mount point of its own, which cannot be renamed or removed from inside
//   (EBUSY): the agent cannot put a git directory of its own making in its place. What no mount
//   can prevent, as a mount covers only a name that exists, is removed after each run
//   (remove_git_redirects);
// - the host's network, unless --sandbox=offline (a network namespace with loopback only).
// The bwrap process stays in the agent's process group, so a cancel or a timeout ends it and
// everything inside like any agent; when the agent exits, bwrap (PID 1 of the namespace) exits
// and the kernel ends whatever the agent left inside, setsid or not.
#pragma once

#include "daemon/workspace/workspace.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::sandbox {

// "bwrap" on `search_path`, or a proto::rpc_error(agent_unavailable) saying that `option`
// ("--sandbox", "--judge") needs it and how to install it.
std::string find_bwrap(const std::string& search_path, std::string_view option = "--sandbox");

// What one sandbox shows of the filesystem, and its network.
struct layout {
    std::vector<std::filesystem::path> writable;   // bound read-write
    std::vector<std::filesystem::path> read_only;  // bound read-only (over a writable parent)
    std::vector<std::filesystem::path> hidden;     // an empty tmpfs over each
    bool offline = false;                          // no network but its own loopback
};

// The paths an attempt may write: `workspace`, `tmpdir` when not empty, and each of `home_paths`
// (relative to HOME in the agent's environment `env`) that exists, a path inside another one
// left out; and the git directories of `git` that exist, also inside another path: each is to
// be a mount point of its own.
std::vector<std::filesystem::path> writable_paths(const std::filesystem::path& workspace,
                                                  const workspace::git_directories& git,
                                                  const std::filesystem::path& tmpdir,
                                                  const std::vector<std::string>& env,
                                                  const std::vector<std::string>& home_paths);

// What stays read-only inside the writable git directories `git` and workspace: the common
// directory's config, hooks and info (the two directories are created when missing, so that the
// agent cannot add one), and in a linked worktree its git directory's `commondir` and `gitdir`
// and the workspace's `.git` when it is a file (the worktree's pointer).
std::vector<std::filesystem::path> protected_git_paths(const std::filesystem::path& workspace,
                                                       const workspace::git_directories& git);

// After a sandboxed run in `workspace`, whose git directories were `git` and protected paths
// `protected_paths` (protected_git_paths) before it: removes what the agent may have left for git
// to follow out of the sandbox's protection. A `commondir` file in a git directory that is not a
// linked worktree's — `git`'s or a `.git` directory the agent made at the top of the workspace —
// which git never writes there, and through which it would take the configuration and hooks of
// the directory it names; and a `.git` link or file at the top of the workspace that was not
// there before the run, through which git (ralph's too) would use another repository. Returns
// what it removed, for the loop's refused events. Call it once nothing of the run is left.
std::vector<std::string> remove_git_redirects(
    const std::filesystem::path& workspace, const workspace::git_directories& git,
    const std::vector<std::filesystem::path>& protected_paths);

// What of the program `program` (an absolute path, as PATH found it) the sandbox must show so
// that it runs there: its directory, and its real one when it is a link, where the sandbox's
// empty /tmp would hide them — a program the user keeps in /tmp (a judge's `--judge-command`, a
// clone of a project there) runs with its neighbours, read-only. A program inside a path of
// `hidden` (ralph's own directories, another loop's workspace) cannot be shown without showing
// what the sandbox hides: proto::rpc_error(agent_unavailable) names it and says why.
std::vector<std::filesystem::path> program_paths(const std::filesystem::path& program,
                                                 const std::vector<std::filesystem::path>& hidden);

// Refuses a program that a --sandbox loop runs after its agent (its --verify, its judge's) when
// the agent could have rewritten it first: `program` (absolute), or the file it links to, lies
// in one of `writable` (the agent's writable paths, absolute). The proto::rpc_error
// (invalid_params) starts with `field` and says the fix.
void refuse_writable_program(std::string_view field, const std::filesystem::path& program,
                             const std::vector<std::filesystem::path>& writable);

// `argv` wrapped in bwrap: `bwrap [namespaces] [mounts] --chdir cwd -- argv...`. The mounts are
// applied parent first (sorted by path; at one path: hidden, then writable, then read-only), so
// that the most specific rule wins whatever the order of the lists. Paths that do not exist
// (hidden ones: that are not directories) are left out.
std::vector<std::string> wrap(const std::string& bwrap, const layout& view, const std::string& cwd,
                              const std::vector<std::string>& argv);

}  // namespace ralph::sandbox
