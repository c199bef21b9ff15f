// Default locations of the daemon's socket and database (SPEC §2, §6), and the helpers that
// create private directories for them. Environment overrides are resolved here and nowhere else.
#pragma once

#include <filesystem>
#include <string>

namespace ralph::paths {

// $RALPH_SOCKET, else $XDG_RUNTIME_DIR/ralph/ralphd.sock, else /tmp/ralph-$UID/ralphd.sock.
std::filesystem::path default_socket();

// $XDG_STATE_HOME/ralph/ralph.db, else ~/.local/state/ralph/ralph.db.
std::filesystem::path default_database();

// ralphd's config file: $XDG_CONFIG_HOME/ralph/ralphd.conf, else ~/.config/ralph/ralphd.conf;
// empty when neither variable is set.
std::filesystem::path default_config();

// Creates `dir` (and parents) and makes sure the last component is owned by us with mode 0700.
// Throws std::runtime_error naming the directory when that is not possible.
void make_private_directory(const std::filesystem::path& dir);

// Resolves `program` like execvp would in a process running in directory `run_in` (ralphd's
// own when empty): a name with a slash is taken as is (a relative one from `run_in`), otherwise
// each entry of `search_path` (colon-separated; an empty entry is `run_in`) is tried. Returns
// an empty path when not found.
std::filesystem::path find_executable(const std::string& program, const std::string& search_path,
                                      const std::filesystem::path& run_in = {});

}  // namespace ralph::paths
