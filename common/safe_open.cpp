#include "common/safe_open.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace ralph::safe_open {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> walk_forced{false};

std::string describe(int error) { return std::generic_category().message(error); }

[[noreturn]] void refuse_link(const fs::path& path) {
    throw link_refused(path.string() +
                       " is a symbolic link or passes through one: ralph follows no link in a "
                       "workspace");
}

// openat2, or -1 with errno ENOSYS when this kernel lacks it (or the walk is forced).
int call_openat2(int dirfd, const char* path, int flags, mode_t mode, std::uint64_t resolve) {
    if (walk_forced.load(std::memory_order_relaxed) || !has_openat2()) {
        errno = ENOSYS;
        return -1;
    }
    open_how how{};
    how.flags = std::uint64_t(flags);
    how.mode = (flags & O_CREAT) != 0 ? mode : 0;
    how.resolve = resolve;
    int fd;
    do {
        fd = int(::syscall(SYS_openat2, dirfd, path, &how, sizeof how));
    } while (fd < 0 && errno == EAGAIN);  // a rename elsewhere raced the lookup: try again
    return fd;
}

bool is_regular(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

bool is_link_at(int dirfd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

// Opens `name` in `dirfd` with O_NOFOLLOW; a link there is refused (`shown`: the whole path).
unique_fd open_at_nofollow(int dirfd, const std::string& name, int flags, mode_t mode,
                           const fs::path& shown) {
    unique_fd fd(::openat(dirfd, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
    if (fd.get() < 0) {
        const int error = errno;
        if (error == ELOOP || is_link_at(dirfd, name)) refuse_link(shown);
        errno = error;
    }
    return fd;
}

// The directory `dir` (absolute), none of whose components may be a link; an invalid fd with
// errno when it cannot be opened.
unique_fd open_root(const fs::path& dir) {
    if (!dir.is_absolute()) throw std::runtime_error(dir.string() + " is not an absolute path");
    unique_fd fd(call_openat2(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
                              RESOLVE_NO_SYMLINKS));
    if (fd.get() >= 0) return fd;
    if (errno == ELOOP) refuse_link(dir);
    if (errno != ENOSYS) return fd;
    fd.reset(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    fs::path shown = "/";
    for (const auto& part : dir.relative_path()) {
        if (fd.get() < 0) break;
        shown /= part;
        fd = open_at_nofollow(fd.get(), part.string(), O_RDONLY | O_DIRECTORY, 0, shown);
    }
    return fd;
}

void check_relative(const fs::path& relative) {
    if (relative.empty() || relative.is_absolute())
        throw std::runtime_error("not a relative path: " + relative.string());
    for (const auto& part : relative)
        if (part == "..") throw link_refused(relative.string() + " leads out of its directory");
}

// The walk: each directory of `relative` opened relative to the previous one (created first
// with O_CREAT), then the file itself, all with O_NOFOLLOW.
unique_fd walk_and_open(int rootfd, const fs::path& dir, const fs::path& relative, int flags,
                        mode_t mode) {
    unique_fd current;
    int at = rootfd;
    fs::path shown = dir;
    for (const auto& part : relative.parent_path()) {
        shown /= part;
        if ((flags & O_CREAT) != 0 && ::mkdirat(at, part.c_str(), 0755) != 0 && errno != EEXIST)
            return {};
        current = open_at_nofollow(at, part.string(), O_RDONLY | O_DIRECTORY, 0, shown);
        if (current.get() < 0) return current;
        at = current.get();
    }
    return open_at_nofollow(at, relative.filename().string(), flags, mode, dir / relative);
}

}  // namespace

bool has_openat2() {
    static const bool available = [] {
        open_how how{};
        how.flags = O_RDONLY | O_CLOEXEC;
        int fd = int(::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how));
        if (fd >= 0) ::close(fd);
        return fd >= 0;
    }();
    return available;
}

void use_walk(bool walk) { walk_forced.store(walk, std::memory_order_relaxed); }

unique_fd for_writing(const fs::path& dir, const fs::path& relative, int flags, mode_t mode) {
    check_relative(relative);
    const fs::path shown = dir / relative;
    unique_fd root = open_root(dir);
    if (root.get() < 0)
        throw std::runtime_error("cannot open directory " + dir.string() + ": " + describe(errno));
    // Non-blocking: a FIFO planted under the file's name must not block the open.
    flags |= O_NONBLOCK;
    unique_fd fd(call_openat2(root.get(), relative.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode,
                              RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
    if (fd.get() < 0 && errno == ELOOP) refuse_link(shown);
    // The walk where openat2 is missing, and to create missing directories.
    if (fd.get() < 0 && (errno == ENOSYS || (errno == ENOENT && (flags & O_CREAT) != 0)))
        fd = walk_and_open(root.get(), dir, relative, flags, mode);
    if (fd.get() < 0)
        throw std::runtime_error("cannot open " + shown.string() + ": " + describe(errno));
    if (!is_regular(fd.get()))
        throw std::runtime_error("cannot write " + shown.string() + ": not a regular file");
    return fd;
}

unique_fd for_reading(const fs::path& dir, const fs::path& path) {
    // Non-blocking: a FIFO planted under a file's name must not block the open.
    constexpr int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    const fs::path relative = path.lexically_normal().lexically_relative(dir);
    unique_fd fd;
    if (relative.empty() || relative == "." || *relative.begin() == "..") {
        fd.reset(::open(path.c_str(), flags));
    } else {
        unique_fd root = open_root(dir);
        if (root.get() < 0) return root;
        fd.reset(call_openat2(root.get(), relative.c_str(), flags, 0, RESOLVE_BENEATH));
        if (fd.get() < 0 && errno == EXDEV) refuse_link(path);
        if (fd.get() < 0 && errno == ENOSYS)
            fd = walk_and_open(root.get(), dir, relative, flags, 0);
    }
    if (fd.get() >= 0 && !is_regular(fd.get())) {
        fd.reset();
        errno = EINVAL;
    }
    return fd;
}

}  // namespace ralph::safe_open
