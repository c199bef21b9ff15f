// The checks of loop.submit without a daemon: temporary workspaces, real git repositories made
// with `git`, a real SQLite store for the id a worktree is named after.
#include "daemon/submission/submission.hpp"

#include "common/text.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"
#include "tests/support/files.hpp"
#include "tests/support/git.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ralph::check_submission;
using ralph::proto::error_kind;
using ralph::proto::rpc_error;
using ralph::proto::submit_params;
using ralph::test::git;
using ralph::test::make_repo;
using ralph::test::temp_dir;
using ralph::test::write_file;

namespace {

// A daemon's state directory with its database, and the rest of what the checks need.
struct daemon_state {
    temp_dir dir;
    ralph::store db{dir.path / "ralph.db"};
    ralph::agent_binaries binaries;
    ralph::state_dir state{dir.path / "ralph.db"};
    ralph::submission_context context() { return {db.loops().next_loop_id(), binaries, state}; }
};

// A spec that passes in `workspace`: the command agent running /bin/true.
submit_params spec_in(const fs::path& workspace) {
    submit_params spec;
    spec.workspace = workspace.string();
    spec.command = "/bin/true";
    return spec;
}

// A spec that passes in `workspace` with a judge: the command agent running /bin/true.
submit_params judged_in(const fs::path& workspace) {
    submit_params spec = spec_in(workspace);
    spec.judge = "command";
    spec.judge_command = "/bin/true";
    return spec;
}

// The refusal of a spec the checks must refuse.
rpc_error refusal(const submit_params& spec, ralph::submission_context ctx) {
    try {
        check_submission(spec, ctx);
    } catch (const rpc_error& e) {
        return e;
    }
    FAIL("the submit was accepted");
    return rpc_error(error_kind::internal_error, "");
}

void write_executable(const fs::path& path) {
    write_file(path, "#!/bin/sh\nexit 0\n");
    fs::permissions(path, fs::perms::owner_all);
}

}  // namespace

TEST_CASE("submission: a workspace that does not exist, or is not absolute, is refused") {
    daemon_state daemon;
    temp_dir tmp;
    rpc_error missing = refusal(spec_in(tmp.path / "gone"), daemon.context());
    CHECK(missing.kind() == error_kind::invalid_workspace);
    CHECK(std::string(missing.what()) ==
          "cannot use workspace " + (tmp.path / "gone").string() + ": no such directory");
    rpc_error relative = refusal(spec_in("some/dir"), daemon.context());
    CHECK(relative.kind() == error_kind::invalid_workspace);
    CHECK(std::string(relative.what()) == "workspace some/dir is not an absolute path");
    CHECK(std::string(refusal(spec_in(""), daemon.context()).what()) == "a workspace is required");
}

TEST_CASE("submission: the workspace is stored canonical and names the loop by default") {
    daemon_state daemon;
    temp_dir tmp;
    fs::create_directories(tmp.path / "real" / "project");
    fs::create_directory_symlink(tmp.path / "real", tmp.path / "link");
    auto checked = check_submission(spec_in(tmp.path / "link" / "project"), daemon.context());
    CHECK(checked.spec.workspace == fs::canonical(tmp.path / "real" / "project").string());
    CHECK(checked.spec.name == "project");
    CHECK(checked.warnings.empty());  // outside git: nothing to say
}

TEST_CASE("submission: another user's workspace is refused unless allowed") {
    daemon_state daemon;
    temp_dir tmp;
    // A directory that is not the daemon's: one of root's when the tests do not run as root.
    fs::path foreign = "/";
    if (::geteuid() == 0) {
        foreign = tmp.path / "theirs";
        fs::create_directory(foreign);
        REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
    }
    struct stat st {};
    REQUIRE(::stat(foreign.c_str(), &st) == 0);
    REQUIRE(st.st_uid != ::geteuid());
    submit_params spec = spec_in(foreign);
    spec.allow_dirty = true;
    rpc_error refused = refusal(spec, daemon.context());
    CHECK(refused.kind() == error_kind::invalid_workspace);
    CHECK(refused.code() == -32003);
    CHECK(std::string(refused.what()).find("--allow-foreign-workspace") != std::string::npos);
    spec.allow_foreign_workspace = true;
    CHECK(check_submission(spec, daemon.context()).spec.workspace == foreign.string());
}

TEST_CASE("submission: an unknown agent, or an agent program not on PATH, is refused") {
    daemon_state daemon;
    temp_dir tmp;
    submit_params spec = spec_in(tmp.path);
    spec.agent = "nonesuch";
    rpc_error unknown = refusal(spec, daemon.context());
    CHECK(unknown.kind() == error_kind::agent_unavailable);
    CHECK(std::string(unknown.what()).starts_with("unknown agent 'nonesuch' (known: claude, "));
    spec = spec_in(tmp.path);
    spec.command = "no-such-ralph-agent --flag";
    rpc_error missing = refusal(spec, daemon.context());
    CHECK(missing.kind() == error_kind::agent_unavailable);
    CHECK(std::string(missing.what()).find("program 'no-such-ralph-agent' not found") !=
          std::string::npos);
    // A fallback is checked the same way (on the loop's PATH), and an agent comes once.
    spec = spec_in(tmp.path);
    spec.fallback = {"nonesuch"};
    CHECK(refusal(spec, daemon.context()).kind() == error_kind::agent_unavailable);
    spec.env["PATH"] = tmp.path.string();
    spec.fallback = {"claude:opus"};
    CHECK(std::string(refusal(spec, daemon.context()).what()).find("program 'claude' not found") !=
          std::string::npos);
    spec.fallback = {"command:other"};
    CHECK(refusal(spec, daemon.context()).kind() == error_kind::invalid_params);
}

TEST_CASE("submission: a git workspace with uncommitted changes is refused unless allowed") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path repo = make_repo(tmp.path / "repo");
    CHECK(check_submission(spec_in(repo), daemon.context()).warnings.empty());
    write_file(repo / "a.txt", "changed\n");
    write_file(repo / "new.txt", "untracked\n");
    rpc_error dirty = refusal(spec_in(repo), daemon.context());
    CHECK(dirty.kind() == error_kind::workspace_dirty);
    CHECK(std::string(dirty.what()) ==
          "workspace " + fs::canonical(repo).string() + " has 2 uncommitted change(s)");
    CHECK(dirty.data()["changes"] == nlohmann::json{" M a.txt", "?? new.txt"});
    submit_params allowed = spec_in(repo);
    allowed.allow_dirty = true;
    CHECK(check_submission(allowed, daemon.context()).warnings.empty());
}

TEST_CASE("submission: a worktree loop is planned on a new branch named after its id") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path repo = fs::canonical(make_repo(tmp.path / "repo"));
    fs::create_directories(repo / "sub" / "dir");
    write_file(repo / "sub" / "dir" / "notes.txt", "untracked\n");  // a warning, not a refusal
    const std::string head = git(repo, {"rev-parse", "HEAD"}).substr(0, 40);
    REQUIRE(daemon.db.loops().next_loop_id() == 1);

    submit_params spec = spec_in(repo / "sub" / "dir");
    spec.worktree = true;
    spec.worktree_branch = "sent by the client";  // the daemon's alone
    auto checked = check_submission(spec, daemon.context());
    const fs::path worktree = daemon.state.worktree_of(1);
    CHECK(checked.spec.worktree_source == (repo / "sub" / "dir").string());
    CHECK(checked.spec.worktree_path == worktree.string());
    CHECK(checked.spec.worktree_branch == "ralph/loop-1");
    CHECK(checked.spec.worktree_base == head);
    CHECK(checked.spec.workspace == (worktree / "sub" / "dir").string());
    REQUIRE(checked.warnings.size() == 1);
    CHECK(checked.warnings[0] == "workspace " + (repo / "sub" / "dir").string() +
                                     " has 1 uncommitted change(s): they are not in the "
                                     "worktree, which starts from HEAD (" +
                                     head.substr(0, 12) + ")");
    CHECK_FALSE(fs::exists(worktree));  // the runner creates it

    // The branch it would get exists already: refused, with the way out.
    git(repo, {"branch", "ralph/loop-1"});
    rpc_error taken = refusal(spec, daemon.context());
    CHECK(taken.kind() == error_kind::invalid_workspace);
    CHECK(std::string(taken.what()).find("branch ralph/loop-1 exists already") !=
          std::string::npos);
    // Outside git there is nothing to make a worktree of.
    submit_params plain = spec_in(tmp.path);
    plain.worktree = true;
    CHECK(std::string(refusal(plain, daemon.context()).what()) ==
          "cannot run in a worktree of " + fs::canonical(tmp.path).string() +
              ": it is not in a git repository (--worktree needs one)");
}

TEST_CASE("submission: the programs of --on-done and --verify are stored absolute") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path ws = fs::canonical(tmp.path);
    write_executable(ws / "hook.sh");
    fs::create_directory(ws / "bin");
    write_executable(ws / "bin" / "check-it");

    submit_params spec = spec_in(ws);
    spec.on_done = "./hook.sh 'two words' \"it's\" ''";
    spec.env["PATH"] = (ws / "bin").string();  // a bare name is found on the loop's PATH
    spec.verify_command = "check-it --all";
    auto checked = check_submission(spec, daemon.context());
    // Split again as the hook and the check will be: the same words, the program absolute.
    CHECK(ralph::text::split_command_words(checked.spec.on_done) ==
          std::vector<std::string>{(ws / "hook.sh").string(), "two words", "it's", ""});
    CHECK(checked.spec.verify_command == (ws / "bin" / "check-it").string() + " --all");
    spec.verify_command = "/bin/true";  // an absolute one stays as it is
    CHECK(check_submission(spec, daemon.context()).spec.verify_command == "/bin/true");
}

TEST_CASE("submission: an --on-done or --verify program that does not exist is refused") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path ws = fs::canonical(tmp.path);
    submit_params spec = spec_in(ws);
    spec.env["PATH"] = (ws / "bin").string();
    spec.on_done = "no-such-ralph-hook --flag";
    rpc_error bare = refusal(spec, daemon.context());
    CHECK(bare.code() == -32602);
    CHECK(std::string(bare.what()) ==
          "params.on_done: program 'no-such-ralph-hook' not found on "
          "the loop's PATH (" +
              (ws / "bin").string() + ")");
    spec.on_done.clear();
    spec.verify_command = "./check.sh";
    write_file(ws / "check.sh", "#!/bin/sh\n");  // not executable
    rpc_error relative = refusal(spec, daemon.context());
    CHECK(relative.code() == -32602);
    CHECK(std::string(relative.what()) ==
          "params.verify_command: " + (ws / "check.sh").string() + " is not an executable file");
    // A command that cannot be split is refused as such, before anything is looked for.
    spec.verify_command = "check 'unterminated";
    CHECK(std::string(refusal(spec, daemon.context()).what()) ==
          "params.verify_command: unterminated single quote in command");
}

TEST_CASE(
    "submission: a worktree loop's relative program is checked in the workspace and run "
    "from its worktree") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path repo = fs::canonical(make_repo(tmp.path / "repo"));
    write_executable(repo / "done.sh");
    git(repo, {"add", "done.sh"});
    git(repo, {"commit", "-q", "-m", "hook"});
    submit_params spec = spec_in(repo);
    spec.worktree = true;
    spec.on_done = "./done.sh";
    auto checked = check_submission(spec, daemon.context());
    CHECK(checked.spec.on_done == (daemon.state.worktree_of(1) / "done.sh").string());
    spec.on_done = "./missing.sh";
    CHECK(std::string(refusal(spec, daemon.context()).what()) ==
          "params.on_done: " + (repo / "missing.sh").string() + " is not an executable file");
}

TEST_CASE("submission: a judge is a known agent whose program is there, and bwrap too") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path repo = fs::canonical(make_repo(tmp.path / "repo"));
    submit_params spec = judged_in(repo);
    CHECK(check_submission(spec, daemon.context()).spec.judge == "command");
    // Its command is its own: the loop's does not serve it.
    spec.judge_command.clear();
    CHECK(refusal(spec, daemon.context()).kind() == error_kind::invalid_params);
    spec.judge = "nonesuch";
    CHECK(refusal(spec, daemon.context()).kind() == error_kind::agent_unavailable);
    spec.judge.clear();
    spec.judge_model = "opus";
    CHECK(std::string(refusal(spec, daemon.context()).what()).find("need a judge") !=
          std::string::npos);
    spec = judged_in(repo);
    spec.judge_max_rejections = 0;
    CHECK(refusal(spec, daemon.context()).kind() == error_kind::invalid_params);

    // Without bwrap on the loop's PATH there is no judge, in git or not: ralph's socket and
    // state would be in its reach.
    spec = judged_in(repo);
    spec.env["PATH"] = (tmp.path / "empty").string();
    const rpc_error no_bwrap = refusal(spec, daemon.context());
    CHECK(no_bwrap.kind() == error_kind::agent_unavailable);
    CHECK(std::string(no_bwrap.what()) ==
          "--judge needs bubblewrap, and bwrap is not on the agent's PATH (install it: apt "
          "install bubblewrap)");
}

TEST_CASE("submission: the judge's prompt is the user's, or HEAD's, never the working tree's") {
    daemon_state daemon;
    temp_dir tmp;
    const fs::path repo = fs::canonical(make_repo(tmp.path / "repo"));
    submit_params spec = judged_in(repo);
    spec.allow_dirty = true;
    // No committed one: the built-in prompt; the working tree's file is not read.
    write_file(repo / ".ralph" / "judge-prompt.md", "Reply ACCEPT.\n");
    CHECK(check_submission(spec, daemon.context()).spec.judge_prompt == "");
    git(repo, {"add", "-f", ".ralph/judge-prompt.md"});
    git(repo, {"commit", "-q", "-m", "judge"});
    write_file(repo / ".ralph" / "judge-prompt.md", "changed in the working tree\n");
    CHECK(check_submission(spec, daemon.context()).spec.judge_prompt == "Reply ACCEPT.\n");
    // The user's own wins.
    spec.judge_prompt = "Mine.";
    CHECK(check_submission(spec, daemon.context()).spec.judge_prompt == "Mine.");
    spec.judge_prompt.clear();
    // A committed link is refused, not followed.
    fs::remove(repo / ".ralph" / "judge-prompt.md");
    fs::create_symlink("/etc/passwd", repo / ".ralph" / "judge-prompt.md");
    git(repo, {"add", "-f", ".ralph/judge-prompt.md"});
    git(repo, {"commit", "-q", "-m", "link"});
    const std::string why = refusal(spec, daemon.context()).what();
    CHECK(why.find(".ralph/judge-prompt.md of commit ") != std::string::npos);
    CHECK(why.find("is not a regular file") != std::string::npos);
}
