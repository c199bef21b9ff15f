// `ralphctl dial-stdio`: bridges stdin and stdout to ralphd's socket, byte for byte, until the
// daemon closes the connection. What `ralphctl --host ssh://HOST` runs on HOST through ssh
// (client/ssh_dial.hpp), as `docker system dial-stdio` is for Docker. The socket is checked as
// for any command (its directory and owner, the listening process's user): on HOST, the peer-uid
// check of ralphd applies to the SSH user. End of stdin is passed on as the end of the request
// stream (shutdown of the socket's writing side); the daemon's end of the connection ends it.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>

namespace ralph::client {
namespace {

// Writes all of `size` bytes; false when `fd` is gone.
bool write_fully(int fd, const char* data, ssize_t size) {
    while (size > 0) {
        const ssize_t written = ::write(fd, data, static_cast<std::size_t>(size));
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        data += written;
        size -= written;
    }
    return true;
}

int run_dial_stdio(const client_context& ctx) {
    const unique_fd daemon = connect_socket(ctx.socket);
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {daemon.get(), POLLIN, 0}};
    char buffer[64 * 1024];
    for (;;) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            throw client_error(exit_code::failure, fmt::format("poll: {}", std::strerror(errno)));
        }
        if (fds[0].revents != 0) {
            const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                // The client is done sending: the daemon answers what it has, then closes.
                ::shutdown(daemon.get(), SHUT_WR);
                fds[0].fd = -1;
            } else if (!write_fully(daemon.get(), buffer, n)) {
                return exit_code::unreachable;
            }
        }
        if (fds[1].revents != 0) {
            const ssize_t n = ::read(daemon.get(), buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return exit_code::ok;  // the daemon closed the connection
            if (!write_fully(STDOUT_FILENO, buffer, n)) return exit_code::ok;  // the client left
        }
    }
}

}  // namespace

void register_dial_stdio_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand(
        "dial-stdio",
        "Bridge stdin/stdout to ralphd's socket (what --host ssh://HOST runs on HOST)");
    cmd->callback([&ctx] { ctx.exit_code = run_dial_stdio(ctx); });
}

}  // namespace ralph::client
