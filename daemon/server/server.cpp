// The listeners: own the API socket (bound here or adopted from systemd) and the TCP socket of
// ralphd --listen, admit connections (on the Unix socket those of our own uid; at
// max_connections, closing the one idle the longest for each new one), and close every session
// on stop().
#include "daemon/server/server.hpp"

#include "daemon/server/connection.hpp"
#include "daemon/server/http_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ralph {

void make_room(shared_state& state, bool owned, const std::string& who) {
    const server_limits& limits = state.context.limits;
    const std::size_t room = owned ? limits.max_connections : limits.max_stranger_connections;
    if (state.connections.count(owned) < room) return;
    const std::uint64_t closed = state.connections.close_longest_idle(owned, false);
    // Strangers may come by the thousand: their part of the log is bounded.
    if (owned)
        spdlog::warn(
            "all {} connections are taken: closed connection {}, idle the longest, for a new "
            "one from {}",
            room, closed, who);
    else if (auto note = state.stranger_log.admit())
        spdlog::warn(
            "all {} connections for TCP clients without the token are taken: closed connection "
            "{}, idle the longest, for a new one from {}{}",
            room, closed, who, *note);
}

namespace {

namespace fs = std::filesystem;
using api_acceptor = net::basic_socket_acceptor<api_stream>;

// An accept loop's state, shared with the loop's coroutine so that it outlives a server
// destroyed while an accept is pending. One per listening socket; all share one shared_state.
struct listener {
    listener(net::io_context& io, std::shared_ptr<shared_state> state, bool tcp)
        : state(std::move(state)), acceptor(io), tcp(tcp) {}

    std::shared_ptr<shared_state> state;
    api_acceptor acceptor;
    bool tcp;             // else the Unix socket
    std::string address;  // of TCP, for the log
    unsigned port = 0;
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

void bind_socket(net::io_context& io, api_acceptor& acceptor, const fs::path& path) {
    if (path.native().size() >= sizeof(sockaddr_un{}.sun_path))
        throw std::runtime_error("socket path is too long (" +
                                 std::to_string(path.native().size()) +
                                 " bytes): " + path.string());
    clear_stale_socket(io, path);

    beast::error_code ec;
    const api_stream::endpoint endpoint{local_stream::endpoint(path.string())};
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) {
        // Created 0600 from the start: no moment when another user could connect.
        const mode_t old_mask = ::umask(0177);
        acceptor.bind(endpoint, ec);
        ::umask(old_mask);
    }
    if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot listen on " + path.string() + ": " + ec.message());
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
}

// The IP address of a TCP connection's peer, "" when it is gone.
std::string peer_address(api_socket& socket) {
    beast::error_code ec;
    const api_stream::endpoint remote = socket.remote_endpoint(ec);
    if (ec) return {};
    net::ip::tcp::endpoint ip;
    std::memcpy(ip.data(), remote.data(), std::min(remote.size(), ip.capacity()));
    return ip.address().to_string();
}

// On the Unix socket: whether the peer is of our uid (logged when not). `who` gets its pid.
bool our_uid(api_socket& socket, std::string& who) {
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
        spdlog::warn("refused a connection: cannot read its credentials: {}", std::strerror(errno));
        return false;
    }
    if (peer.uid != ::getuid()) {
        spdlog::warn("refused a connection from pid {} uid {}: only uid {} may connect", peer.pid,
                     peer.uid, ::getuid());
        return false;
    }
    who = "pid " + std::to_string(peer.pid);
    return true;
}

void admit(listener& self, api_socket socket) {
    api_peer peer{self.tcp, {}};
    std::string who;
    if (self.tcp) {
        peer.address = peer_address(socket);
        who = peer.address;
    } else if (!our_uid(socket, who)) {
        return;
    }
    // A TCP connection is a stranger's until a request on it carries the token (http_session).
    const bool owned = !self.tcp;
    make_room(*self.state, owned, who);
    const std::uint64_t id = self.state->next_connection_id++;
    spdlog::debug("connection {}: accepted from {}", id, who);
    std::make_shared<http_session>(self.state, std::move(socket), id, std::move(peer))->start();
}

awaitable<void> accept_loop(std::shared_ptr<listener> self) {
    net::steady_timer pause(self->acceptor.get_executor());
    for (;;) {
        beast::error_code ec;
        api_socket socket =
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
    impl(net::io_context& io, server_context context, fs::path path)
        : io(io),
          state(std::make_shared<shared_state>(context)),
          unix_socket(std::make_shared<listener>(io, state, false)),
          path(std::move(path)) {}
    net::io_context& io;
    std::shared_ptr<shared_state> state;
    std::shared_ptr<listener> unix_socket;
    std::shared_ptr<listener> tcp;  // ralphd --listen; null without
    fs::path path;  // the socket file we created and remove on stop; empty when adopted
    bool stopped = false;
};

server::server(net::io_context& io, server_context context, const fs::path& path)
    : impl_(std::make_unique<impl>(io, context, path)) {
    bind_socket(io, impl_->unix_socket->acceptor, path);
}

server::server(net::io_context& io, server_context context, int listening_fd)
    : impl_(std::make_unique<impl>(io, context, fs::path())) {
    impl_->unix_socket->acceptor.assign(api_stream(AF_UNIX, 0), listening_fd);
}

server::~server() { stop(); }

void server::listen_tcp(const std::string& address, unsigned port) {
    beast::error_code ec;
    const net::ip::address ip = net::ip::make_address(address, ec);
    if (ec) throw std::runtime_error("--listen: not an IP address: " + address);
    const api_stream::endpoint endpoint{net::ip::tcp::endpoint(ip, port)};
    impl_->tcp = std::make_shared<listener>(impl_->io, impl_->state, true);
    impl_->tcp->address = address;
    impl_->tcp->port = port;
    auto& acceptor = impl_->tcp->acceptor;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error(
            fmt::format("cannot listen on {}:{}: {}", address, port, ec.message()));
    if (!ip.is_loopback())
        spdlog::warn(
            "listening on {}:{}, which other machines may reach: the web token is all that "
            "guards the API there, and plain HTTP carries it in clear (README, Web dashboard)",
            address, port);
}

void server::start() {
    spdlog::info("API server listening on {}{}",
                 impl_->path.empty() ? "the socket systemd passed" : impl_->path.string(),
                 impl_->tcp ? fmt::format(" and on TCP {}:{} (web token required)",
                                          impl_->tcp->address, impl_->tcp->port)
                            : std::string());
    for (const auto& self : {impl_->unix_socket, impl_->tcp})
        if (self) net::co_spawn(self->acceptor.get_executor(), accept_loop(self), net::detached);
}

void server::stop() {
    if (impl_->stopped) return;
    impl_->stopped = true;
    beast::error_code ignored;
    impl_->unix_socket->acceptor.close(ignored);
    if (impl_->tcp) impl_->tcp->acceptor.close(ignored);
    impl_->state->connections.close_all();
    if (!impl_->path.empty()) {
        std::error_code fs_error;
        fs::remove(impl_->path, fs_error);
    }
    spdlog::info("API server stopped");
}

}  // namespace ralph
