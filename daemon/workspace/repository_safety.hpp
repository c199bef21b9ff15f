// Repository safety: a git directory that leads out of itself is never used. libgit2 follows
// symbolic links: a loose object written into `objects/ab` that is a link to a directory
// elsewhere lands there, and a reflog, ref or index that is a link has its target rewritten. Nor
// does git's layout bind the git directory to the work tree: a `commondir` file makes another
// directory the repository's objects, refs and configuration. An agent can plant either (also
// under --sandbox, where the git directory is writable); ralph's snapshots and commits would
// then write outside the workspace. So a repository is used only when its `.git` is no link, no
// path in its git directory (and common directory) is one, and its common directory is the git
// directory itself or, for a linked worktree, the one whose `worktrees/` holds it, as git lays
// them out. Internal to daemon/workspace/, as are its other headers: the daemon includes
// workspace.hpp.
#pragma once

#include <git2.h>

#include <filesystem>
#include <string>

namespace ralph::workspace {

// What a caller does with the repository. Reading it (a status, a diff of two trees) does not
// need the look into the 256 directories of loose objects (thousands of entries: half of a dirty
// check's time in a repository of 1,000 files): a loose object is read, never written, through
// a link there, and libgit2 checks what it reads against the object's id (its strict hash
// verification, set on in use_libgit2). Writing does need it: libgit2 writes a loose object to a
// temporary file and renames it over its name, but "freshens" one that exists already by
// setting its time, which a link would carry to its target.
enum class git_access { read, write };

// Why `dir` (a git directory) may lead elsewhere: the first symbolic link in it or below, or a
// directory in it that cannot be read whole (one an agent made unreadable could hide a link);
// "" when neither.
std::string link_problem_below(const std::filesystem::path& dir, git_access access);

// Why the repository whose .git entry is `dot_git` leads out of its git directory, or "".
std::string layout_problem(const std::filesystem::path& dot_git, git_repository* repo,
                           git_access access);

}  // namespace ralph::workspace
