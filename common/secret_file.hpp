// Files that hold what would be a secret on a command line (every user of the machine reads
// /proc/PID/cmdline): ralphd --notify-file (webhook URLs, whose paths are tokens) and ralphctl
// submit --env-file (API keys). Such a file must be the user's own and readable by nobody else:
// one that belongs to another user, or that its group or others may read or write, is refused
// with the fix, as ssh refuses a private key others can read. (A warning would come after the
// secret had been readable all along.)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::secret_file {

// The lines of `path`, each trimmed of a final CR, without the empty ones, those of blanks only
// and comments (a first non-blank `#`); with the number of each in the file. Throws
// std::invalid_argument saying what is wrong and how to fix it (the message starts with
// `option` and the path).
struct line {
    std::size_t number;
    std::string text;
};
std::vector<line> read_lines(const std::filesystem::path& path, std::string_view option);

}  // namespace ralph::secret_file
