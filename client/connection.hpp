// Talking to ralphd over its Unix socket (SPEC §2): `connection` sends JSON-RPC requests as
// HTTP/1.1 POST /rpc on one keep-alive connection; `session` is the WebSocket (GET /rpc
// upgrade) on which the daemon also sends notifications. Both are blocking: ralphctl does one
// thing at a time, and Ctrl-C simply ends the process.
// Every failure is a client_error: the socket cannot be reached or the connection breaks →
// exit_code::unreachable; another protocol version, or a JSON-RPC error → exit_code::failure.
#pragma once

#include "common/asio.hpp"
#include "proto/methods.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace ralph::client {

class connection {
  public:
    explicit connection(const std::string& socket_path);

    // Calls `Method` (proto/methods.hpp) with its request; returns its result.
    template <typename Method>
    typename Method::result call(const typename Method::request& request) {
        return call(Method::name, nlohmann::json(request)).template get<typename Method::result>();
    }
    // Calls `method` and returns its result; a JSON-RPC error becomes a client_error. For what
    // passes requests through (mcp); the commands use call<Method>.
    nlohmann::json call(std::string_view method, nlohmann::json params);
    // Calls `method` and returns the reply unparsed (the whole JSON-RPC response), for a caller
    // that reads a large reply without building its JSON tree.
    std::string call_text(std::string_view method, nlohmann::json params);

  private:
    std::string socket_path_;
    net::io_context io_;
    local_stream::socket socket_;
    beast::flat_buffer buffer_;
    std::int64_t next_id_ = 1;
};

class session {
  public:
    explicit session(const std::string& socket_path);

    // Sends a request of `Method` (proto/methods.hpp) and returns its id, to match the response
    // among the notifications.
    template <typename Method>
    std::int64_t send(const typename Method::request& request) {
        return send(Method::name, nlohmann::json(request));
    }
    std::int64_t send(std::string_view method, nlohmann::json params);
    // The text of the next message from the daemon (a response or a notification), valid until
    // the next call.
    std::string_view receive();
    // Says goodbye to the daemon; errors are ignored since we are leaving anyway.
    void close();

  private:
    std::string socket_path_;
    net::io_context io_;
    beast::websocket::stream<local_stream::socket> ws_;
    beast::flat_buffer buffer_;
    std::int64_t next_id_ = 1;
};

// Parses the text of a reply; anything but a JSON object is a client_error.
nlohmann::json parse_reply(std::string_view text);
// The result of a JSON-RPC response, or a client_error carrying its error message.
nlohmann::json result_of(nlohmann::json response);

}  // namespace ralph::client
