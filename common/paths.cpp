#include "common/paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace ralph::paths {
namespace fs = std::filesystem;

namespace {
constexpr const char* socket_name = "ralphd.sock";

std::string env_or_empty(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

// $XDG_STATE_HOME/ralph, else ~/.local/state/ralph.
fs::path default_state_directory() {
    if (auto state = env_or_empty("XDG_STATE_HOME"); !state.empty())
        return fs::path(state) / "ralph";
    if (auto home = env_or_empty("HOME"); !home.empty())
        return fs::path(home) / ".local" / "state" / "ralph";
    throw std::runtime_error(
        "cannot find a state directory: neither XDG_STATE_HOME nor HOME is set");
}
}  // namespace

bool socket_is_fallback() {
    return env_or_empty("RALPH_SOCKET").empty() && env_or_empty("XDG_RUNTIME_DIR").empty();
}

fs::path default_socket() {
    if (auto explicit_socket = env_or_empty("RALPH_SOCKET"); !explicit_socket.empty())
        return explicit_socket;
    if (auto runtime = env_or_empty("XDG_RUNTIME_DIR"); !runtime.empty())
        return fs::path(runtime) / "ralph" / socket_name;
    const fs::path fallback = fs::path("/tmp") / ("ralph-" + std::to_string(::getuid()));
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(fallback, ec)) || socket_directory_problem(fallback).empty())
        return fallback / socket_name;
    // Another user's /tmp/ralph-$UID: ralphd moved to the directory it recorded.
    std::ifstream record(fallback_socket_record());
    std::string recorded;
    if (std::getline(record, recorded) && !recorded.empty() &&
        socket_directory_problem(recorded).empty())
        return fs::path(recorded) / socket_name;
    return fallback / socket_name;  // refused with the reason when used
}

fs::path fallback_socket_record() { return default_state_directory() / "socket-dir"; }

fs::path make_fallback_socket_directory() {
    std::string tmpl = "/tmp/ralph-" + std::to_string(::getuid()) + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw std::runtime_error("cannot create a directory like " + tmpl + ": " +
                                 std::generic_category().message(errno));
    const fs::path record = fallback_socket_record();
    make_private_directory(record.parent_path());
    std::ofstream out(record, std::ios::trunc);
    out << tmpl << "\n";
    out.close();
    if (!out) throw std::runtime_error("cannot record the socket directory in " + record.string());
    return tmpl;
}

std::string describe_uid(unsigned uid) {
    std::string text = "uid " + std::to_string(uid);
    // /etc/passwd itself, not getpwuid: ralphctl is linked statically, and glibc's NSS modules
    // (loaded by getpwuid) crash in a static program. Users of a directory service show as uids.
    std::ifstream passwd("/etc/passwd");
    const std::string id = ":" + std::to_string(uid) + ":";
    for (std::string line; std::getline(passwd, line);) {
        const auto name_end = line.find(':');
        const auto uid_start = line.find(':', name_end + 1);
        if (name_end == std::string::npos || uid_start == std::string::npos) continue;
        if (line.compare(uid_start, id.size(), id) == 0)
            return text + " (" + line.substr(0, name_end) + ")";
    }
    return text;
}

std::string socket_directory_problem(const fs::path& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        return "cannot use " + dir.string() + ": " + std::generic_category().message(errno);
    if (S_ISLNK(st.st_mode)) return dir.string() + " is a symbolic link, not a directory";
    if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory";
    if (st.st_uid != ::getuid())
        return dir.string() + " belongs to " + describe_uid(st.st_uid) + ", not to you (" +
               describe_uid(::getuid()) + ")";
    if ((st.st_mode & 022) != 0) return dir.string() + " may be written by other users";
    return {};
}

fs::path default_database() { return default_state_directory() / "ralph.db"; }

namespace {

// `name` in ralph's configuration directory.
fs::path config_file(const char* name) {
    if (auto config = env_or_empty("XDG_CONFIG_HOME"); !config.empty())
        return fs::path(config) / "ralph" / name;
    if (auto home = env_or_empty("HOME"); !home.empty())
        return fs::path(home) / ".config" / "ralph" / name;
    return {};
}

}  // namespace

fs::path default_config() { return config_file("ralphd.conf"); }

fs::path default_client_config() { return config_file("ralphctl.conf"); }

fs::path default_hosts_file() { return config_file("hosts"); }

void make_private_directory(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error("cannot create directory " + dir.string() + ": " + ec.message());
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error(dir.string() + " is not a directory (a symbolic link, or a file)");
    if (st.st_uid != ::getuid())
        throw std::runtime_error(dir.string() + " belongs to " + describe_uid(st.st_uid) +
                                 ", not to " + describe_uid(::getuid()) +
                                 " running ralphd: ralph keeps nothing in another user's "
                                 "directory (remove it, or choose another with --socket, --db or "
                                 "XDG_RUNTIME_DIR/XDG_STATE_HOME)");
    // A directory others may write to is shared (/tmp): made private, it would lock them out.
    if (st.st_mode & (S_IWGRP | S_IWOTH | S_ISVTX))
        throw std::runtime_error(dir.string() +
                                 " is shared (others may write to it): ralph keeps its files in a "
                                 "private directory (choose one with --socket, --db or "
                                 "XDG_RUNTIME_DIR/XDG_STATE_HOME)");
    if ((st.st_mode & 0777) != 0700 && ::chmod(dir.c_str(), 0700) != 0)
        throw std::runtime_error("cannot make " + dir.string() + " private (chmod 0700)");
}

fs::path find_executable(const std::string& program, const std::string& search_path,
                         const fs::path& run_in) {
    if (program.empty()) return {};
    if (program.find('/') != std::string::npos) {
        const fs::path path = program.front() == '/' || run_in.empty()
                                  ? fs::path(program)
                                  : (run_in / program).lexically_normal();
        return ::access(path.c_str(), X_OK) == 0 ? path : fs::path();
    }
    const std::string here = run_in.empty() ? std::string(".") : run_in.string();
    std::string_view rest = search_path;
    while (true) {
        auto colon = rest.find(':');
        std::string_view entry = rest.substr(0, colon);
        // Plain strings: fs::path would split each candidate into its components.
        std::string candidate = entry.empty() ? here : std::string(entry);
        candidate += '/';
        candidate += program;
        std::error_code ec;
        if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate, ec))
            return candidate;
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return {};
}

}  // namespace ralph::paths
