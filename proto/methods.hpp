// Method and notification names of the API (documented with examples in proto/API.md).
#pragma once

namespace ralph::proto::method {

inline constexpr const char* daemon_info = "daemon.info";
inline constexpr const char* daemon_shutdown = "daemon.shutdown";
inline constexpr const char* loop_submit = "loop.submit";
inline constexpr const char* loop_list = "loop.list";
inline constexpr const char* loop_get = "loop.get";
inline constexpr const char* loop_cancel = "loop.cancel";
inline constexpr const char* loop_iterations = "loop.iterations";
inline constexpr const char* loop_output = "loop.output";
inline constexpr const char* loop_tail = "loop.tail";
inline constexpr const char* loop_events = "loop.events";
inline constexpr const char* events_subscribe = "events.subscribe";
inline constexpr const char* loop_steer = "loop.steer";
inline constexpr const char* loop_pause = "loop.pause";
inline constexpr const char* loop_resume = "loop.resume";
inline constexpr const char* agents_list = "agents.list";
inline constexpr const char* scheduler_get = "scheduler.get";
inline constexpr const char* scheduler_set = "scheduler.set";
inline constexpr const char* budget_get = "budget.get";
inline constexpr const char* budget_set = "budget.set";
// Only on a daemon started with --test-clock: shifts its wall clock.
inline constexpr const char* debug_clock = "debug.clock";
inline constexpr const char* history_report = "history.report";
inline constexpr const char* history_gc = "history.gc";

}  // namespace ralph::proto::method

namespace ralph::proto::notification {

// A piece of a tailed loop's output: {id, offset, length, data, encoding}.
inline constexpr const char* loop_output = "loop.output";
// A tailed loop changed state: {id, state, stop_reason, iterations, final}.
inline constexpr const char* loop_state = "loop.state";
// Some loop changed state (sessions that called events.subscribe): its loop.list summary.
inline constexpr const char* loop_changed = "loop.changed";

}  // namespace ralph::proto::notification
