// The repository of a `--worktree` loop (see workspace.hpp): what it is (inspect_repository,
// find_git_directories, has_branch), and the linked worktree the loop runs in, made on a branch
// of its own (add_worktree) and removed with it (remove_worktree).
#include "daemon/workspace/workspace.hpp"

#include "daemon/workspace/git_repository.hpp"

#include <system_error>
#include <utility>
#include <vector>

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;

// The name of a new worktree in <common dir>/worktrees/: the last component of its path,
// numbered when it is taken, as git names it.
std::string free_worktree_name(git_repository* repo, const fs::path& path) {
    const fs::path admin = directory_path(git_repository_commondir(repo)) / "worktrees";
    const std::string base = path.filename().string();
    std::string name = base;
    std::error_code ec;
    for (int n = 1; fs::exists(admin / name, ec); ++n) name = base + std::to_string(n);
    return name;
}

// The linked worktree of `repo` whose directory is `path` (as its entry in the repository says),
// null when there is none.
worktree_handle find_worktree(git_repository* repo, const fs::path& path) {
    std::error_code ec;
    const fs::path wanted = fs::weakly_canonical(path, ec);
    git_strarray names{};
    if (git_worktree_list(&names, repo) < 0) return nullptr;
    worktree_handle found;
    for (std::size_t i = 0; i < names.count && !found; ++i) {
        worktree_handle worktree;
        if (into(worktree, git_worktree_lookup, repo, names.strings[i]) == 0 &&
            fs::weakly_canonical(directory_path(git_worktree_path(worktree.get())), ec) == wanted)
            found = std::move(worktree);
    }
    git_strarray_dispose(&names);
    return found;
}

// Deletes the entries of the section branch.<branch> from the repository's own configuration,
// as `git branch -D` does. (git_branch_delete would, but it matches every entry against a
// regular expression: libgit2 1.5's leak.)
std::string delete_branch_configuration(git_repository* repo, const std::string& branch) {
    config_handle config, local;
    if (into(config, git_repository_config, repo) < 0 ||
        into(local, git_config_open_level, config.get(), GIT_CONFIG_LEVEL_LOCAL) < 0)
        return git_failure("cannot read the repository's configuration");
    const std::string prefix = "branch." + branch + ".";
    std::vector<std::string> names;
    git_config_iterator* iterator = nullptr;
    if (git_config_iterator_new(&iterator, local.get()) < 0)
        return git_failure("cannot read the repository's configuration");
    git_config_entry* entry = nullptr;
    while (git_config_next(&entry, iterator) == 0)
        if (std::string_view(entry->name).starts_with(prefix)) names.emplace_back(entry->name);
    git_config_iterator_free(iterator);
    for (const std::string& name : names)
        if (git_config_delete_entry(local.get(), name.c_str()) < 0)
            return git_failure("cannot delete " + name + " from the repository's configuration");
    return "";
}

}  // namespace

repository_info inspect_repository(const std::filesystem::path& dir) {
    repository_info info;
    repository repo = find_repository(dir, git_access::read);
    info.error = repo.error;
    if (!repo.git) return info;
    info.is_git = true;
    info.top = repo.top;
    info.prefix = repo.prefix;
    info.head = head_id(repo.git.get(), dir, info.error);
    if (git_repository_head_detached(repo.git.get()) == 0) {
        reference_handle head;
        if (into(head, git_reference_lookup, repo.git.get(), "HEAD") == 0 &&
            git_reference_type(head.get()) == GIT_REFERENCE_SYMBOLIC) {
            const std::string_view name = git_reference_symbolic_target(head.get());
            if (name.starts_with(heads_prefix)) info.branch = name.substr(heads_prefix.size());
        }
    }
    return info;
}

git_directories find_git_directories(const std::filesystem::path& dir) {
    std::string error;
    // Also of a repository ralph refuses to use: the sandbox protects its directories all the same.
    repository_handle repo = open_repository(dir, error);
    if (!repo) return {};
    return {directory_path(git_repository_path(repo.get())),
            directory_path(git_repository_commondir(repo.get()))};
}

bool has_branch(const std::filesystem::path& dir, const std::string& branch, std::string& error) {
    std::string open_error;
    repository_handle repo = open_repository(dir, open_error);
    if (!repo) {
        append_error(error, open_error.empty() ? "cannot look up branch " + branch + ": " +
                                                     dir.string() + " is not in a git repository"
                                               : open_error);
        return false;
    }
    reference_handle reference;
    int code = into(reference, git_branch_lookup, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL);
    if (code == 0) return true;
    if (code != GIT_ENOTFOUND && code != GIT_EINVALIDSPEC)
        append_error(error, git_failure("cannot look up branch " + branch + " in " + dir.string()));
    return false;
}

std::string add_worktree(const std::filesystem::path& source, const std::filesystem::path& path,
                         const std::string& branch, const std::string& base) {
    std::error_code ec;
    if (fs::exists(path / ".git", ec)) return "";  // made at an earlier start of the loop
    const std::string what =
        "cannot make the git worktree " + path.string() + " of " + source.string();
    std::string error;
    repository_handle repo = open_to_write(source, what, error);
    if (!repo) return error;

    // The branch outlives a worktree removed by hand: the loop then goes on with its work.
    reference_handle reference;
    int code = into(reference, git_branch_lookup, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL);
    const bool created = code == GIT_ENOTFOUND;
    if (created) {
        object_handle base_object;
        commit_handle commit;
        code = into(base_object, git_revparse_single, repo.get(), (base + "^{commit}").c_str());
        if (code < 0) return git_failure(what + ": no commit " + base);
        code = into(commit, git_commit_lookup, repo.get(), git_object_id(base_object.get()));
        if (code == 0)
            code = into(reference, git_branch_create, repo.get(), branch.c_str(), commit.get(), 0);
        if (code < 0) return git_failure(what + ": cannot create branch " + branch);
    } else if (code < 0) {
        return git_failure(what + ": cannot look up branch " + branch);
    }

    // As `git worktree add`: the missing parent directories are made, and an empty directory
    // is taken (libgit2 insists on making the directory itself).
    fs::create_directories(path.parent_path(), ec);
    if (fs::is_directory(path, ec) && fs::is_empty(path, ec)) fs::remove(path, ec);
    if (fs::exists(path, ec)) return what + ": it exists and is not empty";
    const std::string name = free_worktree_name(repo.get(), path);
    git_worktree_add_options options;
    git_worktree_add_options_init(&options, GIT_WORKTREE_ADD_OPTIONS_VERSION);
    options.ref = reference.get();
    // Every file is written: the directory is new, nothing in it is the user's.
    options.checkout_options.checkout_strategy = GIT_CHECKOUT_FORCE;
    worktree_handle worktree;
    code = into(worktree, git_worktree_add, repo.get(), name.c_str(), path.c_str(), &options);
    if (code == 0) return "";
    // libgit2 leaves what it made so far; without it, the next start of the loop would take a
    // half-made worktree for a finished one.
    std::string failure = git_failure(what);
    fs::remove_all(path, ec);
    fs::remove_all(directory_path(git_repository_commondir(repo.get())) / "worktrees" / name, ec);
    if (created) git_branch_delete(reference.get());
    return failure;
}

std::string remove_worktree(const std::filesystem::path& source, const std::filesystem::path& path,
                            const std::string& branch, bool delete_branch) {
    const std::string what =
        "cannot remove the worktree " + path.string() + " of " + source.string();
    std::string error;
    repository_handle repo = open_to_write(source, what, error);
    if (!repo) return error;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(path, ec))) {
        // Only a linked worktree of this repository, and only clean.
        repository_handle its = open_repository(path, error, false);
        if (!its || git_repository_is_worktree(its.get()) != 1 ||
            fs::weakly_canonical(git_repository_commondir(its.get()), ec) !=
                fs::weakly_canonical(git_repository_commondir(repo.get()), ec))
            return what + ": it is not a linked worktree of that repository" +
                   (error.empty() ? "" : " (" + error + ")");
        const dirty_state state = check_dirty(path);
        if (!state.error.empty()) return what + ": " + state.error;
        if (state.dirty)
            return what + ": it has " + std::to_string(state.total_changes) +
                   " uncommitted change(s)";
        // Removed here, not by git_worktree_prune: that one takes the directory from the
        // worktree's entry, which whoever could write the repository could have changed.
        fs::remove_all(path, ec);
        if (ec) return what + ": " + ec.message();
    }
    if (worktree_handle worktree = find_worktree(repo.get(), path)) {
        git_worktree_prune_options options;
        git_worktree_prune_options_init(&options, GIT_WORKTREE_PRUNE_OPTIONS_VERSION);
        options.flags = GIT_WORKTREE_PRUNE_VALID;
        if (git_worktree_prune(worktree.get(), &options) < 0) return git_failure(what);
    }
    if (!delete_branch) return "";
    reference_handle reference;
    int code = into(reference, git_branch_lookup, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL);
    if (code == GIT_ENOTFOUND) return "";
    const std::string kept =
        "the worktree " + path.string() + " was removed, its branch " + branch + " kept";
    if (code < 0) return git_failure(kept);
    if (git_branch_is_checked_out(reference.get()) == 1)
        return kept + ": it is checked out in another work tree";
    if (git_reference_delete(reference.get()) < 0) return git_failure(kept);
    return delete_branch_configuration(repo.get(), branch);
}

}  // namespace ralph::workspace
