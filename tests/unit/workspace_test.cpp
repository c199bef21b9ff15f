// Workspace snapshots against real temporary git repositories and plain directories.
#include "daemon/workspace/workspace.hpp"

#include "common/text.hpp"
#include "daemon/workspace/fifo_open_breaker.hpp"
#include "proto/errors.hpp"
#include "tests/support/files.hpp"
#include "tests/support/git.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace ralph::workspace;
using ralph::test::git;
using ralph::test::make_repo;
using ralph::test::read_file;
using ralph::test::run_git;
using ralph::test::set_git_config_search_path;
using ralph::test::temp_dir;
using ralph::test::write_file;

namespace {

std::string head_of(const fs::path& dir) {
    return std::string(ralph::text::trim(git(dir, {"rev-parse", "HEAD"})));
}

// An executable that creates `marker` when run and copies its stdin to its stdout, so that it
// may stand for a hook, a filter driver, an fsmonitor or gpg.
void write_marker_program(const fs::path& path, const fs::path& marker) {
    write_file(path, "#!/bin/sh\ntouch '" + marker.string() + "'\nexec cat\n");
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// ---- git itself, the oracle of what the workspace functions must find

// `git status --porcelain` of the workspace `dir`, .ralph/ left out.
std::vector<std::string> git_status(const fs::path& dir) {
    return lines_of(git(dir, {"-c", "core.quotePath=false", "status", "--porcelain", "--", ".",
                              ":(exclude).ralph"}));
}

// The tree `git add -A` and `git write-tree` make of the workspace `dir`, .ralph/ left out,
// through a copy of its index (made in `scratch`).
std::string git_add_all_tree(const fs::path& dir, const fs::path& scratch) {
    fs::copy_file(dir / ".git" / "index", scratch / "index", fs::copy_options::overwrite_existing);
    ::setenv("GIT_INDEX_FILE", (scratch / "index").c_str(), 1);
    git(dir, {"add", "-A", "--", ".", ":(exclude).ralph"});
    std::string tree(ralph::text::trim(git(dir, {"write-tree"})));
    ::unsetenv("GIT_INDEX_FILE");
    return tree;
}

// `git diff --numstat --find-renames` between two trees, summed up as compare() sums it.
change_stats git_numstat(const fs::path& dir, const std::string& before, const std::string& after) {
    change_stats stats;
    for (const auto& line :
         lines_of(git(dir, {"diff", "--numstat", "--find-renames", before, after}))) {
        ++stats.files_changed;
        if (line.rfind("-\t-\t", 0) == 0) continue;  // binary
        std::istringstream fields(line);
        std::int64_t added = 0, deleted = 0;
        fields >> added >> deleted;
        stats.insertions += added;
        stats.deletions += deleted;
    }
    return stats;
}

}  // namespace

TEST_CASE("workspace: a git repository without changes shows no progress") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto before = take_snapshot(repo);
    auto after = take_snapshot(repo);
    CHECK(before.is_git);
    CHECK(before.error == "");
    CHECK(before.head == head_of(repo));
    CHECK(before.tree.size() == 40);
    CHECK(before.files.empty());
    auto stats = compare(repo, before, after);
    CHECK_FALSE(stats.progress());
    CHECK(stats.files_changed == 0);
    CHECK(stats.error == "");
}

TEST_CASE("workspace: a new untracked file changes the tree and its lines are insertions") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto before = take_snapshot(repo);
    write_file(repo / "notes" / "new.md", "a\nb\nc\nd\n");
    auto after = take_snapshot(repo);
    auto stats = compare(repo, before, after);
    CHECK(stats.tree_changed);
    CHECK_FALSE(stats.head_moved);
    CHECK(stats.progress());
    CHECK(stats.files_changed == 1);
    CHECK(stats.insertions == 4);
    CHECK(stats.deletions == 0);
    // Still untracked: the snapshot staged nothing for the user.
    CHECK(git(repo, {"status", "--porcelain"}) == "?? notes/\n");
}

TEST_CASE("workspace: an agent's commit moves HEAD; stats cover its commit and uncommitted work") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto before = take_snapshot(repo);
    write_file(repo / "a.txt", "one\nTWO\nthree\n");
    git(repo, {"commit", "-q", "-am", "agent work"});
    write_file(repo / "b.txt", "x\ny\n");
    auto after = take_snapshot(repo);
    auto stats = compare(repo, before, after);
    CHECK(stats.head_moved);
    CHECK(stats.tree_changed);
    CHECK(after.head == head_of(repo));
    CHECK(stats.files_changed == 2);
    CHECK(stats.insertions == 3);
    CHECK(stats.deletions == 1);
}

TEST_CASE("workspace: a binary file counts as changed without lines") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto before = take_snapshot(repo);
    write_file(repo / "image.bin", std::string("\0\1\2\3binary\0", 11));
    auto stats = compare(repo, before, take_snapshot(repo));
    CHECK(stats.files_changed == 1);
    CHECK(stats.insertions == 0);
    CHECK(stats.deletions == 0);
}

TEST_CASE("workspace: snapshots leave the user's index and staged changes untouched") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    write_file(repo / "staged.txt", "staged\n");
    git(repo, {"add", "staged.txt"});
    write_file(repo / "a.txt", "changed but not staged\n");
    write_file(repo / "untracked.txt", "u\n");
    std::string cached = git(repo, {"diff", "--cached"});
    std::string status = git(repo, {"status", "--porcelain"});
    std::string index = read_file(repo / ".git" / "index");
    auto index_time = fs::last_write_time(repo / ".git" / "index");

    auto before = take_snapshot(repo);
    write_file(repo / "more.txt", "m\n");
    auto after = take_snapshot(repo);
    CHECK(compare(repo, before, after).files_changed == 1);

    CHECK(git(repo, {"diff", "--cached"}) == cached);
    CHECK(read_file(repo / ".git" / "index") == index);
    CHECK(fs::last_write_time(repo / ".git" / "index") == index_time);
    CHECK_FALSE(fs::exists(repo / ".git" / "index.lock"));
    CHECK(status == " M a.txt\nA  staged.txt\n?? untracked.txt\n");
    CHECK(git(repo, {"status", "--porcelain"}) ==
          " M a.txt\nA  staged.txt\n?? more.txt\n?? untracked.txt\n");
}

TEST_CASE("workspace: a repository without commits has an empty HEAD and still a tree") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo", false);
    auto empty = take_snapshot(repo);
    CHECK(empty.is_git);
    CHECK(empty.head == "");
    CHECK(empty.tree == "4b825dc642cb6eb9a060e54bf8d69288fbee4904");  // git's empty tree
    CHECK(empty.error == "");

    write_file(repo / "first.txt", "1\n2\n");
    auto with_file = take_snapshot(repo);
    auto stats = compare(repo, empty, with_file);
    CHECK(stats.tree_changed);
    CHECK_FALSE(stats.head_moved);
    CHECK(stats.insertions == 2);

    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "first"});
    auto committed = take_snapshot(repo);
    CHECK(compare(repo, with_file, committed).head_moved);
    CHECK_FALSE(compare(repo, with_file, committed).tree_changed);
}

TEST_CASE("workspace: files ignored by .gitignore and ralph's .ralph directory are not changes") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    write_file(repo / ".gitignore", "build/\n*.log\n");
    git(repo, {"add", ".gitignore"});
    git(repo, {"commit", "-q", "-m", "ignore"});
    auto before = take_snapshot(repo);
    write_file(repo / "build" / "out.o", "object");
    write_file(repo / "run.log", "log");
    write_file(repo / ".ralph" / "loop.md", "---\niteration: 2\n---\n");
    auto after = take_snapshot(repo);
    auto stats = compare(repo, before, after);
    CHECK_FALSE(stats.progress());
    CHECK(stats.files_changed == 0);
}

TEST_CASE("workspace: in a plain directory, added, modified and deleted files are detected") {
    temp_dir tmp;
    auto dir = tmp.path / "plain";
    write_file(dir / "keep.txt", "same\n");
    write_file(dir / "modify.txt", "abc\n");
    write_file(dir / "delete.txt", "gone soon\n");
    write_file(dir / "sub" / "deep.txt", "deep\n");
    auto before = take_snapshot(dir);
    CHECK_FALSE(before.is_git);
    CHECK(before.error == "");
    CHECK(before.files.size() == 4);
    CHECK(before.files.count("sub/deep.txt") == 1);
    CHECK_FALSE(before.files_truncated);

    CHECK_FALSE(compare(dir, before, take_snapshot(dir)).progress());

    write_file(dir / "modify.txt", "abd\n");  // same size and, likely, the same second
    fs::remove(dir / "delete.txt");
    write_file(dir / "sub" / "added.txt", "new\n");
    write_file(dir / ".ralph" / "notes.md", "ralph's own\n");
    write_file(dir / ".git" / "HEAD", "not a real repository\n");
    auto after = take_snapshot(dir);
    CHECK_FALSE(after.is_git);
    auto stats = compare(dir, before, after);
    CHECK(stats.tree_changed);
    CHECK_FALSE(stats.head_moved);
    CHECK(stats.files_changed == 3);
    CHECK(stats.insertions == 0);
    CHECK(stats.deletions == 0);
    CHECK(after.files.count(".ralph/notes.md") == 0);
}

TEST_CASE("workspace: a plain directory with more files than the bound is compared up to it") {
    temp_dir tmp;
    auto dir = tmp.path / "many";
    for (int i = 0; i < 15; ++i)
        write_file(dir / ("f" + std::to_string(100 + i)), std::to_string(i));
    file_limits limits;
    limits.max_files = 10;
    auto before = take_snapshot(dir, limits);
    CHECK(before.files_truncated);
    CHECK(before.files.size() == 10);
    CHECK(before.files.rbegin()->first == "f109");
    CHECK(before.error != "");

    write_file(dir / "f102", "changed");
    write_file(dir / "a-first", "a file that pushes the last one out of the bound");
    write_file(dir / "z-last", "beyond the bound: not seen");
    auto after = take_snapshot(dir, limits);
    CHECK(after.files.rbegin()->first == "f108");
    auto stats = compare(dir, before, after);
    CHECK(stats.files_changed == 2);  // f102 and a-first; f109, pushed out, is not "removed"
}

TEST_CASE("workspace: a plain directory's files are walked in the order of their paths") {
    temp_dir tmp;
    auto dir = tmp.path / "order";
    // '-' sorts before '/', '0' after it: the walk must still list keys in byte order.
    write_file(dir / "a-b", "1");
    write_file(dir / "a" / "x", "2");
    write_file(dir / "a0", "3");
    file_limits limits;
    limits.max_files = 2;
    auto snap = take_snapshot(dir, limits);
    CHECK(snap.files_truncated);
    std::vector<std::string> keys;
    for (const auto& [key, hash] : snap.files) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"a-b", "a/x"});
}

TEST_CASE("workspace: a file above the content bound is known by its size and modification time") {
    temp_dir tmp;
    auto dir = tmp.path / "large";
    write_file(dir / "big.bin", std::string(100, 'x'));
    write_file(dir / "small.txt", "s");
    file_limits limits;
    limits.max_content_size = 10;
    auto before = take_snapshot(dir, limits);
    CHECK(before.files["big.bin"].rfind("size:100:", 0) == 0);
    CHECK(before.files["small.txt"].rfind("content:", 0) == 0);
    write_file(dir / "big.bin", std::string(101, 'x'));
    CHECK(file_changed(before, take_snapshot(dir, limits), dir, "big.bin"));
}

TEST_CASE("workspace: check_dirty tells a clean work tree from one with changes") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto clean = check_dirty(repo);
    CHECK(clean.is_git);
    CHECK_FALSE(clean.dirty);
    CHECK(clean.changes.empty());
    CHECK(clean.error == "");

    write_file(repo / "a.txt", "edited\n");
    write_file(repo / "new.txt", "new\n");
    auto dirty = check_dirty(repo);
    CHECK(dirty.dirty);
    CHECK(dirty.total_changes == 2);
    CHECK(dirty.changes == std::vector<std::string>{" M a.txt", "?? new.txt"});

    for (int i = 0; i < 30; ++i) write_file(repo / ("n" + std::to_string(i)), "x");
    auto many = check_dirty(repo);
    CHECK(many.changes.size() == 20);
    CHECK(many.total_changes == 32);

    auto plain = check_dirty(tmp.path);
    CHECK_FALSE(plain.is_git);
    CHECK_FALSE(plain.dirty);
    CHECK(plain.error == "");
}

TEST_CASE("workspace: commit_all commits everything and returns the new HEAD") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    std::string old_head = head_of(repo);
    write_file(repo / "a.txt", "edited\n");
    write_file(repo / "dir" / "new.txt", "new\n");
    std::string error;
    std::string head = commit_all(repo, "ralph: iteration 3", error);
    CHECK(error == "");
    CHECK(head.size() == 40);
    CHECK(head != old_head);
    CHECK(head == head_of(repo));
    CHECK(git(repo, {"status", "--porcelain"}) == "");
    CHECK(git(repo, {"log", "-1", "--format=%s|%an <%ae>"}) ==
          "ralph: iteration 3|Test User <test@example.com>\n");
    CHECK(git(repo, {"rev-parse", "HEAD~1"}) == old_head + "\n");

    std::string same = commit_all(repo, "nothing", error);
    CHECK(error == "");
    CHECK(same == head);
    CHECK(head_of(repo) == head);
}

TEST_CASE("workspace: commit_all uses ralph's identity only when the repository has none") {
    temp_dir tmp;
    auto repo = tmp.path / "anonymous";
    fs::create_directories(repo);
    git(repo, {"-c", "init.defaultBranch=main", "init", "-q"});
    std::string error;
    CHECK(commit_all(repo, "empty", error) == "");  // no commits and nothing to commit
    CHECK(error == "");

    write_file(repo / "a.txt", "a\n");
    std::string head = commit_all(repo, "first", error);
    CHECK(error == "");
    CHECK(head == head_of(repo));
    CHECK(git(repo, {"log", "-1", "--format=%an <%ae>|%cn <%ce>"}) ==
          "ralph <ralph@localhost>|ralph <ralph@localhost>\n");

    auto plain = tmp.path / "plain";
    fs::create_directories(plain);
    CHECK(commit_all(plain, "no", error) == "");
    CHECK(error != "");
}

TEST_CASE("workspace: file_changed tells whether the specs file changed") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto plain = tmp.path / "plain";
    for (const auto& dir : {repo, plain}) {
        CAPTURE(dir);
        write_file(dir / "SPECS.md", "- [ ] one\n- [ ] two\n");
        write_file(dir / "docs" / "plan.md", "plan\n");
        auto s0 = take_snapshot(dir);
        write_file(dir / "other.txt", "unrelated\n");
        auto s1 = take_snapshot(dir);
        CHECK_FALSE(file_changed(s0, s1, dir, "SPECS.md"));
        write_file(dir / "SPECS.md", "- [x] one\n- [ ] two\n");
        auto s2 = take_snapshot(dir);
        CHECK(file_changed(s1, s2, dir, "SPECS.md"));
        CHECK(file_changed(s1, s2, dir, "./SPECS.md"));
        CHECK(file_changed(s1, s2, dir, (dir / "SPECS.md").string()));
        CHECK_FALSE(file_changed(s1, s2, dir, "docs/plan.md"));
        fs::remove(dir / "docs" / "plan.md");
        auto s3 = take_snapshot(dir);
        CHECK(file_changed(s2, s3, dir, "docs/plan.md"));
        CHECK_FALSE(file_changed(s2, s3, dir, "missing.md"));
        CHECK_FALSE(file_changed(s2, s3, dir, "../outside.md"));
    }
}

TEST_CASE("workspace: a path with spaces and unicode works") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "my wörk spåce ✓");
    auto before = take_snapshot(repo);
    CHECK(before.error == "");
    write_file(repo / "spëc file.md", "é\n");
    auto after = take_snapshot(repo);
    auto stats = compare(repo, before, after);
    CHECK(stats.files_changed == 1);
    CHECK(stats.insertions == 1);
    CHECK(file_changed(before, after, repo, "spëc file.md"));
    auto dirty = check_dirty(repo);
    CHECK(dirty.changes == std::vector<std::string>{"?? \"spëc file.md\""});
    std::string error;
    std::string head = commit_all(repo, "ünïcode", error);
    CHECK(error == "");
    CHECK(head == head_of(repo));
    CHECK(git(repo, {"log", "-1", "--format=%s"}) == "ünïcode\n");

    auto plain = tmp.path / "plain dïr";
    write_file(plain / "ä b.txt", "x");
    auto plain_before = take_snapshot(plain);
    CHECK(plain_before.files.count("ä b.txt") == 1);
    write_file(plain / "ä b.txt", "y");
    CHECK(file_changed(plain_before, take_snapshot(plain), plain, "ä b.txt"));
}

TEST_CASE("workspace: a workspace in a subdirectory of a work tree covers only that subdirectory") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto sub = repo / "packages" / "tool";
    write_file(sub / "main.c", "int main;\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "tool"});
    auto before = take_snapshot(sub);
    CHECK(before.is_git);
    write_file(repo / "outside.txt", "not the workspace's\n");
    CHECK_FALSE(compare(sub, before, take_snapshot(sub)).progress());
    CHECK(check_dirty(sub).dirty == false);

    write_file(sub / "main.c", "int main(void);\n");
    auto after = take_snapshot(sub);
    auto stats = compare(sub, before, after);
    CHECK(stats.files_changed == 1);
    CHECK(file_changed(before, after, sub, "main.c"));

    std::string error;
    std::string head = commit_all(sub, "tool only", error);
    CHECK(error == "");
    CHECK(git(repo, {"show", "--name-only", "--format=", "HEAD"}) == "packages/tool/main.c\n");
    CHECK(git(repo, {"status", "--porcelain"}) == "?? outside.txt\n");
}

TEST_CASE("workspace: a linked worktree is snapshotted through its own index") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto worktree = tmp.path / "wt";
    git(repo, {"worktree", "add", "-q", "-b", "loop", worktree.string()});
    auto before = take_snapshot(worktree);
    CHECK(before.is_git);
    CHECK(before.error == "");
    write_file(worktree / "w.txt", "w\n");
    auto stats = compare(worktree, before, take_snapshot(worktree));
    CHECK(stats.files_changed == 1);
    CHECK_FALSE(compare(repo, take_snapshot(repo), take_snapshot(repo)).progress());
}

TEST_CASE("workspace: several workspaces can be snapshotted at once on different threads") {
    temp_dir tmp;
    std::vector<fs::path> repos;
    for (int i = 0; i < 4; ++i) {
        repos.push_back(make_repo(tmp.path / ("repo" + std::to_string(i))));
        write_file(repos.back() / "new.txt", std::string(std::size_t(i + 1), '\n'));
    }
    std::vector<snapshot> before(repos.size()), after(repos.size());
    for (std::size_t i = 0; i < repos.size(); ++i) before[i] = take_snapshot(repos[i]);
    std::vector<std::thread> threads;
    std::vector<change_stats> stats(repos.size());
    for (std::size_t i = 0; i < repos.size(); ++i) {
        threads.emplace_back([&, i] {
            for (int round = 0; round < 3; ++round) after[i] = take_snapshot(repos[i]);
            stats[i] = compare(repos[i], before[i], after[i]);
        });
    }
    for (auto& thread : threads) thread.join();
    for (std::size_t i = 0; i < repos.size(); ++i) {
        CAPTURE(i);
        CHECK(after[i].error == "");
        CHECK(stats[i].error == "");
        CHECK_FALSE(stats[i].progress());
    }
    write_file(repos[2] / "new.txt", "changed\n");
    CHECK(compare(repos[2], before[2], take_snapshot(repos[2])).insertions == 1);
}

TEST_CASE(
    "workspace: without git on PATH a repository is still snapshotted, checked and committed") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", tmp.path.c_str(), 1);
    auto before = take_snapshot(repo);
    write_file(repo / "b.txt", "b\n");
    auto after = take_snapshot(repo);
    auto stats = compare(repo, before, after);
    auto dirty = check_dirty(repo);
    std::string error;
    std::string head = commit_all(repo, "no git", error);
    ::setenv("PATH", saved_path.c_str(), 1);
    CHECK(after.is_git);
    CHECK(after.error == "");
    CHECK(stats.files_changed == 1);
    CHECK(dirty.is_git);
    CHECK(dirty.changes == std::vector<std::string>{"?? b.txt"});
    CHECK(error == "");
    CHECK(head == head_of(repo));
}

TEST_CASE("workspace: GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE of the environment are not read") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto other = make_repo(tmp.path / "other");
    write_file(repo / "b.txt", "b\n");
    ::setenv("GIT_DIR", (other / ".git").c_str(), 1);
    ::setenv("GIT_WORK_TREE", other.c_str(), 1);
    ::setenv("GIT_INDEX_FILE", (tmp.path / "no-index").c_str(), 1);
    auto snap = take_snapshot(repo);
    auto dirty = check_dirty(repo);
    ::unsetenv("GIT_DIR");
    ::unsetenv("GIT_WORK_TREE");
    ::unsetenv("GIT_INDEX_FILE");
    CHECK(snap.head == head_of(repo));
    CHECK(snap.error == "");
    CHECK(dirty.changes == std::vector<std::string>{"?? b.txt"});
}

TEST_CASE("workspace: a subdirectory's repository is found with its top, prefix and HEAD") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    fs::create_directories(repo / "sub" / "dir");
    auto top = inspect_repository(repo);
    CHECK(top.is_git);
    CHECK(top.error.empty());
    CHECK(fs::equivalent(top.top, repo));
    CHECK(top.prefix.empty());
    CHECK(top.head == head_of(repo));
    auto sub = inspect_repository(repo / "sub" / "dir");
    CHECK(sub.is_git);
    CHECK(fs::equivalent(sub.top, repo));
    CHECK(sub.prefix == "sub/dir");

    CHECK_FALSE(inspect_repository(tmp.path).is_git);
    auto empty = inspect_repository(make_repo(tmp.path / "empty", false));
    CHECK(empty.is_git);
    CHECK(empty.head.empty());
    CHECK(empty.error.empty());
}

TEST_CASE(
    "workspace: a worktree gets a new branch from the base commit; the checkout is untouched") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const std::string base = head_of(repo);
    // The user's uncommitted and staged work stays where it is.
    write_file(repo / "a.txt", "changed\n");
    write_file(repo / "staged.txt", "staged\n");
    git(repo, {"add", "staged.txt"});
    const std::string status = git(repo, {"status", "--porcelain"});
    std::string error;
    CHECK_FALSE(has_branch(repo, "ralph/loop-1", error));
    CHECK(error.empty());

    auto tree = tmp.path / "worktrees" / "loop-1";
    CHECK(add_worktree(repo, tree, "ralph/loop-1", base) == "");
    CHECK(has_branch(repo, "ralph/loop-1", error));
    CHECK(head_of(tree) == base);
    CHECK(ralph::text::trim(git(tree, {"rev-parse", "--abbrev-ref", "HEAD"})) == "ralph/loop-1");
    CHECK(read_file(tree / "a.txt") == "one\ntwo\nthree\n");
    CHECK_FALSE(fs::exists(tree / "staged.txt"));
    CHECK(git(tree, {"status", "--porcelain"}).empty());
    CHECK(git(repo, {"status", "--porcelain"}) == status);
    CHECK(ralph::text::trim(git(repo, {"rev-parse", "--abbrev-ref", "HEAD"})) == "main");

    // A commit in the worktree moves its branch only.
    write_file(tree / "b.txt", "new\n");
    git(tree, {"add", "b.txt"});
    git(tree, {"commit", "-q", "-m", "loop work"});
    CHECK(head_of(repo) == base);
    CHECK(ralph::text::trim(git(repo, {"rev-parse", "ralph/loop-1"})) == head_of(tree));

    // Made already: nothing to do. Removed by hand: made again on the branch, with its work.
    CHECK(add_worktree(repo, tree, "ralph/loop-1", base) == "");
    git(repo, {"worktree", "remove", "--force", tree.string()});
    CHECK(add_worktree(repo, tree, "ralph/loop-1", base) == "");
    CHECK(read_file(tree / "b.txt") == "new\n");
}

TEST_CASE("workspace: a worktree that cannot be made says why") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    std::string error =
        add_worktree(repo, tmp.path / "tree", "ralph/loop-1", "0123456789abcdef0123");
    CHECK_FALSE(error.empty());
    CHECK(error.find("git worktree") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path / "tree" / ".git"));
}

TEST_CASE(
    "workspace: the git directory of a work tree, also of a linked worktree and a subdirectory") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    fs::create_directories(repo / "sub" / "dir");
    const fs::path git_dir = fs::canonical(repo / ".git");
    for (const fs::path& dir : {repo, repo / "sub" / "dir"}) {
        const git_directories found = find_git_directories(dir);
        CHECK(fs::canonical(found.git_dir) == git_dir);
        CHECK(fs::canonical(found.common_dir) == git_dir);
    }
    auto tree = tmp.path / "worktrees" / "loop-1";
    REQUIRE(add_worktree(repo, tree, "ralph/loop-1", head_of(repo)) == "");
    const git_directories linked = find_git_directories(tree);
    CHECK(fs::canonical(linked.common_dir) == git_dir);
    CHECK(fs::canonical(linked.git_dir) == git_dir / "worktrees" / "loop-1");
    fs::create_directories(tmp.path / "plain");
    CHECK(find_git_directories(tmp.path / "plain").git_dir.empty());
}

TEST_CASE("workspace: check_dirty's lines are those of git status --porcelain") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    write_file(repo / "b.txt", "b\n");
    write_file(repo / "c.txt", "c\n");
    write_file(repo / "d.txt", "d\n");
    write_file(repo / "conflict.txt", "base\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "more"});
    // An unmerged path: both sides changed it.
    git(repo, {"checkout", "-q", "-b", "other"});
    write_file(repo / "conflict.txt", "theirs\n");
    git(repo, {"commit", "-q", "-am", "theirs"});
    git(repo, {"checkout", "-q", "main"});
    write_file(repo / "conflict.txt", "ours\n");
    git(repo, {"commit", "-q", "-am", "ours"});
    CHECK(run_git(repo, {"merge", "-q", "other"}).status != 0);
    // Staged, unstaged, both, deleted, a staged rename, untracked files and a directory.
    write_file(repo / "a.txt", "staged\n");
    git(repo, {"add", "a.txt"});
    write_file(repo / "a.txt", "staged, then changed again\n");
    write_file(repo / "b.txt", "unstaged\n");
    fs::remove(repo / "c.txt");
    git(repo, {"mv", "d.txt", "renamed.txt"});
    write_file(repo / "with space.txt", "s\n");
    write_file(repo / "quote\"d.txt", "q\n");
    write_file(repo / "new dir" / "x.txt", "x\n");
    write_file(repo / ".ralph" / "loop.md", "ralph's own\n");
    auto expected = git_status(repo);
    auto state = check_dirty(repo);
    CHECK(state.error == "");
    CHECK(state.changes == expected);
    CHECK(state.total_changes == expected.size());
}

TEST_CASE("workspace: in a subdirectory, check_dirty's lines are those of git status -- .") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto sub = repo / "packages" / "tool";
    // Nothing of it tracked yet: one line for the whole workspace.
    write_file(sub / "main.c", "int main;\n");
    write_file(sub / "deep" / "more.c", "more\n");
    write_file(sub / ".ralph" / "loop.md", "ralph's own\n");
    write_file(repo / "packages" / "other" / "o.c", "not the workspace's\n");
    CHECK(git_status(sub) == std::vector<std::string>{"?? packages/tool/"});
    CHECK(check_dirty(sub).changes == git_status(sub));

    git(repo, {"add", "packages/tool/main.c"});
    git(repo, {"commit", "-q", "-m", "tool"});
    write_file(sub / "main.c", "int main(void);\n");
    write_file(sub / "deep" / "deeper" / "x.c", "x\n");
    write_file(repo / "a.txt", "changed outside\n");
    auto state = check_dirty(sub);
    CHECK(state.changes == git_status(sub));
    CHECK(state.changes ==
          std::vector<std::string>{" M packages/tool/main.c", "?? packages/tool/deep/"});
}

TEST_CASE("workspace: a snapshot's tree is the one git add -A and write-tree make") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    write_file(repo / ".gitignore", "*.log\nbuild/\n");
    write_file(repo / "tool.sh", "#!/bin/sh\n");
    write_file(repo / "gone.txt", "soon deleted\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "more"});
    // Staged, modified, deleted, executable, a link, ignored, untracked, ralph's own.
    write_file(repo / "staged.txt", "staged\n");
    git(repo, {"add", "staged.txt"});
    write_file(repo / "a.txt", "modified\n");
    fs::remove(repo / "gone.txt");
    fs::permissions(repo / "tool.sh", fs::perms::owner_exec, fs::perm_options::add);
    fs::create_symlink("a.txt", repo / "link");
    write_file(repo / "run.log", "ignored\n");
    write_file(repo / "build" / "out.o", "ignored\n");
    write_file(repo / "new" / "deep" / "file.txt", "untracked\n");
    write_file(repo / ".ralph" / "notes.md", "ralph's own\n");
    auto snap = take_snapshot(repo);
    CHECK(snap.error == "");
    CHECK(snap.tree == git_add_all_tree(repo, tmp.path));
}

TEST_CASE("workspace: diff statistics are those of git diff --numstat between the snapshots") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    std::string long_text;
    for (int i = 0; i < 50; ++i) long_text += "line " + std::to_string(i) + "\n";
    write_file(repo / "long.txt", long_text);
    write_file(repo / "gone.txt", "1\n2\n3\n");
    write_file(repo / "image.bin", std::string("\0\1\2", 3));
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "files"});
    auto before = take_snapshot(repo);
    // A rename with an edit, a deletion, a binary change, new lines, a new file.
    fs::remove(repo / "long.txt");
    write_file(repo / "moved" / "long.txt", long_text + "one more\n");
    fs::remove(repo / "gone.txt");
    write_file(repo / "image.bin", std::string("\0\1\2\3", 4));
    write_file(repo / "a.txt", "one\ntwo\nthree\nfour\n");
    write_file(repo / "new.txt", "n\n");
    auto after = take_snapshot(repo);
    auto stats = compare(repo, before, after);
    CHECK(stats.error == "");
    auto expected = git_numstat(repo, before.tree, after.tree);
    CHECK(expected.files_changed == 5);
    CHECK(stats.files_changed == expected.files_changed);
    CHECK(stats.insertions == expected.insertions);
    CHECK(stats.deletions == expected.deletions);
}

TEST_CASE(
    "workspace: submodules and repositories of their own are staged, shown and committed as git "
    "does") {
    temp_dir tmp;
    auto library = make_repo(tmp.path / "library");
    auto repo = make_repo(tmp.path / "repo");
    git(repo, {"-c", "protocol.file.allow=always", "submodule", "add", "-q", library.string(),
               "libs/library"});
    git(repo, {"commit", "-q", "-m", "submodule"});
    auto before = take_snapshot(repo);
    CHECK(before.error == "");
    CHECK(before.tree == git_add_all_tree(repo, tmp.path));
    CHECK_FALSE(check_dirty(repo).dirty);

    // The agent commits in the submodule and clones a repository of its own into the workspace.
    auto submodule = repo / "libs" / "library";
    write_file(submodule / "a.txt", "changed in the submodule\n");
    git(submodule, {"-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q",
                    "-am", "in the submodule"});
    make_repo(repo / "vendor" / "tool");
    auto after = take_snapshot(repo);
    CHECK(after.error == "");
    CHECK(after.tree == git_add_all_tree(repo, tmp.path));
    auto stats = compare(repo, before, after);
    auto expected = git_numstat(repo, before.tree, after.tree);
    CHECK(stats.files_changed == 2);
    CHECK(stats.files_changed == expected.files_changed);
    CHECK(stats.insertions == expected.insertions);
    CHECK(stats.deletions == expected.deletions);
    auto dirty = check_dirty(repo);
    CHECK(dirty.changes == git_status(repo));
    CHECK(dirty.changes == std::vector<std::string>{" M libs/library", "?? vendor/"});

    std::string error;
    commit_all(repo, "the submodule's commit and the new repository", error);
    CHECK(error == "");
    CHECK(ralph::text::trim(git(repo, {"rev-parse", "HEAD:libs/library"})) == head_of(submodule));
    CHECK(ralph::text::trim(git(repo, {"rev-parse", "HEAD:vendor/tool"})) ==
          head_of(repo / "vendor" / "tool"));
}

TEST_CASE(
    "workspace: a repository of format version 1 is not opened: its workspace is plain files") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    git(repo, {"config", "core.repositoryformatversion", "1"});
    git(repo, {"config", "extensions.worktreeConfig", "true"});
    auto linked = tmp.path / "linked";
    git(repo, {"worktree", "add", "-q", "-b", "linked", linked.string()});
    for (const auto& dir : {repo, linked}) {
        CAPTURE(dir);
        auto before = take_snapshot(dir);
        CHECK_FALSE(before.is_git);
        CHECK(before.error.find("format version is 1") != std::string::npos);
        CHECK(before.files.count("a.txt") == 1);
        write_file(dir / "b.txt", "b\n");
        CHECK(compare(dir, before, take_snapshot(dir)).files_changed == 1);
        auto dirty = check_dirty(dir);
        CHECK_FALSE(dirty.is_git);
        CHECK(dirty.error.find("format version is 1") != std::string::npos);
        std::string error;
        CHECK(commit_all(dir, "not committed", error) == "");
        CHECK(error.find("format version is 1") != std::string::npos);
    }
}

TEST_CASE(
    "workspace: commit_all in a subdirectory commits its deletions; the user's staging elsewhere "
    "stays") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto sub = repo / "sub";
    write_file(sub / "keep.txt", "k\n");
    write_file(sub / "remove.txt", "r\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "sub"});
    write_file(repo / "staged.txt", "the user's\n");
    git(repo, {"add", "staged.txt"});
    fs::remove(sub / "remove.txt");
    write_file(sub / "keep.txt", "k2\n");
    std::string error;
    std::string head = commit_all(sub, "sub only", error);
    CHECK(error == "");
    CHECK(head == head_of(repo));
    CHECK(git(repo, {"show", "--name-status", "--format=", "HEAD"}) ==
          "M\tsub/keep.txt\nD\tsub/remove.txt\n");
    CHECK(git(repo, {"status", "--porcelain"}) == "A  staged.txt\n");
}

TEST_CASE("workspace: a skip-worktree file missing from the disk is neither a change nor deleted") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    write_file(repo / "sparse.txt", "not checked out\n");
    git(repo, {"add", "sparse.txt"});
    git(repo, {"commit", "-q", "-m", "sparse"});
    git(repo, {"update-index", "--skip-worktree", "sparse.txt"});
    fs::remove(repo / "sparse.txt");
    CHECK(git(repo, {"status", "--porcelain"}) == "");  // what git says of it
    auto before = take_snapshot(repo);
    CHECK_FALSE(check_dirty(repo).dirty);
    write_file(repo / "new.txt", "n\n");
    CHECK(compare(repo, before, take_snapshot(repo)).files_changed == 1);
    std::string error;
    commit_all(repo, "new only", error);
    CHECK(error == "");
    CHECK(git(repo, {"show", "--name-status", "--format=", "HEAD"}) == "A\tnew.txt\n");
}

TEST_CASE("workspace: commit_all takes the identity from the user's git configuration") {
    temp_dir tmp;
    auto repo = tmp.path / "repo";
    fs::create_directories(repo);
    git(repo, {"-c", "init.defaultBranch=main", "init", "-q"});
    write_file(tmp.path / "home" / ".gitconfig",
               "[user]\n\tname = Global User\n\temail = global@example.com\n");
    set_git_config_search_path((tmp.path / "home").string());
    write_file(repo / "a.txt", "a\n");
    std::string error;
    commit_all(repo, "as the user", error);
    set_git_config_search_path("/dev/null");
    CHECK(error == "");
    CHECK(git(repo, {"log", "-1", "--format=%an <%ae>|%cn <%ce>"}) ==
          "Global User <global@example.com>|Global User <global@example.com>\n");
}

// ---- Nothing the repository names is run (issue 19): each program below creates a marker file
// when run. git itself, on the same set-up, shows first that it would run it.

// The control: git ran the marker program. The marker is removed for the code under test.
void require_ran(const fs::path& marker) {
    REQUIRE(fs::exists(marker));
    fs::remove(marker);
}

TEST_CASE("workspace: a core.fsmonitor program is not run by snapshots or the dirty check") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const fs::path marker = tmp.path / "ran";
    write_marker_program(tmp.path / "fsmonitor", marker);
    git(repo, {"config", "core.fsmonitor", (tmp.path / "fsmonitor").string()});
    write_file(repo / "b.txt", "b\n");
    run_git(repo, {"status", "--porcelain"});
    require_ran(marker);

    auto before = take_snapshot(repo);
    write_file(repo / "c.txt", "c\n");
    auto after = take_snapshot(repo);
    CHECK(compare(repo, before, after).files_changed == 1);
    CHECK(check_dirty(repo).total_changes == 2);
    CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("workspace: commit_all runs no hook, neither from .git/hooks nor from core.hooksPath") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const fs::path marker = tmp.path / "ran";
    for (const char* hook : {"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"}) {
        write_marker_program(repo / ".git" / "hooks" / hook, marker);
        write_marker_program(tmp.path / "hooks" / hook, marker);
    }
    for (bool hooks_path : {false, true}) {
        CAPTURE(hooks_path);
        if (hooks_path) git(repo, {"config", "core.hooksPath", (tmp.path / "hooks").string()});
        git(repo, {"commit", "-q", "--allow-empty", "-m", "git runs them"});
        require_ran(marker);
        write_file(repo / (hooks_path ? "c.txt" : "b.txt"), "work\n");
        std::string error;
        std::string head = commit_all(repo, "no hooks", error);
        CHECK(error == "");
        CHECK(head == head_of(repo));
        CHECK_FALSE(fs::exists(marker));
    }
}

TEST_CASE("workspace: a clean filter driver is not run by snapshots, the dirty check or commits") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const fs::path marker = tmp.path / "ran";
    write_marker_program(tmp.path / "filter", marker);
    git(repo, {"config", "filter.x.clean", (tmp.path / "filter").string()});
    git(repo, {"config", "filter.x.smudge", (tmp.path / "filter").string()});
    write_file(repo / ".gitattributes", "*.txt filter=x\n");
    write_file(repo / "b.txt", "as it is on disk\n");
    git(repo, {"hash-object", "b.txt"});
    require_ran(marker);

    auto before = take_snapshot(repo);
    write_file(repo / "b.txt", "changed on disk\n");
    auto after = take_snapshot(repo);
    CHECK(compare(repo, before, after).files_changed == 1);
    CHECK(check_dirty(repo).dirty);
    std::string error;
    commit_all(repo, "unfiltered", error);
    CHECK(error == "");
    CHECK_FALSE(fs::exists(marker));
    CHECK(git(repo, {"cat-file", "blob", "HEAD:b.txt"}) == "changed on disk\n");
}

TEST_CASE("workspace: commit.gpgSign does not make commit_all run gpg.program") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const fs::path marker = tmp.path / "ran";
    write_marker_program(tmp.path / "gpg", marker);
    git(repo, {"config", "commit.gpgSign", "true"});
    git(repo, {"config", "gpg.program", (tmp.path / "gpg").string()});
    CHECK(run_git(repo, {"commit", "-q", "--allow-empty", "-m", "signed"}).status != 0);
    require_ran(marker);

    write_file(repo / "b.txt", "b\n");
    std::string error;
    std::string head = commit_all(repo, "unsigned", error);
    CHECK(error == "");
    CHECK(head == head_of(repo));
    CHECK_FALSE(fs::exists(marker));
    CHECK(git(repo, {"cat-file", "commit", "HEAD"}).find("gpgsig") == std::string::npos);
}

TEST_CASE("workspace: add_worktree runs no post-checkout hook") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const fs::path marker = tmp.path / "ran";
    write_marker_program(repo / ".git" / "hooks" / "post-checkout", marker);
    git(repo, {"worktree", "add", "-q", "-b", "control", (tmp.path / "control").string()});
    require_ran(marker);

    auto tree = tmp.path / "worktrees" / "loop-1";
    CHECK(add_worktree(repo, tree, "ralph/loop-1", head_of(repo)) == "");
    CHECK(read_file(tree / "a.txt") == "one\ntwo\nthree\n");
    CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("workspace: a git directory that leads out of itself is not used, nor written through") {
    temp_dir tmp;
    const fs::path outside = tmp.path / "outside";
    fs::create_directories(outside);
    write_file(outside / "reflog", "untouched\n");
    auto plant = [&](const std::string& name, auto make) {
        auto repo = make_repo(tmp.path / name);
        make(repo);
        write_file(repo / "b.txt", "work\n");
        snapshot snap = take_snapshot(repo);
        CHECK_FALSE(snap.is_git);  // a snapshot of the files instead
        CHECK_MESSAGE(snap.refused != "", name);
        CHECK(snap.files.count("b.txt") == 1);
        std::string error;
        CHECK(commit_all(repo, "work", error) == "");
        CHECK(error.find("refusing to use the git repository") != std::string::npos);
        CHECK(check_dirty(repo).error.find("refusing") != std::string::npos);
        return snap.refused;
    };
    // A reflog that is a link: libgit2 would rewrite its target at a commit.
    CHECK(plant("reflog", [&](const fs::path& repo) {
              fs::remove(repo / ".git" / "logs" / "HEAD");
              fs::create_symlink(outside / "reflog", repo / ".git" / "logs" / "HEAD");
          }).find("logs/HEAD") != std::string::npos);
    // An object directory that is a link: loose objects would be written there.
    plant("objects", [&](const fs::path& repo) {
        for (int i = 0; i < 256; ++i) {
            char name[3];
            std::snprintf(name, sizeof name, "%02x", i);
            if (!fs::exists(repo / ".git" / "objects" / name))
                fs::create_directory_symlink(outside, repo / ".git" / "objects" / name);
        }
    });
    // A commondir: another directory's objects, refs and configuration.
    auto other = make_repo(tmp.path / "other");
    const std::string other_head = head_of(other);
    CHECK(plant("commondir", [&](const fs::path& repo) {
              write_file(repo / ".git" / "commondir", (other / ".git").string() + "\n");
          }).find("commondir") != std::string::npos);
    CHECK(head_of(other) == other_head);
    // Nothing was written outside.
    CHECK(read_file(outside / "reflog") == "untouched\n");
    CHECK(std::distance(fs::directory_iterator(outside), fs::directory_iterator()) == 1);
    // A link below more directories than git nests: refused without walking down to it.
    CHECK(plant("deep", [&](const fs::path& repo) {
              fs::path deep = repo / ".git" / "refs";
              for (int i = 0; i < 70; ++i) deep /= "d";
              fs::create_directories(deep);
              fs::create_symlink(outside / "reflog", deep / "link");
          }).find("deeper than 64 levels") != std::string::npos);
    // .git itself a link.
    plant("dot-git-link", [&](const fs::path& repo) {
        fs::rename(repo / ".git", tmp.path / "moved-git");
        fs::create_directory_symlink(tmp.path / "moved-git", repo / ".git");
    });

    // A linked worktree is git's own layout: used.
    auto repo = make_repo(tmp.path / "main");
    auto tree = tmp.path / "worktrees" / "loop-1";
    REQUIRE(add_worktree(repo, tree, "ralph/loop-1", head_of(repo)) == "");
    write_file(tree / "b.txt", "work\n");
    CHECK(take_snapshot(tree).is_git);
    std::string error;
    CHECK(commit_all(tree, "work", error) != "");
    CHECK(error == "");
}

TEST_CASE("workspace: a link among the loose objects stops what writes, not what only reads") {
    temp_dir tmp;
    write_file(tmp.path / "outside", "untouched\n");
    const auto written_at = fs::last_write_time(tmp.path / "outside");
    auto repo = make_repo(tmp.path / "repo");
    fs::create_directories(repo / ".git" / "objects" / "ab");
    fs::create_symlink(tmp.path / "outside",
                       repo / ".git" / "objects" / "ab" / std::string(38, 'c'));
    // The dirty check and a repository's description read: they do not look among the loose
    // objects (the reason is at git_access in repository_safety.hpp).
    const dirty_state dirty = check_dirty(repo);
    CHECK(dirty.is_git);
    CHECK(dirty.error == "");
    CHECK_FALSE(dirty.dirty);
    CHECK(inspect_repository(repo).head == head_of(repo));
    // A snapshot and a commit write objects: refused, the link named.
    write_file(repo / "b.txt", "work\n");
    const snapshot snap = take_snapshot(repo);
    CHECK_FALSE(snap.is_git);
    CHECK(snap.refused.find("objects/ab/cccc") != std::string::npos);
    std::string error;
    CHECK(commit_all(repo, "work", error) == "");
    CHECK(error.find("objects/ab/cccc") != std::string::npos);
    CHECK(read_file(tmp.path / "outside") == "untouched\n");
    CHECK(fs::last_write_time(tmp.path / "outside") == written_at);

    // What is read through such a link is checked against the object's id: HEAD's tree made a
    // link to the file of another valid tree (one with a file more) is an error, never an answer
    // built from the wrong tree.
    auto forged = make_repo(tmp.path / "forged");
    const auto object_file = [&forged](const std::vector<std::string>& args) {
        const std::string id(ralph::text::trim(git(forged, args)));
        return forged / ".git" / "objects" / id.substr(0, 2) / id.substr(2);
    };
    const fs::path tree = object_file({"rev-parse", "HEAD^{tree}"});
    write_file(forged / "b.txt", "more\n");
    git(forged, {"add", "b.txt"});
    const fs::path other_tree = object_file({"write-tree"});
    git(forged, {"rm", "-q", "--cached", "b.txt"});
    fs::remove(forged / "b.txt");
    REQUIRE(fs::exists(tree));
    REQUIRE(fs::exists(other_tree));
    fs::remove(tree);
    fs::create_symlink(other_tree, tree);
    const dirty_state forged_dirty = check_dirty(forged);
    CHECK(forged_dirty.error != "");
    CHECK(forged_dirty.error.find("refusing") == std::string::npos);  // read, then rejected
}

TEST_CASE("workspace: a FIFO planted where libgit2 reads a file does not hold it forever") {
    const ralph::fifo_open_breaker breaker(std::chrono::milliseconds(200));
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const auto plant = [](const fs::path& path) {
        fs::remove(path);
        REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
    };
    const auto quickly = [started = std::chrono::steady_clock::now()] {
        return std::chrono::steady_clock::now() - started < std::chrono::seconds(5);
    };
    // A .gitignore, which the status of the dirty check reads: libgit2 goes on without it.
    fs::create_directory(repo / "sub");
    write_file(repo / "sub" / "a.txt", "a\n");
    plant(repo / "sub" / ".gitignore");
    const dirty_state dirty = check_dirty(repo);
    CHECK(quickly());
    CHECK(dirty.dirty);
    // The repository's configuration, which everything reads.
    plant(repo / ".git" / "config");
    const snapshot snap = take_snapshot(repo);
    CHECK(quickly());
    CHECK(snap.tree == "");
    CHECK(snap.error.find(".git/config") != std::string::npos);
    CHECK(snap.error.find("nterrupted") != std::string::npos);
}

TEST_CASE("workspace: a FIFO in every directory holds the dirty check up once, not once each") {
    const ralph::fifo_open_breaker breaker(std::chrono::milliseconds(200));
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    constexpr int directories = 80;
    for (int i = 0; i < directories; ++i) {
        const fs::path dir = repo / ("d" + std::to_string(i));
        fs::create_directory(dir);
        write_file(dir / "a.txt", "a\n");
        REQUIRE(::mkfifo((dir / ".gitignore").c_str(), 0644) == 0);
    }
    const auto started = std::chrono::steady_clock::now();
    const dirty_state dirty = check_dirty(repo);
    // One patience, then each further FIFO interrupted within 10 ms, not at the breaker's next
    // regular look (every 50 ms here, every second in ralphd): 4 s and more.
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(2500));
    CHECK(dirty.dirty);
    CHECK(dirty.total_changes == directories);
}

// ---- the judge's diff and throw-away checkout

TEST_CASE("workspace: diff_snapshots gives git diff's changes between the snapshots, cut whole") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    write_file(repo / "gone.txt", "1\n2\n3\n");
    write_file(repo / "kept.txt", "same\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "files"});
    auto before = take_snapshot(repo);
    fs::remove(repo / "gone.txt");
    write_file(repo / "a.txt", "one\ntwo\nfour\n");  // make_repo's: one, two, three
    write_file(repo / ".ralph" / "notes.md", "ralph's own\n");
    auto after = take_snapshot(repo);

    const patch_text patch = diff_snapshots(repo, before, after, 1 << 20);
    CHECK(patch.error == "");
    CHECK_FALSE(patch.cut);
    // The changed lines and hunks are git's (its index lines abbreviate ids their own way).
    auto changes = [](const std::string& text) {
        std::vector<std::string> kept;
        for (auto& line : lines_of(text))
            if (line.rfind("index ", 0) != 0) kept.push_back(line);
        return kept;
    };
    CHECK(changes(patch.text) ==
          changes(git(repo, {"diff", "--find-renames", before.tree, after.tree})));
    INFO(patch.text);
    CHECK(patch.text.find("-three\n+four\n") != std::string::npos);
    CHECK(patch.text.find("-3\n") != std::string::npos);
    CHECK(patch.text.find(".ralph") == std::string::npos);
    CHECK(patch.text.find("kept.txt") == std::string::npos);

    const patch_text cut = diff_snapshots(repo, before, after, 60);
    CHECK(cut.cut);
    CHECK(cut.error == "");
    CHECK(cut.text.size() <= 60);
    CHECK(patch.text.rfind(cut.text, 0) == 0);
    CHECK((cut.text.empty() || cut.text.back() == '\n'));

    CHECK(diff_snapshots(repo, before, take_snapshot(tmp.path), 1 << 20).error != "");
}

TEST_CASE("workspace: check_out_snapshot writes the workspace's files, touching nothing of git") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto sub = repo / "tool";
    write_file(sub / "committed.txt", "committed\n");
    write_file(repo / "outside.txt", "not the workspace's\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "files"});
    // A smudge filter that must not run, staged and uncommitted work that must be there.
    const fs::path marker = tmp.path / "ran";
    write_marker_program(tmp.path / "filter", marker);
    git(repo, {"config", "filter.x.smudge", (tmp.path / "filter").string()});
    write_file(sub / ".gitattributes", "*.txt filter=x\n");
    write_file(sub / "staged.txt", "staged\n");
    git(repo, {"add", "tool/staged.txt"});
    write_file(sub / "committed.txt", "changed\n");
    write_file(sub / "deep" / "untracked.txt", "untracked\n");
    const std::string status = git(repo, {"status", "--porcelain"});
    const std::string index = read_file(repo / ".git" / "index");

    const fs::path target = tmp.path / "judge";
    write_file(target / "stale.txt", "from an earlier checkout\n");
    CHECK(check_out_snapshot(sub, take_snapshot(sub), target) == "");
    CHECK(read_file(target / "committed.txt") == "changed\n");
    CHECK(read_file(target / "staged.txt") == "staged\n");
    CHECK(read_file(target / "deep" / "untracked.txt") == "untracked\n");
    CHECK_FALSE(fs::exists(target / "outside.txt"));
    CHECK_FALSE(fs::exists(target / "stale.txt"));
    CHECK_FALSE(fs::exists(target / ".git"));
    CHECK_FALSE(fs::exists(marker));
    CHECK(git(repo, {"status", "--porcelain"}) == status);
    CHECK(read_file(repo / ".git" / "index") == index);

    CHECK(check_out_snapshot(tmp.path, take_snapshot(tmp.path), target) != "");
}

// ---- landing a loop's branch (submit --merge, ralphctl merge, gc)

namespace {

// A repository on main with a linked worktree on ralph/loop-1 (from main's HEAD) in which
// `file` was committed with `text`.
fs::path worktree_with_commit(const fs::path& repo, const fs::path& tree, const std::string& file,
                              const std::string& text) {
    REQUIRE(add_worktree(repo, tree, "ralph/loop-1", head_of(repo)) == "");
    write_file(tree / file, text);
    git(tree, {"add", file});
    git(tree, {"commit", "-q", "-m", "loop work"});
    return tree;
}

std::string rev(const fs::path& repo, const std::string& what) {
    return std::string(ralph::text::trim(git(repo, {"rev-parse", what})));
}

}  // namespace

TEST_CASE("workspace: merge_branch fast-forwards the checked-out target, its files and index") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto tree = worktree_with_commit(repo, tmp.path / "loop-1", "b.txt", "loop\n");
    // No hook runs (post-merge, post-checkout, reference-transaction).
    for (const char* hook : {"post-merge", "post-checkout", "reference-transaction"})
        write_marker_program(repo / ".git" / "hooks" / hook, tmp.path / "hook-ran");

    std::string error;
    CHECK_FALSE(is_merged(repo, "ralph/loop-1", "main", error));
    CHECK(error.empty());
    const merge_outcome outcome = merge_branch(repo, "ralph/loop-1", "main", "unused");
    CHECK(outcome.what == merge_outcome::kind::fast_forward);
    CHECK(outcome.merged());
    CHECK(outcome.commit == head_of(tree));
    CHECK(head_of(repo) == head_of(tree));
    CHECK(read_file(repo / "b.txt") == "loop\n");
    CHECK(git(repo, {"status", "--porcelain"}).empty());
    CHECK(describe_merge(outcome, "main") ==
          "merged into main (fast-forward) at " + outcome.commit.substr(0, 12));
    CHECK_FALSE(fs::exists(tmp.path / "hook-ran"));
    CHECK(is_merged(repo, "ralph/loop-1", "main", error));

    const merge_outcome again = merge_branch(repo, "ralph/loop-1", "main", "unused");
    CHECK(again.what == merge_outcome::kind::up_to_date);
    CHECK(describe_merge(again, "main") == "already in main");
}

TEST_CASE("workspace: merge_branch makes a merge commit of both when the target moved too") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto tree = worktree_with_commit(repo, tmp.path / "loop-1", "b.txt", "loop\n");
    write_file(repo / "c.txt", "user\n");
    git(repo, {"add", "c.txt"});
    git(repo, {"commit", "-q", "-m", "user work"});
    const std::string ours = head_of(repo), theirs = head_of(tree);

    const merge_outcome outcome =
        merge_branch(repo, "ralph/loop-1", "main", "Merge branch 'ralph/loop-1' into main\n");
    REQUIRE(outcome.what == merge_outcome::kind::merge_commit);
    CHECK(head_of(repo) == outcome.commit);
    CHECK(ralph::text::trim(git(repo, {"rev-parse", "HEAD^1", "HEAD^2"})) == ours + "\n" + theirs);
    CHECK(git(repo, {"log", "-1", "--format=%s"}) == "Merge branch 'ralph/loop-1' into main\n");
    CHECK(read_file(repo / "b.txt") == "loop\n");
    CHECK(read_file(repo / "c.txt") == "user\n");
    CHECK(git(repo, {"status", "--porcelain"}).empty());
    // git's own view: the target's tree is what `git merge` makes.
    CHECK(rev(repo, "HEAD^{tree}") ==
          ralph::text::trim(git(repo, {"merge-tree", "--write-tree", ours, theirs})));
    std::string error;
    CHECK(is_merged(repo, "ralph/loop-1", "main", error));
}

TEST_CASE("workspace: a conflict or a target with uncommitted changes changes nothing") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto tree = worktree_with_commit(repo, tmp.path / "loop-1", "a.txt", "one\nloop\nthree\n");
    write_file(repo / "a.txt", "one\nuser\nthree\n");
    git(repo, {"commit", "-q", "-am", "user work"});
    const std::string ours = head_of(repo);

    const merge_outcome conflict = merge_branch(repo, "ralph/loop-1", "main", "unused");
    CHECK(conflict.what == merge_outcome::kind::conflict);
    CHECK_FALSE(conflict.merged());
    CHECK(conflict.conflicts == std::vector<std::string>{"a.txt"});
    CHECK(describe_merge(conflict, "main") == "conflict in a.txt: nothing was merged into main");
    CHECK(head_of(repo) == ours);
    CHECK(read_file(repo / "a.txt") == "one\nuser\nthree\n");
    CHECK(git(repo, {"status", "--porcelain"}).empty());

    // A fast-forward, but main's checkout has uncommitted work.
    git(repo, {"reset", "-q", "--hard", "HEAD~1"});
    const std::string before = head_of(repo);
    write_file(repo / "notes.txt", "mine\n");
    const merge_outcome dirty = merge_branch(repo, "ralph/loop-1", "main", "unused");
    CHECK(dirty.what == merge_outcome::kind::dirty);
    CHECK(dirty.error.find("?? notes.txt") != std::string::npos);
    CHECK(describe_merge(dirty, "main").starts_with("not merged: main is checked out in "));
    CHECK(head_of(repo) == before);
    CHECK(read_file(repo / "a.txt") == "one\ntwo\nthree\n");

    const merge_outcome missing = merge_branch(repo, "ralph/loop-9", "main", "unused");
    CHECK(missing.what == merge_outcome::kind::failed);
    CHECK(missing.error.find("ralph/loop-9") != std::string::npos);
}

TEST_CASE("workspace: merge_branch into a branch no work tree has checked out moves the branch") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    const std::string base = head_of(repo);
    git(repo, {"branch", "release"});
    auto tree = worktree_with_commit(repo, tmp.path / "loop-1", "b.txt", "loop\n");
    write_file(repo / "notes.txt", "the user's checkout is on main: not in the way\n");
    const merge_outcome outcome = merge_branch(repo, "ralph/loop-1", "release", "unused");
    CHECK(outcome.what == merge_outcome::kind::fast_forward);
    CHECK(rev(repo, "release") == head_of(tree));
    CHECK(head_of(repo) == base);
    CHECK_FALSE(fs::exists(repo / "b.txt"));
}

TEST_CASE("workspace: remove_worktree removes a clean worktree only, its branch only when asked") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    auto tree = worktree_with_commit(repo, tmp.path / "loop-1", "b.txt", "loop\n");
    // Never the main work tree, nor a directory that is no worktree of the repository.
    CHECK_FALSE(remove_worktree(repo, repo, "main", false).empty());
    CHECK(fs::exists(repo / "a.txt"));
    auto other = make_repo(tmp.path / "other");
    CHECK_FALSE(remove_worktree(repo, other, "main", false).empty());
    CHECK(fs::exists(other / "a.txt"));

    write_file(tree / "uncommitted.txt", "work\n");
    CHECK(remove_worktree(repo, tree, "ralph/loop-1", false).find("uncommitted") !=
          std::string::npos);
    CHECK(fs::exists(tree / "uncommitted.txt"));
    fs::remove(tree / "uncommitted.txt");
    write_file(tree / ".ralph" / "state.md", "ralph's own\n");
    CHECK(remove_worktree(repo, tree, "ralph/loop-1", false) == "");
    CHECK_FALSE(fs::exists(tree));
    CHECK(git(repo, {"worktree", "list", "--porcelain"}).find(tree.filename().string()) ==
          std::string::npos);
    std::string error;
    CHECK(has_branch(repo, "ralph/loop-1", error));

    // With delete_branch: the branch and its configuration go too, as with git branch -D.
    auto second = tmp.path / "loop-2";
    REQUIRE(add_worktree(repo, second, "ralph/loop-2", head_of(repo)) == "");
    git(repo, {"config", "branch.ralph/loop-2.remote", "origin"});
    git(repo, {"config", "branch.ralph/loop-2.merge", "refs/heads/ralph/loop-2"});
    git(repo, {"config", "user.name", "kept"});
    CHECK(remove_worktree(repo, second, "ralph/loop-2", true) == "");
    CHECK_FALSE(fs::exists(second));
    CHECK_FALSE(has_branch(repo, "ralph/loop-2", error));
    CHECK(run_git(repo, {"config", "--get-regexp", "^branch\\.ralph/loop-2\\."}).status != 0);
    CHECK(git(repo, {"config", "user.name"}) == "kept\n");
    // A worktree removed by hand: its entry is pruned, the branch deleted.
    git(repo, {"worktree", "add", "-q", (tmp.path / "loop-3").string(), "-b", "ralph/loop-3"});
    fs::remove_all(tmp.path / "loop-3");
    CHECK(remove_worktree(repo, tmp.path / "loop-3", "ralph/loop-3", true) == "");
    CHECK_FALSE(has_branch(repo, "ralph/loop-3", error));
    CHECK_FALSE(fs::exists(repo / ".git" / "worktrees" / "loop-3"));
}

TEST_CASE("workspace: inspect_repository names HEAD's branch, none when detached") {
    temp_dir tmp;
    auto repo = make_repo(tmp.path / "repo");
    CHECK(inspect_repository(repo).branch == "main");
    git(repo, {"checkout", "-q", "--detach"});
    CHECK(inspect_repository(repo).branch.empty());
}
