// The WebSocket JSON-RPC session: replies, notifications and tail output over one connection.
#include "daemon/server/websocket_session.hpp"

#include "common/text.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/store/output_log.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace ralph {
namespace {

namespace websocket = beast::websocket;
using nlohmann::json;

// Output sent per loop.output notification.
constexpr std::int64_t tail_chunk_bytes = 64 * 1024;
// How long a close frame may wait behind a write the client does not read.
constexpr std::chrono::seconds close_deadline{2};

std::string state_notification(const proto::loop_info& loop, bool final) {
    return rpc::serialize(
        rpc::make_notification(proto::notification::loop_state,
                               proto::state_notification{loop.id, loop.state, loop.stop_reason,
                                                         loop.iterations, final, loop.resume_at}));
}

// A second subscription of a kind, or one on a closing session, is refused.
void check_new_subscription(bool serving, bool subscribed, std::string_view what) {
    if (!serving)
        throw proto::rpc_error(proto::error_kind::limit_exceeded, "this session is being closed");
    if (subscribed)
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               fmt::format("this session is subscribed to the {} already", what));
}

}  // namespace

// A loop.output notification (proto::output_notification), written out directly instead of
// dumped from a json object: its data is nearly all the bytes of a busy tail, base64 needs no
// escaping, and a dump would copy and scan it byte by byte. The same text as the dump: members
// in its (sorted) order (a unit test compares the two).
std::string serialize_output_notification(std::int64_t loop_id, std::int64_t offset,
                                          std::string_view piece, const std::string& encoding,
                                          std::string_view format,
                                          const proto::output_origin& origin,
                                          const std::optional<std::string>& rendered) {
    std::string message = R"({"jsonrpc":"2.0","method":")";
    message += proto::notification::loop_output;
    message += R"(","params":{"attempt":)" + std::to_string(origin.attempt) + R"(,"data":)";
    if (encoding == proto::encoding::binary) {
        message.reserve(message.size() + piece.size() + 200);
        message += R"("")";
    } else if (encoding == proto::encoding::base64) {
        message.reserve(message.size() + (piece.size() + 2) / 3 * 4 + 100);
        message += '"';
        text::base64_append(message, piece);
        message += '"';
    } else {
        message += rpc::serialize(json(proto::encode_output(piece, encoding)));
    }
    message += R"(,"encoding":")" + encoding + R"(","format":")";
    message += format;
    message += R"(","id":)" + std::to_string(loop_id) + R"(,"iteration":)" +
               std::to_string(origin.iteration) + R"(,"kind":")";
    message += proto::to_string(origin.kind);
    message +=
        R"(","length":)" + std::to_string(piece.size()) + R"(,"offset":)" + std::to_string(offset);
    if (rendered) message += R"(,"text":)" + rpc::serialize(json(*rendered));
    message += "}}";
    if (encoding == proto::encoding::binary) message.append("\n").append(piece);
    return message;
}

websocket_session::websocket_session(std::shared_ptr<shared_state> state, api_socket socket,
                                     std::uint64_t id, bool web)
    : connection(id, true),
      state_(std::move(state)),
      web_(web),
      ws_(std::move(socket)),
      wake_(ws_.get_executor()) {
    state_->connections.add(this);
}

websocket_session::~websocket_session() {
    // close() has normally left the hub already; this covers a session destroyed along with its
    // io_context without having been closed: the hub must not keep a dangling pointer.
    if (serving_) state_->context.hub.leave_all(this);
    state_->connections.remove(this);
}

void websocket_session::start(beast::http::request<beast::http::string_body> upgrade) {
    // The lambda, and so `self`, lives as long as the coroutine it starts.
    net::co_spawn(
        ws_.get_executor(),
        [self = shared_from_this(), upgrade = std::move(upgrade)]() mutable {
            return self->read_loop(std::move(upgrade));
        },
        net::detached);
}

void websocket_session::close() {
    stop_serving();
    beast::error_code ignored;
    ws_.next_layer().close(ignored);
}

awaitable<void> websocket_session::read_loop(
    beast::http::request<beast::http::string_body> upgrade) {
    // Handshake and idle timeouts, with pings keeping a quiet but healthy client connected.
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { set_server_headers(res); }));
    ws_.read_message_max(state_->context.limits.max_body_bytes);
    // A message goes out as one frame in one write. Beast's default cuts it into frames of
    // 4 KiB, each its own write: a 64 KiB tail chunk woke the client 22 times, which cost 20
    // tails of a flooding agent a CPU in context switches.
    ws_.auto_fragment(false);

    beast::error_code ec;
    co_await ws_.async_accept(upgrade, net::redirect_error(use_awaitable, ec));
    if (ec) {
        spdlog::debug("connection {}: WebSocket handshake failed: {}", id(), ec.message());
        close();
        co_return;
    }
    spdlog::debug("connection {}: WebSocket session open", id());
    net::co_spawn(
        ws_.get_executor(), [self = shared_from_this()] { return self->write_loop(); },
        net::detached);

    try {
        beast::flat_buffer buffer;
        for (;;) {
            co_await ws_.async_read(buffer, net::redirect_error(use_awaitable, ec));
            if (ec) break;
            // While the session is being closed, messages are read (to get the peer's close
            // frame) but no longer answered.
            if (serving_) {
                const std::string message = beast::buffers_to_string(buffer.data());
                co_await dispatch(message);
            }
            buffer.consume(buffer.size());
        }
        spdlog::debug("connection {}: WebSocket session ended: {}", id(), ec.message());
    } catch (const std::exception& e) {
        spdlog::error("connection {}: WebSocket session failed: {}", id(), e.what());
    }
    close();
}

awaitable<void> websocket_session::write_loop() {
    try {
        while (serving_) {
            std::optional<outgoing> message = next_message();
            if (!message) {
                // Sleep until on_output, on_state or a queued message cancels the wait, or a
                // paced tail may send again.
                beast::error_code woken;
                wake_.expires_at(paced_until_.value_or(net::steady_timer::time_point::max()));
                co_await wake_.async_wait(net::redirect_error(use_awaitable, woken));
                continue;
            }
            beast::error_code ec;
            ws_.binary(message->binary);
            co_await ws_.async_write(net::buffer(message->payload),
                                     net::redirect_error(use_awaitable, ec));
            touch();
            if (ec) {
                spdlog::debug("connection {}: WebSocket write failed: {}", id(), ec.message());
                close();
                co_return;
            }
        }
    } catch (const std::exception& e) {
        // Reading the persisted output failed: the session cannot keep its promise of no gaps.
        spdlog::error("connection {}: cannot send tail output: {}", id(), e.what());
        close();
    }
}

awaitable<void> websocket_session::close_with(websocket::close_code code) {
    // The close frame has to wait for the write in progress, which a client that stopped
    // reading never lets finish: past the deadline, cut the connection.
    net::steady_timer deadline(ws_.get_executor(), close_deadline);
    deadline.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->close();
    });
    beast::error_code ec;
    co_await ws_.async_close(code, net::redirect_error(use_awaitable, ec));
    close();
}

awaitable<void> websocket_session::dispatch(const std::string& message) {
    touch();
    spdlog::debug("connection {}: WebSocket message of {} bytes", id(), message.size());
    rpc::call_context ctx{this, web_};
    // Handling a request may queue notifications (e.g. a state change it caused); its reply
    // goes before them, hence the insertion at the position the queue had before, less what the
    // writer took from its front while the call waited.
    const std::size_t queued_before = outbox_.size();
    const std::uint64_t sent_before = outbox_sent_;
    std::optional<std::string> reply = co_await state_->context.registry.handle_text(message, ctx);
    if (!reply || !serving_) co_return;
    const std::uint64_t sent_since = outbox_sent_ - sent_before;
    enqueue_at(sent_since >= queued_before ? 0 : queued_before - std::size_t(sent_since),
               std::move(*reply));
}

void websocket_session::enqueue_at(std::size_t position, std::string message) {
    if (!serving_) return;
    if (outbox_bytes_ + message.size() > state_->context.limits.max_session_queue_bytes) {
        drop_slow_client();
        return;
    }
    outbox_bytes_ += message.size();
    outbox_.insert(outbox_.begin() + std::ptrdiff_t(std::min(position, outbox_.size())),
                   std::move(message));
    wake_writer();
}

std::optional<websocket_session::outgoing> websocket_session::next_message() {
    paced_until_.reset();
    if (!outbox_.empty()) {
        outgoing message{std::move(outbox_.front())};
        outbox_bytes_ -= message.payload.size();
        outbox_.pop_front();
        ++outbox_sent_;
        return message;
    }
    // Take turns, starting after the loop served last, so one busy loop cannot starve the others.
    const auto after_last = tails_.upper_bound(last_served_);
    for (auto it = after_last; it != tails_.end(); ++it)
        if (auto message = next_tail_message(it->first, it->second)) return message;
    for (auto it = tails_.begin(); it != after_last; ++it)
        if (auto message = next_tail_message(it->first, it->second)) return message;
    return std::nullopt;
}

websocket_session::outgoing websocket_session::output_message(
    std::int64_t loop_id, const cursor& tail, std::string_view piece, std::string_view format,
    const proto::output_origin& origin, const std::optional<std::string>& rendered) {
    return {serialize_output_notification(loop_id, tail.offset, piece, tail.encoding, format,
                                          origin, rendered),
            tail.encoding == proto::encoding::binary};
}

// May erase `tail` from tails_; the callers return right after a message.
std::optional<websocket_session::outgoing> websocket_session::next_tail_message(
    std::int64_t loop_id, cursor& tail) {
    const output_log& output = state_->context.output;
    const std::int64_t end = output.committed_end(loop_id);

    if (tail.output && tail.offset < end) {
        const auto now = std::chrono::steady_clock::now();
        const bool paced =
            end - tail.offset > tail_chunk_bytes && tail.loop.state == proto::loop_state::running;
        if (paced && now < tail.next_chunk_at) {
            paced_until_ = std::min(paced_until_.value_or(tail.next_chunk_at), tail.next_chunk_at);
            return std::nullopt;
        }
        tail.next_chunk_at =
            paced ? state_->pacer.reserve(now) : std::chrono::steady_clock::time_point();
        // One attempt's bytes per notification, with their format.
        const output_log::output_span span = output.span_at(loop_id, tail.offset);
        const std::string bytes =
            output.read(loop_id, tail.offset, std::min(tail_chunk_bytes, span.end - tail.offset));
        if (bytes.empty())
            throw std::runtime_error("output of loop " + std::to_string(loop_id) +
                                     " ends before its committed end");
        // A rendered piece ends on a whole character, whatever the encoding of the bytes.
        const std::size_t length =
            proto::sendable_length(bytes, tail.renderer ? proto::encoding::utf8 : tail.encoding);
        const std::string_view piece(bytes.data(), length);
        const std::string_view format = agent_stream::to_string(span.format);
        const proto::output_origin origin{span.iteration, span.attempt, span.kind};
        std::optional<std::string> rendered;
        if (tail.renderer)
            rendered = text::to_valid_utf8(
                tail.renderer->render(piece, format, proto::output_section(origin)));
        outgoing message = output_message(loop_id, tail, piece, format, origin, rendered);
        tail.offset += static_cast<std::int64_t>(length);
        last_served_ = loop_id;
        return message;
    }

    if (proto::is_terminal(tail.loop.state) && (!tail.output || tail.offset >= end)) {
        if (tail.renderer) {
            // What the renderer held (a last line without a newline), before the end.
            std::optional<std::string> rest = text::to_valid_utf8(tail.renderer->finish());
            tail.renderer.reset();
            if (!rest->empty()) {
                last_served_ = loop_id;
                return output_message(loop_id, tail, {}, "text", {}, rest);
            }
        }
        outgoing message{state_notification(tail.loop, true)};
        state_->context.hub.leave(loop_id, this);
        tails_.erase(loop_id);
        last_served_ = loop_id;
        return message;
    }
    return std::nullopt;
}

void websocket_session::drop_slow_client() {
    spdlog::warn(
        "connection {}: WebSocket client is not reading ({} messages, {} bytes queued); dropping "
        "it",
        id(), outbox_.size(), outbox_bytes_);
    stop_serving();
    net::co_spawn(
        ws_.get_executor(),
        [self = shared_from_this()] {
            return self->close_with(websocket::close_code::policy_error);
        },
        net::detached);
}

void websocket_session::stop_serving() {
    if (!serving_) return;
    serving_ = false;
    state_->context.hub.leave_all(this);
    tails_.clear();
    events_ = false;
    holds_ = false;
    outbox_.clear();
    outbox_bytes_ = 0;
    wake_writer();
}

void websocket_session::add_tail(const tail_request& request) {
    const std::size_t max_tails = state_->context.limits.max_tails_per_session;
    if (!serving_)
        throw proto::rpc_error(proto::error_kind::limit_exceeded, "this session is being closed");
    if (request.offset < 0)
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               "params.offset must not be negative");
    if (tails_.contains(request.loop_id))
        throw proto::rpc_error(
            proto::error_kind::invalid_params,
            "this session already tails loop " + std::to_string(request.loop_id));
    if (tails_.size() >= max_tails)
        throw proto::rpc_error(
            proto::error_kind::limit_exceeded,
            "a session may tail at most " + std::to_string(max_tails) + " loops");
    tails_.emplace(request.loop_id, cursor{request.offset,
                                           request.output,
                                           request.encoding,
                                           request.render && request.output
                                               ? std::make_unique<agent_stream::output_renderer>()
                                               : nullptr,
                                           request.loop,
                                           {}});
    state_->context.hub.join(request.loop_id, this);
    // The writer runs only after the current request's reply is queued, so that reply is sent
    // before the first notification of this tail.
    wake_writer();
}

void websocket_session::on_output(std::int64_t loop_id, std::int64_t /*end*/) {
    // The cursor reads the committed end itself when the writer gets to it.
    if (tails_.contains(loop_id)) wake_writer();
}

void websocket_session::on_removed(std::int64_t loop_id) {
    auto it = tails_.find(loop_id);
    if (it == tails_.end()) return;
    // Only ended loops are removed: end the subscription as if all its output had been sent
    // (the rest is gone), before a new loop could be given the same id.
    const proto::loop_info loop = it->second.loop;
    tails_.erase(it);
    state_->context.hub.leave(loop_id, this);
    enqueue(state_notification(loop, true));
}

void websocket_session::on_state(const proto::loop_info& loop) {
    auto it = tails_.find(loop.id);
    if (it == tails_.end()) return;
    it->second.loop = loop;
    if (proto::is_terminal(loop.state))
        wake_writer();  // announced (final: true) once the remaining output is sent
    else
        enqueue(state_notification(loop, false));
}

void websocket_session::subscribe_events() {
    check_new_subscription(serving_, events_, "events");
    events_ = true;
    state_->context.hub.join_events(this);
}

void websocket_session::subscribe_holds() {
    check_new_subscription(serving_, holds_, "holds");
    holds_ = true;
    state_->context.hub.join_holds(this);
}

void websocket_session::on_hold(const proto::agent_hold& hold) {
    if (holds_)
        enqueue(rpc::serialize(
            rpc::make_notification(proto::notification::agent_held, nlohmann::json(hold))));
}

void websocket_session::on_event(const proto::loop_info& loop) {
    // Queued like a reply: a client that stops reading is dropped at the outbox's bound.
    if (events_)
        enqueue(rpc::serialize(
            rpc::make_notification(proto::notification::loop_changed, proto::summary_json(loop))));
}

}  // namespace ralph
