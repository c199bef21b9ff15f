// The loops table of the store (with its loop_counts aggregate and the announced_waits a loop's
// push notifications remember): a loop's spec, its state through the state machine
// (proto/state_machine), its counters, and what it started from and became of its branch.
// Reached through store::loops(); the SQL runs on the store's connection, on the io thread.
#pragma once

#include "proto/daemon_api.hpp"
#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ralph {

class store;

class loop_table {
  public:
    explicit loop_table(store& db) : db_(db) {}

    // The id the next insert_loop gives: one more than the largest there is or was (an id is
    // never given again, also after gc). Nothing else inserts loops between the two calls on the
    // io thread, so a submit can name things after its loop before inserting it.
    std::int64_t next_loop_id();
    // A spec with an idempotency_key that a loop has already: SQLite::Exception (unique index).
    std::int64_t insert_loop(const proto::submit_params& spec, std::int64_t now_ms);
    // The loop submitted with this idempotency key, if it is still in the history.
    std::optional<std::int64_t> loop_with_idempotency_key(const std::string& key);
    std::optional<proto::loop_info> find_loop(std::int64_t id);
    // Throws rpc_error(loop_not_found).
    proto::loop_info get_loop(std::int64_t id);
    // Newest first; empty `states` = all; limit 0 = no limit; before_id > 0: only the loops with
    // a smaller id (the next page after a page that ended with it). Reads at most `limit` rows
    // of each state.
    std::vector<proto::loop_info> list_loops(const std::vector<proto::loop_state>& states,
                                             std::int64_t limit, std::int64_t before_id = 0);
    // Queued loops in run order: priority (high first), then submit order.
    struct queued_loop {
        std::int64_t id;
        std::string workspace;
        std::vector<std::string> quotas;  // of its own agent, then its fallbacks' (quotas_of)
        // It has a judge and attempts in its iteration in progress: its next step may be the
        // judge's, on the judge's quota (iteration_policy: next_step_quotas).
        bool may_judge_next = false;
    };
    std::vector<queued_loop> queued_loops();
    // The loops in each state that has any (the loop_counts aggregate: no loop is read).
    std::map<std::string, std::int64_t> count_by_state();
    // How many loops are in one of `states` (all when empty).
    std::int64_t count_loops(const std::vector<proto::loop_state>& states);

    // Applies `event` to the loop's state through the state machine (proto/state_machine) and
    // returns the new state; sets stop_reason and resume_at, started_at on its first running
    // and finished_at on an end state; a retry puts the loop's attempts so far behind it (the
    // three reads below of the iteration policy see none of them). Throws std::logic_error (a bug)
    // for a transition the machine does not allow; nothing changes then.
    proto::loop_state set_state(std::int64_t loop_id, proto::loop_event event,
                                const std::string& stop_reason, std::int64_t resume_at_ms,
                                std::int64_t now_ms);
    // loop.extend: the loop may run `max_iterations` iterations (0: no limit).
    void set_max_iterations(std::int64_t loop_id, std::int64_t max_iterations, std::int64_t now_ms);
    void set_iterations(std::int64_t loop_id, std::int64_t iterations, std::int64_t now_ms);
    // The wait a loop's push notification last announced ('' cause: none), kept with the loop so
    // that a restart does not announce it again: its cause, whether the loop ran (or waited for
    // something else) since.
    struct announced_wait {
        std::string cause;
        bool ran_since = false;
    };
    announced_wait announced_wait_of(std::int64_t loop_id);
    // Records `wait` as the last announced, with its time; false when this cause until this time
    // was announced for the loop before.
    bool announce_wait(std::int64_t loop_id, const announced_wait& wait, std::int64_t until);
    void set_ran_since_announced(std::int64_t loop_id);

    // The loop's HEAD and working tree when its first iteration started (workspace::snapshot's
    // head and tree), which the judge's diff starts from; "" when not known.
    struct loop_base {
        std::string head;
        std::string tree;
    };
    // Records the base unless one is recorded already.
    void set_loop_base(std::int64_t loop_id, const loop_base& base);
    loop_base base_of(std::int64_t loop_id);
    // What became of a --worktree loop's branch (loop_info::landing).
    void set_landing(std::int64_t loop_id, const std::string& landing, std::int64_t now_ms);

  private:
    store& db_;
    // Specs of loops inserted or read by find_loop, by id (remember_spec adds one, emptying the
    // cache first when it holds max_parsed_specs).
    const proto::submit_params& remember_spec(std::int64_t id, proto::submit_params spec);
    static constexpr std::size_t max_parsed_specs = 256;
    std::unordered_map<std::int64_t, proto::submit_params> parsed_specs_;
};

}  // namespace ralph
