#include "daemon/process/process.hpp"

#include "common/paths.hpp"

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

namespace ralph {
namespace {

// Field 5 (pgrp) and field 22 (starttime) of /proc/<pid>/stat; the command name (field 2)
// may contain spaces and parentheses, so parsing starts after its last ')'.
bool read_stat(pid_t pid, pid_t& pgrp, std::int64_t& start_time) {
    // Plain read(2): this runs for every agent started, and iostreams cost more than the read.
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buffer[4096];
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (n <= 0) return false;
    const std::string_view line(buffer, std::size_t(n));
    const auto close = line.rfind(')');
    if (close == std::string_view::npos) return false;
    // Fields after ") " start at field 3 (state), one space apart.
    std::size_t pos = close + 2;
    for (int index = 3; pos < line.size(); ++index) {
        const std::size_t end = std::min(line.find(' ', pos), line.size());
        const char* first = line.data() + pos;
        const char* last = line.data() + end;
        if (index == 5 && std::from_chars(first, last, pgrp).ec != std::errc()) return false;
        if (index == 22) return std::from_chars(first, last, start_time).ec == std::errc();
        pos = end + 1;
    }
    return false;
}

void make_pipe(int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot create a pipe");
}

}  // namespace

spawned_process spawn_process(const spawn_request& request) {
    if (request.argv.empty())
        throw std::system_error(EINVAL, std::generic_category(), "empty command");
    const std::string& program = request.argv[0];
    auto executable = paths::find_executable(program, search_path_of(request.env), request.cwd);
    if (executable.empty())
        throw std::system_error(ENOENT, std::generic_category(),
                                "cannot run " + program + ": not found or not executable");

    int out[2], err[2];
    make_pipe(out);
    make_pipe(err);
    int in = ::open(request.stdin_path.empty() ? "/dev/null" : request.stdin_path.c_str(),
                    O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        int saved = errno;
        for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
        throw std::system_error(saved, std::generic_category(),
                                "cannot open agent stdin " + request.stdin_path);
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    posix_spawn_file_actions_addchdir_np(&actions, request.cwd.c_str());
    // The agent gets stdin/stdout/stderr and nothing else: not the listening socket, client
    // connections, the database or other agents' pipes (Asio does not open sockets CLOEXEC).
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);

    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own process group; default signal dispositions and an empty mask, whatever the daemon
    // blocks or ignores (SIGPIPE, SIGCHLD handling).
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    std::vector<char*> argv, envp;
    for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    // PWD describes the process started, as after a shell's `cd` (some agents, opencode among
    // them, take their project directory from it); OLDPWD would tell where ralphd runs.
    for (const auto& entry : request.env)
        if (!entry.starts_with("PWD=") && !entry.starts_with("OLDPWD="))
            envp.push_back(const_cast<char*>(entry.c_str()));
    std::string pwd = "PWD=" + request.cwd;
    envp.push_back(pwd.data());
    envp.push_back(nullptr);

    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, executable.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(in);
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
        ::close(out[0]);
        ::close(err[0]);
        throw std::system_error(rc, std::generic_category(),
                                "cannot run " + program + " in " + request.cwd);
    }
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    ::fcntl(err[0], F_SETFL, O_NONBLOCK);
    // A larger pipe lets a flooding agent write more per wake-up of the daemon.
    ::fcntl(out[0], F_SETPIPE_SZ, 1 << 20);
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

std::int64_t process_start_time(pid_t pid) {
    pid_t pgrp = 0;
    std::int64_t start = 0;
    return read_stat(pid, pgrp, start) ? start : 0;
}

bool kill_leftover_group(pid_t pgid, std::int64_t leader_start_time) {
    if (pgid <= 1) return false;
    pid_t leader_pgrp = 0;
    std::int64_t leader_start = 0;
    if (read_stat(pgid, leader_pgrp, leader_start)) {
        // A process now has the leader's pid: ours only if it is the same process.
        if (leader_start != leader_start_time) return false;
    } else if (!group_alive(pgid)) {
        return false;
    }
    signal_group(pgid, SIGKILL);
    return true;
}

}  // namespace ralph
