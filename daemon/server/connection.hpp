// What the server and its sessions share: the server_context, the set of live connections
// (counted against max_connections and closed by server::stop) and the headers every response
// carries. Sessions hold the shared_state by shared_ptr, so a session finishing after the
// server object is gone still finds its connection set.
#pragma once

#include "common/asio.hpp"
#include "daemon/server/server.hpp"
#include "proto/version.hpp"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ralph {

// A live HTTP or WebSocket session.
class connection {
  public:
    virtual ~connection() = default;
    // Ends the session at once: its pending operations complete with an error, and the session
    // is destroyed when they have. Idempotent.
    virtual void close() = 0;
};

class connection_set {
  public:
    void add(connection* c) { live_.insert(c); }
    void remove(connection* c) { live_.erase(c); }
    std::size_t size() const { return live_.size(); }
    void close_all() {
        // close() may end up removing sessions from the set: iterate over a copy.
        const std::vector<connection*> all(live_.begin(), live_.end());
        for (connection* c : all)
            if (live_.contains(c)) c->close();
    }

  private:
    std::set<connection*> live_;
};

struct shared_state {
    server_context context;
    connection_set connections;
};

// Server and Ralph-Protocol headers, on every HTTP response and the WebSocket handshake.
inline void set_server_headers(beast::http::fields& fields) {
    fields.set(beast::http::field::server, std::string("ralphd/") + proto::daemon_version);
    fields.set(proto::protocol_header, std::to_string(proto::protocol_version));
}

}  // namespace ralph
