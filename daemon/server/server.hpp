// The API server: accepts connections on the Unix socket, checks the peer's uid, speaks
// HTTP/1.1 (POST /rpc) and WebSocket (GET /rpc upgrade) and hands requests to the registry.
// Bounds: body size, header size, connection and session counts (the one idle the longest gives
// way to a new one; strangers on TCP in a pool of their own), idle timeouts, per-session queue.
#pragma once

#include "common/asio.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>

namespace ralph {

namespace rpc {
class method_registry;
}
class subscriber_hub;
class output_log;
class web_gate;

struct server_limits {
    std::size_t max_body_bytes = 1 << 20;  // one HTTP body or WebSocket message
    std::size_t max_header_bytes = 8 << 10;
    // Beyond either, the connection (or session) idle the longest is closed for the new one.
    std::size_t max_connections = 256;  // the owner's (connection.hpp)
    std::size_t max_websocket_sessions = 128;
    // TCP connections that carried no token yet: a pool of their own, so that strangers only
    // ever close each other's connections.
    std::size_t max_stranger_connections = 32;
    std::chrono::seconds http_idle_timeout{5};  // connection with no request (or a slow one)
    // Bytes of replies and notifications queued per WebSocket session: bytes, not messages, so
    // that a burst of small notifications (a hundred loops ending at once) never fills it.
    std::size_t max_session_queue_bytes = 16 << 20;
    std::size_t max_tails_per_session = 64;
};

// What sessions share. Everything lives on the io_context thread.
struct server_context {
    rpc::method_registry& registry;
    subscriber_hub& hub;
    output_log& output;
    server_limits limits;
    web_gate* gate = nullptr;  // what TCP connections pass (listen_tcp); null without one
};

class server {
  public:
    // Binds the socket at `path` (directory must exist, mode 0700); the socket file gets 0600.
    // A stale socket file (nobody answering) is replaced; a live one makes this throw
    // std::runtime_error("another ralphd is listening on PATH").
    server(net::io_context& io, server_context context, const std::filesystem::path& path);
    // Adopts an already listening socket (systemd socket activation).
    server(net::io_context& io, server_context context, int listening_fd);
    ~server();

    // Also listens on `address`:`port` (ralphd --listen), for connections that pass
    // context.gate. Throws std::runtime_error when it cannot.
    void listen_tcp(const std::string& address, unsigned port);

    void start();  // begins accepting
    void stop();   // stops accepting and closes every session

  private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace ralph
