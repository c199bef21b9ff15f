// The daemon's SQLite database (WAL): loops, attempts (one append-only row per agent run) and
// the index of persisted output. Opening migrates the schema forward (PRAGMA user_version).
// Each state change is one transaction. Used only from the io_context thread. What is read often
// costs the same with a year of history as with a day of it: reads bounded by an index or a
// window, and aggregates (loops per state, the attempts' use per minute and hour) that triggers
// keep in the transaction of the rows they sum (migrations.cpp, 12 → 13).
#pragma once

#include "proto/daemon_api.hpp"
#include "proto/history.hpp"
#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ralph {

// An attempt that was still running when the daemon stopped, for recovery.
struct unfinished_attempt {
    std::int64_t id = 0;
    std::int64_t loop_id = 0;
    std::int64_t iteration = 0;
    std::int64_t pgid = 0;
    std::int64_t process_start_time = 0;  // /proc/<pid>/stat starttime, to detect pid reuse
};

class store {
  public:
    explicit store(const std::filesystem::path& db_path);

    int schema_version();
    static int latest_schema_version();

    // ---- loops
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

    // ---- attempts
    // Inserts the attempt (how = running) with its agent's process (pid and start time, which
    // recovery checks before ending the group; 0 when it did not start) and bumps the loop's
    // attempts/retries counters.
    std::int64_t begin_attempt(const proto::attempt_info& attempt, std::int64_t process_start_time);
    // Records how the attempt ended and adds its usage to the loop's counters, and stores the
    // attempt's last stream events, in one transaction. `claimed_answer`: the final answer of a
    // work attempt whose completion rule held, which its judge reads (final_answer_of).
    void finish_attempt(const proto::attempt_info& attempt,
                        const std::vector<proto::event_info>& last_events = {},
                        const std::string& claimed_answer = {});
    // The agent of a begun attempt runs: its pid (= process group) and start time.
    void set_attempt_process(std::int64_t attempt_id, std::int64_t pid,
                             std::int64_t process_start_time);
    std::optional<proto::attempt_info> find_attempt(std::int64_t attempt_id);
    // Throws std::runtime_error when there is no such attempt.
    proto::attempt_info get_attempt(std::int64_t attempt_id);
    std::vector<proto::attempt_info> attempts_of(std::int64_t loop_id);
    // The attempts of the loop's iteration since its last retry, oldest first.
    std::vector<proto::attempt_info> attempts_in(std::int64_t loop_id, std::int64_t iteration);
    // The final answer a claim of completion kept (finish_attempt), "" when none.
    std::string final_answer_of(std::int64_t attempt_id);
    // The feedback the iteration's last attempt that gave one gave, if any.
    std::optional<proto::agent_feedback> feedback_of(std::int64_t loop_id, std::int64_t iteration);
    // Why the judge rejected the claim of completion of the iteration: the reasons of its last
    // verdict there when that was a rejection, else "".
    std::string rejection_in(std::int64_t loop_id, std::int64_t iteration);
    // How many times the loop's judge rejected a claim of completion since its last retry.
    std::int64_t judge_rejections(std::int64_t loop_id);
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
    // How many of the loop's last iterations in a row since its last retry made no progress
    // (their successful work attempts have progress = 0; an unknown progress counts as progress).
    std::int64_t iterations_without_progress(std::int64_t loop_id);
    // How many events of the attempt came from its agent's stream (not ralph's own, "refused").
    std::int64_t stream_event_count(std::int64_t attempt_id);
    // The attempt's stream events, in one transaction.
    void add_events(std::int64_t loop_id, const std::vector<proto::event_info>& events);
    // Events of a loop with id > after_id (of one iteration unless 0), oldest first.
    std::vector<proto::event_info> events_of(std::int64_t loop_id, std::int64_t iteration,
                                             std::int64_t after_id, std::int64_t limit);
    std::vector<unfinished_attempt> unfinished_attempts();
    // Recovery: the attempt was running when the daemon died.
    void interrupt_attempt(std::int64_t attempt_id, std::int64_t output_end, std::int64_t now_ms);
    // Recovery: the attempt's agent never started (ralphd stopped, or could not write, while
    // starting it); its row goes, with its events, and its loop counts it no more (attempts,
    // retries): it ran nothing.
    void discard_attempt(std::int64_t attempt_id);

    // ---- steering hints (ralphctl steer)
    struct steering_hint {
        std::int64_t id = 0;
        std::int64_t iteration = 0;  // the iteration whose prompt is to carry it
    };
    // A hint for the loop's next prompt (ralphctl steer); rpc_error loop_not_found for an unknown
    // loop, invalid_state for one that has ended. It goes to the iteration after the finished
    // ones, or to the one after that when an attempt of it is running: that one has its prompt.
    steering_hint add_steering(std::int64_t loop_id, const std::string& text, std::int64_t now_ms);
    // The hints for the iteration: those not yet given are assigned to it first, so a retry of
    // the iteration gets the same ones and the next iteration none of them.
    std::vector<std::string> steering_for(std::int64_t loop_id, std::int64_t iteration);

    // ---- agents held by a usage limit: the ledger every loop on the agent obeys, per account,
    // shared with the daemon's peers (ralphd --peer)
    // Records the hold unless its agent is held as long or longer for its account already;
    // true when the ledger changed (news for the peers).
    bool hold_agent(const proto::agent_hold& hold);
    // The hold on the agent for the account if it lasts past now_ms.
    std::optional<proto::agent_hold> agent_hold_of(const std::string& agent,
                                                   const std::string& account, std::int64_t now_ms);
    // Every hold that lasts past now_ms, soonest end first.
    std::vector<proto::agent_hold> agent_holds(std::int64_t now_ms);

    // ---- push notifications not yet delivered (notify/notifier): the outbox
    struct outbox_entry {
        std::int64_t id = 0;
        std::string target;
        std::string body;  // JSON
        std::int64_t created_at = 0;
        std::int64_t tries = 0;
    };
    void add_notification(const std::string& target, const std::string& body, std::int64_t now_ms);
    // The targets that have a notification waiting.
    std::vector<std::string> notification_targets();
    // The oldest notification waiting for `target`.
    std::optional<outbox_entry> next_notification(const std::string& target);
    // Delivered (or given up): the row goes.
    void remove_notification(std::int64_t id);
    void notification_failed(std::int64_t id, const std::string& error);

    // Runs `work` (store calls that start no transaction of their own) in one transaction.
    void in_transaction(const std::function<void()>& work);

    // A small write that changes nothing of meaning (storage_health's probe).
    void probe_write(std::int64_t now_ms);

    // ---- budgets: the use of the attempts started in a window (computed from the attempts, so a
    // restart resets nothing; implemented in attempt_use.cpp). Read from the attempt_use
    // aggregate, whole minutes and hours at a time, so that the cost of a window does not grow
    // with the attempts in it.
    struct use_piece {
        std::int64_t start = 0;  // epoch ms: the attempt's start, or its slot's
        std::int64_t span = 0;   // 0: one attempt; else ms, a minute or an hour of attempts
        std::int64_t runs = 0;
        std::int64_t tokens = 0;  // input + output
        double cost_usd = 0;      // 0 for what reported none
    };
    // The sum of the attempts started at or after since_ms (of one loop unless 0), as one piece.
    use_piece use_since(std::int64_t since_ms, std::int64_t loop_id);
    // The same in pieces, oldest first: for all loops, one attempt at a time up to the first
    // whole minute, then whole minutes up to the first whole hour, then hours; for one loop,
    // its attempts (the last ones of its history, which start one after the other).
    std::vector<use_piece> use_pieces_since(std::int64_t since_ms, std::int64_t loop_id);
    // A minute's or an hour's piece in its finer pieces (attempts, minutes), oldest first.
    std::vector<use_piece> use_within(const use_piece& slot);

    // ---- settings changed at run time (scheduler set, budget set): JSON by key
    std::optional<nlohmann::json> setting(const std::string& key);
    void set_setting(const std::string& key, const nlohmann::json& value);

    // ---- output index (used by output_log)
    struct output_chunk_row {
        std::int64_t loop_id, attempt_id, offset, length, ts_ms;
        std::string stream;
    };
    // One transaction: inserts the rows and sets each loop's output_bytes.
    void record_output(const std::vector<output_chunk_row>& rows,
                       const std::map<std::int64_t, std::int64_t>& loop_ends);
    std::int64_t output_bytes(std::int64_t loop_id);
    // Where each attempt of the loop began writing its output, on which agent, and which attempt
    // it is, in order.
    struct attempt_start {
        std::int64_t attempt_id, output_start;
        std::string agent;
        std::int64_t iteration, attempt;
        proto::attempt_kind kind;
    };
    std::vector<attempt_start> attempt_starts(std::int64_t loop_id);

    // ---- history: history.report and history.gc (implemented in history.cpp)
    // Every loop active in [since_ms, until_ms] — submitted, ended, or with an attempt that
    // started, ended or still runs in it — by id, with its attempts in the window summed in
    // SQL (no attempt row is loaded).
    std::vector<proto::report_loop> report_loops(std::int64_t since_ms, std::int64_t until_ms);
    // The loops in an end state that finished before cutoff_ms, oldest first: the first `limit`
    // (0: all) after the one `after` names (finished_at and id; {0, 0}: from the first).
    struct ended_loop {
        std::int64_t id = 0;
        std::int64_t finished_at = 0;
        std::string worktree_path;  // "" unless it ran in a --worktree
        // Of its spec, for gc to remove a merged worktree (workspace::remove_worktree).
        std::string worktree_source;
        std::string worktree_branch;
        std::string worktree_target;
        bool delete_branch = false;
        std::string pr_remote;  // "" = none
    };
    struct gc_cursor {
        std::int64_t finished_at = 0;
        std::int64_t id = 0;
    };
    std::vector<ended_loop> loops_ended_before(std::int64_t cutoff_ms, gc_cursor after,
                                               std::int64_t limit);
    // The loop when it is in an end state (loop.remove), else nullopt.
    std::optional<ended_loop> ended_loop_of(std::int64_t loop_id);
    struct removal {
        std::vector<std::int64_t> loop_ids;  // those still in an end state, thus removed
        std::int64_t attempts = 0;
        std::int64_t events = 0;
    };
    // In one transaction, deletes the loops that are (still) in an end state with their
    // attempts, events, steering hints and output index; with dry_run only counts them.
    removal remove_loops(const std::vector<std::int64_t>& loop_ids, bool dry_run);
    // The pages that removals freed, which the database file keeps for reuse until vacuum_some
    // gives them back.
    std::int64_t free_pages();
    // Gives up to `pages` (> 0) of them back to the file system (incremental_vacuum; the file
    // shrinks at the next checkpoint) and returns how many are left.
    std::int64_t vacuum_some(std::int64_t pages);
    // SQLite's page cache: at most `kib` KiB (0: SQLite's default, 2 MiB), the pages of a larger
    // one freed.
    void set_cache_kib(std::int64_t kib);
    // Frees the memory of SQLite's page cache that nothing uses (it fills up again as needed).
    void release_memory();

    // The database file.
    std::string path() const { return db_.getFilename(); }
    // Pages in the WAL after the last commit.
    int wal_pages() const { return wal_pages_; }
    // Calls `observer` with the number of pages in the WAL after every commit, instead of
    // checkpointing the WAL in the commit that fills it (see wal_checkpointer), and checkpoints
    // it then only when the observer returns true; null restores SQLite's automatic checkpoints.
    void on_wal_commit(std::function<bool(int pages_in_wal)> observer);

  private:
    friend struct store_probe;  // tests/unit/store_scale_test.cpp: counts the work of a call

    // Prepared statements by their SQL text, prepared at their first use and kept: preparing one
    // costs about as much as running it. Only for a fixed set of SQL texts (values are bound).
    struct cached_statement {
        cached_statement(SQLite::Database& db, const std::string& sql) : statement(db, sql) {}
        SQLite::Statement statement;
        bool in_use = false;
    };
    class query;  // a cached statement lent to one call (store.cpp)
    query prepared(std::string_view sql);

    void migrate();
    // The INSERTs of add_events, inside the caller's transaction.
    void insert_events(std::int64_t loop_id, const std::vector<proto::event_info>& events);
    SQLite::Database db_;
    std::map<std::string, cached_statement, std::less<>> statements_;  // after db_: closed first
    // Specs of loops inserted or read by find_loop, by id (remember_spec adds one, emptying the
    // cache first when it holds max_parsed_specs).
    const proto::submit_params& remember_spec(std::int64_t id, proto::submit_params spec);
    static constexpr std::size_t max_parsed_specs = 256;
    std::unordered_map<std::int64_t, proto::submit_params> parsed_specs_;
    std::function<bool(int)> wal_observer_;
    int wal_pages_ = 0;
};

}  // namespace ralph
