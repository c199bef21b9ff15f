// When loops may run an agent (README, "Scheduling, budgets"). One place answers it for the
// scheduler (may a queued loop start?) and for a running loop's runner (may it begin another agent
// run?), from:
//   - the scheduler's settings: paused, the daily time window (max_concurrent is the
//     scheduler's own business but is kept here with the rest);
//   - the global budgets: agent runs per rolling hour and day, tokens and cost per rolling day;
//   - the usage-limit holds of the agents under this daemon's account (store::agent_hold_of, one
//     ledger for every loop, shared with the peers: ralphd --account, --peer);
//   - the loop's own budgets (runs per hour/day) and caps (tokens, cost).
// Budgets are computed from the persisted attempts, so a restart resets nothing. The settings
// and budgets live in the database (table settings) and survive restarts.
#pragma once

#include "proto/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

class store;

// A daily window of local time, minutes since midnight; end < start wraps past midnight.
struct time_window {
    int start_minute = 0;
    int end_minute = 0;
};
// "01:00-07:00" → the window; "" → none. Throws rpc_error(invalid_params) for anything else.
std::optional<time_window> parse_time_window(std::string_view text);
// now_ms when the window is open at now_ms, else the next moment it opens (local time).
std::int64_t next_window_open(const time_window& window, std::int64_t now_ms);

class admission {
  public:
    // Loads the stored settings and budgets (defaults when none were ever set). `account`: whose
    // usage limits hold this daemon's agents (ralphd --account).
    admission(store& db, std::string account);

    const std::string& account() const { return account_; }

    struct verdict {
        enum class kind {
            go,
            stay_queued,  // the scheduler is paused: the loop waits in the queue
            wait,         // until until_ms: time window, usage-limit hold or budget
            end,          // the loop reached its own token or cost cap: it ends as exhausted
        };
        kind what = kind::go;
        std::string reason;
        std::int64_t until_ms = 0;
        // A wait for a usage limit's reset or a budget, which a push notification tells (not
        // the time window, which the user chose).
        bool notable = false;
        bool go() const { return what == kind::go; }
    };

    // What holds every loop: the pause, the time window, the global budgets.
    verdict global(std::int64_t now_ms);
    // Usage-limit holds: go when one of `quotas` (those of a loop's own agent, then of its
    // fallbacks: proto::quotas_of) is free, else wait until the earliest of their holds ends.
    verdict for_quotas(const std::vector<std::string>& quotas, std::int64_t now_ms);
    // Whether a usage limit holds any quota under this daemon's account now.
    bool any_agent_held(std::int64_t now_ms);
    // The agent the loop's next attempt runs on: the first of proto::agents_of whose quota no
    // usage limit holds, or the loop's own when every one is held (check() says so first).
    proto::agent_choice pick_agent(const proto::submit_params& spec, std::int64_t now_ms);
    // The loop's own caps and budgets.
    verdict for_loop(const proto::loop_info& loop, std::int64_t now_ms);
    // now_ms while the time window is open (or there is none), else when it opens next.
    std::int64_t window_opens_at(std::int64_t now_ms) const;
    // The first of global, for_quotas and for_loop that does not say go.
    verdict check(const proto::loop_info& loop, std::int64_t now_ms);

    // Every global budget's use; with a loop also that loop's own budgets.
    std::vector<proto::budget_use> budget_use(std::int64_t now_ms,
                                              const proto::loop_info* loop = nullptr);

    const proto::scheduler_settings& scheduler_settings() const { return settings_; }
    // Validates (the window) and stores.
    void set_scheduler_settings(const proto::scheduler_settings& settings);
    const proto::budget_limits& budgets() const { return budgets_; }
    void set_budgets(const proto::budget_limits& budgets);

  private:
    // The budgets that are set, with their use at now_ms (of one loop unless loop_id 0).
    std::vector<proto::budget_use> measure(const std::vector<proto::budget_use>& limits,
                                           std::int64_t now_ms);

    store& db_;
    std::string account_;
    proto::scheduler_settings settings_;
    std::optional<time_window> window_;
    proto::budget_limits budgets_;
};

}  // namespace ralph
