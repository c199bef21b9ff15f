// Starting agent processes and ending process groups. An agent runs without a shell, as the
// leader of its own process group (pgid = pid), in its workspace, with stdin from a file or
// /dev/null and stdout/stderr on pipes. Everything it starts stays in that group unless it
// calls setsid itself, so signalling the group ends the whole tree.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ralph {

struct spawn_request {
    std::vector<std::string> argv;  // argv[0] resolved like execvp would in `cwd`, on PATH of `env`
    std::vector<std::string> env;   // "KEY=VALUE", the complete environment but PWD, which
                                    // is set to cwd (any PWD and OLDPWD in env are dropped)
    std::string cwd;
    std::string stdin_path;  // empty = /dev/null
    // When set: the process's stdin and stdout, instead of stdin_path and a pipe (one end of a
    // socketpair, for ssh to carry a peer's session); stdout_fd is then -1.
    int stdio_socket = -1;
};

struct spawned_process {
    pid_t pid = -1;      // also the process group id
    int stdout_fd = -1;  // read ends, non-blocking, close-on-exec
    int stderr_fd = -1;
    std::int64_t start_time = 0;  // /proc/<pid>/stat starttime, identifies this process
};

// posix_spawn's attributes for a process ralphd starts: default signal dispositions and an
// empty mask, whatever ralphd blocks or ignores (SIGPIPE, SIGCHLD handling); with `own_group`,
// the leader of a new process group.
class spawn_attributes {
  public:
    explicit spawn_attributes(bool own_group);
    ~spawn_attributes();
    spawn_attributes(const spawn_attributes&) = delete;
    spawn_attributes& operator=(const spawn_attributes&) = delete;
    const posix_spawnattr_t* get() const { return &attr_; }

  private:
    posix_spawnattr_t attr_;
};

// The executable `program` names, found like execvp would in `cwd` on the PATH of `env`. Throws
// std::system_error naming it when there is none.
std::string resolve_program(const std::string& program, const std::vector<std::string>& env,
                            const std::string& cwd);
// The environment of a process started in `cwd`: `env` with PWD = cwd, as after a shell's `cd`
// (some agents, opencode among them, take their project directory from it), and without OLDPWD,
// which would tell where ralphd runs.
std::vector<std::string> environment_in(const std::vector<std::string>& env,
                                        const std::string& cwd);

// Throws std::system_error with a message naming the program when it cannot be started
// (not found, not executable, cwd missing...): the exec failure is reported back from the child.
spawned_process spawn_process(const spawn_request& request);

// Sends `signal` to every process of group `pgid`; a group that is already gone is fine.
void signal_group(pid_t pgid, int signal);
// True while any process of the group exists.
bool group_alive(pid_t pgid);

// Recovery: kills (SIGKILL) what remains of a process group started by an earlier daemon.
// The group is ours if its leader still has the recorded start time, or if the leader is gone
// but members remain (a pgid cannot be reused while a member exists). Returns true if it
// signalled anything.
bool kill_leftover_group(pid_t pgid, std::int64_t leader_start_time);

// The PATH an agent with environment `env` resolves its program against (a default when unset),
// used both to check a loop at submit and to start its agent, so the two always agree.
std::string search_path_of(const std::vector<std::string>& env);
// The same for the environment of a loop's agent (agent_environment with loop_env among the
// overrides; PATH always passes the policy), without building it: the PATH in loop_env, else
// ralphd's own.
std::string search_path_with(const std::map<std::string, std::string>& loop_env);

}  // namespace ralph
