// A remote ralphd over the system's ssh (see ssh_dial.hpp).
#include "client/ssh_dial.hpp"

#include "client/output.hpp"
#include "client/spawn.hpp"
#include "common/ssh_command.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace ralph::client {
namespace {

// What `what` (an ssh address and RALPH_SSH_COMMAND: common/ssh_command.hpp) gives, its
// std::invalid_argument a client_error (usage).
template <typename Make>
auto checked_ssh(Make what) {
    try {
        return what();
    } catch (const std::invalid_argument& e) {
        throw client_error(exit_code::usage, fmt::format("--host {}", e.what()),
                           "write it as ssh://[USER@]HOST[:PORT], e.g. ssh://me@buildbox:2222");
    }
}

// The ssh command that runs `ralphctl ARGS` on the host of `address`.
std::vector<std::string> remote_ralphctl(std::string_view address,
                                         const std::vector<std::string>& args) {
    return checked_ssh([&] { return ssh_ralphctl_command(parse_ssh_address(address), args); });
}

// Starts ssh (`words`) with its stdin, stdout and stderr on these descriptors (-1: ralphctl's
// own); its pid.
pid_t spawn_ssh(const std::vector<std::string>& words, const child_stdio& stdio) {
    try {
        return spawn_process(words, stdio);
    } catch (const std::system_error& e) {
        throw client_error(
            exit_code::unreachable,
            fmt::format("cannot start {}: {}", words[0], std::strerror(e.code().value())),
            "install OpenSSH's client, or name yours in RALPH_SSH_COMMAND");
    }
}

}  // namespace

std::string ssh_command_line(std::string_view address, const std::vector<std::string>& options) {
    return checked_ssh(
        [&] { return ralph::ssh_command_line(parse_ssh_address(address), options); });
}

int run_remote_ralphctl(std::string_view address, const std::vector<std::string>& args) {
    const std::vector<std::string> words = remote_ralphctl(address, args);
    const std::string host = parse_ssh_address(address).host;
    // Nothing to send: ssh's stdin is empty, so that it never reads ralphctl's.
    const unique_fd nothing(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int status = wait_process(spawn_ssh(words, {nothing.get(), -1, -1}));
    std::string command = "ralphctl";
    for (const auto& arg : args) command += " " + arg;
    if (WIFSIGNALED(status))
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot run `{}` on {}: ssh was killed by signal {}",
                                       command, host, WTERMSIG(status)));
    // 255: ssh's own failure; 127: the remote shell found no ralphctl. Either said why above.
    const int code = WEXITSTATUS(status);
    if (code == 255 || code == 127)
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot run `{}` on {}: ssh exited with status {} (its "
                                       "message, if any, is above)",
                                       command, host, code));
    return code;
}

ssh_dial::ssh_dial(std::string_view address, ssh_messages messages) {
    const std::vector<std::string> words = remote_ralphctl(address, {"dial-stdio"});
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
    pid_ = spawn_ssh(words, {theirs.get(), theirs.get(), their_stderr.get()});
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
