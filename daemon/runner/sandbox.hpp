// submit --sandbox (SPEC §9): the agent runs under bubblewrap with the whole filesystem
// read-only, except its workspace, the workspace's git directory (so that it can commit), its
// own config and cache paths under $HOME (agent::home_state_paths) and its private TMPDIR; /tmp
// is an empty tmpfs of its own, /dev and /proc are fresh. The network and the process tree
// stay shared: bwrap runs in the agent's process group, so a cancel or a timeout ends it and
// everything inside like any agent.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ralph::sandbox {

// "bwrap" on `search_path`, or a proto::rpc_error(agent_unavailable) saying how to install it.
std::string find_bwrap(const std::string& search_path);

// The paths an attempt may write: `workspace`, `git_dir` and `tmpdir` when not empty, and each
// of `home_paths` (relative to HOME in the agent's environment `env`) that exists; a path inside
// another one is left out.
std::vector<std::filesystem::path> writable_paths(const std::filesystem::path& workspace,
                                                  const std::filesystem::path& git_dir,
                                                  const std::filesystem::path& tmpdir,
                                                  const std::vector<std::string>& env,
                                                  const std::vector<std::string>& home_paths);

// `argv` wrapped in bwrap: `bwrap [binds] --chdir cwd -- argv...`.
std::vector<std::string> wrap(const std::string& bwrap,
                              const std::vector<std::filesystem::path>& writable,
                              const std::string& cwd, const std::vector<std::string>& argv);

}  // namespace ralph::sandbox
