// Repository safety (see repository_safety.hpp): the walk of a git directory looking for a
// symbolic link, one descriptor per level, and the check of its common directory.
#include "daemon/workspace/repository_safety.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;

// Deeper than git's layout goes (refs/heads/a/b/c...): a directory this deep is refused rather
// than walked with an open descriptor per level.
constexpr std::size_t max_git_depth = 64;

// Whether `name` in `prefix` is a directory of loose objects ("objects/" and two hex digits).
bool is_loose_object_directory(std::string_view prefix, std::string_view name) {
    const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
    return prefix == "objects/" && name.size() == 2 && hex(name[0]) && hex(name[1]);
}

}  // namespace

// Names from readdir's d_type: a git directory with loose objects holds thousands of entries,
// and submit walks it (not into the loose objects).
std::string link_problem_below(const std::filesystem::path& dir, git_access access) {
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

std::string layout_problem(const std::filesystem::path& dot_git, git_repository* repo,
                           git_access access) {
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

}  // namespace ralph::workspace
