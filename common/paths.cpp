#include "common/paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace ralph::paths {
namespace fs = std::filesystem;

namespace {
std::string env_or_empty(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}
}  // namespace

fs::path default_socket() {
    if (auto explicit_socket = env_or_empty("RALPH_SOCKET"); !explicit_socket.empty())
        return explicit_socket;
    if (auto runtime = env_or_empty("XDG_RUNTIME_DIR"); !runtime.empty())
        return fs::path(runtime) / "ralph" / "ralphd.sock";
    return fs::path("/tmp") / ("ralph-" + std::to_string(::getuid())) / "ralphd.sock";
}

fs::path default_database() {
    if (auto state = env_or_empty("XDG_STATE_HOME"); !state.empty())
        return fs::path(state) / "ralph" / "ralph.db";
    if (auto home = env_or_empty("HOME"); !home.empty())
        return fs::path(home) / ".local" / "state" / "ralph" / "ralph.db";
    throw std::runtime_error("cannot find a state directory: neither XDG_STATE_HOME nor HOME is set");
}

fs::path default_config() {
    if (auto config = env_or_empty("XDG_CONFIG_HOME"); !config.empty())
        return fs::path(config) / "ralph" / "ralphd.conf";
    if (auto home = env_or_empty("HOME"); !home.empty())
        return fs::path(home) / ".config" / "ralph" / "ralphd.conf";
    return {};
}

void make_private_directory(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error("cannot create directory " + dir.string() + ": " + ec.message());
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error(dir.string() + " is not a directory");
    if (st.st_uid != ::getuid())
        throw std::runtime_error(dir.string() + " is owned by another user");
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
