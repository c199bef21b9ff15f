// The HTTP side of the API without the socket: the bounded parser a request is read with, the
// answer to a request read whole (POST /rpc goes to the registry) and the answer to a request
// that could not be read. http_session does the I/O around these; the fuzz target
// tests/fuzz/fuzz_jsonrpc.cpp feeds untrusted bytes to the same functions.
//
// Every answer is complete (server headers, Content-Length) and every error body has the shape
// of a JSON-RPC error, so a client parses every reply the same way.
#pragma once

#include "common/beast.hpp"
#include "daemon/server/server.hpp"

#include <optional>
#include <string_view>

namespace ralph {

namespace rpc {
class method_registry;
}

using http_request = beast::http::request<beast::http::string_body>;
using http_response = beast::http::response<beast::http::string_body>;
using http_request_parser = beast::http::request_parser<beast::http::string_body>;

// The one path of the API.
inline constexpr std::string_view rpc_path = "/rpc";

// Applies the header and body bounds of `limits` to a fresh parser (parsers are single-use).
void bound_request_parser(http_request_parser& parser, const server_limits& limits);

// The path of a request target, without its query string.
std::string_view path_of(beast::string_view target);

// The answer to a request read whole: GET of a dashboard file is that file (web_pages.hpp);
// POST /rpc is handled by `registry` (200 with the reply, 204 for notifications only); any
// other path is 404, any other method on /rpc 405. The caller sets
// keep-alive from the request. (A GET /rpc WebSocket upgrade is the caller's to take first.)
// `web`: the request came on a TCP connection of ralphd --listen (rpc::call_context::web).
// `req` must outlive the call.
awaitable<http_response> answer_request(const http_request& req,
                                        const rpc::method_registry& registry, bool web);

// The answer to a request the parser refused with `ec`: 413 (body too large), 431 (header too
// large) or 400 (malformed), each closing the connection. nullopt when there is nothing to
// answer: the peer went away, idled out, or the read failed for another reason.
std::optional<http_response> answer_read_error(const beast::error_code& ec,
                                               const server_limits& limits);

}  // namespace ralph
