// `ralphctl --host ssh://[USER@]HOST[:PORT]`: a remote ralphd reached Docker's way. The system's
// ssh runs `ralphctl dial-stdio` on the host, which bridges its stdin and stdout to the ralphd
// there; this end of ssh's stdin/stdout is a socket, on which the client speaks the same HTTP and
// WebSocket as to a local daemon. ssh does the rest: keys, agent, ~/.ssh/config, known hosts,
// ControlMaster. $RALPH_SSH_COMMAND replaces `ssh` (words split as a shell would, never run
// through one), as GIT_SSH_COMMAND does for git.
#pragma once

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace ralph::client {

inline constexpr std::string_view ssh_scheme = "ssh://";

struct ssh_address {
    std::string user;  // "" = ssh's choice (~/.ssh/config, else the local user)
    std::string host;
    std::string port;  // "" = ssh's choice
};
// Parses "ssh://[USER@]HOST[:PORT]" (HOST may be "[v6]"); a client_error (usage) says what is
// wrong, also for a user or host that ssh would take for an option.
ssh_address parse_ssh_address(std::string_view address);

// The ssh command that runs `ralphctl ARGS` on `address`'s host (`dial-stdio`: a connection).
std::vector<std::string> ssh_ralphctl_command(const ssh_address& address,
                                              const std::vector<std::string>& args);

// Runs `ralphctl ARGS` on `address`'s host through ssh, its output and messages on this
// ralphctl's stdout and stderr: a command whose work is on that host rather than in its daemon
// (`doctor`). The remote ralphctl's exit status; a client_error (unreachable) when ssh could not
// run it there.
int run_remote_ralphctl(const ssh_address& address, const std::vector<std::string>& args);

// How a person would type ssh to `address` with `options` (e.g. a port forward), for a hint:
// $RALPH_SSH_COMMAND's words, or ssh.
std::string ssh_command_line(const ssh_address& address, const std::vector<std::string>& options);

// Where ssh's own messages (host key, authentication, "command not found") go: to ralphctl's
// stderr as ssh writes them (one host), or kept for failure() to tell (several hosts at once,
// whose messages would otherwise mix).
enum class ssh_messages { shown, kept };

// The ssh process of one connection.
class ssh_dial {
  public:
    ssh_dial(const ssh_address& address, ssh_messages messages);
    ~ssh_dial();
    ssh_dial(const ssh_dial&) = delete;
    ssh_dial& operator=(const ssh_dial&) = delete;

    // This end of ssh's stdin and stdout, for the caller to own.
    int take_socket() { return socket_.release(); }
    // Why the connection ended, when ssh did: its exit status (after a short wait for it), and
    // with kept messages the last line ssh wrote.
    std::string failure();

  private:
    pid_t pid_ = -1;
    unique_fd socket_;
    unique_fd messages_;  // kept: the reading end of ssh's stderr
    int status_ = -1;     // waitpid's, once ssh was reaped
};

}  // namespace ralph::client
