// Finding and opening the repository that contains a workspace (see git_repository.hpp), with
// libgit2's set-up and the guard against libgit2 1.5's leak: a repository of format version 1
// or more is never opened.
#include "daemon/workspace/git_repository.hpp"

#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <system_error>

namespace ralph::workspace {

namespace fs = std::filesystem;

void append_error(std::string& into, const std::string& message) {
    if (message.empty()) return;
    if (!into.empty()) into += "; ";
    into += message;
}

namespace {

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

}  // namespace

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

fs::path directory_path(const char* path) {
    std::string text = path;
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
}

fs::path git_entry(const fs::path& dir, bool search) {
    std::error_code ec;
    for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty(); p = p.parent_path()) {
        if (fs::exists(p / ".git", ec)) return p / ".git";
        if (!search || p == p.root_path()) break;
    }
    return {};
}

repository_handle open_repository(const fs::path& dir, std::string& error, bool search) {
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

bool lookup_tree(git_repository* repo, const std::string& id, tree_handle& tree,
                 std::string& error) {
    git_oid oid;
    if (git_oid_fromstr(&oid, id.c_str()) < 0 || into(tree, git_tree_lookup, repo, &oid) < 0) {
        append_error(error, git_failure("cannot read the snapshot's tree " + id));
        return false;
    }
    return true;
}

bool lookup_entry(git_tree* tree, const std::string& path, tree_entry_handle& entry,
                  std::string& error) {
    int code = into(entry, git_tree_entry_bypath, tree, path.c_str());
    if (code == 0 || code == GIT_ENOTFOUND) return true;
    append_error(error,
                 git_failure("cannot read " + path + " in tree " + id_text(*git_tree_id(tree))));
    return false;
}

}  // namespace ralph::workspace
