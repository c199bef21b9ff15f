// Who may use ralphd over TCP (ralphd --listen ADDRESS:PORT), and the checks every request of a
// TCP connection passes before it is served. (A connection on the Unix socket has the peer-uid
// check instead: server.cpp.)
//
// - The token: a random secret (32 bytes, in hex) in <state>/web-token, 0600, made at the first
//   start with a listener and replaced by rotate() (web.rotate_token: ralphctl web
//   --rotate-token). When none can be written (a full disk), every TCP request is refused (401).
// - Host must name this server by an IP address, `localhost` or the machine's name, with the
//   listening port: a page whose own name an attacker points at 127.0.0.1 (DNS rebinding) sends
//   its name, and is refused (403).
// - GET /login?token=T with the token: 303 to / with the cookie ralph_token=T (HttpOnly,
//   SameSite=Strict, Path=/), so that the token leaves the address bar.
// - Every other request needs that cookie, or `Authorization: Bearer T`: else 401, nothing else.
// - A request that changes something (any but GET and HEAD) and a WebSocket upgrade with an
//   Origin that is not this server's (http://HOST as the request named it) are refused (403):
//   another site's page cannot use the cookie. (A client that sends no Origin is no browser.)
// - After 10 failed logins (a wrong token, by any of the three ways) from one address within a
//   minute, every answer to a login from it waits a second more per failure, up to 10 s.
#pragma once

#include "daemon/server/http_rpc.hpp"

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace ralph {

class web_gate {
  public:
    using clock = std::chrono::steady_clock;
    static constexpr const char* cookie_name = "ralph_token";
    static constexpr std::size_t failures_allowed = 10;  // per address and minute
    static constexpr std::chrono::seconds max_delay{10};

    // Reads the token of `token_file`; with a listener (`port`, which the Host of every request
    // must name; 0 = none) makes one there when there is none.
    web_gate(std::filesystem::path token_file, unsigned port);

    // "" when there is none (no listener yet, or it could not be written).
    const std::string& token() const { return token_; }
    // A new token, written to the file (0600) and used from now on: cookies of the old one no
    // longer work. Throws std::runtime_error when the file cannot be written.
    void rotate();

    struct verdict {
        std::optional<http_response> answer;  // sent instead of serving the request
        clock::duration delay{};              // to wait before answering (too many failures)
    };
    // What becomes of `req` from `address` (the peer's IP address) at `now`.
    verdict check(const http_request& req, const std::string& address, clock::time_point now);

  private:
    enum class credential { none, right, wrong };
    credential credential_of(const http_request& req) const;
    bool host_allowed(std::string_view host) const;
    // Records a failure; returns how many the address had in the last minute, this one with.
    std::size_t failed(const std::string& address, clock::time_point now);
    std::size_t failures_of(const std::string& address, clock::time_point now);

    std::filesystem::path token_file_;
    unsigned port_;
    std::string token_;
    std::string host_name_;  // gethostname()
    std::map<std::string, std::deque<clock::time_point>> failures_;
};

}  // namespace ralph
