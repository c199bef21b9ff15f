// The libgit2 side of daemon/workspace/, shared by its files (internal: the daemon includes
// workspace.hpp): libgit2's set-up, its objects held in handles, its errors, and the repository
// that contains a workspace — found as git finds it, and opened only when libgit2 1.5 can open
// it without leaking memory (its format version, git_repository.cpp) and it does not lead out of
// itself (repository_safety.hpp).
#pragma once

#include "daemon/workspace/repository_safety.hpp"

#include <git2.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace ralph::workspace {

// The first changes a dirty check shows, the first conflicts a merge names.
constexpr std::size_t shown_changes = 20;
constexpr std::string_view heads_prefix = "refs/heads/";

// `message` appended to `into`, after "; " when it has one already.
void append_error(std::string& into, const std::string& message);

// A libgit2 object freed by its own function, e.g. git_handle<git_tree, git_tree_free>.
template <auto free_function>
struct git_free {
    template <typename T>
    void operator()(T* object) const {
        free_function(object);
    }
};
template <typename T, auto free_function>
using git_handle = std::unique_ptr<T, git_free<free_function>>;

using repository_handle = git_handle<git_repository, git_repository_free>;
using index_handle = git_handle<git_index, git_index_free>;
using reference_handle = git_handle<git_reference, git_reference_free>;
using object_handle = git_handle<git_object, git_object_free>;
using commit_handle = git_handle<git_commit, git_commit_free>;
using tree_handle = git_handle<git_tree, git_tree_free>;
using tree_entry_handle = git_handle<git_tree_entry, git_tree_entry_free>;
using diff_handle = git_handle<git_diff, git_diff_free>;
using patch_handle = git_handle<git_patch, git_patch_free>;
using status_handle = git_handle<git_status_list, git_status_list_free>;
using config_handle = git_handle<git_config, git_config_free>;
using signature_handle = git_handle<git_signature, git_signature_free>;
using worktree_handle = git_handle<git_worktree, git_worktree_free>;

// Calls a libgit2 function that makes an object through its first argument, with `handle` taking
// it: into(tree, git_tree_lookup, repo, &id). Returns the function's code.
template <typename Handle, typename Function, typename... Args>
int into(Handle& handle, Function function, Args&&... args) {
    typename Handle::pointer raw = nullptr;
    int code = function(&raw, std::forward<Args>(args)...);
    handle.reset(raw);
    return code;
}

// "<action>: <what libgit2 said>", for the call that just failed in this thread.
std::string git_failure(const std::string& action);

std::string id_text(const git_oid& id);

// A directory as libgit2 names it ("/repo/.git/"), without the trailing slash.
std::filesystem::path directory_path(const char* path);

// The .git entry (a directory, or a file in a linked worktree or a submodule) of `dir`, or of
// the nearest directory above it that has one when `search`; empty when there is none, and so
// no repository: the snapshots of a plain directory (one or two per iteration) stay at a few
// stat calls.
std::filesystem::path git_entry(const std::filesystem::path& dir, bool search);

// The repository that contains `dir`, searched upwards as git does (and, as git, not across a
// file system boundary), or only at `dir` itself without `search`. GIT_DIR, GIT_WORK_TREE,
// GIT_INDEX_FILE... of the daemon's environment are not read: only `dir` chooses. Null without a
// repository, and also when it cannot or must not be opened (then with `error`).
repository_handle open_repository(const std::filesystem::path& dir, std::string& error,
                                  bool search = true);

struct repository {
    repository_handle git;      // null: not in a work tree
    std::filesystem::path top;  // the top of the work tree
    std::string prefix;         // the workspace relative to top ("sub/dir"), "" at the top
    std::string error;          // libgit2 could not tell; "not a repository" is not an error
    std::string refused;        // why the repository is not used (layout_problem), also in `error`
    // What the paths of the workspace's files start with in the repository: "sub/dir/" or "".
    std::string under() const { return prefix.empty() ? "" : prefix + "/"; }
};

// The work tree that contains `dir`. A bare repository and the inside of a .git directory are
// not work trees: they have no work to snapshot.
repository find_repository(const std::filesystem::path& dir, git_access access);

// The repository that contains `dir`, to be written: null, with `error` ("<what>: why"), when
// there is none or it leads out of its git directory.
repository_handle open_to_write(const std::filesystem::path& dir, const std::string& what,
                                std::string& error);

// HEAD's commit into `head`; none in a repository without commits. False, with `error`, when
// HEAD cannot be read.
bool head_commit(git_repository* repo, const std::filesystem::path& dir, commit_handle& head,
                 std::string& error);

// HEAD's commit id, "" in a repository without commits (or with `error`).
std::string head_id(git_repository* repo, const std::filesystem::path& dir, std::string& error);

index_handle repository_index(git_repository* repo, const std::filesystem::path& dir,
                              std::string& error);

// The tree `id` of a snapshot; false, with `error`, when it cannot be read.
bool lookup_tree(git_repository* repo, const std::string& id, tree_handle& tree,
                 std::string& error);

// The entry at `path` of `tree` into `entry`, none when the tree has no such path.
bool lookup_entry(git_tree* tree, const std::string& path, tree_entry_handle& entry,
                  std::string& error);

}  // namespace ralph::workspace
