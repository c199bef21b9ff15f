// A remote ralphd over the system's ssh (see ssh_dial.hpp).
#include "client/ssh_dial.hpp"

#include "client/output.hpp"
#include "common/ssh_command.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ralph::client {

ssh_dial::ssh_dial(std::string_view address, ssh_messages messages) {
    std::vector<std::string> words;
    try {
        words = ssh_dial_command(parse_ssh_address(address));
    } catch (const std::invalid_argument& e) {
        throw client_error(exit_code::usage, fmt::format("--host {}", e.what()),
                           "write it as ssh://[USER@]HOST[:PORT], e.g. ssh://me@buildbox:2222");
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot make a socket for ssh: {}", std::strerror(errno)));
    socket_.reset(pair[0]);
    unique_fd theirs(pair[1]);
    unique_fd their_stderr;
    if (messages == ssh_messages::kept) {
        int pipe[2];
        if (::pipe2(pipe, O_CLOEXEC) != 0)
            throw client_error(exit_code::unreachable,
                               fmt::format("cannot make a pipe for ssh: {}", std::strerror(errno)));
        messages_.reset(pipe[0]);
        their_stderr.reset(pipe[1]);
    }

    std::vector<char*> argv;
    for (const auto& word : words) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
    ::posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDOUT_FILENO);
    if (their_stderr.get() >= 0)
        ::posix_spawn_file_actions_adddup2(&actions, their_stderr.get(), STDERR_FILENO);
    const int error = ::posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (error != 0)
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot start {}: {}", words[0], std::strerror(error)),
                           "install OpenSSH's client, or name yours in RALPH_SSH_COMMAND");
}

ssh_dial::~ssh_dial() {
    if (pid_ < 0 || status_ >= 0) return;
    // The connection is closed: the remote dial-stdio ends and ssh with it. One that lingers
    // (a ControlMaster it started, a hung network) is not waited for.
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
}

std::string ssh_dial::failure() {
    using namespace std::chrono_literals;
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (status_ < 0 && std::chrono::steady_clock::now() < deadline) {
        if (::waitpid(pid_, &status_, WNOHANG) == pid_) break;
        status_ = -1;
        std::this_thread::sleep_for(10ms);
    }
    if (status_ < 0) return "ssh still runs";
    return describe_ssh_exit(status_, messages_.get());
}

}  // namespace ralph::client
