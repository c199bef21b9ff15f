// The attempts table of the store (one append-only row per agent run), with the stream events of
// each attempt and the steering hints (ralphctl steer) the loop's prompts carry: what an attempt
// did, and what the iteration policy and recovery read of the attempts so far. Reached through
// store::attempts(); the SQL runs on the store's connection, on the io thread.
#pragma once

#include "proto/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

class store;

// An attempt that was still running when the daemon stopped, for recovery.
struct unfinished_attempt {
    std::int64_t id = 0;
    std::int64_t loop_id = 0;
    std::int64_t iteration = 0;
    std::int64_t pgid = 0;
    std::int64_t process_start_time = 0;  // /proc/<pid>/stat starttime, to detect pid reuse
};

class attempt_table {
  public:
    explicit attempt_table(store& db) : db_(db) {}

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
    // How many of the loop's last iterations in a row since its last retry made no progress
    // (their successful work attempts have progress = 0; an unknown progress counts as progress).
    std::int64_t iterations_without_progress(std::int64_t loop_id);

    std::vector<unfinished_attempt> unfinished_attempts();
    // Recovery: the attempt was running when the daemon died.
    void interrupt_attempt(std::int64_t attempt_id, std::int64_t output_end, std::int64_t now_ms);
    // Recovery: the attempt's agent never started (ralphd stopped, or could not write, while
    // starting it); its row goes, with its events, and its loop counts it no more (attempts,
    // retries): it ran nothing.
    void discard_attempt(std::int64_t attempt_id);

    // ---- events
    // How many events of the attempt came from its agent's stream (not ralph's own, "refused").
    std::int64_t stream_event_count(std::int64_t attempt_id);
    // The attempt's stream events, in one transaction.
    void add_events(std::int64_t loop_id, const std::vector<proto::event_info>& events);
    // Events of a loop with id > after_id (of one iteration unless 0), oldest first.
    std::vector<proto::event_info> events_of(std::int64_t loop_id, std::int64_t iteration,
                                             std::int64_t after_id, std::int64_t limit);

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

  private:
    // The INSERTs of add_events, inside the caller's transaction.
    void insert_events(std::int64_t loop_id, const std::vector<proto::event_info>& events);
    store& db_;
};

}  // namespace ralph
