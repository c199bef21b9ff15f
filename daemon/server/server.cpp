// The listener: owns the API socket (bound here or adopted from systemd), admits connections of
// our own uid (at max_connections, closing the one idle the longest for each new one), and
// closes every session on stop().
#include "daemon/server/server.hpp"

#include "daemon/server/connection.hpp"
#include "daemon/server/http_session.hpp"

#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ralph {
namespace {

namespace fs = std::filesystem;

// The accept loop's state, shared with the loop's coroutine so that it outlives a server
// destroyed while an accept is pending.
struct listener {
    listener(net::io_context& io, server_context context)
        : state(std::make_shared<shared_state>(shared_state{context, {}, {}})), acceptor(io) {}

    std::shared_ptr<shared_state> state;
    local_stream::acceptor acceptor;
    std::uint64_t next_id = 1;
};

// Removes a socket file nobody answers on (left by a daemon that died); refuses to take over
// a live one or to remove anything that is not a socket.
void clear_stale_socket(net::io_context& io, const fs::path& path) {
    std::error_code fs_error;
    const fs::file_status status = fs::symlink_status(path, fs_error);
    if (!fs::exists(status)) return;
    if (!fs::is_socket(status))
        throw std::runtime_error(path.string() + " exists and is not a socket; not replacing it");

    local_stream::socket probe(io);
    beast::error_code ec;
    probe.connect(local_stream::endpoint(path.string()), ec);
    if (!ec) throw std::runtime_error("another ralphd is listening on " + path.string());
    if (ec != net::error::connection_refused)
        throw std::runtime_error("cannot check the existing socket " + path.string() + ": " +
                                 ec.message());
    spdlog::info("removing stale socket {}", path.string());
    fs::remove(path);
}

void bind_socket(net::io_context& io, local_stream::acceptor& acceptor, const fs::path& path) {
    if (path.native().size() >= sizeof(sockaddr_un{}.sun_path))
        throw std::runtime_error("socket path is too long (" +
                                 std::to_string(path.native().size()) +
                                 " bytes): " + path.string());
    clear_stale_socket(io, path);

    beast::error_code ec;
    acceptor.open(local_stream(), ec);
    if (!ec) {
        // Created 0600 from the start: no moment when another user could connect.
        const mode_t old_mask = ::umask(0177);
        acceptor.bind(local_stream::endpoint(path.string()), ec);
        ::umask(old_mask);
    }
    if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot listen on " + path.string() + ": " + ec.message());
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
}

void admit(listener& self, local_stream::socket socket) {
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
        spdlog::warn("refused a connection: cannot read its credentials: {}", std::strerror(errno));
        return;
    }
    if (peer.uid != ::getuid()) {
        spdlog::warn("refused a connection from pid {} uid {}: only uid {} may connect", peer.pid,
                     peer.uid, ::getuid());
        return;
    }
    const std::size_t max_connections = self.state->context.limits.max_connections;
    if (self.state->connections.size() >= max_connections) {
        const std::uint64_t closed = self.state->connections.close_longest_idle(false);
        spdlog::warn(
            "all {} connections are taken: closed connection {}, idle the longest, for "
            "a new one from pid {}",
            max_connections, closed, peer.pid);
    }
    const std::uint64_t id = self.next_id++;
    spdlog::debug("connection {}: accepted from pid {}", id, peer.pid);
    std::make_shared<http_session>(self.state, std::move(socket), id)->start();
}

awaitable<void> accept_loop(std::shared_ptr<listener> self) {
    net::steady_timer pause(self->acceptor.get_executor());
    for (;;) {
        beast::error_code ec;
        local_stream::socket socket =
            co_await self->acceptor.async_accept(net::redirect_error(use_awaitable, ec));
        if (ec == net::error::operation_aborted || !self->acceptor.is_open()) co_return;  // stop()
        if (ec) {
            // Typically out of file descriptors: the connection stays in the backlog, so wait a
            // little instead of spinning on it.
            spdlog::warn("cannot accept a connection: {}", ec.message());
            pause.expires_after(std::chrono::milliseconds(100));
            co_await pause.async_wait(net::redirect_error(use_awaitable, ec));
            continue;
        }
        admit(*self, std::move(socket));
    }
}

}  // namespace

struct server::impl {
    std::shared_ptr<listener> shared;
    fs::path path;  // the socket file we created and remove on stop; empty when adopted
    bool stopped = false;
};

server::server(net::io_context& io, server_context context, const fs::path& path)
    : impl_(std::make_unique<impl>(impl{std::make_shared<listener>(io, context), path})) {
    bind_socket(io, impl_->shared->acceptor, path);
}

server::server(net::io_context& io, server_context context, int listening_fd)
    : impl_(std::make_unique<impl>(impl{std::make_shared<listener>(io, context), {}})) {
    impl_->shared->acceptor.assign(local_stream(), listening_fd);
}

server::~server() { stop(); }

void server::start() {
    spdlog::info("API server listening on {}", impl_->shared->acceptor.local_endpoint().path());
    net::co_spawn(impl_->shared->acceptor.get_executor(), accept_loop(impl_->shared),
                  net::detached);
}

void server::stop() {
    if (impl_->stopped) return;
    impl_->stopped = true;
    beast::error_code ignored;
    impl_->shared->acceptor.close(ignored);
    impl_->shared->state->connections.close_all();
    if (!impl_->path.empty()) {
        std::error_code fs_error;
        fs::remove(impl_->path, fs_error);
    }
    spdlog::info("API server stopped");
}

}  // namespace ralph
