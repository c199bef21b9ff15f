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
//   SameSite=Strict, Path=/), so that the token leaves the address bar. GET /login?code=C does
//   the same with a login code (login_code(): web.login_code, ralphctl web --open), which works
//   once and for a minute, so that the token itself is never on a browser's command line.
// - Every other request needs that cookie, or `Authorization: Bearer T`: else 401, nothing else.
// - A request that changes something (any but GET and HEAD) and a WebSocket upgrade with an
//   Origin that is not this server's (http://HOST as the request named it) are refused (403):
//   another site's page cannot use the cookie. (A client that sends no Origin is no browser.)
// - After 10 failed logins (a wrong token or code, by any way) from one source within a minute,
//   every further failed login from it is answered a second more slowly per failure, up to
//   10 s. A source is the machine for the loopback addresses (any local user may use any of
//   127.0.0.0/8), an IPv6 /64, else the IPv4 address; the right token is never slowed.
// check() needs the request's header only: a body is read after it let the request through.
#pragma once

#include "common/log_brake.hpp"
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

    static constexpr std::chrono::seconds login_code_lifetime{60};
    // A new login code for GET /login?code=C, good for one login within login_code_lifetime of
    // `now`. At most a few are good at once (the oldest goes first). Throws rpc_error
    // (storage_unavailable) when there is no token (it could not be written).
    std::string login_code(clock::time_point now);

    struct verdict {
        std::optional<http_response> answer;  // sent instead of serving the request
        clock::duration delay{};              // to wait before answering (too many failures)
    };
    // What becomes of `req` from `address` (the peer's IP address) at `now`.
    verdict check(const http_request& req, const std::string& address, clock::time_point now);

  private:
    enum class credential { none, right, wrong };
    credential credential_of(const http_request& req) const;
    // The credential of GET /login?token=T or ?code=C; a code is spent by it.
    credential login_credential(std::string_view query, clock::time_point now);
    bool host_allowed(std::string_view host) const;
    // Records a failure of `source`; returns how many it had in the last minute, this one with.
    std::size_t failed(const std::string& source, clock::time_point now);
    // Forgets the failures older than a minute, and when the sources are still too many, the
    // source whose last failure is the oldest.
    void prune_failures(clock::time_point now);

    std::filesystem::path token_file_;
    unsigned port_;
    std::string token_;
    std::string host_name_;                                          // gethostname()
    std::map<std::string, std::deque<clock::time_point>> failures_;  // by source
    std::map<std::string, clock::time_point> login_codes_;           // code -> good until
    log_brake refusal_log_{10, std::chrono::minutes(1)};             // what strangers cause
};

}  // namespace ralph
