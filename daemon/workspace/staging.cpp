// Staging the workspace's part of a work tree (see staging.hpp).
#include "daemon/workspace/staging.hpp"

#include <vector>

namespace ralph::workspace {

namespace fs = std::filesystem;

namespace {

// Whether `git add -A -- .` stages `path`: a path of the workspace (.ralph/ only `with_ralph`),
// but never a skip-worktree entry of a sparse checkout, missing from the disk by design.
bool stages(git_index* index, const char* path, const std::string& under, bool with_ralph) {
    if (!in_workspace(path, under, with_ralph)) return false;
    const git_index_entry* entry = git_index_get_bypath(index, path, 0);
    return entry == nullptr || (entry->flags_extended & GIT_INDEX_ENTRY_SKIP_WORKTREE) == 0;
}

// Stages the commit checked out in the repository at `path` (a submodule, or a repository of its
// own that is not tracked yet) as `git add` does: as a gitlink to it. A repository without a
// commit, one not checked out and one that cannot be opened are left as they are.
int stage_submodule(git_index* index, const repository& workspace, std::string path) {
    while (path.ends_with('/')) path.pop_back();
    std::string ignored;
    repository_handle submodule = open_repository(workspace.top / path, ignored, false);
    commit_handle head;
    if (!submodule || !head_commit(submodule.get(), path, head, ignored) || !head) return 0;
    const git_index_entry* staged = git_index_get_bypath(index, path.c_str(), 0);
    if (staged != nullptr && staged->mode == GIT_FILEMODE_COMMIT &&
        git_oid_equal(&staged->id, git_commit_id(head.get())))
        return 0;
    git_index_entry entry{};
    entry.mode = GIT_FILEMODE_COMMIT;
    entry.id = *git_commit_id(head.get());
    entry.path = path.c_str();
    return git_index_add(index, &entry);
}

}  // namespace

bool in_workspace(std::string_view path, std::string_view under, bool with_ralph) {
    if (!path.starts_with(under)) return false;
    std::string_view rest = path.substr(under.size());
    return with_ralph || !(rest == ".ralph" || rest.starts_with(".ralph/"));
}

bool stage_workspace(git_repository* repo, git_index* index, const repository& workspace,
                     bool with_ralph, const fs::path& dir, std::string& error) {
    git_diff_options options;
    git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION);
    options.flags =
        GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS | GIT_DIFF_INCLUDE_TYPECHANGE;
    options.ignore_submodules = GIT_SUBMODULE_IGNORE_ALL;
    workspace_pathspec pathspec(workspace.prefix);
    options.pathspec = *pathspec.get();
    diff_handle diff;
    int code = into(diff, git_diff_index_to_workdir, repo, index, &options);
    const std::string under = workspace.under();
    for (std::size_t i = 0; code == 0 && i < git_diff_num_deltas(diff.get()); ++i) {
        const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
        const char* path = delta->new_file.path;
        if (!stages(index, path, under, with_ralph)) continue;
        if ((delta->new_file.flags & GIT_DIFF_FLAG_EXISTS) == 0)
            code = git_index_remove_bypath(index, path);
        else if (delta->new_file.mode == GIT_FILEMODE_COMMIT ||
                 std::string_view(path).ends_with('/'))
            code = stage_submodule(index, workspace, path);  // a repository not tracked yet
        else
            code = git_index_add_bypath(index, path);
    }
    // The submodules: their checked-out commits (the diff above saw none of them).
    std::vector<std::string> submodules;
    for (std::size_t i = 0; code == 0 && i < git_index_entrycount(index); ++i) {
        const git_index_entry* entry = git_index_get_byindex(index, i);
        if (entry->mode == GIT_FILEMODE_COMMIT && git_index_entry_stage(entry) == 0 &&
            stages(index, entry->path, under, with_ralph))
            submodules.emplace_back(entry->path);
    }
    for (const std::string& path : submodules)
        if (code == 0) code = stage_submodule(index, workspace, path);
    if (code < 0) append_error(error, git_failure("cannot stage the work tree of " + dir.string()));
    return code == 0;
}

std::string write_working_tree(const repository& repo, const fs::path& dir, std::string& error) {
    index_handle index = repository_index(repo.git.get(), dir, error);
    if (!index || !stage_workspace(repo.git.get(), index.get(), repo, false, dir, error)) return "";
    git_oid tree;
    if (git_index_write_tree(&tree, index.get()) < 0) {
        append_error(error, git_failure("cannot write the tree of the work tree " + dir.string()));
        return "";
    }
    return id_text(tree);
}

}  // namespace ralph::workspace
