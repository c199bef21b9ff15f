// The dirty check (see workspace.hpp): the workspace's uncommitted changes as the lines of `git
// status --porcelain`, read from libgit2's status of the work tree, with the submodules' lines
// made here (libgit2 1.5's leak, git_repository.cpp).
#include "daemon/workspace/workspace.hpp"

#include "daemon/workspace/git_repository.hpp"
#include "daemon/workspace/staging.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;

// A path as `git status --porcelain` writes it with core.quotePath=false: as it is, or in double
// quotes with C escapes when it has a space, a double quote, a backslash or a control character.
std::string porcelain_path(std::string_view path) {
    auto special = [](unsigned char c) { return c < 0x20 || c == 0x7f || c == '"' || c == '\\'; };
    bool quoted = std::any_of(path.begin(), path.end(),
                              [&](unsigned char c) { return c == ' ' || special(c); });
    if (!quoted) return std::string(path);
    static constexpr std::string_view named = "\a\b\t\n\v\f\r\"\\";
    static constexpr std::string_view letters = "abtnvfr\"\\";
    std::string text = "\"";
    for (unsigned char c : path) {
        if (!special(c)) {
            text += char(c);
        } else if (auto at = named.find(char(c)); at != std::string_view::npos) {
            text += '\\';
            text += letters[at];
        } else {
            char octal[5];
            std::snprintf(octal, sizeof octal, "\\%03o", c);
            text += octal;
        }
    }
    return text + "\"";
}

// The two letters git shows for an unmerged path, from the sides of the conflict it has.
std::string conflict_code(git_index* index, const char* path) {
    const git_index_entry* ancestor = nullptr;
    const git_index_entry* ours = nullptr;
    const git_index_entry* theirs = nullptr;
    if (git_index_conflict_get(&ancestor, &ours, &theirs, index, path) < 0) return "UU";
    if (ancestor == nullptr) return theirs == nullptr ? "AU" : ours == nullptr ? "UA" : "AA";
    if (ours == nullptr) return theirs == nullptr ? "DD" : "DU";
    return theirs == nullptr ? "UD" : "UU";
}

char staged_code(unsigned flags) {
    if (flags & GIT_STATUS_INDEX_NEW) return 'A';
    if (flags & GIT_STATUS_INDEX_MODIFIED) return 'M';
    if (flags & GIT_STATUS_INDEX_DELETED) return 'D';
    if (flags & GIT_STATUS_INDEX_RENAMED) return 'R';
    if (flags & GIT_STATUS_INDEX_TYPECHANGE) return 'T';
    return ' ';
}

char unstaged_code(unsigned flags) {
    if (flags & GIT_STATUS_WT_MODIFIED) return 'M';
    if (flags & GIT_STATUS_WT_DELETED) return 'D';
    if (flags & GIT_STATUS_WT_TYPECHANGE) return 'T';
    return ' ';
}

// The line of `git status --porcelain` for a change to a tracked file (`flags`: its status).
std::string tracked_line(const git_status_entry& entry, unsigned flags, git_index* index) {
    const git_diff_delta* staged = entry.head_to_index;
    const char* path =
        staged != nullptr ? staged->new_file.path : entry.index_to_workdir->new_file.path;
    std::string line = (flags & GIT_STATUS_CONFLICTED)
                           ? conflict_code(index, path)
                           : std::string{staged_code(flags), unstaged_code(flags)};
    line += ' ';
    if (staged != nullptr && (flags & GIT_STATUS_INDEX_RENAMED))
        line += porcelain_path(staged->old_file.path) + " -> ";
    return line + porcelain_path(path);
}

// How `git status` shows an untracked `path` of the workspace: as the outermost directory, from
// the workspace's own down, that holds no tracked file ("dir/"), or as itself.
std::string untracked_shown(git_index* index, std::string_view path, std::string_view under) {
    auto holds_tracked = [&](const std::string& directory) {
        std::size_t at = 0;
        return git_index_find_prefix(&at, index, directory.c_str()) == 0;
    };
    if (!under.empty() && !holds_tracked(std::string(under))) return std::string(under);
    for (auto slash = path.find('/', under.size()); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
        std::string directory(path.substr(0, slash + 1));
        if (!holds_tracked(directory)) return directory;
    }
    return std::string(path);
}

// The line of `git status --porcelain` for the submodule whose gitlink in the index is
// `staged`: staged when HEAD's tree has another commit there (or none), unstaged when another
// commit is checked out in it. (Changes inside it that are not committed there are not seen.)
std::string submodule_line(const git_index_entry& staged, git_tree* head_tree,
                           const repository& workspace) {
    std::string ignored;
    tree_entry_handle committed;
    bool in_head = head_tree != nullptr &&
                   lookup_entry(head_tree, staged.path, committed, ignored) && committed;
    char x = !in_head                                                        ? 'A'
             : git_oid_equal(git_tree_entry_id(committed.get()), &staged.id) ? ' '
                                                                             : 'M';
    repository_handle submodule = open_repository(workspace.top / staged.path, ignored, false);
    commit_handle checked_out;
    bool moved = submodule && head_commit(submodule.get(), staged.path, checked_out, ignored) &&
                 checked_out && !git_oid_equal(git_commit_id(checked_out.get()), &staged.id);
    char y = moved ? 'M' : ' ';
    if (x == ' ' && y == ' ') return "";
    return std::string{x, y, ' '} + porcelain_path(staged.path);
}

}  // namespace

bool has_git_entry(const std::filesystem::path& dir) { return !git_entry(dir, true).empty(); }

dirty_state check_dirty(const std::filesystem::path& dir) {
    dirty_state state;
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) {
        state.error = repo.error;
        return state;
    }
    state.is_git = true;
    index_handle index = repository_index(repo.git.get(), dir, state.error);
    if (!index) return state;
    commit_handle head;
    tree_handle head_tree;
    if (!head_commit(repo.git.get(), dir, head, state.error)) return state;
    if (head && into(head_tree, git_commit_tree, head.get()) < 0) {
        state.error = git_failure("cannot read HEAD's tree in " + dir.string());
        return state;
    }
    // As `git status`: staged and unstaged changes, staged renames paired, untracked files (each
    // one: directories are shown as git shows them below). Submodules are left to
    // submodule_line() (libgit2 1.5's leak). The index is read, never refreshed on disk.
    git_status_options options;
    git_status_options_init(&options, GIT_STATUS_OPTIONS_VERSION);
    options.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    options.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
                    GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
    workspace_pathspec pathspec(repo.prefix);
    options.pathspec = *pathspec.get();
    status_handle list;
    if (into(list, git_status_list_new, repo.git.get(), &options) < 0) {
        state.error = git_failure("cannot read the status of " + dir.string());
        return state;
    }
    // Porcelain order: changes to tracked files first, then the untracked ones.
    std::vector<std::string> tracked, untracked;
    const std::string under = repo.under();
    for (std::size_t i = 0; i < git_status_list_entrycount(list.get()); ++i) {
        const git_status_entry* entry = git_status_byindex(list.get(), i);
        const git_diff_delta* delta =
            entry->head_to_index != nullptr ? entry->head_to_index : entry->index_to_workdir;
        const char* path = delta->new_file.path;
        // .ralph/ (state file, notes) is ralph's own: a loop's leftovers do not make the next
        // dirty.
        if (!in_workspace(path, under, false)) continue;
        unsigned flags = entry->status;
        const git_index_entry* indexed = git_index_get_bypath(index.get(), path, 0);
        if (indexed != nullptr && indexed->mode == GIT_FILEMODE_COMMIT) continue;  // a submodule
        // A sparse checkout's files are missing by design, as for `git status`.
        if (indexed != nullptr && (indexed->flags_extended & GIT_INDEX_ENTRY_SKIP_WORKTREE) != 0)
            flags &= ~unsigned(GIT_STATUS_WT_DELETED);
        if (flags == GIT_STATUS_WT_NEW) {
            std::string line = "?? " + porcelain_path(untracked_shown(index.get(), path, under));
            // The files of one untracked directory come one after the other: one line for all.
            if (untracked.empty() || untracked.back() != line) untracked.push_back(std::move(line));
        } else if (flags != GIT_STATUS_CURRENT && flags != GIT_STATUS_IGNORED) {
            tracked.push_back(tracked_line(*entry, flags, index.get()));
        }
    }
    const std::size_t files = tracked.size();
    for (std::size_t i = 0; i < git_index_entrycount(index.get()); ++i) {
        const git_index_entry* entry = git_index_get_byindex(index.get(), i);
        if (entry->mode != GIT_FILEMODE_COMMIT || git_index_entry_stage(entry) != 0 ||
            !in_workspace(entry->path, under, false))
            continue;
        if (std::string line = submodule_line(*entry, head_tree.get(), repo); !line.empty())
            tracked.push_back(std::move(line));
    }
    // In the order of their paths, as git lists them.
    if (tracked.size() > files)
        std::stable_sort(tracked.begin(), tracked.end(),
                         [](const std::string& a, const std::string& b) {
                             return std::string_view(a).substr(3) < std::string_view(b).substr(3);
                         });
    tracked.insert(tracked.end(), untracked.begin(), untracked.end());
    state.total_changes = tracked.size();
    state.dirty = !tracked.empty();
    if (tracked.size() > shown_changes) tracked.resize(shown_changes);
    state.changes = std::move(tracked);
    return state;
}

}  // namespace ralph::workspace
