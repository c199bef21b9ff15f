// Who watches which loop. WebSocket sessions subscribe to loops (loop.tail) or to every loop's
// state changes (events.subscribe); the output log and the scheduler tell the hub when a loop's
// persisted output grew or its state changed, and the hub wakes the sessions concerned. The hub
// never holds output bytes: each subscription is a cursor into the persisted output, so a slow
// client only falls behind and never grows memory. Single-threaded: everything runs on the daemon's
// io_context thread.
#pragma once

#include "daemon/rpc/session.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace ralph {

class subscriber_hub {
  public:
    void join(std::int64_t loop_id, tail_sink* sink) { watchers_[loop_id].insert(sink); }
    void join_events(tail_sink* sink) { event_watchers_.insert(sink); }
    void join_holds(tail_sink* sink) { hold_watchers_.insert(sink); }
    void leave(std::int64_t loop_id, tail_sink* sink);
    // Removes the sink from every loop, the events and the holds (called by a closing session).
    void leave_all(tail_sink* sink);

    void output_committed(std::int64_t loop_id, std::int64_t end);
    void state_changed(const proto::loop_info& loop);
    // The loop's counters changed without a state change (an attempt or iteration ended): only
    // the sessions subscribed to events hear it.
    void counters_changed(const proto::loop_info& loop);
    bool has_event_watchers() const { return !event_watchers_.empty(); }
    // The daemon's ledger took a hold: the sessions of peer links hear it.
    void hold_taken(const proto::agent_hold& hold);
    void loop_removed(std::int64_t loop_id);
    // Whether any session watches the loop, by tail or by events.
    bool watched(std::int64_t loop_id) const {
        return !event_watchers_.empty() || watchers_.count(loop_id) > 0;
    }

  private:
    std::map<std::int64_t, std::set<tail_sink*>> watchers_;
    std::set<tail_sink*> event_watchers_;
    std::set<tail_sink*> hold_watchers_;
};

}  // namespace ralph
