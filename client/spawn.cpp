// Starting a program and waiting for it (see spawn.hpp).
#include "client/spawn.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

extern char** environ;

namespace ralph::client {

pid_t spawn_process(const std::vector<std::string>& argv, const child_stdio& stdio) {
    std::vector<char*> words;
    for (const auto& word : argv) words.push_back(const_cast<char*>(word.c_str()));
    words.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    if (stdio.in >= 0) ::posix_spawn_file_actions_adddup2(&actions, stdio.in, STDIN_FILENO);
    if (stdio.out >= 0) ::posix_spawn_file_actions_adddup2(&actions, stdio.out, STDOUT_FILENO);
    if (stdio.err >= 0) ::posix_spawn_file_actions_adddup2(&actions, stdio.err, STDERR_FILENO);
    pid_t pid = -1;
    // posix_spawnp searches PATH only for a name without '/', as a shell does.
    const int error = ::posix_spawnp(&pid, words[0], &actions, nullptr, words.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (error != 0) throw std::system_error(error, std::generic_category(), argv.front());
    return pid;
}

int wait_process(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

}  // namespace ralph::client
