// A ralphd on another machine, reached Docker's way: the system's ssh runs `ralphctl
// dial-stdio` on the host, which bridges its stdin and stdout to the ralphd there. Used by
// ralphctl --host ssh://… (client/ssh_dial) and by ralphd --peer (daemon/peers/peer_link).
// $RALPH_SSH_COMMAND replaces `ssh` (words split as a shell would, never run through one), as
// GIT_SSH_COMMAND does for git.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ralph {

inline constexpr std::string_view ssh_scheme = "ssh://";

struct ssh_address {
    std::string user;  // "" = ssh's choice (~/.ssh/config, else the local user)
    std::string host;
    std::string port;  // "" = ssh's choice
};
// Parses "ssh://[USER@]HOST[:PORT]" (HOST may be "[v6]"); std::invalid_argument says what is
// wrong, also for a user or host that ssh would take for an option.
ssh_address parse_ssh_address(std::string_view address);

// The ssh command that runs `ralphctl ARGS` on `address`'s host (`dial-stdio`: a connection to
// its ralphd), in batch mode (no password prompt or host-key question: ssh fails instead, saying
// why) and without a terminal. std::invalid_argument for a RALPH_SSH_COMMAND that cannot be split
// into words.
std::vector<std::string> ssh_ralphctl_command(const ssh_address& address,
                                              const std::vector<std::string>& args);

// How a person would type ssh to `address` with `options` (e.g. a port forward), for a hint:
// $RALPH_SSH_COMMAND's words, or ssh, quoted for a shell. std::invalid_argument as above.
std::string ssh_command_line(const ssh_address& address, const std::vector<std::string>& options);

// Why ssh ended, from its wait status: "ssh exited with status 255: " and the last line it wrote
// on `messages` (its stderr's reading end, read to the end now), or "ssh was killed by signal
// N". With `messages` -1 (ssh wrote on ralphctl's stderr), it says its message is above.
std::string describe_ssh_exit(int wait_status, int messages);

}  // namespace ralph
