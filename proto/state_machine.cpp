#include "proto/state_machine.hpp"

#include "common/enum_names.hpp"

#include <array>

namespace ralph::proto {
namespace {

constexpr std::array<enum_name<loop_event>, 13> loop_event_names{{
    {loop_event::start, "start"},
    {loop_event::wait, "wait"},
    {loop_event::wake, "wake"},
    {loop_event::requeue, "requeue"},
    {loop_event::pause, "pause"},
    {loop_event::resume, "resume"},
    {loop_event::complete, "complete"},
    {loop_event::exhaust, "exhaust"},
    {loop_event::stall, "stall"},
    {loop_event::fail, "fail"},
    {loop_event::cancel, "cancel"},
    {loop_event::retry, "retry"},
    {loop_event::extend, "extend"},
}};
static_assert(names_in_order(loop_event_names, loop_event::extend));

}  // namespace

std::string_view to_string(loop_event event) { return name_of(loop_event_names, event); }

const std::vector<transition>& transitions() {
    using e = loop_event;
    using s = loop_state;
    static const std::vector<transition> table{
        {s::queued, e::start, s::running},
        {s::queued, e::wait, s::waiting},
        {s::queued, e::pause, s::paused},
        {s::queued, e::cancel, s::cancelled},

        {s::running, e::wait, s::waiting},
        {s::running, e::requeue, s::queued},
        {s::running, e::pause, s::paused},
        {s::running, e::complete, s::completed},
        {s::running, e::exhaust, s::exhausted},
        {s::running, e::stall, s::stalled},
        {s::running, e::fail, s::failed},
        {s::running, e::cancel, s::cancelled},

        {s::waiting, e::wake, s::running},
        {s::waiting, e::requeue, s::queued},
        {s::waiting, e::pause, s::paused},
        {s::waiting, e::fail, s::failed},
        {s::waiting, e::cancel, s::cancelled},

        {s::paused, e::resume, s::queued},
        {s::paused, e::cancel, s::cancelled},

        // The end states a user may take back: the loop goes on from where it was.
        {s::failed, e::retry, s::queued},
        {s::stalled, e::retry, s::queued},
        {s::cancelled, e::retry, s::queued},
        {s::exhausted, e::extend, s::queued},
    };
    return table;
}

std::optional<loop_state> next_state(loop_state from, loop_event event) {
    for (const auto& t : transitions())
        if (t.from == from && t.event == event) return t.to;
    return std::nullopt;
}

std::string describe_transitions() {
    std::string text = "| from | event → to |\n| --- | --- |\n";
    const transition* previous = nullptr;
    for (const auto& t : transitions()) {
        if (previous == nullptr || previous->from != t.from) {
            if (previous != nullptr) text += " |\n";
            text += "| `";
            text += to_string(t.from);
            text += "` | ";
        } else {
            text += ", ";
        }
        text += to_string(t.event);
        text += " → `";
        text += to_string(t.to);
        text += '`';
        previous = &t;
    }
    text += " |\n";
    return text;
}

}  // namespace ralph::proto
