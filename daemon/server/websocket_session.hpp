// One WebSocket JSON-RPC session (GET /rpc upgrade). A reader coroutine dispatches each message
// to the registry and queues the reply; a writer coroutine sends, one message at a time, the
// queued messages first and then the output of the session's tails, read from the persisted
// log through a cursor per tailed loop. Invariants:
// - the outbox never holds more than max_session_queue_bytes: a client that does not read
//   its replies is dropped (close code "policy violation"); a bound in bytes, so that a burst of
//   notifications (a hundred loops ending at once) reaches a client that reads;
// - tailed output is never queued: a cursor only remembers the next offset, so a slow client
//   falls behind and catches up from disk, without gaps or duplicates;
// - the reply to a request precedes every notification that request caused (e.g. the first
//   loop.output of a loop.tail);
// - a loop's terminal loop.state (final: true) comes after the last byte of its output (or at
//   once when history.gc removed the loop meanwhile);
// - while a loop runs, a tail more than one chunk behind is paced (tail_pacer): all such tails
//   of all sessions together send at most one chunk per 16 ms (4 MiB/s); the agent writing the
//   output comes first, and the tails catch up from the file when the output slows down or the
//   loop ends;
// - once closed, the session is in no hub list.
#pragma once

#include "common/agent_stream/agent_stream.hpp"
#include "common/beast.hpp"
#include "daemon/server/connection.hpp"
#include "daemon/server/subscriber_hub.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace ralph {

// The text of a loop.output notification of `piece` at `offset`, bytes of an attempt whose
// output is in `format` and whose `origin` it is, with `rendered` as its `text` when given
// (proto::output_notification),
// written out directly: the same as serializing the notification, without copying the bytes.
// In the "binary" encoding: the notification with `data` empty, a newline, then `piece` itself
// (the payload of a binary WebSocket message).
std::string serialize_output_notification(std::int64_t loop_id, std::int64_t offset,
                                          std::string_view piece, const std::string& encoding,
                                          std::string_view format,
                                          const proto::output_origin& origin,
                                          const std::optional<std::string>& rendered);

class websocket_session : public connection,
                          public tail_sink,
                          public std::enable_shared_from_this<websocket_session> {
  public:
    // `web`: on a TCP connection of ralphd --listen (rpc::call_context::web).
    websocket_session(std::shared_ptr<shared_state> state, api_socket socket, std::uint64_t id,
                      bool web);
    ~websocket_session() override;

    // Completes the handshake answering `upgrade`, then serves the session.
    void start(beast::http::request<beast::http::string_body> upgrade);
    void close() override;
    bool is_websocket() const override { return true; }

    void add_tail(const tail_request& request) override;
    void on_output(std::int64_t loop_id, std::int64_t end) override;
    void on_state(const proto::loop_info& loop) override;
    void on_removed(std::int64_t loop_id) override;
    void subscribe_events() override;
    void on_event(const proto::loop_info& loop) override;
    void subscribe_holds() override;
    void on_hold(const proto::agent_hold& hold) override;

  private:
    // A message for the writer: JSON text, or a "binary" tail's loop.output (binary message).
    struct outgoing {
        std::string payload;
        bool binary = false;
    };
    struct cursor {
        std::int64_t offset = 0;  // next byte of the loop's output to send
        bool output = true;
        std::string encoding;
        // loop.tail with render: what makes the bytes readable; null once it said its last.
        std::unique_ptr<agent_stream::output_renderer> renderer;
        proto::loop_info loop;                                // latest known state of the loop
        std::chrono::steady_clock::time_point next_chunk_at;  // paced: not before
    };

    awaitable<void> read_loop(beast::http::request<beast::http::string_body> upgrade);
    awaitable<void> write_loop();
    awaitable<void> close_with(beast::websocket::close_code code);

    // Answers one message; `message` must outlive the call.
    awaitable<void> dispatch(const std::string& message);
    // Queues a message for the writer at `position` (from the front); a full queue drops the
    // session.
    void enqueue(std::string message) { enqueue_at(outbox_.size(), std::move(message)); }
    void enqueue_at(std::size_t position, std::string message);
    // The next message to send: the oldest queued one, else a tail notification; nullopt when
    // there is nothing to send now.
    std::optional<outgoing> next_message();
    std::optional<outgoing> next_tail_message(std::int64_t loop_id, cursor& tail);
    // The loop.output notification of `piece`, at the tail's offset, in the tail's encoding:
    // a binary message in the binary encoding, else a text one.
    static outgoing output_message(std::int64_t loop_id, const cursor& tail, std::string_view piece,
                                   std::string_view format, const proto::output_origin& origin,
                                   const std::optional<std::string>& rendered);
    // The client does not read: stop serving it and send a policy-violation close.
    void drop_slow_client();
    // Leaves the hub and forgets all queued work; the socket stays open. Idempotent.
    void stop_serving();
    void wake_writer() { wake_.cancel(); }

    std::shared_ptr<shared_state> state_;
    const bool web_;
    beast::websocket::stream<api_socket> ws_;
    net::steady_timer wake_;  // the idle writer waits on it; cancelled when there is work
    std::deque<std::string> outbox_;
    std::size_t outbox_bytes_ = 0;          // of the messages in outbox_
    std::uint64_t outbox_sent_ = 0;         // messages taken from the front of outbox_ so far
    std::map<std::int64_t, cursor> tails_;  // by loop id
    std::int64_t last_served_ = 0;          // loop id last sent, to take turns between tails
    // When next_message found nothing to send only because of pacing: the earliest time a
    // paced tail may send again.
    std::optional<std::chrono::steady_clock::time_point> paced_until_;
    bool serving_ = true;  // false once closing: no more work is accepted
    bool events_ = false;  // subscribed to every loop's state changes
    bool holds_ = false;   // subscribed to the ledger's holds (a peer's link)
};

}  // namespace ralph
