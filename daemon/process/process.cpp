#include "daemon/process/process.hpp"

#include "common/paths.hpp"
#include "common/process_info.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace ralph {
namespace {

void make_pipe(int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot create a pipe");
}

}  // namespace

spawn_attributes::spawn_attributes(bool own_group) {
    posix_spawnattr_init(&attr_);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr_, &all);
    posix_spawnattr_setsigmask(&attr_, &none);
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (own_group) {
        posix_spawnattr_setpgroup(&attr_, 0);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr_, flags);
}

spawn_attributes::~spawn_attributes() { posix_spawnattr_destroy(&attr_); }

std::string resolve_program(const std::string& program, const std::vector<std::string>& env,
                            const std::string& cwd) {
    auto executable = paths::find_executable(program, search_path_of(env), cwd);
    if (executable.empty())
        throw std::system_error(ENOENT, std::generic_category(),
                                "cannot run " + program + ": not found or not executable");
    return executable.string();
}

std::vector<std::string> environment_in(const std::vector<std::string>& env,
                                        const std::string& cwd) {
    std::vector<std::string> result;
    result.reserve(env.size() + 1);
    for (const auto& entry : env)
        if (!entry.starts_with("PWD=") && !entry.starts_with("OLDPWD=")) result.push_back(entry);
    result.push_back("PWD=" + cwd);
    return result;
}

spawned_process spawn_process(const spawn_request& request) {
    if (request.argv.empty())
        throw std::system_error(EINVAL, std::generic_category(), "empty command");
    const std::string& program = request.argv[0];
    const std::string executable = resolve_program(program, request.env, request.cwd);

    int out[2] = {-1, -1}, err[2];
    if (request.stdio_socket < 0) make_pipe(out);
    make_pipe(err);
    const auto close_all = [&] {
        for (int fd : {out[0], out[1], err[0], err[1]})
            if (fd >= 0) ::close(fd);
    };
    int in = request.stdio_socket;
    if (in < 0) {
        in = ::open(request.stdin_path.empty() ? "/dev/null" : request.stdin_path.c_str(),
                    O_RDONLY | O_CLOEXEC);
        if (in < 0) {
            int saved = errno;
            close_all();
            throw std::system_error(saved, std::generic_category(),
                                    "cannot open agent stdin " + request.stdin_path);
        }
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1] >= 0 ? out[1] : in, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    posix_spawn_file_actions_addchdir_np(&actions, request.cwd.c_str());
    // The agent gets stdin/stdout/stderr and nothing else: not the listening socket, client
    // connections, the database or other agents' pipes (Asio does not open sockets CLOEXEC).
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);

    const spawn_attributes attr(true);

    std::vector<char*> argv, envp;
    for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const std::vector<std::string> environment = environment_in(request.env, request.cwd);
    for (const auto& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);

    pid_t pid = -1;
    int rc =
        ::posix_spawn(&pid, executable.c_str(), &actions, attr.get(), argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (in != request.stdio_socket) ::close(in);
    for (int* ours : {&out[1], &err[1]})
        if (*ours >= 0) ::close(std::exchange(*ours, -1));
    if (rc != 0) {
        close_all();
        throw std::system_error(rc, std::generic_category(),
                                "cannot run " + program + " in " + request.cwd);
    }
    ::fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (out[0] >= 0) {
        ::fcntl(out[0], F_SETFL, O_NONBLOCK);
        // A larger pipe lets a flooding agent write more per wake-up of the daemon.
        ::fcntl(out[0], F_SETPIPE_SZ, 1 << 20);
    }
    spawned_process process{pid, out[0], err[0], process_start_time(pid)};
    return process;
}

void signal_group(pid_t pgid, int signal) {
    if (pgid > 1) ::kill(-pgid, signal);
}

namespace {
constexpr const char* default_search_path = "/usr/local/bin:/usr/bin:/bin";
}

std::string search_path_of(const std::vector<std::string>& env) {
    for (const auto& entry : env)
        if (entry.rfind("PATH=", 0) == 0) return entry.substr(5);
    return default_search_path;
}

std::string search_path_with(const std::map<std::string, std::string>& loop_env) {
    if (auto path = loop_env.find("PATH"); path != loop_env.end()) return path->second;
    const char* own = std::getenv("PATH");
    return own ? own : default_search_path;
}

bool group_alive(pid_t pgid) { return pgid > 1 && (::kill(-pgid, 0) == 0 || errno == EPERM); }

bool kill_leftover_group(pid_t pgid, std::int64_t leader_start_time) {
    if (pgid <= 1) return false;
    process_stat leader;
    if (read_process_stat(pgid, leader)) {
        // A process now has the leader's pid: ours only if it is the same process.
        if (leader.start_time != leader_start_time) return false;
    } else if (!group_alive(pgid)) {
        return false;
    }
    signal_group(pgid, SIGKILL);
    return true;
}

}  // namespace ralph
