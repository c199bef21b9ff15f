// The ssh command of a remote ralphd (see ssh_command.hpp).
#include "common/ssh_command.hpp"

#include "common/text.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace ralph {
namespace {

[[noreturn]] void bad_address(std::string_view address, std::string_view why) {
    throw std::invalid_argument(std::string(address) + ": " + std::string(why));
}

bool is_digits(std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// ssh and its own options: $RALPH_SSH_COMMAND's words, or ssh.
std::vector<std::string> ssh_program() {
    const char* command = std::getenv("RALPH_SSH_COMMAND");
    if (command == nullptr || *command == '\0') return {"ssh"};
    std::vector<std::string> argv;
    try {
        argv = text::split_command_words(command);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("RALPH_SSH_COMMAND: ") + e.what());
    }
    if (argv.empty()) throw std::invalid_argument("RALPH_SSH_COMMAND has no word");
    return argv;
}

// `-p PORT -l USER` as the address has them.
void add_destination_options(std::vector<std::string>& argv, const ssh_address& address) {
    if (!address.port.empty()) argv.insert(argv.end(), {"-p", address.port});
    if (!address.user.empty()) argv.insert(argv.end(), {"-l", address.user});
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

std::vector<std::string> ssh_ralphctl_command(const ssh_address& address,
                                              const std::vector<std::string>& args) {
    std::vector<std::string> argv = ssh_program();
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

std::string describe_ssh_exit(int wait_status, int messages) {
    if (WIFSIGNALED(wait_status))
        return "ssh was killed by signal " + std::to_string(WTERMSIG(wait_status));
    const std::string exited = "ssh exited with status " + std::to_string(WEXITSTATUS(wait_status));
    if (messages < 0) return exited + " (its message, if any, is above)";
    // ssh has exited: its stderr reads to the end at once (non-blocking, should a child it
    // left behind still hold the pipe).
    ::fcntl(messages, F_SETFL, O_NONBLOCK);
    std::string said;
    char buffer[4096];
    ssize_t n = 0;
    while (said.size() < 65536 && (n = ::read(messages, buffer, sizeof buffer)) > 0)
        said.append(buffer, static_cast<std::size_t>(n));
    said.erase(said.find_last_not_of("\r\n") + 1);
    const std::string last = said.substr(said.rfind('\n') + 1);  // npos + 1 = 0: all of it
    return last.empty() ? exited : exited + ": " + last;
}

}  // namespace ralph
