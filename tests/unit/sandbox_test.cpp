// The sandbox's writable and protected paths and its bwrap command line.
#include "daemon/process/sandbox.hpp"

#include "proto/errors.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

using ralph::test::temp_dir;
using ralph::test::write_file;
namespace fs = std::filesystem;
namespace sandbox = ralph::sandbox;

TEST_CASE("sandbox: the writable paths are those that exist, outermost only") {
    temp_dir tmp;
    const fs::path ws = tmp.path / "ws";
    const fs::path home = tmp.path / "home";
    fs::create_directories(ws / ".git");
    fs::create_directories(home / ".agent" / "cache");
    fs::create_directories(tmp.path / "scratch");
    const std::vector<std::string> env{"PATH=/usr/bin", "HOME=" + home.string()};
    const auto writable = sandbox::writable_paths(ws, ws / ".git", tmp.path / "scratch", env,
                                                  {".agent", ".agent/cache", ".missing"});
    const fs::path base = fs::canonical(tmp.path);
    CHECK(writable ==
          std::vector<fs::path>{base / "home" / ".agent", base / "scratch", base / "ws"});
    // Without HOME in the agent's environment, nothing under it.
    CHECK(sandbox::writable_paths(ws, {}, {}, {"PATH=/usr/bin"}, {".agent"}) ==
          std::vector<fs::path>{base / "ws"});
    CHECK_THROWS_AS(sandbox::find_bwrap((tmp.path / "no-bin").string()), ralph::proto::rpc_error);
}

TEST_CASE(
    "sandbox: the git directory's config and hooks and a worktree's .git file stay read-only") {
    temp_dir tmp;
    const fs::path git_dir = tmp.path / "repo" / ".git";
    fs::create_directories(git_dir);
    write_file(git_dir / "config", "[core]\n");
    const fs::path ws = tmp.path / "worktree";
    fs::create_directories(ws);
    write_file(ws / ".git", "gitdir: " + (git_dir / "worktrees" / "w").string() + "\n");
    // The hooks directory is made when missing: the agent cannot create one of its own.
    CHECK(sandbox::protected_git_paths(ws, git_dir) ==
          std::vector<fs::path>{git_dir / "config", git_dir / "hooks", ws / ".git"});
    CHECK(fs::is_directory(git_dir / "hooks"));
    CHECK(sandbox::protected_git_paths(tmp.path / "plain", {}).empty());
}

TEST_CASE(
    "sandbox: bwrap gets a PID namespace and the mounts parent first, the most specific last") {
    temp_dir tmp;
    const fs::path state = tmp.path / "state";
    const fs::path ws = state / "worktrees" / "loop-1" / "sub";
    const fs::path other = tmp.path / "other-ws";
    fs::create_directories(ws);
    fs::create_directories(other);
    write_file(state / "prompt.md", "p");
    sandbox::layout view;
    view.writable = {ws};
    view.read_only = {state / "prompt.md", state / "worktrees" / "loop-1"};
    view.hidden = {other, state, tmp.path / "missing"};
    const auto argv = sandbox::wrap("/usr/bin/bwrap", view, ws.string(), {"agent", "two words"});
    const std::vector<std::string> expected{"/usr/bin/bwrap",
                                            "--unshare-pid",
                                            "--ro-bind",
                                            "/",
                                            "/",
                                            "--dev",
                                            "/dev",
                                            "--proc",
                                            "/proc",
                                            "--tmpfs",
                                            "/tmp",
                                            "--tmpfs",
                                            other.string(),
                                            "--tmpfs",
                                            state.string(),
                                            "--ro-bind",
                                            (state / "prompt.md").string(),
                                            (state / "prompt.md").string(),
                                            "--ro-bind",
                                            (state / "worktrees" / "loop-1").string(),
                                            (state / "worktrees" / "loop-1").string(),
                                            "--bind",
                                            ws.string(),
                                            ws.string(),
                                            "--chdir",
                                            ws.string(),
                                            "--",
                                            "agent",
                                            "two words"};
    CHECK(argv == expected);

    view.offline = true;
    const auto offline = sandbox::wrap("/usr/bin/bwrap", view, ws.string(), {"agent"});
    CHECK(std::find(offline.begin(), offline.end(), "--unshare-net") != offline.end());
}
