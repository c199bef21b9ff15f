// `ralphctl --host ssh://[USER@]HOST[:PORT]`: a remote ralphd reached Docker's way
// (common/ssh_command.hpp). This end of ssh's stdin/stdout is a socket, on which the client
// speaks the same HTTP and WebSocket as to a local daemon. ssh does the rest: keys, agent,
// ~/.ssh/config, known hosts, ControlMaster.
#pragma once

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace ralph::client {

// Runs `ralphctl ARGS` on the host of `address` (ssh://…) through ssh, its output and messages
// on this ralphctl's stdout and stderr: a command whose work is on that host rather than in its
// daemon (`doctor`). The remote ralphctl's exit status; a client_error (unreachable) when ssh
// could not run it there, (usage) for an address that is not right.
int run_remote_ralphctl(std::string_view address, const std::vector<std::string>& args);

// How a person would type ssh to the host of `address` with `options` (e.g. a port forward), for
// a hint (common/ssh_command.hpp); a client_error (usage) for an address that is not right.
std::string ssh_command_line(std::string_view address, const std::vector<std::string>& options);

// Where ssh's own messages (host key, authentication, "command not found") go: to ralphctl's
// stderr as ssh writes them (one host), or kept for failure() to tell (several hosts at once,
// whose messages would otherwise mix).
enum class ssh_messages { shown, kept };

// The ssh process of one connection.
class ssh_dial {
  public:
    // Starts ssh towards `address` (ssh://[USER@]HOST[:PORT]: common/ssh_command.hpp); a
    // client_error (usage) for an address or RALPH_SSH_COMMAND that is not right.
    ssh_dial(std::string_view address, ssh_messages messages);
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
