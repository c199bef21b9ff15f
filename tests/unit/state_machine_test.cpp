// The loop state machine: the table's transitions, the store refusing any other, and
// ARCHITECTURE.md showing the table as it is.
#include "proto/state_machine.hpp"

#include "daemon/store/store.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <set>
#include <stdexcept>
#include <utility>

using ralph::proto::loop_event;
using ralph::proto::loop_state;
namespace proto = ralph::proto;

namespace {

constexpr loop_state all_states[] = {
    loop_state::queued, loop_state::running,   loop_state::waiting,
    loop_state::paused, loop_state::completed, loop_state::exhausted,
    loop_state::failed, loop_state::cancelled, loop_state::stalled};
constexpr loop_event all_events[] = {loop_event::start,    loop_event::wait,    loop_event::wake,
                                     loop_event::requeue,  loop_event::pause,   loop_event::resume,
                                     loop_event::complete, loop_event::exhaust, loop_event::stall,
                                     loop_event::fail,     loop_event::cancel,  loop_event::retry,
                                     loop_event::extend};

// A database and a spec to insert loops of.
struct loop_store {
    ralph::test::temp_dir dir;
    ralph::store db{dir.path / "ralph.db"};
    proto::submit_params spec = [this] {
        proto::submit_params p;
        p.workspace = dir.path.string();
        return p;
    }();
};

// The events that take a new (queued) loop to `state`, found by a walk of the table.
std::vector<loop_event> path_to(loop_state state) {
    std::vector<std::pair<loop_state, std::vector<loop_event>>> frontier{{loop_state::queued, {}}};
    std::set<loop_state> seen{loop_state::queued};
    for (std::size_t i = 0; i < frontier.size(); ++i) {
        const auto [at, path] = frontier[i];
        if (at == state) return path;
        for (const auto& t : proto::transitions()) {
            if (t.from != at || !seen.insert(t.to).second) continue;
            auto next = path;
            next.push_back(t.event);
            frontier.emplace_back(t.to, next);
        }
    }
    FAIL("unreachable state ", proto::to_string(state));
    return {};
}

}  // namespace

TEST_CASE(
    "state machine: every state is reachable; the user takes some end states back to the "
    "queue") {
    for (loop_state state : all_states) path_to(state);
    // retry: a failed, stalled or cancelled loop; extend: an exhausted one. A completed loop is
    // done, and no event of a runner or the scheduler leaves an end state.
    const std::set<std::pair<loop_state, loop_event>> ways_back{
        {loop_state::failed, loop_event::retry},
        {loop_state::stalled, loop_event::retry},
        {loop_state::cancelled, loop_event::retry},
        {loop_state::exhausted, loop_event::extend}};
    for (loop_state state : all_states) {
        if (!proto::is_terminal(state)) continue;
        for (loop_event event : all_events) {
            CAPTURE(proto::to_string(state));
            CAPTURE(proto::to_string(event));
            if (ways_back.contains({state, event}))
                CHECK(proto::next_state(state, event) == loop_state::queued);
            else
                CHECK_FALSE(proto::next_state(state, event));
        }
    }
    // Every state that has not ended can be cancelled.
    for (loop_state state : all_states)
        if (!proto::is_terminal(state))
            CHECK(proto::next_state(state, loop_event::cancel) == loop_state::cancelled);
}

TEST_CASE("state machine: the store applies every allowed transition and refuses the others") {
    loop_store loops;
    ralph::store& db = loops.db;
    const proto::submit_params& spec = loops.spec;
    std::int64_t now = 1000;
    for (loop_state from : all_states) {
        for (loop_event event : all_events) {
            CAPTURE(proto::to_string(from));
            CAPTURE(proto::to_string(event));
            const std::int64_t id = db.loops().insert_loop(spec, now);
            for (loop_event step : path_to(from)) db.loops().set_state(id, step, "", 0, ++now);
            REQUIRE(db.loops().get_loop(id).state == from);
            const auto allowed = proto::next_state(from, event);
            if (allowed) {
                CHECK(db.loops().set_state(id, event, "why", 0, ++now) == *allowed);
                const proto::loop_info loop = db.loops().get_loop(id);
                CHECK(loop.state == *allowed);
                CHECK(loop.stop_reason == "why");
                CHECK((loop.finished_at != 0) == proto::is_terminal(*allowed));
            } else {
                CHECK_THROWS_AS(db.loops().set_state(id, event, "why", 0, ++now), std::logic_error);
                CHECK(db.loops().get_loop(id).state == from);  // nothing changed
            }
        }
    }
}

TEST_CASE("state machine: ARCHITECTURE.md shows the table as it is") {
    const std::string architecture =
        ralph::test::read_file(std::string(RALPH_SOURCE_DIR) + "/ARCHITECTURE.md");
    const std::string table = proto::describe_transitions();
    CHECK_MESSAGE(architecture.find(table) != std::string::npos,
                  "ARCHITECTURE.md's transition table differs from proto/state_machine.cpp; it "
                  "should read:\n"
                      << table);
}

TEST_CASE("state machine: a retry puts the loop's attempts so far behind it; extend does not") {
    loop_store loops;
    ralph::store& db = loops.db;
    const proto::submit_params& spec = loops.spec;
    std::int64_t now = 1000;
    const std::int64_t id = db.loops().insert_loop(spec, now);
    // Iteration 1 made no progress, and its judge rejected it; iteration 2 failed.
    auto add = [&](std::int64_t iteration, proto::attempt_kind kind, proto::termination how,
                   const std::string& verdict) {
        proto::attempt_info a;
        a.loop_id = id;
        a.kind = kind;
        a.iteration = iteration;
        a.attempt = 1;
        a.id = db.attempts().begin_attempt(a, 0);
        a.how = how;
        a.progress = false;
        a.verdict = verdict;
        db.attempts().finish_attempt(a);
    };
    db.loops().set_state(id, loop_event::start, "", 0, ++now);
    add(1, proto::attempt_kind::work, proto::termination::exited, "");
    add(1, proto::attempt_kind::judge, proto::termination::exited, "reject");
    db.loops().set_iterations(id, 1, ++now);
    add(2, proto::attempt_kind::work, proto::termination::failed, "");
    db.loops().set_state(id, loop_event::fail, "iteration 2 failed 1 time(s)", 0, ++now);
    CHECK(db.attempts().attempts_in(id, 2).size() == 1);
    CHECK(db.attempts().judge_rejections(id) == 1);
    CHECK(db.attempts().iterations_without_progress(id) == 1);

    CHECK(db.loops().set_state(id, loop_event::retry, "", 0, ++now) == loop_state::queued);
    const proto::loop_info retried = db.loops().get_loop(id);
    CHECK(retried.iterations == 1);  // kept: iteration 2 runs again
    CHECK(retried.finished_at == 0);
    CHECK(db.attempts().attempts_in(id, 2).empty());
    CHECK(db.attempts().judge_rejections(id) == 0);
    CHECK(db.attempts().iterations_without_progress(id) == 0);
    CHECK(db.attempts().attempts_of(id).size() == 3);  // the history stays

    // The attempts after the retry count again.
    db.loops().set_state(id, loop_event::start, "", 0, ++now);
    add(2, proto::attempt_kind::work, proto::termination::failed, "");
    CHECK(db.attempts().attempts_in(id, 2).size() == 1);

    // extend: the limit raised, the attempts still counted.
    db.loops().set_state(id, loop_event::exhaust, "reached max iterations (1)", 0, ++now);
    db.loops().set_max_iterations(id, 5, ++now);
    CHECK(db.loops().set_state(id, loop_event::extend, "", 0, ++now) == loop_state::queued);
    CHECK(db.loops().get_loop(id).spec.max_iterations == 5);
    CHECK(db.attempts().attempts_in(id, 2).size() == 1);
}
