// Who watches which loop. WebSocket sessions subscribe to loops (loop.tail) or to every loop's
// state changes (events.subscribe); the output log and the scheduler tell the hub when a loop's
// persisted output grew or its state changed, and the hub wakes the sessions concerned. The hub never holds output bytes: each subscription is a
// cursor into the persisted output, so a slow client only falls behind and never grows memory.
// Single-threaded: everything runs on the daemon's io_context thread.
#pragma once

#include "proto/types.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace ralph {

// One tail subscription as requested by loop.tail.
struct tail_request {
    std::int64_t loop_id = 0;
    std::int64_t offset = 0;       // first byte to send
    bool output = true;            // false: only loop.state notifications
    std::string encoding = "utf8";
    proto::loop_info loop;         // the loop as it was when the subscription started
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
};

class subscriber_hub {
public:
    void join(std::int64_t loop_id, tail_sink* sink) { watchers_[loop_id].insert(sink); }
    void join_events(tail_sink* sink) { event_watchers_.insert(sink); }
    void leave(std::int64_t loop_id, tail_sink* sink);
    // Removes the sink from every loop and from the events (called by a closing session).
    void leave_all(tail_sink* sink);

    void output_committed(std::int64_t loop_id, std::int64_t end);
    void state_changed(const proto::loop_info& loop);
    void loop_removed(std::int64_t loop_id);
    // Whether any session watches the loop, by tail or by events.
    bool watched(std::int64_t loop_id) const {
        return !event_watchers_.empty() || watchers_.count(loop_id) > 0;
    }

private:
    std::map<std::int64_t, std::set<tail_sink*>> watchers_;
    std::set<tail_sink*> event_watchers_;
};

}  // namespace ralph
