// Requests and results of the daemon-wide methods (proto/API.md): daemon.info, daemon.shutdown,
// agents.list, scheduler.get/set, budget.get/set and debug.clock. The same conventions as
// proto/loop_api.hpp: a request's from_json checks what a client sent, a result's from_json
// reads leniently; proto/methods.hpp pairs each method with its two types.
#pragma once

#include "proto/types.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ralph::proto {

// The request of a method that takes no parameters: absent, null or an object (whose members
// are ignored).
struct no_params {
    bool operator==(const no_params&) const = default;
};
void from_json(const nlohmann::json& j, no_params& r);
void to_json(nlohmann::json& j, const no_params& r);

// The result of a method that only says it was done: {}.
struct done {
    bool operator==(const done&) const = default;
};
void from_json(const nlohmann::json& j, done& r);
void to_json(nlohmann::json& j, const done& r);

// daemon.shutdown: whether the running agents are ended (the default) or left running, to be
// adopted by the next ralphd.
struct shutdown_request {
    bool leave_running = false;
    bool operator==(const shutdown_request&) const = default;
};
void from_json(const nlohmann::json& j, shutdown_request& r);
void to_json(nlohmann::json& j, const shutdown_request& r);

// agents.list's result.
struct agent_list {
    std::vector<agent_info> agents;
    // The names of ralphd's variables every agent gets (the env policy's defaults and rules).
    std::vector<std::string> environment;
    bool operator==(const agent_list&) const = default;
};
void from_json(const nlohmann::json& j, agent_list& r);
void to_json(nlohmann::json& j, const agent_list& r);

// scheduler.set: the settings to change (the others stay).
struct scheduler_changes {
    std::optional<std::int64_t> max_concurrent;  // 1..1000
    std::optional<bool> paused;
    std::optional<std::string> window;  // "HH:MM-HH:MM", "" = any time
    bool operator==(const scheduler_changes&) const = default;
};
void from_json(const nlohmann::json& j, scheduler_changes& r);
void to_json(nlohmann::json& j, const scheduler_changes& r);
// `settings` with the changes applied.
scheduler_settings apply(const scheduler_changes& changes, scheduler_settings settings);

// scheduler.get's and scheduler.set's result: the settings and where the scheduler stands.
struct scheduler_state {
    scheduler_settings settings;       // flattened into the object
    bool window_open = true;           // now inside the window (or there is none)
    std::int64_t window_opens_at = 0;  // when closed: when it opens next; 0 (null) when open
    std::int64_t running = 0;          // loops with a runner
    std::map<std::string, std::int64_t> loops_by_state;
    bool operator==(const scheduler_state&) const = default;
};
void from_json(const nlohmann::json& j, scheduler_state& r);
void to_json(nlohmann::json& j, const scheduler_state& r);

// budget.get: the global budgets, and with `id` that loop's own too.
struct budget_request {
    std::int64_t id = 0;  // 0 = no loop
    bool operator==(const budget_request&) const = default;
};
void from_json(const nlohmann::json& j, budget_request& r);
void to_json(nlohmann::json& j, const budget_request& r);

// budget.set: the budgets to change (0 removes one; the others stay).
struct budget_changes {
    std::optional<std::int64_t> iterations_per_hour;
    std::optional<std::int64_t> iterations_per_day;
    std::optional<std::int64_t> tokens_per_day;
    std::optional<double> cost_per_day_usd;
    bool operator==(const budget_changes&) const = default;
};
void from_json(const nlohmann::json& j, budget_changes& r);
void to_json(nlohmann::json& j, const budget_changes& r);
// `limits` with the changes applied.
budget_limits apply(const budget_changes& changes, budget_limits limits);

// An agent held by a usage limit: no loop on it starts an attempt before `until`. A hold
// belongs to an account (ralphd --account: the subscription whose limit it is) and is shared
// with the daemon's peers (ralphd --peer, peer.link); `origin` names the host whose loop hit
// the limit ("" = this daemon's). Also peer.hold's request: a hold the linked peer learnt.
struct agent_hold {
    std::string agent;
    std::string account = "default";
    std::int64_t until = 0;
    std::string reason;
    std::string origin;
    bool operator==(const agent_hold&) const = default;
};
void from_json(const nlohmann::json& j, agent_hold& r);
void to_json(nlohmann::json& j, const agent_hold& r);

// peer.link: a peer's ledger of usage-limit holds joins this daemon's. The request carries the
// caller's name for itself and its holds in force, the result this daemon's; from then on the
// session gets an agent.held notification (an agent_hold) whenever this daemon's ledger takes a
// new or longer hold, and the caller sends its own with peer.hold.
struct peer_link_request {
    std::string host;
    std::vector<agent_hold> holds;
    bool operator==(const peer_link_request&) const = default;
};
void from_json(const nlohmann::json& j, peer_link_request& r);
void to_json(nlohmann::json& j, const peer_link_request& r);

struct peer_link_result {
    std::string host;
    std::vector<agent_hold> holds;
    bool operator==(const peer_link_result&) const = default;
};
void from_json(const nlohmann::json& j, peer_link_result& r);
void to_json(nlohmann::json& j, const peer_link_result& r);

// peer.hold's result: whether the hold was news here (not held as long already).
struct peer_hold_result {
    bool changed = false;
    bool operator==(const peer_hold_result&) const = default;
};
void from_json(const nlohmann::json& j, peer_hold_result& r);
void to_json(nlohmann::json& j, const peer_hold_result& r);

// budget.get's and budget.set's result.
struct budget_state {
    std::int64_t now = 0;
    budget_limits limits;
    std::vector<budget_use> use;  // the budgets that are set (and the loop's own)
    std::vector<agent_hold> holds;
    bool operator==(const budget_state&) const = default;
};
void from_json(const nlohmann::json& j, budget_state& r);
void to_json(nlohmann::json& j, const budget_state& r);

// notify.test (ralphctl notify test [URL]): a sample notification sent at once to the URL, or
// to every webhook of ralphd --notify when there is none.
struct notify_test_request {
    std::string url;  // "" = every target of ralphd --notify
    bool operator==(const notify_test_request&) const = default;
};
void from_json(const nlohmann::json& j, notify_test_request& r);
void to_json(nlohmann::json& j, const notify_test_request& r);

// How one target took the sample.
struct notify_sent {
    std::string target;  // the URL, redacted (redacted_url)
    std::string format;  // generic, ntfy, slack, discord, telegram
    bool delivered = false;
    int status = 0;     // the receiver's HTTP status; 0 = no answer
    std::string error;  // why it was not delivered
    bool operator==(const notify_sent&) const = default;
};
void from_json(const nlohmann::json& j, notify_sent& r);
void to_json(nlohmann::json& j, const notify_sent& r);

struct notify_test_result {
    std::vector<notify_sent> sent;  // one per target, in the order of ralphd --notify
    bool operator==(const notify_test_result&) const = default;
};
void from_json(const nlohmann::json& j, notify_test_result& r);
void to_json(nlohmann::json& j, const notify_test_result& r);

// web.info and web.rotate_token: the token of ralphd's TCP listener and its login URL.
struct web_info {
    std::string token;
    std::string url;  // http://ADDRESS:PORT/login?token=...; "" without ralphd --listen
    bool operator==(const web_info&) const = default;
};
void from_json(const nlohmann::json& j, web_info& r);
void to_json(nlohmann::json& j, const web_info& r);

// web.login_code: a login URL for one browser that holds no token, only a code good for one
// login within a minute (ralphctl web --open: a command line others can read never holds the
// token).
struct web_login_code {
    std::string url;              // http://ADDRESS:PORT/login?code=...
    std::int64_t expires_at = 0;  // epoch ms
    bool operator==(const web_login_code&) const = default;
};
void from_json(const nlohmann::json& j, web_login_code& r);
void to_json(nlohmann::json& j, const web_login_code& r);

// debug.clock (a daemon started with --test-clock): set the wall clock, then advance it.
struct clock_request {
    std::optional<std::int64_t> set_ms;
    std::optional<std::int64_t> advance_ms;
    bool operator==(const clock_request&) const = default;
};
void from_json(const nlohmann::json& j, clock_request& r);
void to_json(nlohmann::json& j, const clock_request& r);

struct clock_state {
    std::int64_t now_ms = 0;  // also sent as "now", ISO 8601
    bool operator==(const clock_state&) const = default;
};
void from_json(const nlohmann::json& j, clock_state& r);
void to_json(nlohmann::json& j, const clock_state& r);

}  // namespace ralph::proto
