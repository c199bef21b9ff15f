#include "daemon/notify/http_post.hpp"

#include "common/beast.hpp"
#include "proto/version.hpp"

#include <openssl/ssl.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/ssl.hpp>

#include <fmt/format.h>

#include <charconv>
#include <functional>
#include <memory>
#include <type_traits>

namespace ralph {
namespace {

namespace http = beast::http;
using tcp = net::ip::tcp;

// What a receiver answers is read up to this size; only its status is used. The buffer the
// answer is read into is bounded as well: what the parser cannot take (an endless header or
// chunk line) ends the reading there, never grows ralphd.
constexpr std::uint64_t max_answer_bytes = 64 << 10;
constexpr std::uint32_t max_answer_header_bytes = 16 << 10;
constexpr std::size_t max_buffered_bytes = 128 << 10;

post_result failure(std::string what) { return {0, std::move(what), {}}; }

// The time limit of a whole exchange (resolving, connecting, TLS, the request and the answer),
// whatever the receiver does (answers byte by byte, or without end): when it passes, `cut` runs
// (it closes the socket), which ends what is pending. Beast's stream timeouts are not enough:
// they do not fire while every read completes at once, as with a receiver that streams.
class time_limit {
  public:
    time_limit(const net::any_io_executor& executor, std::chrono::milliseconds limit,
               std::function<void()> cut)
        : timer_(executor, limit), state_(std::make_shared<state>(state{std::move(cut), false})) {
        timer_.async_wait([state = state_](boost::system::error_code ec) {
            if (ec || !state->cut) return;
            state->expired = true;
            state->cut();
        });
    }
    // What `cut` closes may go with this: the handler, if it runs later, does nothing.
    ~time_limit() {
        state_->cut = nullptr;
        timer_.cancel();
    }
    time_limit(const time_limit&) = delete;
    time_limit& operator=(const time_limit&) = delete;

    bool expired() const { return state_->expired; }

  private:
    struct state {
        std::function<void()> cut;
        bool expired;
    };
    net::steady_timer timer_;
    std::shared_ptr<state> state_;
};

std::chrono::seconds retry_after_of(const http::response<http::string_body>& answer) {
    auto it = answer.find(http::field::retry_after);
    if (it == answer.end()) return {};
    const std::string_view text = to_std(it->value());
    unsigned seconds = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size()) return {};
    return std::chrono::seconds(std::min(seconds, 3600u));
}

// Writes the request and reads the answer on a connected `stream` (TCP or TLS).
template <typename Stream>
awaitable<post_result> exchange(Stream& stream, const webhook_target& target,
                                const webhook_request& request) {
    http::request<http::string_body> post{http::verb::post, request.path, 11};
    const bool default_port = target.port == (target.tls ? "443" : "80");
    const bool ipv6 = target.host.find(':') != std::string::npos;
    post.set(http::field::host,
             fmt::format("{}{}{}{}", ipv6 ? "[" : "", target.host, ipv6 ? "]" : "",
                         default_port ? "" : ":" + target.port));
    post.set(http::field::user_agent, std::string("ralphd/") + proto::daemon_version);
    post.set(http::field::content_type, request.content_type);
    for (const auto& [name, value] : request.headers) post.set(name, value);
    post.set(http::field::connection, "close");
    post.body() = request.body;
    post.prepare_payload();
    boost::system::error_code ec;
    co_await http::async_write(stream, post, net::redirect_error(use_awaitable, ec));
    if (ec) co_return failure("cannot send: " + ec.message());
    beast::flat_buffer buffer(max_buffered_bytes);
    http::response_parser<http::string_body> parser;
    parser.header_limit(max_answer_header_bytes);
    parser.body_limit(max_answer_bytes);
    co_await http::async_read(stream, buffer, parser, net::redirect_error(use_awaitable, ec));
    // The status decides: a body past the limit, or cut short, changes nothing.
    if (ec && !parser.is_header_done()) co_return failure("no answer: " + ec.message());
    const auto& answer = parser.get();
    post_result result{int(answer.result_int()), "", retry_after_of(answer)};
    if (!result.delivered())
        result.error = fmt::format("answered {} {}", result.status, to_std(answer.reason()));
    co_return result;
}

// Resolves, connects (with TLS for an ssl_stream, verifying the server's name) and exchanges.
template <typename Stream>
awaitable<post_result> post_steps(Stream& stream, tcp::resolver& resolver,
                                  const webhook_target& target, const webhook_request& request) {
    boost::system::error_code ec;
    const tcp::resolver::results_type addresses = co_await resolver.async_resolve(
        target.host, target.port, net::redirect_error(use_awaitable, ec));
    if (ec) co_return failure(fmt::format("cannot resolve {}: {}", target.host, ec.message()));
    constexpr bool secure = !std::is_same_v<Stream, beast::tcp_stream>;
    if constexpr (secure) {
        // The name the server's certificate must have, and (for a name, not an address) SNI.
        stream.set_verify_callback(net::ssl::host_name_verification(target.host));
        boost::system::error_code not_an_address;
        net::ip::make_address(target.host, not_an_address);
        if (not_an_address &&
            !SSL_set_tlsext_host_name(stream.native_handle(), target.host.c_str()))
            co_return failure("cannot set the TLS server name");
    }
    co_await beast::get_lowest_layer(stream).async_connect(addresses,
                                                           net::redirect_error(use_awaitable, ec));
    if (ec) co_return failure("cannot connect: " + ec.message());
    if constexpr (secure) {
        co_await stream.async_handshake(net::ssl::stream_base::client,
                                        net::redirect_error(use_awaitable, ec));
        if (ec) co_return failure("TLS: " + ec.message());
    }
    co_return co_await exchange(stream, target, request);
}

// post_steps within `timeout`.
template <typename Stream>
awaitable<post_result> post_within(Stream& stream, const webhook_target& target,
                                   const webhook_request& request,
                                   std::chrono::milliseconds timeout) {
    tcp::resolver resolver(stream.get_executor());
    beast::tcp_stream& socket = beast::get_lowest_layer(stream);
    const time_limit limit(stream.get_executor(), timeout, [&] {
        resolver.cancel();
        socket.close();
    });
    post_result result = co_await post_steps(stream, resolver, target, request);
    if (limit.expired())
        result = failure(fmt::format("no answer within {} s", double(timeout.count()) / 1000));
    // The answer is read; a receiver that closes without a TLS shutdown changes nothing.
    socket.close();
    co_return result;
}

}  // namespace

net::ssl::context verifying_tls_context() {
    net::ssl::context tls(net::ssl::context::tls_client);
    tls.set_default_verify_paths();
    tls.set_verify_mode(net::ssl::verify_peer);
    return tls;
}

awaitable<post_result> post_webhook(const webhook_target& target, const webhook_request& request,
                                    net::ssl::context& tls, std::chrono::milliseconds timeout) {
    auto executor = co_await net::this_coro::executor;
    if (!target.tls) {
        beast::tcp_stream stream(executor);
        co_return co_await post_within(stream, target, request, timeout);
    }
    beast::ssl_stream<beast::tcp_stream> stream(executor, tls);
    co_return co_await post_within(stream, target, request, timeout);
}

}  // namespace ralph
