// Who watches which loop: the map from loop id to the sessions tailing it.
#include "daemon/server/subscriber_hub.hpp"

#include <vector>

namespace ralph {
namespace {

// Calls `fn` on every sink of `loop_id` still subscribed when its turn comes. A sink may leave
// (or another sink may be closed) from inside a call, so iterate over a copy and re-check.
template <typename Fn>
void for_each_watcher(std::map<std::int64_t, std::set<tail_sink*>>& watchers, std::int64_t loop_id,
                      Fn fn) {
    auto it = watchers.find(loop_id);
    if (it == watchers.end()) return;
    const std::vector<tail_sink*> sinks(it->second.begin(), it->second.end());
    for (tail_sink* sink : sinks) {
        auto current = watchers.find(loop_id);
        if (current == watchers.end()) return;
        if (current->second.contains(sink)) fn(sink);
    }
}

// Calls `fn` on every sink of `sinks` still in it when its turn comes (as for_each_watcher).
template <typename Fn>
void for_each_member(std::set<tail_sink*>& sinks, Fn fn) {
    const std::vector<tail_sink*> copy(sinks.begin(), sinks.end());
    for (tail_sink* sink : copy)
        if (sinks.contains(sink)) fn(sink);
}

}  // namespace

void subscriber_hub::leave(std::int64_t loop_id, tail_sink* sink) {
    auto it = watchers_.find(loop_id);
    if (it == watchers_.end()) return;
    it->second.erase(sink);
    if (it->second.empty()) watchers_.erase(it);
}

void subscriber_hub::leave_all(tail_sink* sink) {
    event_watchers_.erase(sink);
    hold_watchers_.erase(sink);
    for (auto it = watchers_.begin(); it != watchers_.end();) {
        it->second.erase(sink);
        it = it->second.empty() ? watchers_.erase(it) : std::next(it);
    }
}

void subscriber_hub::output_committed(std::int64_t loop_id, std::int64_t end) {
    for_each_watcher(watchers_, loop_id, [&](tail_sink* sink) { sink->on_output(loop_id, end); });
}

void subscriber_hub::state_changed(const proto::loop_info& loop) {
    for_each_watcher(watchers_, loop.id, [&](tail_sink* sink) { sink->on_state(loop); });
    counters_changed(loop);
}

void subscriber_hub::counters_changed(const proto::loop_info& loop) {
    for_each_member(event_watchers_, [&](tail_sink* sink) { sink->on_event(loop); });
}

void subscriber_hub::hold_taken(const proto::agent_hold& hold) {
    for_each_member(hold_watchers_, [&](tail_sink* sink) { sink->on_hold(hold); });
}

void subscriber_hub::loop_removed(std::int64_t loop_id) {
    for_each_watcher(watchers_, loop_id, [&](tail_sink* sink) { sink->on_removed(loop_id); });
    watchers_.erase(loop_id);
}

}  // namespace ralph
