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
    const auto writable =
        sandbox::writable_paths(ws, {ws / ".git", ws / ".git"}, tmp.path / "scratch", env,
                                {".agent", ".agent/cache", ".missing"});
    const fs::path base = fs::canonical(tmp.path);
    // The git directory inside the workspace too: a mount point of its own.
    CHECK(writable == std::vector<fs::path>{base / "home" / ".agent", base / "scratch", base / "ws",
                                            base / "ws" / ".git"});
    // Without HOME in the agent's environment, nothing under it.
    CHECK(sandbox::writable_paths(ws, {}, {}, {"PATH=/usr/bin"}, {".agent"}) ==
          std::vector<fs::path>{base / "ws"});
    CHECK_THROWS_AS(sandbox::find_bwrap((tmp.path / "no-bin").string()), ralph::proto::rpc_error);
}

TEST_CASE(
    "sandbox: the git directory's config, hooks and info and a worktree's pointers stay "
    "read-only") {
    temp_dir tmp;
    const fs::path common = tmp.path / "repo" / ".git";
    const fs::path own = common / "worktrees" / "w";
    fs::create_directories(own);
    write_file(common / "config", "[core]\n");
    write_file(own / "commondir", "../..\n");
    write_file(own / "gitdir", (tmp.path / "worktree" / ".git").string() + "\n");
    const fs::path ws = tmp.path / "worktree";
    fs::create_directories(ws);
    write_file(ws / ".git", "gitdir: " + own.string() + "\n");
    // hooks and info are made when missing: the agent cannot create one of its own.
    CHECK(sandbox::protected_git_paths(ws, {own, common}) ==
          std::vector<fs::path>{common / "config", common / "hooks", common / "info",
                                own / "commondir", own / "gitdir", ws / ".git"});
    CHECK(fs::is_directory(common / "hooks"));
    CHECK(fs::is_directory(common / "info"));
    CHECK(sandbox::protected_git_paths(tmp.path / "repo", {common, common}) ==
          std::vector<fs::path>{common / "config", common / "hooks", common / "info"});
    CHECK(sandbox::protected_git_paths(tmp.path / "plain", {}).empty());
}

TEST_CASE("sandbox: what a run left for git to follow out of the git directory is removed") {
    temp_dir tmp;
    const fs::path ws = tmp.path / "ws";
    const fs::path git_dir = ws / ".git";
    fs::create_directories(git_dir);
    // A commondir in the git directory of a repository that is not a linked worktree.
    write_file(git_dir / "commondir", "../evil\n");
    auto removed = sandbox::remove_git_redirects(ws, {git_dir, git_dir}, {});
    REQUIRE(removed.size() == 1);
    CHECK(removed[0].find((git_dir / "commondir").string()) != std::string::npos);
    CHECK_FALSE(fs::exists(git_dir / "commondir"));
    CHECK(fs::is_directory(git_dir));
    CHECK(sandbox::remove_git_redirects(ws, {git_dir, git_dir}, {}).empty());

    // A workspace that was not a repository's top: a .git file or link made since is removed,
    // and so is a commondir in a .git directory made since.
    const fs::path sub = tmp.path / "repo" / "sub";
    fs::create_directories(sub);
    const ralph::workspace::git_directories outer{tmp.path / "repo" / ".git",
                                                  tmp.path / "repo" / ".git"};
    write_file(sub / ".git", "gitdir: /elsewhere/.git\n");
    CHECK(sandbox::remove_git_redirects(sub, outer, {}).size() == 1);
    CHECK_FALSE(fs::exists(fs::symlink_status(sub / ".git")));
    fs::create_directory_symlink(tmp.path, sub / ".git");
    CHECK(sandbox::remove_git_redirects(sub, outer, {}).size() == 1);
    CHECK_FALSE(fs::exists(fs::symlink_status(sub / ".git")));
    CHECK(fs::exists(tmp.path / "ws"));  // the link's target is untouched
    fs::create_directories(sub / ".git");
    write_file(sub / ".git" / "commondir", "../../evil\n");
    CHECK(sandbox::remove_git_redirects(sub, outer, {}).size() == 1);
    CHECK_FALSE(fs::exists(sub / ".git" / "commondir"));
    CHECK(fs::is_directory(sub / ".git"));

    // A linked worktree's pointer file, protected during the run, stays.
    const fs::path tree = tmp.path / "tree";
    fs::create_directories(tree);
    write_file(tree / ".git", "gitdir: " + (git_dir / "worktrees" / "t").string() + "\n");
    CHECK(
        sandbox::remove_git_redirects(tree, {git_dir / "worktrees" / "t", git_dir}, {tree / ".git"})
            .empty());
    CHECK(fs::exists(tree / ".git"));
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
