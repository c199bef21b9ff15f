// Workspace snapshots, comparison, dirty check, commit and worktrees (see workspace.hpp). The git
// work is done by libgit2 in the calling thread: no process is started, and nothing that a
// repository's configuration, attributes or hooks name is ever executed, since libgit2 implements
// none of that (hooks, core.fsmonitor, filter drivers, gpg signing, textconv, external diff).
// Everything here blocks; each call opens its own git_repository, so nothing is shared between
// calls and any number may run at once on different threads.
#include "daemon/workspace/workspace.hpp"

#include "common/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t shown_changes = 20;
constexpr const char* empty_tree_id = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
constexpr std::string_view heads_prefix = "refs/heads/";

// strerror() may share a buffer between threads; the category's message does not.
std::string system_message(int error) { return std::generic_category().message(error); }

void append_error(std::string& into, const std::string& message) {
    if (message.empty()) return;
    if (!into.empty()) into += "; ";
    into += message;
}

// ---- libgit2: set-up, handles, errors

// libgit2's global state, set up by the first call that finds a repository, from any thread (a
// function-local static is initialised exactly once, thread-safely): 3 ms and 3 MiB of RSS here
// (it sets up OpenSSL and libssh2 too), which a daemon that never sees a repository does not
// pay. Kept for the life of the process: never shut down, as a pool thread may still be inside
// libgit2 while the process exits.
void use_libgit2() {
    static const bool ready = [] {
        git_libgit2_init();
        // libgit2 refuses a repository whose directory another user owns, as git's
        // safe.directory does. That check protects programs that execute what a repository's
        // configuration names; ralph executes none of it, and whether a workspace of another
        // user may be used at all is for submit's own check (issue 19), not for each git call.
        // Left on, a daemon running as root could not snapshot its users' repositories.
        git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
        // Every object read is checked against its id (libgit2's default, said here because
        // git_access relies on it: what only reads does not look for links among the loose
        // objects).
        git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1);
        return true;
    }();
    (void)ready;
}

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
std::string git_failure(const std::string& action) {
    const git_error* last = git_error_last();
    return action + ": " +
           (last != nullptr && last->message != nullptr ? last->message : "unknown libgit2 error");
}

std::string id_text(const git_oid& id) {
    char text[GIT_OID_HEXSZ + 1];
    git_oid_tostr(text, sizeof text, &id);
    return text;
}

// A directory as libgit2 names it ("/repo/.git/"), without the trailing slash.
fs::path directory_path(const char* path) {
    std::string text = path;
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
}

bool is_within(const fs::path& path, const fs::path& dir) {
    fs::path relative = path.lexically_relative(dir);
    return !relative.empty() && *relative.begin() != "..";
}

// ---- libgit2 1.5's leak
//
// libgit2 1.5 (Debian 12's) does not free the pcre2 match data of a string that does not match
// a regular expression (fixed upstream by libgit2 PR 6382, after 1.5). It matches every entry
// of a repository's configuration against one each time it opens a repository of format version
// 1 or more (to check its extensions), and reads the configuration of submodules that way each
// time a diff of the work tree looks at them (git_index_add_all and git_status_list_new do): 4 to
// 20 KiB lost per entry, measured here, hundreds of KiB per iteration in such repositories. So a
// repository of format version 1 or more is never opened (below: its workspace is then compared
// as plain files), and the diffs of the work tree leave submodules out, whose checked-out
// commits are read here instead (stage_submodule, submodule_line). All of it can go when the
// project requires libgit2 1.6 or later.

// The text of a small regular file (its first 64 KiB), "" if it is not one: never waits on a
// FIFO.
std::string small_file(const fs::path& path) {
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) return "";
    std::string text(64u << 10, '\0');
    ssize_t n = ::read(fd.get(), text.data(), text.size());
    text.resize(n > 0 ? std::size_t(n) : 0);
    return text;
}

// The first line of `text` without its end of line.
std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
}

// core.repositoryformatversion of the repository whose .git entry is `dot_git`, as its
// configuration file sets it (0 when it does not): <.git>/config, or for a .git file (a linked
// worktree, a submodule) the config of the git directory it names (of its common directory for
// a worktree). [core] comes first in every configuration git writes.
int repository_format_version(const fs::path& dot_git) {
    fs::path git_dir = dot_git;
    std::error_code ec;
    if (!fs::is_directory(dot_git, ec)) {
        std::string link = first_line(small_file(dot_git));
        if (!link.starts_with("gitdir: ")) return 0;
        git_dir = dot_git.parent_path() / link.substr(8);  // `/` keeps an absolute path as it is
        if (std::string common = first_line(small_file(git_dir / "commondir")); !common.empty())
            git_dir /= common;
    }
    std::istringstream config(small_file(git_dir / "config"));
    bool in_core = false;
    for (std::string line; std::getline(config, line);) {
        std::string text;
        for (unsigned char c : line)
            if (!std::isspace(c)) text += char(std::tolower(c));
        if (text.starts_with("[")) in_core = text == "[core]";
        if (in_core && text.starts_with("repositoryformatversion="))
            return std::atoi(text.c_str() + text.find('=') + 1);
    }
    return 0;
}

// ---- the .git entry

// The .git entry (a directory, or a file in a linked worktree or a submodule) of `dir`, or of
// the nearest directory above it that has one when `search`; empty when there is none, and so
// no repository: the snapshots of a plain directory (one or two per iteration) stay at a few
// stat calls.
fs::path git_entry(const fs::path& dir, bool search) {
    std::error_code ec;
    for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty(); p = p.parent_path()) {
        if (fs::exists(p / ".git", ec)) return p / ".git";
        if (!search || p == p.root_path()) break;
    }
    return {};
}

// ---- a git directory that leads out of itself
//
// libgit2 follows symbolic links: a loose object written into `objects/ab` that is a link to a
// directory elsewhere lands there, and a reflog, ref or index that is a link has its target
// rewritten. Nor does git's layout bind the git directory to the work tree: a `commondir` file
// makes another directory the repository's objects, refs and configuration. An agent can plant
// either (also under --sandbox, where the git directory is writable); ralph's snapshots and
// commits would then write outside the workspace. So a repository is used only when its `.git`
// is no link, no path in its git directory (and common directory) is one, and its common
// directory is the git directory itself or, for a linked worktree, the one whose `worktrees/`
// holds it, as git lays them out.

// Deeper than git's layout goes (refs/heads/a/b/c...): a directory this deep is refused rather
// than walked with an open descriptor per level.
constexpr std::size_t max_git_depth = 64;

// What a caller does with the repository. Reading it (a status, a diff of two trees) does not
// need the look into the 256 directories of loose objects (thousands of entries: half of a dirty
// check's time in a repository of 1,000 files): a loose object is read, never written, through
// a link there, and libgit2 checks what it reads against the object's id (its strict hash
// verification, set on in use_libgit2). Writing does need it: libgit2 writes a loose object to a
// temporary file and renames it over its name, but "freshens" one that exists already by
// setting its time, which a link would carry to its target.
enum class git_access { read, write };

// Whether `name` in `prefix` is a directory of loose objects ("objects/" and two hex digits).
bool is_loose_object_directory(std::string_view prefix, std::string_view name) {
    const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
    return prefix == "objects/" && name.size() == 2 && hex(name[0]) && hex(name[1]);
}

// Why `dir` (a git directory) may lead elsewhere: the first symbolic link in it or below, or a
// directory in it that cannot be read whole (one an agent made unreadable could hide a link);
// "" when neither. One descriptor per level, names from readdir's d_type: a git directory with
// loose objects holds thousands of entries, and submit walks it (not into the loose objects).
std::string link_problem_below(const fs::path& dir, git_access access) {
    struct level {
        std::unique_ptr<DIR, int (*)(DIR*)> entries;
        std::string prefix;  // the level's path relative to `dir`, "" or ending in '/'
    };
    std::vector<level> stack;
    auto open_level = [&stack](int fd, std::string prefix) {
        DIR* entries = fd >= 0 ? ::fdopendir(fd) : nullptr;
        if (entries == nullptr && fd >= 0) ::close(fd);
        if (entries == nullptr) return false;
        stack.push_back({{entries, ::closedir}, std::move(prefix)});
        return true;
    };
    auto unreadable = [](const std::string& path) {
        return "cannot be read whole (" + (path.empty() ? std::string(".") : path) + ": " +
               std::strerror(errno) + ")";
    };
    if (!open_level(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), ""))
        return unreadable("");
    while (!stack.empty()) {
        level& top = stack.back();
        errno = 0;
        const dirent* entry = ::readdir(top.entries.get());
        if (entry == nullptr) {
            if (errno != 0) return unreadable(top.prefix);
            stack.pop_back();
            continue;
        }
        const std::string_view name = entry->d_name;
        if (name == "." || name == "..") continue;
        unsigned char type = entry->d_type;
        const int fd = ::dirfd(top.entries.get());
        if (type == DT_UNKNOWN) {
            struct stat info {};
            if (::fstatat(fd, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0)
                return unreadable(top.prefix + std::string(name));
            type = S_ISLNK(info.st_mode) ? DT_LNK : S_ISDIR(info.st_mode) ? DT_DIR : DT_REG;
        }
        const std::string path = top.prefix + std::string(name);
        if (type == DT_LNK) return "holds a symbolic link, " + path;
        if (type != DT_DIR) continue;
        if (access == git_access::read && is_loose_object_directory(top.prefix, name)) continue;
        if (stack.size() >= max_git_depth)
            return "nests directories deeper than " + std::to_string(max_git_depth) + " levels (" +
                   path + ")";
        if (!open_level(
                ::openat(fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
                path + "/"))
            return unreadable(path);
    }
    return "";
}

// Why the repository whose .git entry is `dot_git` leads out of its git directory, or "".
std::string layout_problem(const fs::path& dot_git, git_repository* repo, git_access access) {
    std::error_code ec;
    if (fs::is_symlink(dot_git, ec)) return dot_git.string() + " is a symbolic link";
    const fs::path git_dir = fs::weakly_canonical(git_repository_path(repo), ec);
    const fs::path common_dir = fs::weakly_canonical(git_repository_commondir(repo), ec);
    if (git_dir != common_dir && git_dir.parent_path() != common_dir / "worktrees")
        return "its git directory " + git_dir.string() + " names another common directory, " +
               common_dir.string() + " (in its file commondir)";
    // A linked worktree's git directory is in the common directory's worktrees/.
    if (std::string problem = link_problem_below(common_dir, access); !problem.empty())
        return "its git directory " + common_dir.string() + " " + problem;
    return "";
}

// ---- finding the repository

// The repository that contains `dir`, searched upwards as git does (and, as git, not across a
// file system boundary), or only at `dir` itself without `search`. GIT_DIR, GIT_WORK_TREE,
// GIT_INDEX_FILE... of the daemon's environment are not read: only `dir` chooses. Null without a
// repository, and also when it cannot or must not be opened (then with `error`).
repository_handle open_repository(const fs::path& dir, std::string& error, bool search = true) {
    const fs::path dot_git = git_entry(dir, search);
    if (dot_git.empty()) return nullptr;
    if (int version = repository_format_version(dot_git); version > 0) {
        append_error(error, "cannot use the git repository of " + dir.string() +
                                ": its format version is " + std::to_string(version) +
                                " (repository extensions, e.g. of a partial clone or a sparse "
                                "checkout), which libgit2 1.5 cannot open without leaking memory");
        return nullptr;
    }
    use_libgit2();
    repository_handle repo;
    const unsigned flags = search ? 0 : GIT_REPOSITORY_OPEN_NO_SEARCH;
    int code = into(repo, git_repository_open_ext, dir.c_str(), flags, nullptr);
    if (code == GIT_ENOTFOUND) return nullptr;
    if (code < 0) {
        append_error(error, git_failure("cannot open the git repository of " + dir.string()));
        return nullptr;
    }
    return repo;
}

struct repository {
    repository_handle git;  // null: not in a work tree
    fs::path top;           // the top of the work tree
    std::string prefix;     // the workspace relative to top ("sub/dir"), "" at the top
    std::string error;      // libgit2 could not tell; "not a repository" is not an error
    std::string refused;    // why the repository is not used (layout_problem), also in `error`
    // What the paths of the workspace's files start with in the repository: "sub/dir/" or "".
    std::string under() const { return prefix.empty() ? "" : prefix + "/"; }
};

// The work tree that contains `dir`. A bare repository and the inside of a .git directory are
// not work trees: they have no work to snapshot.
repository find_repository(const fs::path& dir, git_access access) {
    repository found;
    repository_handle repo = open_repository(dir, found.error);
    if (!repo) return found;
    found.refused = layout_problem(git_entry(dir, true), repo.get(), access);
    if (!found.refused.empty()) {
        found.error = "refusing to use the git repository of " + dir.string() + ": " +
                      found.refused + " (ralph writes through no link)";
        return found;
    }
    const char* workdir = git_repository_workdir(repo.get());
    if (workdir == nullptr) return found;
    // Both resolved, as git resolves them: `dir` may be reached through a symbolic link.
    std::error_code ec;
    fs::path top = fs::canonical(workdir, ec);
    fs::path here = ec ? fs::path() : fs::canonical(dir, ec);
    fs::path git_dir = ec ? fs::path() : fs::canonical(git_repository_path(repo.get()), ec);
    if (ec) {
        found.error = "cannot resolve the work tree of " + dir.string() + ": " + ec.message();
        return found;
    }
    if (!is_within(here, top) || is_within(here, git_dir)) return found;
    found.prefix = here.lexically_relative(top).generic_string();
    if (found.prefix == ".") found.prefix.clear();
    found.top = std::move(top);
    found.git = std::move(repo);
    return found;
}

// The repository that contains `dir`, to be written: null, with `error` ("<what>: why"), when
// there is none or it leads out of its git directory.
repository_handle open_to_write(const fs::path& dir, const std::string& what, std::string& error) {
    std::string open_error;
    repository_handle repo = open_repository(dir, open_error);
    if (!repo) {
        error = open_error.empty() ? what + ": not in a git repository" : open_error;
        return nullptr;
    }
    if (std::string problem = layout_problem(git_entry(dir, true), repo.get(), git_access::write);
        !problem.empty()) {
        error = what + ": " + problem + " (ralph writes through no link)";
        return nullptr;
    }
    return repo;
}

// HEAD's commit into `head`; none in a repository without commits. False, with `error`, when
// HEAD cannot be read.
bool head_commit(git_repository* repo, const fs::path& dir, commit_handle& head,
                 std::string& error) {
    head.reset();
    reference_handle reference;
    int code = into(reference, git_repository_head, repo);
    if (code == GIT_EUNBORNBRANCH || code == GIT_ENOTFOUND) return true;
    object_handle peeled;
    if (code == 0) code = into(peeled, git_reference_peel, reference.get(), GIT_OBJECT_COMMIT);
    if (code == 0) code = into(head, git_commit_lookup, repo, git_object_id(peeled.get()));
    if (code < 0) append_error(error, git_failure("cannot read HEAD in " + dir.string()));
    return code == 0;
}

// HEAD's commit id, "" in a repository without commits (or with `error`).
std::string head_id(git_repository* repo, const fs::path& dir, std::string& error) {
    commit_handle head;
    if (!head_commit(repo, dir, head, error) || !head) return "";
    return id_text(*git_commit_id(head.get()));
}

index_handle repository_index(git_repository* repo, const fs::path& dir, std::string& error) {
    index_handle index;
    if (into(index, git_repository_index, repo) < 0)
        append_error(error, git_failure("cannot read the git index of " + dir.string()));
    return index;
}

// ---- the workspace's part of the work tree

// Whether `path` (relative to the top of the work tree) belongs to the workspace whose paths
// start with `under`; its top-level .ralph/ counts only `with_ralph`.
bool in_workspace(std::string_view path, std::string_view under, bool with_ralph) {
    if (!path.starts_with(under)) return false;
    std::string_view rest = path.substr(under.size());
    return with_ralph || !(rest == ".ralph" || rest.starts_with(".ralph/"));
}

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

// `git add -A -- .` of the workspace into `index`, in memory (the caller decides whether to write
// it): the workspace's part of a diff of the index against the work tree (untracked files
// included, .gitignore respected), each changed path staged or removed. As git_index_add_all
// does, but with the submodules left out of the diff and staged here (libgit2 1.5's leak).
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

// The tree of the working tree as `git add -A` would stage it (untracked files included,
// .gitignore respected, .ralph/ left out), staged in the index read into memory and never
// written back: the user's index file and what they staged stay as they are. The blobs and
// trees written are ordinary unreachable objects that `git gc` prunes.
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

// The tree `id` of a snapshot; false, with `error`, when it cannot be read.
bool lookup_tree(git_repository* repo, const std::string& id, tree_handle& tree,
                 std::string& error) {
    git_oid oid;
    if (git_oid_fromstr(&oid, id.c_str()) < 0 || into(tree, git_tree_lookup, repo, &oid) < 0) {
        append_error(error, git_failure("cannot read the snapshot's tree " + id));
        return false;
    }
    return true;
}

// The entry at `path` of `tree` into `entry`, none when the tree has no such path.
bool lookup_entry(git_tree* tree, const std::string& path, tree_entry_handle& entry,
                  std::string& error) {
    int code = into(entry, git_tree_entry_bypath, tree, path.c_str());
    if (code == 0 || code == GIT_ENOTFOUND) return true;
    append_error(error,
                 git_failure("cannot read " + path + " in tree " + id_text(*git_tree_id(tree))));
    return false;
}

// The workspace's part of the snapshot tree `id`: all of it at the top of the work tree, the
// directory `prefix` of it otherwise; null (what libgit2 diffs as an empty tree) when the tree
// has no such directory.
bool workspace_tree(git_repository* repo, const std::string& id, const std::string& prefix,
                    tree_handle& tree, std::string& error) {
    if (!lookup_tree(repo, id, tree, error)) return false;
    if (prefix.empty()) return true;
    tree_entry_handle entry;
    if (!lookup_entry(tree.get(), prefix, entry, error)) return false;
    if (!entry || git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE) {
        tree.reset();
        return true;
    }
    if (into(tree, git_tree_lookup, repo, git_tree_entry_id(entry.get())) < 0) {
        append_error(error, git_failure("cannot read " + prefix + " in tree " + id));
        return false;
    }
    return true;
}

// ---- plain directories: a content hash per file

std::string hex(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// FNV-1a 64: fast, good enough to notice a change, not meant against an adversary.
constexpr std::uint64_t fnv_offset = 14695981039346656037ull;
std::uint64_t fnv1a(std::uint64_t hash, const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
        hash ^= static_cast<unsigned char>(data[i]);
        hash *= 1099511628211ull;
    }
    return hash;
}

std::string identify_file(const fs::path& path, fs::file_type type, std::uintmax_t max_content_size,
                          std::string& error) {
    if (type == fs::file_type::symlink) {
        std::error_code ec;
        std::string target = fs::read_symlink(path, ec).string();
        if (ec) {
            append_error(error, "cannot read the link " + path.string() + ": " + ec.message());
            return "unreadable";
        }
        return "link:" + hex(fnv1a(fnv_offset, target.data(), target.size()));
    }
    // O_NONBLOCK: a file replaced by a FIFO since the directory was read must not block us.
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        append_error(error, "cannot read " + path.string() + ": " + system_message(errno));
        return "unreadable";
    }
    if (!S_ISREG(info.st_mode)) return "unreadable";
    if (std::uintmax_t(info.st_size) > max_content_size)
        return "size:" + std::to_string(info.st_size) + ":" +
               std::to_string(std::int64_t(info.st_mtim.tv_sec) * 1000000000 +
                              info.st_mtim.tv_nsec);
    std::uint64_t hash = fnv_offset;
    std::array<char, 65536> buffer;
    while (true) {
        ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            append_error(error, "cannot read " + path.string() + ": " + system_message(errno));
            return "unreadable";
        }
        hash = fnv1a(hash, buffer.data(), std::size_t(n));
    }
    return "content:" + hex(hash);
}

// Adds the files below `root / relative` ("" is the root) to `snap.files`, in the byte order of
// their keys, until limits.max_files: so a truncated map holds exactly the smallest keys, which
// is what compare() relies on. Symbolic links are recorded, never followed.
void hash_directory(const fs::path& root, const std::string& relative, const file_limits& limits,
                    snapshot& snap) {
    struct child {
        std::string key;
        std::string order;  // a directory sorts as its key plus '/', as its files' keys do
        fs::file_type type;
    };
    std::vector<child> children;
    std::error_code ec;
    fs::directory_iterator it(root / relative, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::string name = it->path().filename().string();
        // Git's internals change on every git command; .ralph/ is ralph's own bookkeeping.
        if (name == ".git" || (relative.empty() && name == ".ralph")) continue;
        std::error_code type_ec;
        fs::file_type type = it->symlink_status(type_ec).type();
        if (type_ec) continue;  // gone since it was listed
        std::string key = relative.empty() ? name : relative + "/" + name;
        std::string order = type == fs::file_type::directory ? key + "/" : key;
        children.push_back({std::move(key), std::move(order), type});
    }
    if (ec) {
        append_error(snap.error, "cannot list " + (root / relative).string() + ": " + ec.message());
    }
    std::sort(children.begin(), children.end(),
              [](const child& a, const child& b) { return a.order < b.order; });
    for (const auto& entry : children) {
        if (snap.files_truncated) return;
        if (entry.type == fs::file_type::directory) {
            hash_directory(root, entry.key, limits, snap);
        } else if (entry.type == fs::file_type::regular || entry.type == fs::file_type::symlink) {
            if (snap.files.size() == limits.max_files) {
                snap.files_truncated = true;
                append_error(snap.error, "more than " + std::to_string(limits.max_files) +
                                             " files: only the first are compared");
                return;
            }
            snap.files[entry.key] =
                identify_file(root / entry.key, entry.type, limits.max_content_size, snap.error);
        }
        // Sockets, FIFOs and devices are not work.
    }
}

void compare_files(const snapshot& before, const snapshot& after, change_stats& stats) {
    // A truncated side only knows the keys up to its last one; beyond, nothing is compared.
    std::optional<std::string> limit;
    for (const snapshot* side : {&before, &after}) {
        if (!side->files_truncated || side->files.empty()) continue;
        const std::string& last = side->files.rbegin()->first;
        if (!limit || last < *limit) limit = last;
    }
    auto a = before.files.begin();
    auto b = after.files.begin();
    auto within = [&](const std::string& key) { return !limit || key <= *limit; };
    while (a != before.files.end() || b != after.files.end()) {
        if (b == after.files.end() || (a != before.files.end() && a->first < b->first)) {
            if (within(a->first)) ++stats.files_changed;  // removed
            ++a;
        } else if (a == before.files.end() || b->first < a->first) {
            if (within(b->first)) ++stats.files_changed;  // added
            ++b;
        } else {
            if (a->second != b->second) ++stats.files_changed;
            ++a;
            ++b;
        }
    }
    stats.tree_changed = stats.files_changed > 0;
}

// git_diff's notify callback: leaves the workspace's .ralph/ out of the diff (> 0: skipped).
int skip_ralph_directory(const git_diff* /*diff*/, const git_diff_delta* delta,
                         const char* /*matched_pathspec*/, void* /*payload*/) {
    for (const char* path : {delta->old_file.path, delta->new_file.path})
        if (path != nullptr && !in_workspace(path, "", false)) return 1;
    return 0;
}

// `git diff --find-renames <before> <after> -- . ':(exclude).ralph'` of two snapshot trees of
// the workspace `dir` in `repo`, with `context_lines` around each change: renames found whatever
// diff.renames says, so that nothing depends on the user's configuration.
bool diff_workspace(const repository& repo, const fs::path& dir, const std::string& before,
                    const std::string& after, std::uint32_t context_lines, diff_handle& diff,
                    std::string& error) {
    tree_handle old_tree, new_tree;
    if (!workspace_tree(repo.git.get(), before, repo.prefix, old_tree, error) ||
        !workspace_tree(repo.git.get(), after, repo.prefix, new_tree, error))
        return false;
    git_diff_options options;
    git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION);
    options.context_lines = context_lines;
    options.notify_cb = skip_ralph_directory;
    int code =
        into(diff, git_diff_tree_to_tree, repo.git.get(), old_tree.get(), new_tree.get(), &options);
    git_diff_find_options find;
    git_diff_find_options_init(&find, GIT_DIFF_FIND_OPTIONS_VERSION);
    find.flags = GIT_DIFF_FIND_RENAMES;
    if (code < 0 || git_diff_find_similar(diff.get(), &find) < 0) {
        append_error(error, git_failure("cannot diff the snapshots of " + dir.string()));
        return false;
    }
    return true;
}

// git_diff_print's callback: appends the line to the patch_text `payload` until its limit.
int append_patch_line(const git_diff_delta* /*delta*/, const git_diff_hunk* /*hunk*/,
                      const git_diff_line* line, void* payload) {
    auto& patch = *static_cast<std::pair<patch_text*, std::size_t>*>(payload);
    std::string text;
    if (line->origin == GIT_DIFF_LINE_CONTEXT || line->origin == GIT_DIFF_LINE_ADDITION ||
        line->origin == GIT_DIFF_LINE_DELETION)
        text += line->origin;
    text.append(line->content, line->content_len);
    if (patch.first->text.size() + text.size() > patch.second) {
        patch.first->cut = true;
        return 1;  // stops the printing
    }
    patch.first->text += text;
    return 0;
}

void compare_git(const fs::path& dir, const snapshot& before, const snapshot& after,
                 change_stats& stats) {
    // An empty HEAD is a repository without commits, unless the snapshot failed: then unknown.
    bool before_head_known = !before.head.empty() || before.error.empty();
    bool after_head_known = !after.head.empty() || after.error.empty();
    stats.head_moved = before_head_known && after_head_known && before.head != after.head;
    if (before.tree.empty() || after.tree.empty()) {
        stats.error = "no working tree to compare";
        append_error(stats.error, before.error);
        append_error(stats.error, after.error);
        return;
    }
    if (before.tree == after.tree) return;
    stats.tree_changed = true;

    // `git diff --numstat --find-renames <before> <after> -- . ':(exclude).ralph'`: the
    // workspace's directory of both trees, .ralph/ left out before renames are paired.
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) {
        stats.error =
            repo.error.empty() ? dir.string() + " is no longer in a git work tree" : repo.error;
        return;
    }
    diff_handle diff;
    // Only the changed lines are counted.
    if (!diff_workspace(repo, dir, before.tree, after.tree, 0, diff, stats.error)) return;
    for (std::size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
        patch_handle patch;
        if (into(patch, git_patch_from_diff, diff.get(), i) < 0) {
            stats.error = git_failure("cannot diff the snapshots of " + dir.string());
            return;
        }
        ++stats.files_changed;
        // A binary file counts as changed with no lines, as in `git diff --numstat`.
        if (!patch || (git_diff_get_delta(diff.get(), i)->flags & GIT_DIFF_FLAG_BINARY) != 0)
            continue;
        std::size_t context = 0, added = 0, deleted = 0;
        git_patch_line_stats(&context, &added, &deleted, patch.get());
        stats.insertions += std::int64_t(added);
        stats.deletions += std::int64_t(deleted);
    }
}

// `relative_path` as a key of snapshot::files ("a/b.md"), or nothing when it is not inside `dir`.
std::optional<std::string> workspace_key(const fs::path& dir, std::string_view relative_path) {
    fs::path path(relative_path);
    if (path.is_absolute()) path = path.lexically_relative(dir);
    path = path.lexically_normal();
    std::string key = path.generic_string();
    while (!key.empty() && key.back() == '/') key.pop_back();
    if (key.empty() || key == "." || key == ".." || key.rfind("../", 0) == 0) return std::nullopt;
    return key;
}

// The id of the blob (or tree) at `path` of the snapshot tree `tree_id`, "" when it has none.
std::string entry_id(git_repository* repo, const std::string& tree_id, const std::string& path,
                     std::string& error) {
    tree_handle tree;
    tree_entry_handle entry;
    if (!lookup_tree(repo, tree_id, tree, error) || !lookup_entry(tree.get(), path, entry, error) ||
        !entry)
        return "";
    return id_text(*git_tree_entry_id(entry.get()));
}

// ---- the dirty check: `git status --porcelain` lines

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

// ---- commits

// The tree `git commit -- .` commits: HEAD's, with the workspace's part as `index` has it, so
// that what the user staged elsewhere stays staged and out of the commit. Written to the
// repository's objects through an index of its own, in memory.
bool tree_to_commit(git_repository* repo, git_index* index, git_commit* parent,
                    const repository& workspace, git_oid& tree_id, std::string& error) {
    const std::string under = workspace.under();
    index_handle staged;
    tree_handle head_tree;
    int code = into(staged, git_index_new);
    if (code == 0 && parent != nullptr && !under.empty()) {
        code = into(head_tree, git_commit_tree, parent);
        if (code == 0) code = git_index_read_tree(staged.get(), head_tree.get());
        if (code == 0) code = git_index_remove_directory(staged.get(), workspace.prefix.c_str(), 0);
    }
    for (std::size_t i = 0; code == 0 && i < git_index_entrycount(index); ++i) {
        const git_index_entry* entry = git_index_get_byindex(index, i);
        if (git_index_entry_stage(entry) == 0 && std::string_view(entry->path).starts_with(under))
            code = git_index_add(staged.get(), entry);
    }
    if (code == 0) code = git_index_write_tree_to(&tree_id, staged.get(), repo);
    if (code < 0) append_error(error, git_failure("cannot write the tree to commit"));
    return code == 0;
}

// One of the names of an author or committer, as git finds it: the environment variable
// (GIT_AUTHOR_NAME...), then the configuration (author.name, then user.name...), then ralph's.
std::string identity_part(git_config* config, const std::string& role, const std::string& part,
                          const char* fallback) {
    std::string variable = "GIT_" + role + "_" + part;
    std::transform(variable.begin(), variable.end(), variable.begin(),
                   [](unsigned char c) { return char(std::toupper(c)); });
    if (const char* value = std::getenv(variable.c_str()); value != nullptr) return value;
    for (const std::string& key : {role + "." + part, "user." + part}) {
        const char* value = nullptr;
        if (git_config_get_string(&value, config, key.c_str()) == 0) return value;
    }
    return fallback;
}

// The author or the committer (`role`) of ralph's commits: the user's identity, or "ralph
// <ralph@localhost>" for the parts the repository has none of (daemons often run without a
// ~/.gitconfig; a missing identity must not fail the commit, nor replace the user's).
signature_handle identity(git_config* config, const std::string& role, std::string& error) {
    std::string name = identity_part(config, role, "name", "ralph");
    std::string email = identity_part(config, role, "email", "ralph@localhost");
    signature_handle signature;
    if (into(signature, git_signature_now, name.c_str(), email.c_str()) < 0)
        append_error(error,
                     git_failure("invalid commit " + role + " " + name + " <" + email + ">"));
    return signature;
}

// The message as `git commit -m` keeps it: trailing spaces and surrounding blank lines dropped,
// one final newline.
std::string cleaned_message(const std::string& message) {
    git_buf buffer = GIT_BUF_INIT;
    std::string text = message;
    if (git_message_prettify(&buffer, message.c_str(), 0, '#') == 0)
        text.assign(buffer.ptr, buffer.size);
    git_buf_dispose(&buffer);
    return text;
}

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

// ---- landing a branch

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

snapshot take_snapshot(const std::filesystem::path& dir, const file_limits& limits) {
    snapshot snap;
    repository repo = find_repository(dir, git_access::write);
    if (!repo.git) {
        append_error(snap.error, repo.error);
        snap.refused = repo.refused;
        hash_directory(dir, "", limits, snap);
        return snap;
    }
    snap.is_git = true;
    snap.head = head_id(repo.git.get(), dir, snap.error);
    snap.tree = write_working_tree(repo, dir, snap.error);
    return snap;
}

change_stats compare(const std::filesystem::path& dir, const snapshot& before,
                     const snapshot& after) {
    change_stats stats;
    if (before.is_git != after.is_git) {
        // e.g. the agent ran `git init`: certainly a change, but nothing to diff against.
        stats.tree_changed = true;
        stats.head_moved = before.head != after.head;
        stats.error = "the workspace became or stopped being a git repository: no diff statistics";
        append_error(stats.error, before.error);
        append_error(stats.error, after.error);
        return stats;
    }
    if (before.is_git)
        compare_git(dir, before, after, stats);
    else
        compare_files(before, after, stats);
    return stats;
}

patch_text diff_snapshots(const std::filesystem::path& dir, const snapshot& before,
                          const snapshot& after, std::size_t limit) {
    patch_text patch;
    if (!before.is_git || !after.is_git || before.tree.empty() || after.tree.empty()) {
        patch.error = "no git snapshots to compare";
        append_error(patch.error, before.error);
        append_error(patch.error, after.error);
        return patch;
    }
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) {
        patch.error =
            repo.error.empty() ? dir.string() + " is no longer in a git work tree" : repo.error;
        return patch;
    }
    diff_handle diff;
    if (!diff_workspace(repo, dir, before.tree, after.tree, 3, diff, patch.error)) return patch;
    std::pair<patch_text*, std::size_t> payload{&patch, limit};
    const int code = git_diff_print(diff.get(), GIT_DIFF_FORMAT_PATCH, append_patch_line, &payload);
    if (code < 0 && !patch.cut)
        patch.error = git_failure("cannot print the diff of the snapshots of " + dir.string());
    return patch;
}

std::string check_out_snapshot(const std::filesystem::path& dir, const snapshot& snap,
                               const std::filesystem::path& target) {
    const std::string what =
        "cannot check the snapshot of " + dir.string() + " out into " + target.string();
    if (!snap.is_git || snap.tree.empty()) return what + ": it is not a git snapshot";
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git)
        return what + ": " + (repo.error.empty() ? "not in a git work tree" : repo.error);
    std::string error;
    tree_handle tree;
    if (!workspace_tree(repo.git.get(), snap.tree, repo.prefix, tree, error))
        return what + ": " + error;
    std::error_code ec;
    fs::remove_all(target, ec);
    fs::create_directories(target, ec);
    if (ec) return what + ": " + ec.message();
    if (!tree) return "";  // the workspace's directory is empty in the snapshot
    git_checkout_options options;
    git_checkout_options_init(&options, GIT_CHECKOUT_OPTIONS_VERSION);
    // Every file written, into `target` only: neither the user's index nor work tree is touched,
    // and no filter driver runs (see the top of workspace.hpp).
    options.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
    options.disable_filters = 1;
    const std::string target_directory = target.string();
    options.target_directory = target_directory.c_str();
    if (git_checkout_tree(repo.git.get(), reinterpret_cast<git_object*>(tree.get()), &options) < 0)
        return git_failure(what);
    return "";
}

bool file_changed(const snapshot& before, const snapshot& after, const std::filesystem::path& dir,
                  std::string_view relative_path) {
    auto key = workspace_key(dir, relative_path);
    if (!key) return false;
    if (before.is_git != after.is_git) return true;  // as compare() says of the whole tree
    if (!before.is_git) {
        auto a = before.files.find(*key);
        auto b = after.files.find(*key);
        std::string before_hash = a == before.files.end() ? "" : a->second;
        std::string after_hash = b == after.files.end() ? "" : b->second;
        return before_hash != after_hash;
    }
    if (before.tree.empty() || after.tree.empty() || before.tree == after.tree) return false;
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) return false;
    std::string error;
    const std::string path = repo.under() + *key;
    std::string before_id = entry_id(repo.git.get(), before.tree, path, error);
    std::string after_id = entry_id(repo.git.get(), after.tree, path, error);
    return error.empty() && before_id != after_id;
}

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

std::string commit_all(const std::filesystem::path& dir, const std::string& message,
                       std::string& error) {
    error.clear();
    repository repo = find_repository(dir, git_access::write);
    if (!repo.git) {
        error = repo.error.empty() ? "cannot commit in " + dir.string() + ": not a git work tree"
                                   : repo.error;
        return "";
    }
    git_repository* git = repo.git.get();
    // `git add -A -- .`: the workspace's changes staged in the repository's index, written
    // back as git add writes it.
    index_handle index = repository_index(git, dir, error);
    if (!index || !stage_workspace(git, index.get(), repo, true, dir, error)) return "";
    if (git_index_write(index.get()) < 0) {
        error = git_failure("cannot write the git index of " + dir.string());
        return "";
    }
    commit_handle parent;
    git_oid tree_id;
    if (!head_commit(git, dir, parent, error) ||
        !tree_to_commit(git, index.get(), parent.get(), repo, tree_id, error))
        return "";
    // Nothing to commit is not an error: the unchanged HEAD ("" without commits).
    if (parent ? git_oid_equal(&tree_id, git_commit_tree_id(parent.get()))
               : id_text(tree_id) == empty_tree_id)
        return parent ? id_text(*git_commit_id(parent.get())) : "";

    config_handle config;
    if (into(config, git_repository_config_snapshot, git) < 0) {
        error = git_failure("cannot read the git configuration of " + dir.string());
        return "";
    }
    signature_handle author = identity(config.get(), "author", error);
    signature_handle committer = identity(config.get(), "committer", error);
    if (!author || !committer) return "";
    tree_handle tree;
    if (into(tree, git_tree_lookup, git, &tree_id) < 0) {
        error = git_failure("cannot read the tree to commit in " + dir.string());
        return "";
    }
    const git_commit* parents[] = {parent.get()};
    git_oid commit_id;
    // HEAD's branch moves (or is born); libgit2 checks that it still points to `parent`.
    if (git_commit_create(&commit_id, git, "HEAD", author.get(), committer.get(), nullptr,
                          cleaned_message(message).c_str(), tree.get(), parent ? 1 : 0,
                          parents) < 0) {
        error = git_failure("cannot commit in " + dir.string());
        return "";
    }
    return id_text(commit_id);
}

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
