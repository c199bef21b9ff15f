// Opening files in a directory whose content ralph does not trust: a workspace, whose files may
// come from a hostile repository or be replaced by an agent at any moment (SECURITY.md). A
// symbolic link planted there must never make ralph write outside the directory, nor read
// outside it on behalf of a sandboxed agent.
//
// - Writes follow no symbolic link in any component, neither in the directory's own path
//   (canonical: checked at submit) nor below it: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
//   where the kernel has it (Linux 5.6), otherwise a walk that opens each component relative
//   to the previous one with O_NOFOLLOW. Missing directories on the way are created the same
//   way. Race-free: a link swapped in between two steps is still refused.
// - Reads of a file beneath the directory follow links that stay beneath it
//   (RESOLVE_BENEATH; with the walk, none at all); a path outside the directory (an absolute
//   --prompt-file the user chose) is opened as it is.
#pragma once

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace ralph::safe_open {

// A symbolic link where ralph follows none, or a path leading out of the directory.
class link_refused : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Opens the regular file `relative` (no "..", not absolute) beneath the directory `dir` with
// `flags` (O_WRONLY | O_CREAT ...; O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC are added) and `mode`,
// creating the missing directories of `relative` (0755). Throws link_refused naming the path,
// or std::runtime_error naming the path and the action for any other failure (a FIFO or a
// directory at the name among them).
unique_fd for_writing(const std::filesystem::path& dir, const std::filesystem::path& relative,
                      int flags, mode_t mode = 0644);

// Opens the regular file `path` read-only (O_NONBLOCK); beneath `dir` (lexically) without
// leaving it through a link. Returns an invalid fd when it does not exist, is not a regular file
// or cannot be read (errno set); throws link_refused when a link leads out of `dir`.
unique_fd for_reading(const std::filesystem::path& dir, const std::filesystem::path& path);

// Whether this kernel has openat2; the tests force the walk with `use_walk(true)`.
bool has_openat2();
void use_walk(bool walk);

}  // namespace ralph::safe_open
