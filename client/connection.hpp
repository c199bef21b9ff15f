// Talking to ralphd over its Unix socket (proto/API.md): `connection` sends JSON-RPC requests as
// HTTP/1.1 POST /rpc on one keep-alive connection; `session` is the WebSocket (GET /rpc
// upgrade) on which the daemon also sends notifications. Both are blocking: ralphctl does one
// thing at a time, and Ctrl-C simply ends the process. Every request is a method's request type
// (proto/methods.hpp): nothing is sent that the daemon's types do not describe.
// Every failure is a client_error: the socket cannot be reached or the connection breaks →
// exit_code::unreachable; another protocol version → exit_code::failure; a JSON-RPC error → a
// daemon_error (exit_code::failure) with the error's kind and data.
#pragma once

#include "client/output.hpp"
#include "client/ssh_dial.hpp"
#include "common/unique_fd.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ralph::client {

// A JSON-RPC error that ralphd answered: a client_error with its message, which also keeps the
// error's kind and data for a command that acts on one (submit on workspace_dirty).
class daemon_error : public client_error {
  public:
    daemon_error(proto::error_kind kind, const std::string& message, nlohmann::json data)
        : client_error(exit_code::failure, message), kind_(kind), data_(std::move(data)) {}
    proto::error_kind kind() const { return kind_; }
    // The error's data as its proto type (e.g. proto::dirty_workspace).
    template <typename Data>
    Data data() const {
        return data_.get<Data>();
    }

  private:
    proto::error_kind kind_;
    nlohmann::json data_;
};

// ralphd's socket at `socket_path`, connected after the same checks as a connection's (its
// directory and owner, the listening process's user), for `dial-stdio` to bridge.
unique_fd connect_socket(const std::string& socket_path);

// Parses the text of a reply; anything but a JSON object is a client_error.
nlohmann::json parse_reply(std::string_view text);
// The result of a JSON-RPC response; its error as a daemon_error.
nlohmann::json result_of(nlohmann::json response);

// Asio and Beast stay in connection.cpp (`stream`): every command includes this header, and
// they would cost each of them seconds of compiling.
class connection {
  public:
    // `address`: the socket's path, unix://PATH, or ssh://[USER@]HOST[:PORT] (ssh_dial.hpp),
    // where ssh's messages go to stderr, or are `kept` for the error (several hosts at once).
    explicit connection(const std::string& address, ssh_messages messages = ssh_messages::shown);
    ~connection();

    // Whether the daemon is on another machine (an ssh:// address): what it names on its
    // machine (an agent's program) is not for this one to run.
    bool remote() const;

    // Calls `Method` (proto/methods.hpp) with its request; returns its result.
    template <typename Method>
    typename Method::result call(const typename Method::request& request) {
        return result_of(parse_reply(call_text<Method>(request)))
            .template get<typename Method::result>();
    }
    // Calls `Method` and returns the reply unparsed (the whole JSON-RPC response), for a caller
    // that reads a large reply without building its JSON tree.
    template <typename Method>
    std::string call_text(const typename Method::request& request) {
        return exchange(Method::name, nlohmann::json(request));
    }

  private:
    std::string exchange(std::string_view method, nlohmann::json params);

    struct stream;
    std::string socket_path_;
    std::unique_ptr<stream> stream_;
    std::int64_t next_id_ = 1;
};

class session {
  public:
    explicit session(const std::string& address);  // as connection's
    ~session();

    // Sends a request of `Method` (proto/methods.hpp) and returns its id, to match the response
    // among the notifications.
    template <typename Method>
    std::int64_t send(const typename Method::request& request) {
        return send(Method::name, nlohmann::json(request));
    }
    // The next message from the daemon, valid until the next call: a response or a
    // notification, and the raw bytes of a loop.output notification in the "binary" encoding
    // (a binary WebSocket message: its JSON text, a newline, the bytes; one without that newline
    // is a client_error).
    struct message {
        std::string_view json;
        std::string_view bytes;
    };
    message receive();
    // Says goodbye to the daemon; errors are ignored since we are leaving anyway.
    void close();

  private:
    std::int64_t send(std::string_view method, nlohmann::json params);

    struct stream;
    std::string socket_path_;
    std::unique_ptr<stream> stream_;
    std::int64_t next_id_ = 1;
};

}  // namespace ralph::client
