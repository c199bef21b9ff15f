// One HTTP/1.1 connection on the API socket: POST /rpc in, JSON-RPC out; every error is a
// JSON body with a 4xx status. Runs as one coroutine on the io_context thread.
#include "daemon/server/http_session.hpp"

#include "daemon/server/http_rpc.hpp"
#include "daemon/server/web_gate.hpp"
#include "daemon/server/websocket_session.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

namespace ralph {
namespace {

namespace http = beast::http;

// How long a refused body is read and dropped before the connection is closed.
constexpr std::chrono::seconds linger_time{2};

}  // namespace

http_session::http_session(std::shared_ptr<shared_state> state, api_socket socket, std::uint64_t id,
                           api_peer peer)
    : connection(id, !peer.tcp),
      state_(std::move(state)),
      peer_(std::move(peer)),
      stream_(std::move(socket)) {
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
            std::optional<http_request> req = co_await read_request();
            if (!req) break;

            touch();
            if (beast::websocket::is_upgrade(*req) && path_of(req->target()) == rpc_path) {
                spdlog::debug("connection {}: WebSocket upgrade", id());
                const server_limits& limits = state_->context.limits;
                if (state_->connections.websocket_count() >= limits.max_websocket_sessions) {
                    // Every session is the owner's: an upgrade passed the web gate.
                    const std::uint64_t closed = state_->connections.close_longest_idle(true, true);
                    spdlog::warn(
                        "all {} WebSocket sessions are taken: closed connection {}, idle "
                        "the longest, for connection {}",
                        limits.max_websocket_sessions, closed, id());
                }
                // The WebSocket session takes the socket; this session ends without closing it.
                auto ws = std::make_shared<websocket_session>(state_, stream_.release_socket(),
                                                              id(), peer_.tcp);
                ws->start(std::move(*req));
                co_return;
            }

            http_response res = co_await answer_request(*req, state_->context.registry, peer_.tcp);
            res.keep_alive(req->keep_alive());
            spdlog::debug("connection {}: {} {} -> {}", id(), to_std(req->method_string()),
                          to_std(req->target()), res.result_int());
            if (!co_await send(std::move(res)) || !req->keep_alive()) break;
            touch();
        }
    } catch (const std::exception& e) {
        spdlog::warn("connection {}: {}", id(), e.what());
    }
    beast::error_code ignored;
    stream_.socket().shutdown(api_socket::shutdown_send, ignored);
    close();
}

awaitable<std::optional<http_request>> http_session::read_request() {
    const server_limits& limits = state_->context.limits;
    for (;;) {
        http_request_parser parser;
        bound_request_parser(parser, limits);
        beast::error_code ec;
        // The timeout covers the idle time before a request as well as a client sending it
        // slowly.
        stream_.expires_after(limits.http_idle_timeout);
        co_await http::async_read_header(stream_, buffer_, parser,
                                         net::redirect_error(use_awaitable, ec));
        if (ec) co_return co_await refuse_unread(ec);
        // On TCP the web gate decides on the header: a body is read only for a request that
        // may be served (a stranger's megabytes are never held).
        std::optional<http_response> refusal = co_await gate_answer(parser.get());
        if (!refusal) co_return co_await read_body(parser);
        const bool body_follows = !parser.is_done();
        refusal->keep_alive(parser.get().keep_alive() && !body_follows);
        const bool keep_alive = refusal->keep_alive();
        if (!co_await send(std::move(*refusal))) co_return std::nullopt;
        if (body_follows) co_await discard_input();
        if (!keep_alive) co_return std::nullopt;
    }
}

awaitable<std::optional<http_request>> http_session::read_body(http_request_parser& parser) {
    const server_limits& limits = state_->context.limits;
    beast::error_code ec;
    // curl and others wait for "100 Continue" before sending a large body.
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
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
    co_return co_await refuse_unread(ec);
}

awaitable<std::optional<http_request>> http_session::refuse_unread(const beast::error_code& ec) {
    std::optional<http_response> refusal = answer_read_error(ec, state_->context.limits);
    if (!refusal) {
        spdlog::debug("connection {}: closed ({})", id(), ec.message());
        co_return std::nullopt;
    }
    const bool body_refused = refusal->result() == http::status::payload_too_large;
    if (co_await send(std::move(*refusal)) && body_refused) co_await discard_input();
    co_return std::nullopt;
}

awaitable<void> http_session::discard_input() {
    beast::error_code ec;
    stream_.socket().shutdown(api_socket::shutdown_send, ec);
    std::vector<char> scratch(64 * 1024);
    stream_.expires_after(linger_time);
    while (!ec)
        co_await stream_.async_read_some(net::buffer(scratch),
                                         net::redirect_error(use_awaitable, ec));
}

awaitable<std::optional<http_response>> http_session::gate_answer(const http_request& req) {
    if (!peer_.tcp) co_return std::nullopt;
    if (!state_->context.gate)  // a TCP listener without a gate: a bug, and nothing is served
        throw std::logic_error("a TCP connection without the web gate");
    web_gate::verdict verdict =
        state_->context.gate->check(req, peer_.address, std::chrono::steady_clock::now());
    if (!verdict.answer && !owned()) {
        // It carried the token: the owner's from now on, in the owner's pool.
        make_room(*state_, true, peer_.address);
        set_owned();
    }
    if (verdict.delay.count() > 0) {
        net::steady_timer wait(stream_.get_executor());
        wait.expires_after(verdict.delay);
        beast::error_code ec;
        co_await wait.async_wait(net::redirect_error(use_awaitable, ec));
    }
    co_return std::move(verdict.answer);
}

awaitable<bool> http_session::send(http_response res) {
    beast::error_code ec;
    stream_.expires_after(state_->context.limits.http_idle_timeout);
    co_await http::async_write(stream_, res, net::redirect_error(use_awaitable, ec));
    if (ec) spdlog::debug("connection {}: write failed: {}", id(), ec.message());
    co_return !ec;
}

}  // namespace ralph
