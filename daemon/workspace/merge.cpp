// Landing a loop's branch (see workspace.hpp): merge_branch (a fast-forward, or a merge commit
// made in memory first so that a conflict changes nothing, then the target's work tree updated
// by a safe checkout), and whether a branch is merged or pushed.
#include "daemon/workspace/workspace.hpp"

#include "daemon/workspace/commit.hpp"
#include "daemon/workspace/git_repository.hpp"

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;

// Whether `ancestor` is `commit` or one of its ancestors.
bool contains_commit(git_repository* repo, const git_oid* commit, const git_oid* ancestor) {
    return git_oid_equal(commit, ancestor) || git_graph_descendant_of(repo, commit, ancestor) == 1;
}

// A local branch's commit into `commit`. False, with `error`, when there is no such branch or it
// cannot be read.
bool branch_commit(git_repository* repo, const std::string& branch, commit_handle& commit,
                   std::string& error) {
    reference_handle reference;
    object_handle peeled;
    int code = into(reference, git_branch_lookup, repo, branch.c_str(), GIT_BRANCH_LOCAL);
    if (code == 0) code = into(peeled, git_reference_peel, reference.get(), GIT_OBJECT_COMMIT);
    if (code == 0) code = into(commit, git_commit_lookup, repo, git_object_id(peeled.get()));
    if (code < 0) append_error(error, git_failure("cannot read branch " + branch));
    return code == 0;
}

// Whether every commit of the local branch `branch` is in the reference `ref_name` (its head is
// the reference's commit or one of its ancestors); false when there is no such reference, and,
// with `error`, when it cannot be told.
bool branch_is_in(const fs::path& dir, const std::string& branch, const std::string& ref_name,
                  std::string& error) {
    repository_handle repo = open_repository(dir, error);
    if (!repo) {
        append_error(error, dir.string() + " is not in a git repository");
        return false;
    }
    reference_handle reference;
    object_handle target;
    int code = into(reference, git_reference_lookup, repo.get(), ref_name.c_str());
    if (code == GIT_ENOTFOUND || code == GIT_EINVALIDSPEC) return false;
    if (code == 0) code = into(target, git_reference_peel, reference.get(), GIT_OBJECT_COMMIT);
    if (code < 0) {
        append_error(error, git_failure("cannot read " + ref_name));
        return false;
    }
    commit_handle ours;
    return branch_commit(repo.get(), branch, ours, error) &&
           contains_commit(repo.get(), git_object_id(target.get()), git_commit_id(ours.get()));
}

// Whether `repo`'s HEAD is the branch `ref_name` ("refs/heads/main").
bool head_is(git_repository* repo, const std::string& ref_name) {
    reference_handle head;
    return into(head, git_reference_lookup, repo, "HEAD") == 0 &&
           git_reference_type(head.get()) == GIT_REFERENCE_SYMBOLIC &&
           ref_name == git_reference_symbolic_target(head.get());
}

// The work tree that has the branch `ref_name` checked out: the main one or one of the linked
// worktrees of `repo`'s common directory (whose directory is still there); empty when none has.
fs::path checked_out_in(git_repository* repo, const std::string& ref_name, std::string& error) {
    repository_handle main;
    if (into(main, git_repository_open_ext, git_repository_commondir(repo),
             GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) < 0) {
        append_error(error, git_failure("cannot open the main repository"));
        return {};
    }
    if (const char* workdir = git_repository_workdir(main.get());
        workdir != nullptr && head_is(main.get(), ref_name))
        return directory_path(workdir);
    git_strarray names{};
    if (git_worktree_list(&names, main.get()) < 0) {
        append_error(error, git_failure("cannot list the worktrees"));
        return {};
    }
    fs::path found;
    for (std::size_t i = 0; i < names.count && found.empty(); ++i) {
        worktree_handle worktree;
        repository_handle its;
        if (into(worktree, git_worktree_lookup, main.get(), names.strings[i]) == 0 &&
            git_worktree_validate(worktree.get()) == 0 &&
            into(its, git_repository_open_from_worktree, worktree.get()) == 0 &&
            head_is(its.get(), ref_name))
            found = directory_path(git_worktree_path(worktree.get()));
    }
    git_strarray_dispose(&names);
    return found;
}

// The commit that merges `theirs` into `ours`, made in memory and written to the objects (no
// ref moves), into `merged`; or the conflicting paths into `outcome`. False on failure (with
// `outcome` set) or conflict.
bool make_merge_commit(git_repository* repo, git_commit* ours, git_commit* theirs,
                       const std::string& message, git_oid& merged, merge_outcome& outcome) {
    git_merge_options options;
    git_merge_options_init(&options, GIT_MERGE_OPTIONS_VERSION);
    index_handle index;
    if (into(index, git_merge_commits, repo, ours, theirs, &options) < 0) {
        outcome.error = git_failure("cannot merge");
        return false;
    }
    if (git_index_has_conflicts(index.get())) {
        outcome.what = merge_outcome::kind::conflict;
        git_index_conflict_iterator* iterator = nullptr;
        const git_index_entry *ancestor = nullptr, *our = nullptr, *their = nullptr;
        if (git_index_conflict_iterator_new(&iterator, index.get()) == 0) {
            while (outcome.conflicts.size() < shown_changes &&
                   git_index_conflict_next(&ancestor, &our, &their, iterator) == 0) {
                const git_index_entry* any = our != nullptr     ? our
                                             : their != nullptr ? their
                                                                : ancestor;
                outcome.conflicts.emplace_back(any->path);
            }
            git_index_conflict_iterator_free(iterator);
        }
        return false;
    }
    git_oid tree_id;
    tree_handle tree;
    config_handle config;
    if (git_index_write_tree_to(&tree_id, index.get(), repo) < 0 ||
        into(tree, git_tree_lookup, repo, &tree_id) < 0 ||
        into(config, git_repository_config_snapshot, repo) < 0) {
        outcome.error = git_failure("cannot write the merged tree");
        return false;
    }
    signature_handle author = identity(config.get(), "author", outcome.error);
    signature_handle committer = identity(config.get(), "committer", outcome.error);
    if (!author || !committer) return false;
    const git_commit* parents[] = {ours, theirs};
    if (git_commit_create(&merged, repo, nullptr, author.get(), committer.get(), nullptr,
                          cleaned_message(message).c_str(), tree.get(), 2, parents) < 0) {
        outcome.error = git_failure("cannot make the merge commit");
        return false;
    }
    return true;
}

// Writes the files and the index of the clean work tree `work_tree` as the commit `id` has them
// (its HEAD moves with the branch after): a safe checkout, which changes nothing when a file is
// in the way. Returns "" or what failed, or the changes that make it unclean.
std::string check_out_commit(const fs::path& work_tree, const git_oid& id, bool& dirty) {
    dirty_state state = check_dirty(work_tree);
    if (!state.error.empty()) return state.error;
    if (state.dirty) {
        dirty = true;
        std::string changes;
        for (const auto& change : state.changes) changes += (changes.empty() ? "" : ", ") + change;
        return "is checked out in " + work_tree.string() + ", which has " +
               std::to_string(state.total_changes) + " uncommitted change(s): " + changes;
    }
    std::string error;
    repository_handle checkout_repo = open_repository(work_tree, error, false);
    if (!checkout_repo) return error.empty() ? work_tree.string() + " is not a work tree" : error;
    commit_handle commit;
    tree_handle tree;
    if (into(commit, git_commit_lookup, checkout_repo.get(), &id) < 0 ||
        into(tree, git_commit_tree, commit.get()) < 0)
        return git_failure("cannot read the merged commit");
    git_checkout_options options;
    git_checkout_options_init(&options, GIT_CHECKOUT_OPTIONS_VERSION);
    options.checkout_strategy = GIT_CHECKOUT_SAFE;
    options.disable_filters = 1;  // see the top of workspace.hpp
    if (git_checkout_tree(checkout_repo.get(), reinterpret_cast<git_object*>(tree.get()),
                          &options) < 0)
        return git_failure("cannot update the files of " + work_tree.string());
    return "";
}

}  // namespace

merge_outcome merge_branch(const std::filesystem::path& dir, const std::string& branch,
                           const std::string& target, const std::string& message) {
    merge_outcome outcome;
    const std::string what = "cannot merge " + branch + " into " + target;
    auto fail = [&](const std::string& error) {
        outcome.what = merge_outcome::kind::failed;
        outcome.error = error;
        return outcome;
    };
    std::string error;
    repository_handle repo = open_to_write(dir, what, error);
    if (!repo) return fail(error);
    git_repository* git = repo.get();
    commit_handle theirs, ours;
    if (!branch_commit(git, branch, theirs, error) || !branch_commit(git, target, ours, error))
        return fail(what + ": " + error);
    const git_oid* their_id = git_commit_id(theirs.get());
    const git_oid* our_id = git_commit_id(ours.get());
    if (contains_commit(git, our_id, their_id)) {
        outcome.what = merge_outcome::kind::up_to_date;
        outcome.commit = id_text(*our_id);
        return outcome;
    }
    git_oid result = *their_id;
    outcome.what = merge_outcome::kind::fast_forward;
    if (git_graph_descendant_of(git, their_id, our_id) != 1) {
        if (!make_merge_commit(git, ours.get(), theirs.get(), message, result, outcome)) {
            if (outcome.what == merge_outcome::kind::conflict) return outcome;
            return fail(what + ": " + outcome.error);
        }
        outcome.what = merge_outcome::kind::merge_commit;
    }
    const std::string ref_name = std::string(heads_prefix) + target;
    const fs::path work_tree = checked_out_in(git, ref_name, error);
    if (!error.empty()) return fail(what + ": " + error);
    if (!work_tree.empty()) {
        bool dirty = false;
        if (std::string failed = check_out_commit(work_tree, result, dirty); !failed.empty()) {
            if (!dirty) return fail(what + ": " + failed);
            outcome.what = merge_outcome::kind::dirty;
            outcome.error = target + " " + failed;
            return outcome;
        }
    }
    const std::string log =
        "merge " + branch +
        (outcome.what == merge_outcome::kind::fast_forward ? ": Fast-forward"
                                                           : ": Merge made by ralph");
    reference_handle moved;
    // Only from where it was: a branch that moved meanwhile is left as it is.
    if (into(moved, git_reference_create_matching, git, ref_name.c_str(), &result, 1, our_id,
             log.c_str()) < 0)
        return fail(git_failure(what + ": cannot move " + target));
    outcome.commit = id_text(result);
    return outcome;
}

std::string describe_merge(const merge_outcome& outcome, const std::string& target) {
    using kind = merge_outcome::kind;
    const std::string commit = outcome.commit.substr(0, 12);
    switch (outcome.what) {
        case kind::fast_forward:
            return "merged into " + target + " (fast-forward) at " + commit;
        case kind::merge_commit:
            return "merged into " + target + " (merge commit " + commit + ")";
        case kind::up_to_date:
            return "already in " + target;
        case kind::conflict: {
            std::string paths;
            for (const auto& path : outcome.conflicts) paths += (paths.empty() ? "" : ", ") + path;
            return "conflict in " + paths + ": nothing was merged into " + target;
        }
        case kind::dirty:
        case kind::failed:
            break;
    }
    return "not merged: " + outcome.error;
}

bool is_merged(const std::filesystem::path& dir, const std::string& branch,
               const std::string& target, std::string& error) {
    return branch_is_in(dir, branch, std::string(heads_prefix) + target, error);
}

bool is_pushed(const std::filesystem::path& dir, const std::string& branch,
               const std::string& remote, std::string& error) {
    return branch_is_in(dir, branch, "refs/remotes/" + remote + "/" + branch, error);
}

}  // namespace ralph::workspace
