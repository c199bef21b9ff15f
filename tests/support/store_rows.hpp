// What the store's unit tests share (tests/support/): loops and attempts written through the
// store as the daemon writes them, and a loop taken to a state through the state machine.
#pragma once

#include "daemon/store/store.hpp"
#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace ralph::test {

inline std::int64_t add_loop(store& db, const std::string& name, std::int64_t created_at) {
    proto::submit_params spec;
    spec.name = name;
    spec.workspace = "/tmp/" + name;
    spec.command = "true";
    spec.max_iterations = 10;
    return db.loops().insert_loop(spec, created_at);
}

struct attempt_spec {
    std::int64_t iteration = 1;
    std::int64_t attempt = 1;
    std::int64_t started_at = 0;
    std::int64_t ended_at = 0;  // 0: still running
    proto::termination how = proto::termination::exited;
    proto::failure_class failure = proto::failure_class::none;
    std::string head_before = {}, head_after = {};
    std::int64_t files = 0, insertions = 0, deletions = 0;
    std::int64_t input_tokens = 0, output_tokens = 0;
    std::optional<double> cost = {};
};

// Begins the attempt and, unless it is still running, finishes it.
inline std::int64_t add_attempt(store& db, std::int64_t loop_id, const attempt_spec& s) {
    proto::attempt_info a;
    a.loop_id = loop_id;
    a.iteration = s.iteration;
    a.attempt = s.attempt;
    a.argv = {"agent"};
    a.started_at = s.started_at;
    a.id = db.attempts().begin_attempt(a, 0);
    if (s.ended_at == 0) return a.id;
    a.ended_at = s.ended_at;
    a.how = s.how;
    a.failure = s.failure;
    a.head_before = s.head_before;
    a.head_after = s.head_after;
    a.files_changed = s.files;
    a.insertions = s.insertions;
    a.deletions = s.deletions;
    a.usage.input_tokens = s.input_tokens;
    a.usage.output_tokens = s.output_tokens;
    a.usage.cost_usd = s.cost;
    db.attempts().finish_attempt(a);
    return a.id;
}

// Takes a queued loop to `target` through the state machine (starting it first when the target
// is reached from running); the last transition gets `reason`, `resume_at` and `now`.
inline void move_to(store& db, std::int64_t id, proto::loop_state target, const std::string& reason,
                    std::int64_t resume_at, std::int64_t now) {
    using proto::loop_event;
    using proto::loop_state;
    loop_event last = loop_event::start;
    switch (target) {
        case loop_state::running:
            last = loop_event::start;
            break;
        case loop_state::waiting:
            last = loop_event::wait;
            break;
        case loop_state::completed:
            last = loop_event::complete;
            break;
        case loop_state::exhausted:
            last = loop_event::exhaust;
            break;
        case loop_state::failed:
            last = loop_event::fail;
            break;
        case loop_state::stalled:
            last = loop_event::stall;
            break;
        case loop_state::cancelled:
            last = loop_event::cancel;
            break;
        case loop_state::paused:
            last = loop_event::pause;
            break;
        case loop_state::queued:
            return;
    }
    if (last != loop_event::start && db.loops().get_loop(id).state == loop_state::queued &&
        !proto::next_state(loop_state::queued, last))
        db.loops().set_state(id, loop_event::start, "", 0, now);
    db.loops().set_state(id, last, reason, resume_at, now);
}

}  // namespace ralph::test
