// One HTTP/1.1 connection: reads requests with bounded header and body, has those of a TCP
// connection pass the web gate (web_gate.hpp), answers POST /rpc through the registry, keeps the
// connection alive between requests until it idles out, and hands a GET /rpc WebSocket upgrade
// over to a websocket_session.
#pragma once

#include "common/beast.hpp"
#include "daemon/server/connection.hpp"
#include "daemon/server/http_rpc.hpp"

#include <cstdint>
#include <memory>
#include <optional>

namespace ralph {

class http_session : public connection, public std::enable_shared_from_this<http_session> {
  public:
    http_session(std::shared_ptr<shared_state> state, api_socket socket, std::uint64_t id,
                 api_peer peer);
    ~http_session() override;

    void start();
    void close() override;
    bool is_websocket() const override { return false; }

  private:
    awaitable<void> serve();
    // Reads one request that may be served (on TCP, answering those the web gate refuses after
    // reading their header only); nullopt when the connection must end (an error reply was sent,
    // or the peer went away or idled out).
    awaitable<std::optional<http_request>> read_request();
    // The body of a request whose header `parser` has read.
    awaitable<std::optional<http_request>> read_body(http_request_parser& parser);
    // After a read that failed with `ec`: the error reply if there is one. Always nullopt.
    awaitable<std::optional<http_request>> refuse_unread(const beast::error_code& ec);
    // A client still sending a body we refused would fail with EPIPE before reading our 413:
    // read and drop its input for a moment (bounded in time) before closing.
    awaitable<void> discard_input();
    // Writes a response; false when the peer is gone.
    awaitable<bool> send(http_response res);
    // A TCP connection's request that the web gate answers itself (a refusal, the login), after
    // the delay it asks for; nullopt when it may be served (the connection is the owner's then).
    // `req` may hold the header only.
    awaitable<std::optional<http_response>> gate_answer(const http_request& req);

    std::shared_ptr<shared_state> state_;
    api_peer peer_;
    beast::basic_stream<api_stream> stream_;
    beast::flat_buffer buffer_;
};

}  // namespace ralph
