// What the server and its sessions share: the server_context, the set of live connections
// (counted against max_connections and closed by server::stop), the pace of the tails and the
// headers every response carries. Sessions hold the shared_state by shared_ptr, so a session
// finishing after the server object is gone still finds its connection set.
//
// No client can take every connection: when all are taken, a new one closes the connection that
// has been idle the longest (and a new WebSocket session, when the sessions are all taken, the
// session idle the longest), so `ralphctl` always gets in. The owner's connections (the Unix
// socket's, and those on TCP that carried the web token) and strangers' (TCP, no token yet) are
// two pools: a stranger only ever closes a stranger's connection, never the owner's.
#pragma once

#include "common/beast.hpp"
#include "common/log_brake.hpp"
#include "daemon/server/server.hpp"
#include "proto/version.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ralph {

// The socket of an API connection: from the Unix socket, or from a TCP listener (ralphd --listen).
using api_stream = net::generic::stream_protocol;
using api_socket = api_stream::socket;

// Where a connection came from: the Unix socket (its peer's uid was checked), or TCP, whose
// requests pass the web gate (web_gate.hpp); `address` is the peer's IP address then.
struct api_peer {
    bool tcp = false;
    std::string address;
};

// A live HTTP or WebSocket session.
class connection {
  public:
    virtual ~connection() = default;
    // Ends the session at once: its pending operations complete with an error, and the session
    // is destroyed when they have. Idempotent.
    virtual void close() = 0;
    virtual bool is_websocket() const = 0;
    // Since when nothing happened on it: no request came or was answered, no notification went.
    std::chrono::steady_clock::time_point idle_since() const { return idle_since_; }
    void touch() { idle_since_ = std::chrono::steady_clock::now(); }
    std::uint64_t id() const { return id_; }
    // The owner's: from the Unix socket (its uid checked), or a TCP connection once a request
    // on it carried the web token.
    bool owned() const { return owned_; }
    void set_owned() { owned_ = true; }

  protected:
    connection(std::uint64_t id, bool owned) : id_(id), owned_(owned) {}

  private:
    std::uint64_t id_;
    bool owned_;
    std::chrono::steady_clock::time_point idle_since_ = std::chrono::steady_clock::now();
};

class connection_set {
  public:
    void add(connection* c) { live_.insert(c); }
    void remove(connection* c) { live_.erase(c); }
    // The connections of one pool: the owner's or strangers'.
    std::size_t count(bool owned) const {
        return std::size_t(std::count_if(live_.begin(), live_.end(), [owned](const connection* c) {
            return c->owned() == owned;
        }));
    }
    std::size_t websocket_count() const {
        std::size_t count = 0;
        for (const connection* c : live_) count += c->is_websocket();
        return count;
    }
    // Closes the connection of the pool (of its WebSocket sessions only, when asked) idle the
    // longest, to make room for a new one; returns its id, 0 when there is none.
    std::uint64_t close_longest_idle(bool owned, bool websockets_only) {
        connection* oldest = nullptr;
        for (connection* c : live_)
            if (c->owned() == owned && (!websockets_only || c->is_websocket()) &&
                (!oldest || c->idle_since() < oldest->idle_since()))
                oldest = c;
        if (!oldest) return 0;
        const std::uint64_t id = oldest->id();
        // No longer counted from now on, even while it finishes what it was waiting for (a
        // stranger's answer the brake delays): the room it made is there at once.
        live_.erase(oldest);
        oldest->close();
        return id;
    }
    void close_all() {
        // close() may end up removing sessions from the set: iterate over a copy.
        const std::vector<connection*> all(live_.begin(), live_.end());
        for (connection* c : all)
            if (live_.contains(c)) c->close();
    }

  private:
    std::set<connection*> live_;
};

// The pace of the tails that are behind the output of a running loop, all sessions and loops
// together: one chunk per `interval`, whatever the number of such tails, so that what watching
// costs the CPUs does not grow with the number of watchers (twenty tails of a flooding agent,
// each paced alone at a chunk per 4 ms, cost it up to 30% of its throughput on two cores). A
// tail within a chunk of the end, or of a loop that no longer runs, is not paced
// (websocket_session): it catches up at full speed.
class tail_pacer {
  public:
    static constexpr std::chrono::milliseconds interval{16};

    // Reserves the next free time for a paced chunk: the earliest a tail that sends one now may
    // send its next.
    std::chrono::steady_clock::time_point reserve(std::chrono::steady_clock::time_point now) {
        next_free_ = std::max(now, next_free_) + interval;
        return next_free_;
    }

  private:
    std::chrono::steady_clock::time_point next_free_;
};

struct shared_state {
    explicit shared_state(server_context context) : context(context) {}
    server_context context;
    connection_set connections;
    tail_pacer pacer;
    std::uint64_t next_connection_id = 1;                 // of every listener
    log_brake stranger_log{10, std::chrono::minutes(1)};  // what strangers on TCP cause
};

// Makes room in the pool of the owner's connections or of strangers' for a new one from `who`:
// when the pool is full, closes its connection idle the longest (server.cpp).
void make_room(shared_state& state, bool owned, const std::string& who);

// What the web pages may load and do: only this server's own files and connections; no inline
// script or style, no frame, no plugin, no other site as a form's target.
inline constexpr const char* content_security_policy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

// Server and Ralph-Protocol headers, and the browser's security policy, on every HTTP response
// and the WebSocket handshake.
inline void set_server_headers(beast::http::fields& fields) {
    fields.set(beast::http::field::server, std::string("ralphd/") + proto::daemon_version);
    fields.set(proto::protocol_header, std::to_string(proto::protocol_version));
    fields.set("Content-Security-Policy", content_security_policy);
    fields.set("X-Content-Type-Options", "nosniff");
    fields.set("Referrer-Policy", "no-referrer");
    fields.set("X-Frame-Options", "DENY");
}

}  // namespace ralph
