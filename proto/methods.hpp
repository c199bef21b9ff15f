// The API's methods and notifications (documented with examples in proto/API.md). A method is
// a type that names it and pairs it with its request and result types: the daemon registers its
// handler with add<Method> (daemon/rpc/registry.hpp), the client calls it with call<Method>
// (client/connection.hpp), so both sides read and write the same two types and a renamed or
// retyped field breaks the build of both. Each also says who may call it and on what connection
// (its `policy`, which the daemon's registry enforces): a method without one does not build.
#pragma once

#include "proto/daemon_api.hpp"
#include "proto/history.hpp"
#include "proto/loop_api.hpp"

#include <tuple>

namespace ralph::proto {

// Who may call a method, and on what connection. It belongs to the API (API.md says it per
// method), so it is declared here with the method's name and types; the daemon's registry
// refuses a call that breaks it before the handler runs (daemon/rpc/registry.cpp).
struct method_policy {
    // It sends notifications on the caller's WebSocket session (loop.tail, events.subscribe,
    // peer.link): refused on a plain POST (-32602).
    bool needs_session = false;
    // The fleet's: what ralphd --peer's link calls, over ssh on the Unix socket (daemon/peers).
    bool peer_only = false;
    // A web client (a TCP connection of ralphd --listen, with the web token) may call it; the
    // others are refused to it (-32601: "not available"). A peer never comes over TCP.
    constexpr bool web_allowed() const { return !peer_only; }
};

// Any client, on any connection.
inline constexpr method_policy any_caller{};
// Any client, on a WebSocket session.
inline constexpr method_policy session_caller{.needs_session = true};

}  // namespace ralph::proto

namespace ralph::proto::method {

struct daemon_info {
    static constexpr const char* name = "daemon.info";
    using request = no_params;
    using result = proto::daemon_info;
    static constexpr method_policy policy = any_caller;
};
struct daemon_shutdown {
    static constexpr const char* name = "daemon.shutdown";
    using request = shutdown_request;
    using result = done;
    static constexpr method_policy policy = any_caller;
};
struct loop_submit {
    static constexpr const char* name = "loop.submit";
    using request = submit_params;
    using result = submit_result;
    static constexpr method_policy policy = any_caller;
};
struct loop_list {
    static constexpr const char* name = "loop.list";
    using request = list_request;
    using result = proto::loop_list;
    static constexpr method_policy policy = any_caller;
};
struct loop_get {
    static constexpr const char* name = "loop.get";
    using request = loop_id_request;
    using result = loop_detail;
    static constexpr method_policy policy = any_caller;
};
struct loop_cancel {
    static constexpr const char* name = "loop.cancel";
    using request = loop_id_request;
    using result = loop_info;
    static constexpr method_policy policy = any_caller;
};
struct loop_pause {
    static constexpr const char* name = "loop.pause";
    using request = loop_id_request;
    using result = loop_info;
    static constexpr method_policy policy = any_caller;
};
struct loop_resume {
    static constexpr const char* name = "loop.resume";
    using request = loop_id_request;
    using result = loop_info;
    static constexpr method_policy policy = any_caller;
};
// A failed, stalled or cancelled loop queued again, from where it was.
struct loop_retry {
    static constexpr const char* name = "loop.retry";
    using request = loop_id_request;
    using result = loop_info;
    static constexpr method_policy policy = any_caller;
};
// More iterations: an exhausted loop is queued again; one that has not ended may run longer.
struct loop_extend {
    static constexpr const char* name = "loop.extend";
    using request = extend_request;
    using result = loop_info;
    static constexpr method_policy policy = any_caller;
};
// An ended loop removed with its history and files, as history.gc removes it.
struct loop_remove {
    static constexpr const char* name = "loop.remove";
    using request = loop_id_request;
    using result = removal_result;
    static constexpr method_policy policy = any_caller;
};
// A --worktree loop that ended: its branch merged into the branch it started from.
struct loop_merge {
    static constexpr const char* name = "loop.merge";
    using request = loop_id_request;
    using result = landing_result;
    static constexpr method_policy policy = any_caller;
};
// A --worktree loop that ended: its branch pushed and a pull request opened.
struct loop_pr {
    static constexpr const char* name = "loop.pr";
    using request = loop_id_request;
    using result = landing_result;
    static constexpr method_policy policy = any_caller;
};
struct loop_iterations {
    static constexpr const char* name = "loop.iterations";
    using request = loop_id_request;
    using result = attempt_list;
    static constexpr method_policy policy = any_caller;
};
// What one attempt changed in the loop's workspace: a unified diff.
struct loop_diff {
    static constexpr const char* name = "loop.diff";
    using request = diff_request;
    using result = attempt_diff;
    static constexpr method_policy policy = any_caller;
};
struct loop_steer {
    static constexpr const char* name = "loop.steer";
    using request = steer_request;
    using result = steer_result;
    static constexpr method_policy policy = any_caller;
};
struct loop_events {
    static constexpr const char* name = "loop.events";
    using request = events_request;
    using result = event_list;
    static constexpr method_policy policy = any_caller;
};
struct loop_output {
    static constexpr const char* name = "loop.output";
    using request = output_request;
    using result = output_page;
    static constexpr method_policy policy = any_caller;
};
// A WebSocket session only: then loop.output and loop.state notifications until `final`.
struct loop_tail {
    static constexpr const char* name = "loop.tail";
    using request = output_request;
    using result = tail_started;
    static constexpr method_policy policy = session_caller;
};
// A WebSocket session only: then a loop.changed notification at every state change.
struct events_subscribe {
    static constexpr const char* name = "events.subscribe";
    using request = no_params;
    using result = subscription;
    static constexpr method_policy policy = session_caller;
};
struct agents_list {
    static constexpr const char* name = "agents.list";
    using request = no_params;
    using result = agent_list;
    static constexpr method_policy policy = any_caller;
};
struct scheduler_get {
    static constexpr const char* name = "scheduler.get";
    using request = no_params;
    using result = scheduler_state;
    static constexpr method_policy policy = any_caller;
};
struct scheduler_set {
    static constexpr const char* name = "scheduler.set";
    using request = scheduler_changes;
    using result = scheduler_state;
    static constexpr method_policy policy = any_caller;
};
struct budget_get {
    static constexpr const char* name = "budget.get";
    using request = budget_request;
    using result = budget_state;
    static constexpr method_policy policy = any_caller;
};
struct budget_set {
    static constexpr const char* name = "budget.set";
    using request = budget_changes;
    using result = budget_state;
    static constexpr method_policy policy = any_caller;
};
// Sends a sample push notification to a URL at once (not through the outbox).
struct notify_test {
    static constexpr const char* name = "notify.test";
    using request = notify_test_request;
    using result = notify_test_result;
    static constexpr method_policy policy = any_caller;
};
// The web token and the login URL of ralphd --listen; rotate_token replaces the token first.
struct web_info {
    static constexpr const char* name = "web.info";
    using request = no_params;
    using result = proto::web_info;
    static constexpr method_policy policy = any_caller;
};
struct web_rotate_token {
    static constexpr const char* name = "web.rotate_token";
    using request = no_params;
    using result = proto::web_info;
    static constexpr method_policy policy = any_caller;
};
// A login URL with a one-time code instead of the token (ralphctl web --open).
struct web_login_code {
    static constexpr const char* name = "web.login_code";
    using request = no_params;
    using result = proto::web_login_code;
    static constexpr method_policy policy = any_caller;
};
// Only on a daemon started with --test-clock: shifts its wall clock.
struct debug_clock {
    static constexpr const char* name = "debug.clock";
    using request = clock_request;
    using result = clock_state;
    static constexpr method_policy policy = any_caller;
};
struct history_report {
    static constexpr const char* name = "history.report";
    using request = report_request;
    using result = report;
    static constexpr method_policy policy = any_caller;
};
struct history_gc {
    static constexpr const char* name = "history.gc";
    using request = gc_request;
    using result = gc_result;
    static constexpr method_policy policy = any_caller;
};

// ralphd --peer: a peer daemon links its usage-limit ledger to this one (the session then gets
// agent.held notifications), and tells it the holds it takes afterwards.
struct peer_link {
    static constexpr const char* name = "peer.link";
    using request = peer_link_request;
    using result = peer_link_result;
    static constexpr method_policy policy{.needs_session = true, .peer_only = true};
};
struct peer_hold {
    static constexpr const char* name = "peer.hold";
    using request = agent_hold;
    using result = peer_hold_result;
    static constexpr method_policy policy{.peer_only = true};
};

// Every method, once: the round-trip test of the types (tests/unit/proto_test.cpp) and the
// fuzzer's registry (tests/fuzz/fuzz_jsonrpc.cpp) take them from here, so a method added above
// and left out here is missing from both, and one listed here is in both.
using all_methods =
    std::tuple<daemon_info, daemon_shutdown, loop_submit, loop_list, loop_get, loop_cancel,
               loop_pause, loop_resume, loop_retry, loop_extend, loop_remove, loop_merge, loop_pr,
               loop_iterations, loop_diff, loop_steer, loop_events, loop_output, loop_tail,
               events_subscribe, agents_list, scheduler_get, scheduler_set, budget_get, budget_set,
               notify_test, web_info, web_rotate_token, web_login_code, debug_clock, history_report,
               history_gc, peer_link, peer_hold>;

}  // namespace ralph::proto::method

namespace ralph::proto::notification {

// A piece of a tailed loop's output (output_notification).
inline constexpr const char* loop_output = "loop.output";
// A tailed loop changed state (state_notification).
inline constexpr const char* loop_state = "loop.state";
// Some loop changed state (sessions that called events.subscribe): its loop.list summary.
inline constexpr const char* loop_changed = "loop.changed";
// This daemon's ledger took a new or longer usage-limit hold (sessions that called peer.link):
// the agent_hold.
inline constexpr const char* agent_held = "agent.held";

}  // namespace ralph::proto::notification
