// A remote ralphd over the system's ssh (see ssh_dial.hpp).
#include "client/ssh_dial.hpp"

#include "client/output.hpp"
#include "common/text.hpp"

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
namespace {

[[noreturn]] void bad_address(std::string_view address, std::string_view why) {
    throw client_error(exit_code::usage, fmt::format("--host {}: {}", address, why),
                       "write it as ssh://[USER@]HOST[:PORT], e.g. ssh://me@buildbox:2222");
}

bool is_digits(std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

ssh_address parse_ssh_address(std::string_view address) {
    if (!address.starts_with(ssh_scheme)) bad_address(address, "not an ssh:// address");
    std::string_view rest = address.substr(ssh_scheme.size());
    ssh_address result;
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
        result.user = rest.substr(0, at);
        rest = rest.substr(at + 1);
        if (result.user.empty()) bad_address(address, "the user before @ is empty");
    }
    if (rest.starts_with('[')) {  // [v6]:port
        const auto close = rest.find(']');
        if (close == std::string_view::npos) bad_address(address, "no ] after the IPv6 address");
        result.host = rest.substr(1, close - 1);
        rest = rest.substr(close + 1);
        if (!rest.empty() && !rest.starts_with(':')) bad_address(address, "text after ]");
        if (!rest.empty()) result.port = rest.substr(1);
    } else if (const auto colon = rest.find(':'); colon != std::string_view::npos) {
        result.host = rest.substr(0, colon);
        result.port = rest.substr(colon + 1);
    } else {
        result.host = rest;
    }
    if (result.host.empty()) bad_address(address, "no host");
    if (!result.port.empty() && !is_digits(result.port))
        bad_address(address, "the port is not a number");
    for (const std::string* part : {&result.user, &result.host})
        if (part->starts_with('-') || part->find_first_of(" \t\r\n/\\'\"") != std::string::npos)
            bad_address(address, "'" + *part + "' is not a user or host name");
    return result;
}

namespace {

// ssh and its own options: $RALPH_SSH_COMMAND's words, or ssh.
std::vector<std::string> ssh_program() {
    const char* command = std::getenv("RALPH_SSH_COMMAND");
    if (!command || !*command) return {"ssh"};
    std::vector<std::string> argv;
    try {
        argv = text::split_command_words(command);
    } catch (const std::invalid_argument& e) {
        throw client_error(exit_code::usage, fmt::format("RALPH_SSH_COMMAND: {}", e.what()));
    }
    if (argv.empty()) throw client_error(exit_code::usage, "RALPH_SSH_COMMAND has no word");
    return argv;
}

// `-p PORT -l USER` as the address has them.
void add_destination_options(std::vector<std::string>& argv, const ssh_address& address) {
    if (!address.port.empty()) argv.insert(argv.end(), {"-p", address.port});
    if (!address.user.empty()) argv.insert(argv.end(), {"-l", address.user});
}

}  // namespace

std::vector<std::string> ssh_ralphctl_command(const ssh_address& address,
                                              const std::vector<std::string>& args) {
    std::vector<std::string> argv = ssh_program();
    // No password prompt or host-key question in the middle of a command: ssh fails instead,
    // saying why. -T: no terminal, the channel carries bytes as they are.
    argv.insert(argv.end(), {"-o", "BatchMode=yes", "-T"});
    add_destination_options(argv, address);
    argv.insert(argv.end(), {"--", address.host, "ralphctl"});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

std::string ssh_command_line(const ssh_address& address, const std::vector<std::string>& options) {
    std::vector<std::string> argv = ssh_program();
    argv.insert(argv.end(), options.begin(), options.end());
    add_destination_options(argv, address);
    argv.push_back(address.host);
    std::string line;
    for (const auto& word : argv) line += (line.empty() ? "" : " ") + text::shell_quote(word);
    return line;
}

namespace {

// Starts ssh (`words`) with its stdin, stdout and stderr on these descriptors (-1: ralphctl's
// own); its pid.
pid_t spawn_ssh(const std::vector<std::string>& words, int in, int out, int err) {
    std::vector<char*> argv;
    for (const auto& word : words) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    if (in >= 0) ::posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
    if (out >= 0) ::posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
    if (err >= 0) ::posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
    pid_t pid = -1;
    const int error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (error != 0)
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot start {}: {}", words[0], std::strerror(error)),
                           "install OpenSSH's client, or name yours in RALPH_SSH_COMMAND");
    return pid;
}

}  // namespace

int run_remote_ralphctl(const ssh_address& address, const std::vector<std::string>& args) {
    // Nothing to send: ssh's stdin is empty, so that it never reads ralphctl's.
    const unique_fd nothing(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const pid_t pid = spawn_ssh(ssh_ralphctl_command(address, args), nothing.get(), -1, -1);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string command = "ralphctl";
    for (const auto& arg : args) command += " " + arg;
    if (WIFSIGNALED(status))
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot run `{}` on {}: ssh was killed by signal {}",
                                       command, address.host, WTERMSIG(status)));
    // 255: ssh's own failure; 127: the remote shell found no ralphctl. Either said why above.
    const int code = WEXITSTATUS(status);
    if (code == 255 || code == 127)
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot run `{}` on {}: ssh exited with status {} (its "
                                       "message, if any, is above)",
                                       command, address.host, code));
    return code;
}

ssh_dial::ssh_dial(const ssh_address& address, ssh_messages messages) {
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

    pid_ = spawn_ssh(ssh_ralphctl_command(address, {"dial-stdio"}), theirs.get(), theirs.get(),
                     their_stderr.get());
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
    if (WIFSIGNALED(status_)) return fmt::format("ssh was killed by signal {}", WTERMSIG(status_));
    if (messages_.get() < 0)
        return fmt::format("ssh exited with status {} (its message, if any, is above)",
                           WEXITSTATUS(status_));
    // ssh has exited: its stderr reads to the end at once (non-blocking, should a child it
    // left behind still hold the pipe).
    ::fcntl(messages_.get(), F_SETFL, O_NONBLOCK);
    std::string said;
    char buffer[4096];
    ssize_t n = 0;
    while (said.size() < 65536 && (n = ::read(messages_.get(), buffer, sizeof buffer)) > 0)
        said.append(buffer, static_cast<std::size_t>(n));
    said.erase(said.find_last_not_of("\r\n") + 1);
    const std::string last = said.substr(said.rfind('\n') + 1);  // npos + 1 = 0: all of it
    return fmt::format("ssh exited with status {}{}{}", WEXITSTATUS(status_),
                       last.empty() ? "" : ": ", last);
}

}  // namespace ralph::client
