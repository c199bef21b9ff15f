// What an iteration did to its workspace: snapshots taken before and after it, compared into
// "did HEAD move, did the tree change, how many files/lines", the dirty check at submit, the
// optional commit of an iteration's work (README, "Memory, completion and progress"), and the git
// worktree a
// `--worktree` loop runs in (README, "Worktrees").
//
// In a git work tree a snapshot is HEAD plus the id of a tree object of the working tree as
// `git add -A` would stage it (untracked files included, .gitignore respected), staged in a copy
// of the index held in memory, so the user's index and staging are never touched; the blobs and
// trees it writes are ordinary unreachable objects that `git gc` prunes. Elsewhere, and in a
// repository of format version 1 or more (which libgit2 1.5 cannot open without leaking memory:
// see git_repository.cpp), a snapshot is a content hash per regular file.
//
// The workspace is `dir` and what is below it: when `dir` is a subdirectory of a work tree,
// snapshots, statistics, the dirty check and commits are limited to it (HEAD is the
// repository's). The directory `.ralph/` at the top of `dir` is ralph's own bookkeeping
// (state file, notes) and is not part of snapshots, so writing it is never progress.
//
// All git work goes through libgit2, in the calling thread: no git process is started, and
// nothing that the repository's configuration, attributes or hooks name is ever executed —
// deliberately, since an agent (even one under --sandbox) can write them: no hooks, no
// core.fsmonitor, no filter drivers (`filter.*.clean/smudge`: files are read and checked out as
// they are, so git-lfs or git-crypt files are seen in their stored form), no gpg signing, no
// textconv or external diff. Nor is a repository used whose git directory leads out of itself —
// its `.git` a symbolic link, a symbolic link anywhere in its git directory (libgit2 would write
// objects, refs, reflogs or the index through it), or a `commondir` file naming another
// directory than git's layout has (a linked worktree's main repository): its functions then
// answer as outside git, with an error saying why, and commit_all fails. (Those that only read —
// check_dirty, inspect_repository, the comparisons — do not look among the loose objects, which
// are read, never written, through a link: see git_access in repository_safety.hpp.) The repository
// is chosen by `dir` alone (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE... of the daemon's environment
// are not read); the user's and the system's git configuration are read as git reads them
// (identity, excludes, core.autocrlf...).
//
// Every function here BLOCKS: it reads the work tree or every file, with no time limit. Call
// them off the io thread. They keep no global or shared state (each call opens the repository
// anew; libgit2's global set-up is done once, by the first call), so any number may run at once
// on different threads (they read the process environment: nobody may setenv meanwhile); they
// do not use SQLite or Asio. Failures are reported in `error` fields, never thrown.
//
// This header is the folder's public face. Behind it: snapshot.cpp (snapshots, comparisons,
// diffs), status.cpp (the dirty check), committed_file.cpp, commit.cpp, worktrees.cpp and
// merge.cpp, over the internal headers git_repository.hpp (libgit2's handles, finding and opening
// the repository), repository_safety.hpp (a git directory that leads out of itself) and
// staging.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::workspace {

// Bounds of the non-git snapshot: at most `max_files` files are hashed (the first ones in sorted
// path order; later ones are not compared), and a file larger than `max_content_size` is
// identified by its size and modification time instead of its content. Worst case read per
// snapshot: max_files * max_content_size, in practice the size of the workspace's small files.
struct file_limits {
    std::size_t max_files = 20000;
    std::uintmax_t max_content_size = 64ull << 20;
};

struct snapshot {
    bool is_git = false;
    std::string head;  // git: HEAD commit id, "" in a repository without commits
    std::string tree;  // git: tree object id of the working tree, "" if it could not be taken
    // Non-git: relative path ('/'-separated) -> "content:<fnv1a64>", "size:<bytes>:<mtime ns>"
    // (files above max_content_size), "link:<fnv1a64 of the target>" or "unreadable".
    // Directories named .git are skipped everywhere, .ralph at the top.
    std::map<std::string, std::string> files;
    bool files_truncated = false;  // more than max_files: `files` holds the first ones
    std::string error;             // why a part could not be taken (the snapshot is then partial)
    // Why the workspace's repository was not used (its git directory leads out of itself, see
    // above): the snapshot is then of the files, as outside git. Also in `error`.
    std::string refused;
};
snapshot take_snapshot(const std::filesystem::path& dir, const file_limits& limits = {});

struct change_stats {
    bool head_moved = false;
    bool tree_changed = false;  // git: tree ids differ; non-git: a file added, removed or changed
    // git: as `git diff --numstat` between the two trees (renames found, a binary file counts as
    // changed with 0/0), so an agent's commits and its uncommitted work are both included;
    // non-git: files added, removed or changed, insertions and deletions 0.
    std::int64_t files_changed = 0;
    std::int64_t insertions = 0;
    std::int64_t deletions = 0;
    // Why the comparison is incomplete: a partial snapshot (an unknown part never counts as a
    // change), a failed diff, or a workspace that became (or stopped being) a git repository
    // (then tree_changed is true and there are no statistics).
    std::string error;
    bool progress() const { return head_moved || tree_changed; }
};
change_stats compare(const std::filesystem::path& dir, const snapshot& before,
                     const snapshot& after);

// Whether the file at `relative_path` (relative to `dir`, e.g. the specs file) differs between
// the snapshots: git compares the blob ids in the two trees, non-git the hashes; a file missing
// on one side and present on the other has changed. Unknown (a partial snapshot) is false.
bool file_changed(const snapshot& before, const snapshot& after, const std::filesystem::path& dir,
                  std::string_view relative_path);

// The unified diff between two git snapshots of `dir` (as `git diff` between their trees, the
// workspace's part, .ralph/ left out, renames found), at most `limit` bytes: `cut` when there
// was more (it ends at a whole line). With no diff to give (a snapshot outside git or partial,
// the repository unreadable), `error` says why.
struct patch_text {
    std::string text;
    bool cut = false;
    std::string error;
};
patch_text diff_snapshots(const std::filesystem::path& dir, const snapshot& before,
                          const snapshot& after, std::size_t limit);

// The file `relative_path` (relative to `dir`) as HEAD's commit has it, read from the
// repository's objects, never from the working tree: for what must come from the user rather
// than from the agent that writes the working tree (the judge's prompt). `found` with its text
// when HEAD has it as a regular file of at most `limit` bytes; else `problem` says why it cannot
// be used (a link, a directory, too large), or nothing when HEAD has no such path, or there is
// no HEAD or no repository; `error` when the repository could not be read. `commit`: HEAD's id.
struct committed_file {
    bool found = false;
    std::string text;
    std::string commit;
    std::string problem;
    std::string error;
};
committed_file read_committed_file(const std::filesystem::path& dir,
                                   const std::string& relative_path, std::size_t limit);

struct dirty_state {
    bool is_git = false;
    bool dirty = false;                // uncommitted changes (untracked files included)
    std::vector<std::string> changes;  // the first 20 lines as `git status --porcelain` has them
    std::size_t total_changes = 0;     // how many lines there were in all
    std::string error;
};
// For `submit`: the uncommitted changes in the workspace, .ralph/ left out. Not a git work
// tree: is_git false.
dirty_state check_dirty(const std::filesystem::path& dir);
// Whether `dir` or a directory above it has a .git entry (a few stat calls): only then does
// check_dirty open a repository, which takes milliseconds.
bool has_git_entry(const std::filesystem::path& dir);

// Stages everything in the workspace (`git add -A -- .`, written to the repository's index as
// git add writes it) and commits it with `message` (`git commit -- .`: what the user staged
// outside the workspace stays staged and out of the commit), as the configured user
// (GIT_AUTHOR_NAME..., author.name, user.name... as git finds them) or, only for what the
// repository has no user.name/user.email for, as "ralph <ralph@localhost>". No hook runs
// (pre-commit, commit-msg, post-commit...) and the commit is never signed, whatever
// commit.gpgSign says: deliberately, as ralph never executes anything that the repository's
// configuration or hooks name. Returns the new HEAD; with nothing to commit, the unchanged HEAD
// ("" in a repository without commits) and no error; on failure "" with `error` set. Commits
// only to the repository that contains `dir`.
std::string commit_all(const std::filesystem::path& dir, const std::string& message,
                       std::string& error);

// ---- git worktrees (submit --worktree: the loop runs in a worktree of its own)

struct repository_info {
    bool is_git = false;
    std::filesystem::path top;  // the top of the work tree that contains `dir`
    std::string prefix;         // `dir` relative to `top` ("sub/dir"), "" at the top
    std::string head;           // HEAD's commit id, "" in a repository without commits
    std::string branch;         // HEAD's branch ("main"), "" when HEAD is detached
    std::string error;          // libgit2 could not tell; "not a repository" is not an error
};
// The repository that contains `dir`; is_git is false outside a git work tree.
repository_info inspect_repository(const std::filesystem::path& dir);

// The git directories of the repository that contains `dir`, absolute: `git_dir` (as `git
// rev-parse --git-dir`: a linked worktree's own) and `common_dir` (as `--git-common-dir`: the
// main repository's, with its configuration, hooks, objects and refs), the same directory but in
// a linked worktree; both empty outside git. Also of a repository whose git directory leads out
// of itself (which the other functions refuse), as libgit2 finds them.
struct git_directories {
    std::filesystem::path git_dir;
    std::filesystem::path common_dir;
};
git_directories find_git_directories(const std::filesystem::path& dir);

// Whether the repository that contains `dir` has the local branch `branch`; failing to tell
// (not a repository, or libgit2 could not read it) sets `error`.
bool has_branch(const std::filesystem::path& dir, const std::string& branch, std::string& error);

// Makes `path` a new worktree of the repository that contains `source`, on a new branch
// `branch` that starts at commit `base` (as `git worktree add -b`; no post-checkout hook runs).
// When the branch exists already (its worktree was removed by hand), the worktree checks it out
// instead; when `path` is a worktree already (made at an earlier start of the loop), nothing is
// done. The user's checkout and index are not touched. Returns "" or what failed (then nothing
// of it is left: no directory, no new branch).
std::string add_worktree(const std::filesystem::path& source, const std::filesystem::path& path,
                         const std::string& branch, const std::string& base);

// ---- landing a loop's branch (submit --merge, ralphctl merge, gc)

struct merge_outcome {
    enum class kind {
        fast_forward,  // the target moved to the branch's head
        merge_commit,  // a merge commit of the two was made on the target
        up_to_date,    // the branch's commits are all in the target already
        conflict,      // both changed the same lines: nothing was changed
        dirty,         // the target's work tree has uncommitted changes: nothing was changed
        failed,        // something else went wrong (error): nothing was changed
    };
    kind what = kind::failed;
    std::string commit;                  // the target's head after (fast_forward, merge_commit)
    std::vector<std::string> conflicts;  // conflict: the paths in conflict (the first 20)
    std::string error;                   // dirty: the changes; failed: why
    bool merged() const { return what <= kind::up_to_date; }
};
// Merges the local branch `branch` into the local branch `target` of the repository that
// contains `dir`, as `git merge --no-edit branch` run on `target` would: a fast-forward when
// `target`'s head is an ancestor of the branch's, else a merge commit (message `message`,
// author and committer as for commit_all), made in memory first so that a conflict changes
// nothing. When `target` is checked out in a work tree of the repository (the main one or a
// linked worktree), that work tree must be clean (check_dirty: .ralph/ left out) and its files
// and index follow (a safe checkout, no filter); elsewhere only the branch moves, and only if it
// did not move meanwhile. No hook runs and no merge driver is executed (libgit2 has none).
merge_outcome merge_branch(const std::filesystem::path& dir, const std::string& branch,
                           const std::string& target, const std::string& message);
// "merged into main (fast-forward) at 0123456789ab", "conflict in a.txt, b.txt: nothing was
// merged"...: what happened, for the loop's landing.
std::string describe_merge(const merge_outcome& outcome, const std::string& target);

// Whether every commit of the local branch `branch` is in the local branch `target` (the
// branch's head is the target's or one of its ancestors). False when there is no `target`;
// failing to tell: false, with `error`.
bool is_merged(const std::filesystem::path& dir, const std::string& branch,
               const std::string& target, std::string& error);

// Whether every commit of the local branch `branch` is on `remote` as the repository last saw it
// (its remote-tracking branch refs/remotes/<remote>/<branch>, which `git push` updates). False
// when there is none; failing to tell: false, with `error`.
bool is_pushed(const std::filesystem::path& dir, const std::string& branch,
               const std::string& remote, std::string& error);

// Removes the linked worktree `path` of the repository that contains `source` (as `git worktree
// remove`: its files, then its entry in the repository), provided it is clean (check_dirty:
// .ralph/ left out) and is that repository's worktree; with `delete_branch`, then the local
// branch `branch` with its configuration (as `git branch -D`) unless a work tree has it checked
// out. Returns "" or what failed.
std::string remove_worktree(const std::filesystem::path& source, const std::filesystem::path& path,
                            const std::string& branch, bool delete_branch);

}  // namespace ralph::workspace
