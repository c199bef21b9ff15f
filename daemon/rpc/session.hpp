// What a method handler may ask of the WebSocket session its call came on: tails of a loop's
// output (loop.tail), the state changes of every loop (events.subscribe) and the usage-limit
// holds this daemon takes (peer.link). The server's
// WebSocket session implements it; daemon/server/subscriber_hub tells the sessions what
// changed. Here, with the handlers, so that rpc/ does not depend on server/.
#pragma once

#include "proto/daemon_api.hpp"
#include "proto/loop_api.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <string>

namespace ralph {

// One tail subscription as requested by loop.tail.
struct tail_request {
    std::int64_t loop_id = 0;
    std::int64_t offset = 0;  // first byte to send
    bool output = true;       // false: only loop.state notifications
    std::string encoding = proto::encoding::utf8;
    bool render = false;    // each loop.output also carries the bytes rendered readably
    proto::loop_info loop;  // the loop as it was when the subscription started
};

// A connection able to carry notifications (implemented by the WebSocket session).
class tail_sink {
  public:
    virtual ~tail_sink() = default;
    // Starts a subscription; throws proto::rpc_error(limit_exceeded) past the session's bound.
    virtual void add_tail(const tail_request& request) = 0;
    // The loop's persisted output now ends at `end` (exclusive byte offset).
    virtual void on_output(std::int64_t loop_id, std::int64_t end) = 0;
    // The loop changed state.
    virtual void on_state(const proto::loop_info& loop) = 0;
    // The loop's history was removed (history.gc): the subscription ends now, with what was sent.
    virtual void on_removed(std::int64_t loop_id) = 0;
    // Starts the subscription to every loop's state changes (events.subscribe); throws
    // proto::rpc_error when the session has one already or is closing.
    virtual void subscribe_events() = 0;
    // Some loop changed state (only for a session subscribed to events).
    virtual void on_event(const proto::loop_info& loop) = 0;
    // Starts the subscription to the holds this daemon's ledger takes (peer.link: the session
    // is a peer's link); throws proto::rpc_error when it has one already or is closing.
    virtual void subscribe_holds() = 0;
    // The ledger took a new or longer hold (only for a session subscribed to holds).
    virtual void on_hold(const proto::agent_hold& hold) = 0;
};

}  // namespace ralph
