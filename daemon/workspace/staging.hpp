// The workspace's part of a work tree, staged as `git add -A -- .` stages it: into an index held
// in memory, for a snapshot's tree (write_working_tree), or into the repository's index, which
// commit_all then writes. Submodules are left out of libgit2's diff and staged by their checked-
// out commits (libgit2 1.5's leak, git_repository.cpp). Internal to daemon/workspace/.
#pragma once

#include "daemon/workspace/git_repository.hpp"

#include <array>
#include <filesystem>
#include <string>
#include <string_view>

namespace ralph::workspace {

// Whether `path` (relative to the top of the work tree) belongs to the workspace whose paths
// start with `under`; its top-level .ralph/ counts only `with_ralph`.
bool in_workspace(std::string_view path, std::string_view under, bool with_ralph);

// The workspace's directory as a pathspec, so that libgit2 walks only that part of the work
// tree; none (the whole work tree) at the top or when the name has a character that libgit2
// would read as a pattern. Either way the callers check each path with in_workspace().
class workspace_pathspec {
  public:
    explicit workspace_pathspec(const std::string& prefix) : path_(prefix) {
        if (path_.empty() || path_.find_first_of("*?[]\\!# \t\r\n") != std::string::npos) return;
        entries_[0] = path_.data();
        array_ = {entries_.data(), 1};
    }
    workspace_pathspec(const workspace_pathspec&) = delete;
    workspace_pathspec& operator=(const workspace_pathspec&) = delete;
    const git_strarray* get() const { return &array_; }

  private:
    std::string path_;
    std::array<char*, 1> entries_{};
    git_strarray array_{nullptr, 0};
};

// `git add -A -- .` of the workspace into `index`, in memory (the caller decides whether to write
// it): the workspace's part of a diff of the index against the work tree (untracked files
// included, .gitignore respected), each changed path staged or removed. As git_index_add_all
// does, but with the submodules left out of the diff and staged here (libgit2 1.5's leak).
bool stage_workspace(git_repository* repo, git_index* index, const repository& workspace,
                     bool with_ralph, const std::filesystem::path& dir, std::string& error);

// The tree of the working tree as `git add -A` would stage it (untracked files included,
// .gitignore respected, .ralph/ left out), staged in the index read into memory and never
// written back: the user's index file and what they staged stay as they are. The blobs and
// trees written are ordinary unreachable objects that `git gc` prunes.
std::string write_working_tree(const repository& repo, const std::filesystem::path& dir,
                               std::string& error);

}  // namespace ralph::workspace
