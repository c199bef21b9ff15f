// One HTTP/1.1 connection on the API socket: POST /rpc in, JSON-RPC out; every error is a
// JSON body with a 4xx status. Runs as one coroutine on the io_context thread.
#include "daemon/server/http_session.hpp"

#include "daemon/rpc/registry.hpp"
#include "daemon/server/websocket_session.hpp"
#include "proto/errors.hpp"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

namespace ralph {
namespace {

namespace http = beast::http;

constexpr std::string_view rpc_path = "/rpc";
// How long a refused body is read and dropped before the connection is closed.
constexpr std::chrono::seconds linger_time{2};

// Beast 1.74 has its own string_view type.
std::string_view to_std(beast::string_view s) { return {s.data(), s.size()}; }

// The path of a request target, without its query string.
std::string_view path_of(beast::string_view target) {
    std::string_view path = to_std(target);
    return path.substr(0, path.find('?'));
}

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

http::response<http::string_body> error_reply(http::status status, unsigned version,
                                              std::string detail) {
    http::response<http::string_body> res{status, version};
    set_server_headers(res);
    res.set(http::field::content_type, "application/json");
    res.body() = error_body(std::move(detail));
    // After a request that could not be read the stream is out of step: close it. serve()
    // restores keep-alive for the answers to well-formed requests.
    res.keep_alive(false);
    res.prepare_payload();
    return res;
}

}  // namespace

http_session::http_session(std::shared_ptr<shared_state> state, local_stream::socket socket,
                           std::uint64_t id)
    : state_(std::move(state)), stream_(std::move(socket)), id_(id) {
    state_->connections.add(this);
}

http_session::~http_session() { state_->connections.remove(this); }

void http_session::start() {
    // The lambda, and so `self`, lives as long as the coroutine it starts.
    net::co_spawn(
        stream_.get_executor(), [self = shared_from_this()] { return self->serve(); },
        net::detached);
}

void http_session::close() { stream_.close(); }

awaitable<void> http_session::serve() {
    try {
        for (;;) {
            std::optional<request> req = co_await read_request();
            if (!req) break;

            if (beast::websocket::is_upgrade(*req) && path_of(req->target()) == rpc_path) {
                spdlog::debug("connection {}: WebSocket upgrade", id_);
                // The WebSocket session takes the socket; this session ends without closing it.
                auto ws =
                    std::make_shared<websocket_session>(state_, stream_.release_socket(), id_);
                ws->start(std::move(*req));
                co_return;
            }

            response res = answer(*req);
            res.keep_alive(req->keep_alive());
            spdlog::debug("connection {}: {} {} -> {}", id_, to_std(req->method_string()),
                          to_std(req->target()), res.result_int());
            if (!co_await send(std::move(res)) || !req->keep_alive()) break;
        }
    } catch (const std::exception& e) {
        spdlog::warn("connection {}: {}", id_, e.what());
    }
    beast::error_code ignored;
    stream_.socket().shutdown(local_stream::socket::shutdown_send, ignored);
    close();
}

awaitable<std::optional<http_session::request>> http_session::read_request() {
    const server_limits& limits = state_->context.limits;
    // A fresh parser per request (parsers are single-use), bounded against abuse.
    http::request_parser<http::string_body> parser;
    parser.body_limit(limits.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));

    beast::error_code ec;
    // The timeout covers the idle time before a request as well as a client sending it slowly.
    stream_.expires_after(limits.http_idle_timeout);
    co_await http::async_read_header(stream_, buffer_, parser,
                                     net::redirect_error(use_awaitable, ec));

    // curl and others wait for "100 Continue" before sending a large body.
    if (!ec && beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
        set_server_headers(go_on);
        stream_.expires_after(limits.http_idle_timeout);
        co_await http::async_write(stream_, go_on, net::redirect_error(use_awaitable, ec));
    }
    if (!ec && !parser.is_done()) {
        stream_.expires_after(limits.http_idle_timeout);
        co_await http::async_read(stream_, buffer_, parser, net::redirect_error(use_awaitable, ec));
    }
    if (!ec) co_return parser.release();

    if (peer_gone(ec)) {
        spdlog::debug("connection {}: closed ({})", id_, ec.message());
        co_return std::nullopt;
    }
    if (ec == http::error::body_limit) {
        if (co_await send(error_reply(
                http::status::payload_too_large, 11,
                "request body exceeds " + std::to_string(limits.max_body_bytes) + " bytes")))
            co_await discard_input();
    } else if (ec == http::error::header_limit) {
        co_await send(error_reply(
            http::status::request_header_fields_too_large, 11,
            "request header exceeds " + std::to_string(limits.max_header_bytes) + " bytes"));
    } else if (is_http_error(ec)) {
        co_await send(
            error_reply(http::status::bad_request, 11, "malformed HTTP request: " + ec.message()));
    } else {
        spdlog::debug("connection {}: read failed: {}", id_, ec.message());
    }
    co_return std::nullopt;
}

awaitable<void> http_session::discard_input() {
    beast::error_code ec;
    stream_.socket().shutdown(local_stream::socket::shutdown_send, ec);
    std::vector<char> scratch(64 * 1024);
    stream_.expires_after(linger_time);
    while (!ec)
        co_await stream_.async_read_some(net::buffer(scratch),
                                         net::redirect_error(use_awaitable, ec));
}

http_session::response http_session::answer(const request& req) {
    if (path_of(req.target()) != rpc_path)
        return error_reply(
            http::status::not_found, req.version(),
            "no such path: " + std::string(to_std(req.target())) + "; the API is POST /rpc");
    if (req.method() != http::verb::post) {
        response res = error_reply(http::status::method_not_allowed, req.version(),
                                   "/rpc takes POST, or GET with a WebSocket upgrade");
        res.set(http::field::allow, "POST, GET");
        return res;
    }

    rpc::call_context ctx;  // no session: a plain POST cannot carry notifications
    std::optional<std::string> reply = state_->context.registry.handle_text(req.body(), ctx);

    response res{reply ? http::status::ok : http::status::no_content, req.version()};
    set_server_headers(res);
    if (reply) {
        res.set(http::field::content_type, "application/json");
        res.body() = std::move(*reply);
    }
    res.prepare_payload();
    return res;
}

awaitable<bool> http_session::send(response res) {
    beast::error_code ec;
    stream_.expires_after(state_->context.limits.http_idle_timeout);
    co_await http::async_write(stream_, res, net::redirect_error(use_awaitable, ec));
    if (ec) spdlog::debug("connection {}: write failed: {}", id_, ec.message());
    co_return !ec;
}

}  // namespace ralph
