// Default locations of the daemon's socket and database (README, "The daemon"), and the helpers
// that create private directories for them. Environment overrides are resolved here and nowhere
// else.
#pragma once

#include <filesystem>
#include <string>

namespace ralph::paths {

// $RALPH_SOCKET, else $XDG_RUNTIME_DIR/ralph/ralphd.sock, else the fallback: ralphd.sock in
// /tmp/ralph-$UID — or, when that directory is not safe (another user made it first), in the
// private directory ralphd made instead and recorded in fallback_socket_record().
std::filesystem::path default_socket();

// Whether default_socket() is the fallback (neither RALPH_SOCKET nor XDG_RUNTIME_DIR is set).
bool socket_is_fallback();

// Where ralphd records the directory of its fallback socket when /tmp/ralph-$UID was not safe:
// `socket-dir` in the default state directory ($XDG_STATE_HOME/ralph), private to the user.
std::filesystem::path fallback_socket_record();

// For ralphd, when the fallback /tmp/ralph-$UID is not safe: makes a new private directory
// /tmp/ralph-$UID-XXXXXX (mkdtemp: nobody can have made it first) and records it. Throws
// std::runtime_error naming what failed.
std::filesystem::path make_fallback_socket_directory();

// Why `dir` cannot hold ralphd's socket — it is not a directory (a symbolic link, say), another
// user owns it, or others may write to it (so anyone could put a socket there) — naming the
// owner; "" when it is safe. Clients check this before they connect, as tmux and ssh-agent do.
std::string socket_directory_problem(const std::filesystem::path& dir);

// "uid 1001 (alice)", or "uid 1001" when /etc/passwd has no name for it.
std::string describe_uid(unsigned uid);

// $XDG_STATE_HOME/ralph/ralph.db, else ~/.local/state/ralph/ralph.db.
std::filesystem::path default_database();

// ralphd's config file: $XDG_CONFIG_HOME/ralph/ralphd.conf, else ~/.config/ralph/ralphd.conf;
// empty when neither variable is set.
std::filesystem::path default_config();
// ralphctl's own settings (client/config.hpp): $XDG_CONFIG_HOME/ralph/ralphctl.conf, else
// ~/.config/ralph/ralphctl.conf; empty when neither variable is set.
std::filesystem::path default_client_config();
// ralphctl's named hosts (client/hosts.hpp): $XDG_CONFIG_HOME/ralph/hosts, else
// ~/.config/ralph/hosts; empty when neither variable is set.
std::filesystem::path default_hosts_file();

// Creates `dir` (and parents) and makes sure the last component is a directory (not a link)
// owned by us with mode 0700. Throws std::runtime_error naming the directory, its owner and what
// to do when that is not possible, and for a directory that others may write to (/tmp itself,
// given as `--socket /tmp/ralphd.sock`), which is shared and never made private.
void make_private_directory(const std::filesystem::path& dir);

// Resolves `program` like execvp would in a process running in directory `run_in` (ralphd's
// own when empty): a name with a slash is taken as is (a relative one from `run_in`), otherwise
// each entry of `search_path` (colon-separated; an empty entry is `run_in`) is tried. Returns
// an empty path when not found.
std::filesystem::path find_executable(const std::string& program, const std::string& search_path,
                                      const std::filesystem::path& run_in = {});

}  // namespace ralph::paths
