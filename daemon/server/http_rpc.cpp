// POST /rpc in, JSON-RPC out, without the socket: what http_session and the fuzz target share.
#include "daemon/server/http_rpc.hpp"

#include "daemon/rpc/registry.hpp"
#include "daemon/server/connection.hpp"
#include "daemon/server/web_pages.hpp"
#include "proto/errors.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace ralph {
namespace {

namespace http = beast::http;

// Error bodies have the shape of a JSON-RPC error, so a client parses every reply the same way.
std::string error_body(std::string detail) {
    return rpc::serialize(
        rpc::standard_error_response(proto::error_kind::invalid_request, std::move(detail)));
}

// Read errors after which the peer simply went away: nothing to answer.
bool peer_gone(const beast::error_code& ec) {
    return ec == http::error::end_of_stream || ec == http::error::partial_message ||
           ec == beast::error::timeout || ec == net::error::eof ||
           ec == net::error::operation_aborted || ec == net::error::connection_reset ||
           ec == net::error::broken_pipe;
}

bool is_http_error(const beast::error_code& ec) {
    return ec.category() == make_error_code(http::error::bad_method).category();
}

http_response error_reply(http::status status, unsigned version, std::string detail) {
    http_response res{status, version};
    set_server_headers(res);
    res.set(http::field::content_type, "application/json");
    res.body() = error_body(std::move(detail));
    // After a request that could not be read the stream is out of step: close it. The caller
    // restores keep-alive for the answers to well-formed requests.
    res.keep_alive(false);
    res.prepare_payload();
    return res;
}

}  // namespace

void bound_request_parser(http_request_parser& parser, const server_limits& limits) {
    parser.body_limit(limits.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
}

std::string_view path_of(beast::string_view target) {
    std::string_view path = to_std(target);
    return path.substr(0, path.find('?'));
}

awaitable<http_response> answer_request(const http_request& req,
                                        const rpc::method_registry& registry, bool web) {
    if (std::optional<http_response> page = answer_page(req)) co_return std::move(*page);
    if (path_of(req.target()) != rpc_path)
        co_return error_reply(http::status::not_found, req.version(),
                              "no such path: " + std::string(to_std(req.target())) +
                                  "; the API is POST /rpc, the dashboard is at /");
    if (req.method() != http::verb::post) {
        http_response res = error_reply(http::status::method_not_allowed, req.version(),
                                        "/rpc takes POST, or GET with a WebSocket upgrade");
        res.set(http::field::allow, "POST, GET");
        co_return res;
    }

    rpc::call_context ctx{.web = web};  // no session: a plain POST cannot carry notifications
    std::optional<std::string> reply = co_await registry.handle_text(req.body(), ctx);

    http_response res{reply ? http::status::ok : http::status::no_content, req.version()};
    set_server_headers(res);
    if (reply) {
        res.set(http::field::content_type, "application/json");
        res.body() = std::move(*reply);
    }
    res.prepare_payload();
    co_return res;
}

std::optional<http_response> answer_read_error(const beast::error_code& ec,
                                               const server_limits& limits) {
    if (peer_gone(ec)) return std::nullopt;
    if (ec == http::error::body_limit)
        return error_reply(
            http::status::payload_too_large, 11,
            "request body exceeds " + std::to_string(limits.max_body_bytes) + " bytes");
    if (ec == http::error::header_limit)
        return error_reply(
            http::status::request_header_fields_too_large, 11,
            "request header exceeds " + std::to_string(limits.max_header_bytes) + " bytes");
    if (is_http_error(ec))
        return error_reply(http::status::bad_request, 11,
                           "malformed HTTP request: " + ec.message());
    return std::nullopt;
}

}  // namespace ralph
