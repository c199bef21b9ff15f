#include "daemon/store/store.hpp"
#include "daemon/store/gc.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/wal_checkpointer.hpp"

#include "proto/errors.hpp"
#include "tests/support/files.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/store_rows.hpp"

#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

namespace fs = std::filesystem;
using ralph::test::move_to;

namespace {

// A database file in a fresh temporary directory.
struct temp_db {
    ralph::test::temp_dir dir;
    fs::path path() const { return dir.path / "ralph.db"; }
};

// What gc works on: a database with its output log.
struct gc_fixture {
    temp_db tmp;
    ralph::store db{tmp.path()};
    ralph::net::io_context io;
    ralph::storage_health health{io, db.settings(), ralph::state_dir(tmp.path()), [] {}};
    ralph::output_log output{io, db.output_index(), health, tmp.dir.path / "output",
                             [](std::int64_t, std::int64_t) {}};
};

ralph::proto::submit_params sample_spec() {
    ralph::proto::submit_params spec;
    spec.name = "sample";
    spec.workspace = "/tmp";
    spec.command = "true";
    spec.max_iterations = 5;
    spec.env = {{"K", "V"}};
    return spec;
}

}  // namespace

TEST_CASE("store: a new database is migrated to the latest schema in WAL mode") {
    temp_db tmp;
    ralph::store db(tmp.path());
    CHECK(db.schema_version() == ralph::store::latest_schema_version());
    SQLite::Database raw(tmp.path().string());
    CHECK(raw.execAndGet("PRAGMA journal_mode").getString() == "wal");
    CHECK(raw.tableExists("loops"));
    CHECK(raw.tableExists("attempts"));
    CHECK(raw.tableExists("output_chunks"));
}

TEST_CASE("store: the WAL is checkpointed on the checkpointer's thread once it is full") {
    temp_db tmp;
    ralph::store db(tmp.path());
    int loops = 0;
    {
        ralph::wal_checkpointer checkpointer(db, tmp.path());
        // Each submit is a commit of at least one page.
        for (; loops < 2 * ralph::wal_checkpointer::pages_per_checkpoint; ++loops)
            db.loops().insert_loop(sample_spec(), 1000 + loops);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (checkpointer.checkpoints() == 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        CHECK(checkpointer.checkpoints() >= 1);
    }
    db.loops().insert_loop(sample_spec(), 5000);  // commits go on once the checkpointer is gone
    ralph::store again(tmp.path());
    CHECK(again.loops().count_by_state()["queued"] == loops + 1);
}

TEST_CASE("store: reopening a migrated database keeps its data and does not migrate again") {
    temp_db tmp;
    std::int64_t id = 0;
    {
        ralph::store db(tmp.path());
        id = db.loops().insert_loop(sample_spec(), 1000);
    }
    ralph::store again(tmp.path());
    CHECK(again.schema_version() == ralph::store::latest_schema_version());
    CHECK(again.loops().get_loop(id).spec.name == "sample");
}

TEST_CASE("store: a database from a newer ralphd is refused rather than damaged") {
    temp_db tmp;
    {
        SQLite::Database raw(tmp.path().string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec("PRAGMA user_version = 999");
    }
    CHECK_THROWS_WITH_AS(ralph::store(tmp.path()),
                         doctest::Contains("newer than this ralphd understands"),
                         std::runtime_error);
}

TEST_CASE("store: a loop round-trips with its spec, state and timestamps") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t id = db.loops().insert_loop(sample_spec(), 1000);
    auto loop = db.loops().get_loop(id);
    CHECK(loop.state == ralph::proto::loop_state::queued);
    CHECK(loop.spec.env.at("K") == "V");
    CHECK(loop.spec.max_iterations == 5);
    CHECK(loop.created_at == 1000);

    move_to(db, id, ralph::proto::loop_state::running, "", 0, 2000);
    move_to(db, id, ralph::proto::loop_state::completed, "done", 0, 3000);
    loop = db.loops().get_loop(id);
    CHECK(loop.started_at == 2000);
    CHECK(loop.finished_at == 3000);
    CHECK(loop.stop_reason == "done");
    CHECK_THROWS_AS(db.loops().get_loop(id + 1), ralph::proto::rpc_error);
}

TEST_CASE("store: queued loops come by priority, then in submit order") {
    temp_db tmp;
    ralph::store db(tmp.path());
    auto spec = sample_spec();
    std::int64_t first = db.loops().insert_loop(spec, 1);
    spec.priority = 5;
    std::int64_t urgent = db.loops().insert_loop(spec, 2);
    spec.priority = 0;
    std::int64_t last = db.loops().insert_loop(spec, 3);
    std::vector<std::int64_t> order;
    for (const auto& loop : db.loops().queued_loops()) order.push_back(loop.id);
    CHECK(order == std::vector<std::int64_t>{urgent, first, last});
    CHECK(db.loops().queued_loops().front().workspace == "/tmp");
}

TEST_CASE("store: attempts are separate rows and unfinished ones are found for recovery") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t loop_id = db.loops().insert_loop(sample_spec(), 1);
    ralph::proto::attempt_info a;
    a.loop_id = loop_id;
    a.iteration = 1;
    a.attempt = 1;
    a.argv = {"true"};
    a.started_at = 10;
    a.id = db.attempts().begin_attempt(a, 0);
    a.how = ralph::proto::termination::failed;
    a.exit_code = 3;
    a.ended_at = 20;
    a.head_before = "head1";
    a.tree_before = "tree1";
    a.tree_after = "tree2";
    db.attempts().finish_attempt(a);
    ralph::proto::attempt_info retry = a;
    retry.attempt = 2;
    retry.agent = "codex";  // a fallback
    retry.model = "o3";
    retry.how = ralph::proto::termination::running;
    retry.pid = 4242;
    retry.id = db.attempts().begin_attempt(retry, 777);

    auto attempts = db.attempts().attempts_of(loop_id);
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].how == ralph::proto::termination::failed);
    CHECK(attempts[0].exit_code == 3);
    CHECK(attempts[0].head_before == "head1");
    CHECK(attempts[0].tree_before == "tree1");
    CHECK(attempts[0].tree_after == "tree2");
    CHECK(db.attempts().find_attempt(a.id) == attempts[0]);
    CHECK_FALSE(db.attempts().find_attempt(retry.id + 1).has_value());
    CHECK(attempts[1].agent == "codex");
    CHECK(attempts[1].model == "o3");
    auto loop = db.loops().get_loop(loop_id);
    CHECK(loop.attempts == 2);
    CHECK(loop.retries == 1);
    auto unfinished = db.attempts().unfinished_attempts();
    REQUIRE(unfinished.size() == 1);
    CHECK(unfinished[0].pgid == 4242);
    CHECK(unfinished[0].process_start_time == 777);
    db.attempts().interrupt_attempt(retry.id, 0, 30);
    CHECK(db.attempts().unfinished_attempts().empty());
    CHECK(db.attempts().attempts_of(loop_id)[1].how == ralph::proto::termination::interrupted);

    // An attempt whose agent never started goes, and its loop counts it no more.
    ralph::proto::attempt_info never = retry;
    never.attempt = 3;
    never.pid = 0;
    never.id = db.attempts().begin_attempt(never, 0);
    CHECK(db.loops().get_loop(loop_id).attempts == 3);
    CHECK(db.loops().get_loop(loop_id).retries == 2);
    db.attempts().discard_attempt(never.id);
    CHECK(db.attempts().attempts_of(loop_id).size() == 2);
    CHECK(db.loops().get_loop(loop_id).attempts == 2);
    CHECK(db.loops().get_loop(loop_id).retries == 1);
}

TEST_CASE("store: a judge's attempts, verdicts and rejections; the loop's base is set once") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t loop_id = db.loops().insert_loop(sample_spec(), 1);
    // Iteration 1: work that made no progress, its judge rejects; iteration 2: work, its judge
    // gives no verdict, then accepts.
    auto add = [&](std::int64_t iteration, std::int64_t number, ralph::proto::attempt_kind kind,
                   const std::string& verdict) {
        ralph::proto::attempt_info a;
        a.loop_id = loop_id;
        a.kind = kind;
        a.iteration = iteration;
        a.attempt = number;
        a.agent = "claude";
        a.id = db.attempts().begin_attempt(a, 0);
        a.how = ralph::proto::termination::exited;
        a.progress = false;
        a.verdict = verdict;
        a.verdict_reasons = verdict == "reject" ? "tests fail" : "";
        db.attempts().finish_attempt(a);
    };
    using ralph::proto::attempt_kind;
    add(1, 1, attempt_kind::work, "");
    add(1, 2, attempt_kind::judge, "reject");
    CHECK(db.attempts().rejection_in(loop_id, 1) == "tests fail");
    add(2, 1, attempt_kind::work, "");
    add(2, 2, attempt_kind::judge, "");
    CHECK(db.attempts().rejection_in(loop_id, 2) == "");
    add(2, 3, attempt_kind::judge, "accept");
    CHECK(db.attempts().rejection_in(loop_id, 2) == "");
    CHECK(db.attempts().rejection_in(loop_id, 1) == "tests fail");
    CHECK(db.attempts().judge_rejections(loop_id) == 1);
    auto attempts = db.attempts().attempts_of(loop_id);
    REQUIRE(attempts.size() == 5);
    CHECK(attempts[1].kind == attempt_kind::judge);
    CHECK(attempts[1].verdict == "reject");
    CHECK(attempts[1].verdict_reasons == "tests fail");
    // A judge's attempts are neither retries nor iterations without progress.
    CHECK(db.loops().get_loop(loop_id).retries == 0);
    CHECK(db.attempts().iterations_without_progress(loop_id) == 2);

    CHECK(db.loops().base_of(loop_id).head.empty());
    db.loops().set_loop_base(loop_id, {"head1", "tree1"});
    db.loops().set_loop_base(loop_id, {"head2", "tree2"});
    CHECK(db.loops().base_of(loop_id).head == "head1");
    CHECK(db.loops().base_of(loop_id).tree == "tree1");
}

TEST_CASE("store: output index rows and the loop's committed end are written together") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t loop_id = db.loops().insert_loop(sample_spec(), 1);
    db.output_index().record_output(
        {{loop_id, 1, 0, 100, 5, "stdout"}, {loop_id, 1, 100, 20, 6, "stderr"}}, {{loop_id, 120}});
    CHECK(db.output_index().output_bytes(loop_id) == 120);
    SQLite::Database raw(tmp.path().string());
    CHECK(raw.execAndGet("SELECT count(*) FROM output_chunks").getInt() == 2);
}

TEST_CASE(
    "store: a database of the first released schema (v1) is migrated with its history intact") {
    // tests/fixtures/schema-v1.db was written by ralphd 0.1.0 (schema 1): a completed demo loop,
    // an exhausted loop with stdout and stderr, a running loop (the daemon was killed) and a
    // queued one.
    temp_db tmp;
    fs::copy_file(RALPH_FIXTURES_DIR "/schema-v1.db", tmp.path());
    ralph::store db(tmp.path());
    CHECK(db.schema_version() == ralph::store::latest_schema_version());

    auto loops = db.loops().list_loops({}, 0);
    REQUIRE(loops.size() == 4);
    CHECK(loops[3].spec.name == "demo-loop");
    CHECK(loops[3].state == ralph::proto::loop_state::completed);
    CHECK(loops[3].iterations == 3);
    CHECK(loops[2].state == ralph::proto::loop_state::exhausted);
    CHECK(loops[1].state == ralph::proto::loop_state::running);
    CHECK(loops[0].state == ralph::proto::loop_state::queued);
    CHECK(db.loops().get_loop(loops[3].id).spec.agent == "demo");
    // New columns start empty: no tokens, no cost, no failure class, no events.
    CHECK(loops[3].usage.input_tokens == 0);
    CHECK_FALSE(loops[3].usage.cost_usd.has_value());
    auto attempts = db.attempts().attempts_of(loops[3].id);
    REQUIRE(attempts.size() == 3);
    CHECK(attempts[2].completion_signal);
    CHECK(attempts[2].failure == ralph::proto::failure_class::none);
    CHECK(attempts[2].agent == "demo");  // v7: the loop's agent, for the attempts before it
    CHECK(attempts[2].model.empty());
    CHECK(attempts[2].kind == ralph::proto::attempt_kind::work);  // v8: every attempt before
    CHECK(attempts[2].verdict.empty());
    CHECK(attempts[2].tree_before.empty());  // v11: no snapshot trees were kept before
    CHECK(attempts[2].tree_after.empty());
    CHECK(db.loops().base_of(loops[3].id).tree.empty());
    CHECK(db.attempts().events_of(loops[3].id, 0, 0, 100).empty());
    CHECK(db.output_index().output_bytes(loops[2].id) > 0);
    REQUIRE(db.attempts().unfinished_attempts().size() == 1);
    CHECK(db.attempts().unfinished_attempts()[0].loop_id == loops[1].id);
    CHECK_FALSE(db.holds().agent_hold_of("claude", "default", 0).has_value());
}

TEST_CASE("store: an attempt's usage is added to its loop's totals, cost only when reported") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t id = db.loops().insert_loop(sample_spec(), 1000);
    for (int i = 1; i <= 2; ++i) {
        ralph::proto::attempt_info a;
        a.loop_id = id;
        a.iteration = i;
        a.attempt = 1;
        a.started_at = 1000;
        a.id = db.attempts().begin_attempt(a, 0);
        a.how = ralph::proto::termination::exited;
        a.usage.input_tokens = 100;
        a.usage.output_tokens = 10;
        a.usage.tool_calls = 2;
        if (i == 2) a.usage.cost_usd = 0.25;
        a.summary = "done";
        db.attempts().finish_attempt(a);
    }
    auto loop = db.loops().get_loop(id);
    CHECK(loop.usage.input_tokens == 200);
    CHECK(loop.usage.output_tokens == 20);
    CHECK(loop.usage.tool_calls == 4);
    REQUIRE(loop.usage.cost_usd.has_value());
    CHECK(*loop.usage.cost_usd == doctest::Approx(0.25));
    auto attempts = db.attempts().attempts_of(id);
    CHECK_FALSE(attempts[0].usage.cost_usd.has_value());
    CHECK(attempts[1].summary == "done");
}

TEST_CASE("store: an agent hold only ever moves later, per account, and says when it changed") {
    temp_db tmp;
    ralph::store db(tmp.path());
    CHECK(db.holds().hold_agent({"claude", "default", 5000, "first", ""}));
    CHECK_FALSE(db.holds().hold_agent({"claude", "default", 3000, "earlier", "build1"}));
    CHECK_FALSE(db.holds().hold_agent({"claude", "default", 5000, "as long", "build1"}));
    auto hold = db.holds().agent_hold_of("claude", "default", 1000);
    REQUIRE(hold.has_value());
    CHECK(*hold == ralph::proto::agent_hold{"claude", "default", 5000, "first", ""});
    CHECK(db.holds().hold_agent({"claude", "default", 9000, "later", "build1"}));
    CHECK(*db.holds().agent_hold_of("claude", "default", 1000) ==
          ralph::proto::agent_hold{"claude", "default", 9000, "later", "build1"});
    CHECK_FALSE(db.holds().agent_hold_of("claude", "default", 9000).has_value());
    CHECK_FALSE(db.holds().agent_hold_of("codex", "default", 1000).has_value());
    // Another account's hold is another hold.
    CHECK_FALSE(db.holds().agent_hold_of("claude", "work", 1000).has_value());
    CHECK(db.holds().hold_agent({"claude", "work", 2000, "work's", ""}));
    CHECK(db.holds().agent_hold_of("claude", "work", 1000)->until == 2000);
    CHECK(db.holds().agent_hold_of("claude", "default", 1000)->until == 9000);
    const auto all = db.holds().agent_holds(1000);
    REQUIRE(all.size() == 2);
    CHECK(all[0].account == "work");  // soonest end first
    CHECK(all[1].account == "default");
    CHECK(db.holds().agent_holds(2000).size() == 1);
}

// ---- history: history.report's and history.gc's queries

namespace {

using ralph::proto::failure_class;
using ralph::proto::loop_state;
using ralph::proto::termination;

using ralph::test::add_attempt;
using ralph::test::add_loop;

const ralph::proto::report_loop* find(const std::vector<ralph::proto::report_loop>& loops,
                                      std::int64_t id) {
    for (const auto& loop : loops)
        if (loop.id == id) return &loop;
    return nullptr;
}

std::int64_t rows(const fs::path& db, const std::string& table, std::int64_t loop_id) {
    SQLite::Database raw(db.string());
    SQLite::Statement q(raw, "SELECT count(*) FROM " + table + " WHERE loop_id = ?");
    q.bind(1, loop_id);
    q.executeStep();
    return q.getColumn(0).getInt64();
}

}  // namespace

TEST_CASE("report: a loop counts when it was submitted, ended or had an attempt in the window") {
    temp_db tmp;
    ralph::store db(tmp.path());
    const std::int64_t since = 100'000, now = 200'000;

    const auto old = add_loop(db, "old", 1'000);  // everything before the window
    add_attempt(db, old, {.started_at = 2'000, .ended_at = 3'000});
    move_to(db, old, ralph::proto::loop_state::completed, "done", 0, 3'000);

    const auto submitted = add_loop(db, "submitted", 150'000);  // queued in the window
    const auto ended = add_loop(db, "ended", 1'000);            // cancelled in the window
    move_to(db, ended, ralph::proto::loop_state::cancelled, "cancelled by the user", 0, 120'000);

    const auto ran = add_loop(db, "ran", 1'000);  // an attempt started in the window
    add_attempt(db, ran, {.started_at = 2'000, .ended_at = 3'000});
    add_attempt(db, ran, {.iteration = 2, .started_at = 110'000, .ended_at = 111'000});

    const auto straddles = add_loop(db, "straddles", 1'000);  // started before, ended in it
    add_attempt(db, straddles, {.started_at = 90'000, .ended_at = 100'500});

    const auto running = add_loop(db, "running", 1'000);  // an attempt started long ago still runs
    add_attempt(db, running, {.started_at = 5'000});
    move_to(db, running, ralph::proto::loop_state::running, "", 0, 5'000);

    const auto report = db.history().report_loops(since, now);
    std::vector<std::int64_t> ids;
    for (const auto& loop : report) ids.push_back(loop.id);
    CHECK(ids == std::vector<std::int64_t>{submitted, ended, ran, straddles, running});

    // Only the attempts in the window are summed; the loop's own totals stay whole.
    const auto* r = find(report, ran);
    REQUIRE(r != nullptr);
    CHECK(r->activity.attempts == 1);
    CHECK(r->activity.iterations == 1);
    CHECK(r->activity.agent_ms == 1'000);
    CHECK(find(report, straddles)->activity.attempts == 1);
    // A running attempt counts until the end of the report.
    CHECK(find(report, running)->activity.agent_ms == now - 5'000);
    CHECK(find(report, running)->duration_ms == now - 5'000);
    CHECK(find(report, submitted)->activity.attempts == 0);
    CHECK(find(report, submitted)->duration_ms == 0);
}

TEST_CASE("report: commits, changes, tokens, cost, retries and failures are summed per loop") {
    temp_db tmp;
    ralph::store db(tmp.path());
    const auto id = add_loop(db, "work", 10);
    move_to(db, id, ralph::proto::loop_state::running, "", 0, 10);
    // Iteration 1 commits; iteration 2 fails once (no snapshot), then changes files without
    // committing; iteration 3 commits again.
    add_attempt(db, id,
                {.iteration = 1,
                 .started_at = 100,
                 .ended_at = 200,
                 .head_before = "aaa",
                 .head_after = "bbb",
                 .files = 2,
                 .insertions = 10,
                 .deletions = 1,
                 .input_tokens = 1000,
                 .output_tokens = 100,
                 .cost = 0.25});
    add_attempt(db, id,
                {.iteration = 2,
                 .started_at = 300,
                 .ended_at = 350,
                 .how = termination::failed,
                 .failure = failure_class::crash,
                 .input_tokens = 5,
                 .output_tokens = 1});
    add_attempt(db, id,
                {.iteration = 2,
                 .attempt = 2,
                 .started_at = 400,
                 .ended_at = 500,
                 .head_before = "bbb",
                 .head_after = "bbb",
                 .files = 1,
                 .insertions = 3,
                 .input_tokens = 10,
                 .output_tokens = 2,
                 .cost = 0.5});
    add_attempt(db, id,
                {.iteration = 3,
                 .started_at = 600,
                 .ended_at = 900,
                 .head_before = "bbb",
                 .head_after = "ccc",
                 .files = 4,
                 .insertions = 7,
                 .deletions = 9,
                 .input_tokens = 1,
                 .output_tokens = 1});
    db.loops().set_iterations(id, 3, 900);
    move_to(db, id, ralph::proto::loop_state::completed, "signal", 0, 1000);

    const auto report = db.history().report_loops(0, 2000);
    REQUIRE(report.size() == 1);
    const auto& loop = report[0];
    CHECK(loop.state == loop_state::completed);
    CHECK(loop.stop_reason == "signal");
    CHECK(loop.iterations_total == 3);
    CHECK(loop.duration_ms == 1000 - 10);
    const auto& a = loop.activity;
    CHECK(a.attempts == 4);
    CHECK(a.iterations == 3);
    CHECK(a.retries == 1);
    CHECK(a.commits == 2);
    CHECK(loop.head_before == "aaa");
    CHECK(loop.head_after == "ccc");
    CHECK(a.files_changed == 7);
    CHECK(a.insertions == 20);
    CHECK(a.deletions == 10);
    CHECK(a.usage.input_tokens == 1016);
    CHECK(a.usage.output_tokens == 104);
    REQUIRE(a.usage.cost_usd);
    CHECK(*a.usage.cost_usd == doctest::Approx(0.75));
    CHECK(a.agent_ms == 100 + 50 + 100 + 300);
    CHECK(a.failures == std::map<std::string, std::int64_t>{{"crash", 1}});

    // A window that starts after iteration 1: its commit and HEAD are not part of it.
    const auto later = db.history().report_loops(250, 2000);
    REQUIRE(later.size() == 1);
    CHECK(later[0].activity.attempts == 3);
    CHECK(later[0].activity.commits == 1);
    CHECK(later[0].head_before == "bbb");
    CHECK(later[0].activity.usage.cost_usd == doctest::Approx(0.5));

    // Totals add the loops up; no agent reported a cost → none.
    ralph::proto::report r;
    r.loops = report;
    const auto other = add_loop(db, "other", 1500);
    r.loops.push_back(*find(db.history().report_loops(0, 2000), other));
    ralph::proto::add_totals(r);
    CHECK(r.loop_count == 2);
    CHECK(r.by_state == std::map<std::string, std::int64_t>{{"completed", 1}, {"queued", 1}});
    CHECK(r.totals.attempts == 4);
    CHECK(r.totals.commits == 2);
    CHECK(*r.totals.usage.cost_usd == doctest::Approx(0.75));
}

TEST_CASE("gc: only loops that ended before the cutoff are candidates, oldest first") {
    temp_db tmp;
    ralph::store db(tmp.path());
    const auto recent = add_loop(db, "recent", 1);
    move_to(db, recent, ralph::proto::loop_state::failed, "x", 0, 5'000);
    const auto oldest = add_loop(db, "oldest", 2);
    move_to(db, oldest, ralph::proto::loop_state::exhausted, "x", 0, 100);
    const auto old = add_loop(db, "old", 3);
    move_to(db, old, ralph::proto::loop_state::stalled, "x", 0, 200);
    const auto waiting = add_loop(db, "waiting", 4);  // old, but not ended
    move_to(db, waiting, ralph::proto::loop_state::waiting, "delay", 10'000, 50);
    add_loop(db, "queued", 5);
    auto ids_ended_before = [&db](std::int64_t cutoff) {
        std::vector<std::int64_t> ids;
        for (const auto& loop : db.history().loops_ended_before(cutoff, {}, 0))
            ids.push_back(loop.id);
        return ids;
    };
    CHECK(ids_ended_before(1'000) == std::vector<std::int64_t>{oldest, old});
    CHECK(ids_ended_before(100) == std::vector<std::int64_t>{});
}

TEST_CASE("gc: removing ended loops deletes every row they left; a dry run only counts") {
    temp_db tmp;
    ralph::store db(tmp.path());
    const auto gone = add_loop(db, "gone", 1);
    const auto attempt = add_attempt(db, gone, {.started_at = 10, .ended_at = 20});
    add_attempt(db, gone, {.iteration = 2, .started_at = 30, .ended_at = 40});
    db.attempts().add_events(
        gone, {{0, attempt, 1, 15, "text", "", "hello"}, {0, attempt, 1, 16, "text", "", "bye"}});
    db.attempts().add_steering(gone, "hint", 12);
    db.output_index().record_output({{gone, attempt, 0, 5, 15, "stdout"}}, {{gone, 5}});
    move_to(db, gone, ralph::proto::loop_state::completed, "done", 0, 50);
    const auto kept = add_loop(db, "kept", 2);  // not ended: never removed, even when asked
    add_attempt(db, kept, {.started_at = 10});
    move_to(db, kept, ralph::proto::loop_state::running, "", 0, 10);

    const auto counted = db.history().remove_loops({gone, kept, 999}, true);
    CHECK(counted.loop_ids == std::vector<std::int64_t>{gone});
    CHECK(counted.attempts == 2);
    CHECK(counted.events == 2);
    CHECK(db.loops().find_loop(gone).has_value());
    CHECK(rows(tmp.path(), "attempts", gone) == 2);

    const auto removed = db.history().remove_loops({gone, kept, 999}, false);
    CHECK(removed.loop_ids == std::vector<std::int64_t>{gone});
    CHECK(removed.attempts == 2);
    CHECK(removed.events == 2);
    CHECK_FALSE(db.loops().find_loop(gone).has_value());
    for (const char* table : {"attempts", "events", "steering", "output_chunks"}) {
        CAPTURE(table);
        CHECK(rows(tmp.path(), table, gone) == 0);
    }
    CHECK(db.output_index().output_bytes(gone) == 0);
    CHECK(db.loops().find_loop(kept).has_value());
    CHECK(rows(tmp.path(), "attempts", kept) == 1);
}

TEST_CASE("gc: the cutoff keeps the longest budget window, worktrees and finishing runners") {
    gc_fixture gc;
    temp_db& tmp = gc.tmp;
    ralph::store& db = gc.db;
    ralph::storage_health& health = gc.health;
    ralph::output_log& output = gc.output;
    constexpr std::int64_t hour = 3600 * 1000, day = 24 * hour, now = 10 * day;
    auto ended_at = [&db](const std::string& name, std::int64_t at,
                          const std::string& worktree = "") {
        ralph::proto::submit_params spec;
        spec.name = name;
        spec.workspace = "/tmp/" + name;
        spec.command = "true";
        spec.worktree_path = worktree;
        const std::int64_t id = db.loops().insert_loop(spec, 0);
        move_to(db, id, loop_state::completed, "done", 0, at);
        return id;
    };
    const auto old = ended_at("old", 1 * day);
    const auto attempt = add_attempt(db, old, {.started_at = 10, .ended_at = 20});
    // What a shim wrote, indexed but not flushed.
    std::ofstream(output.file_of(old), std::ios::binary) << "bytes";
    output.index(old, attempt, ralph::output_stream::stdout_stream, 0, 5);
    const auto yesterday = ended_at("yesterday", now - 20 * hour);
    const auto finishing = ended_at("finishing", 1 * day);
    fs::create_directories(tmp.dir.path / "worktrees" / "loop-4");
    const auto with_worktree =
        ended_at("with worktree", 1 * day, (tmp.dir.path / "worktrees" / "loop-4").string());
    const auto worktree_gone =
        ended_at("worktree gone", 1 * day, (tmp.dir.path / "worktrees" / "loop-5").string());
    REQUIRE(with_worktree == 4);

    std::vector<std::int64_t> forgotten;
    ralph::net::thread_pool pool(1);
    ralph::gc_context ctx{db,
                          output,
                          health,
                          pool,
                          [&](std::int64_t id) { return id == finishing; },
                          [&](std::int64_t id) {
                              // The files go only after the rows.
                              CHECK_FALSE(db.loops().find_loop(id).has_value());
                              forgotten.push_back(id);
                              output.forget(id);
                              return ralph::loop_files{output.file_of(id), "", ""};
                          }};
    // Asked: what ended more than an hour ago. The global budget of iterations per day still
    // counts yesterday's loop: the cutoff moves back a day; the hourly one changes nothing.
    ralph::proto::gc_request request{3600, true};
    const std::vector<ralph::proto::budget_use> budgets{{"iterations_per_hour", 0, 1, 10, hour, 0},
                                                        {"iterations_per_day", 0, 1, 10, day, 0}};
    const auto counted =
        ralph::test::run_awaitable(ralph::collect_garbage(request, now, budgets, ctx));
    CHECK(counted.dry_run);
    CHECK(counted.before == now - day);
    CHECK(counted.kept_for_budgets);
    CHECK(counted.loop_ids == std::vector<std::int64_t>{old, worktree_gone});
    CHECK(counted.kept_for_worktrees == std::vector<std::int64_t>{with_worktree});
    CHECK(counted.attempts == 1);
    CHECK(counted.output_bytes == 5);
    CHECK(forgotten.empty());
    CHECK(db.loops().find_loop(old).has_value());

    request.dry_run = false;
    const auto removed = ralph::test::run_awaitable(ralph::collect_garbage(request, now, {}, ctx));
    CHECK(removed.before == now - hour);
    CHECK_FALSE(removed.kept_for_budgets);
    CHECK(removed.loop_ids == std::vector<std::int64_t>{old, worktree_gone, yesterday});
    CHECK(forgotten == removed.loop_ids);
    CHECK(removed.output_bytes == 5);
    // The pending index row was written before the loop's rows were deleted, not after.
    CHECK(rows(tmp.path(), "output_chunks", old) == 0);
    CHECK_FALSE(fs::exists(output.file_of(old)));
    CHECK(db.loops().find_loop(finishing).has_value());
    CHECK(db.loops().find_loop(with_worktree).has_value());
}

TEST_CASE("gc: a large removal goes in short transactions, other work running between") {
    gc_fixture gc;
    temp_db& tmp = gc.tmp;
    ralph::store& db = gc.db;
    ralph::net::io_context& io = gc.io;
    ralph::storage_health& health = gc.health;
    ralph::output_log& output = gc.output;
    std::vector<std::int64_t> ended;
    for (int i = 0; i < 25; ++i) {
        ended.push_back(add_loop(db, "loop-" + std::to_string(i), 1));
        move_to(db, ended.back(), loop_state::completed, "done", 0, 50);
        std::ofstream(output.file_of(ended.back()), std::ios::binary) << "12345678";
        ralph::test::write_file(tmp.dir.path / ("prompt-" + std::to_string(ended.back())),
                                "prompt");
        fs::create_directories(tmp.dir.path / ("scratch-" + std::to_string(ended.back())) / "d");
    }
    ralph::net::thread_pool pool(1);
    const ralph::gc_context ctx{db,
                                output,
                                health,
                                pool,
                                [](std::int64_t) { return false; },
                                [&](std::int64_t id) {
                                    output.forget(id);
                                    return ralph::loop_files{
                                        output.file_of(id),
                                        tmp.dir.path / ("prompt-" + std::to_string(id)),
                                        tmp.dir.path / ("scratch-" + std::to_string(id))};
                                }};
    const ralph::proto::gc_request request{1, false};
    const std::vector<ralph::proto::budget_use> budgets;
    // Another task of the io thread, counting its turns until gc is done.
    bool done = false;
    int turns = 0;
    std::function<void()> take_a_turn = [&] {
        ++turns;
        if (!done) ralph::net::post(io, take_a_turn);
    };
    ralph::proto::gc_result result;
    ralph::net::co_spawn(io, ralph::collect_garbage(request, 10'000, budgets, ctx),
                         [&](std::exception_ptr error, ralph::proto::gc_result r) {
                             CHECK_FALSE(error);
                             result = std::move(r);
                             done = true;
                         });
    ralph::net::post(io, take_a_turn);
    io.run();
    CHECK(result.loop_ids == ended);
    CHECK(result.output_bytes == 25 * 8);
    CHECK(turns >= 3);  // between the transactions, and while the files were deleted
    CHECK(fs::is_empty(tmp.dir.path / "output"));
    for (std::int64_t id : {ended.front(), ended.back()}) {
        CHECK_FALSE(fs::exists(tmp.dir.path / ("prompt-" + std::to_string(id))));
        CHECK_FALSE(fs::exists(tmp.dir.path / ("scratch-" + std::to_string(id))));
    }
    CHECK(db.history().loops_ended_before(100, {}, 0).empty());
}

TEST_CASE("store: a steering hint goes to the next iteration, or after the one running") {
    temp_db tmp;
    ralph::store db(tmp.path());
    const auto id = add_loop(db, "steered", 1);
    CHECK(db.attempts().add_steering(id, "first", 2).iteration == 1);
    // An attempt of iteration 1 runs: it has its prompt already.
    const auto running = add_attempt(db, id, {.started_at = 3});
    CHECK(db.attempts().add_steering(id, "second", 4).iteration == 2);
    ralph::proto::attempt_info ended = db.attempts().attempts_of(id).back();
    REQUIRE(ended.id == running);
    ended.ended_at = 5;
    ended.how = termination::failed;
    db.attempts().finish_attempt(ended);
    CHECK(db.attempts().add_steering(id, "third", 6).iteration == 1);  // its retry gets it
    db.loops().set_iterations(id, 1, 7);
    const auto hint = db.attempts().add_steering(id, "fourth", 8);
    CHECK(hint.iteration == 2);

    move_to(db, id, loop_state::cancelled, "cancelled", 0, 9);
    CHECK_THROWS_WITH_AS(db.attempts().add_steering(id, "late", 10),
                         "loop 1 has already ended (cancelled)", ralph::proto::rpc_error);
    CHECK_THROWS_WITH_AS(db.attempts().add_steering(99, "nobody", 10), "no loop with id 99",
                         ralph::proto::rpc_error);
}

TEST_CASE("store: next_loop_id is the id insert_loop gives, and a worktree is listed") {
    temp_db tmp;
    ralph::store db(tmp.path());
    CHECK(db.loops().next_loop_id() == 1);
    auto spec = sample_spec();
    CHECK(db.loops().insert_loop(spec, 1000) == 1);
    CHECK(db.loops().next_loop_id() == 2);
    spec.worktree = true;
    spec.worktree_source = "/src/repo";
    spec.worktree_path = "/state/worktrees/loop-2";
    spec.worktree_branch = "ralph/loop-2";
    spec.worktree_base = "abc";
    CHECK(db.loops().insert_loop(spec, 1000) == 2);
    auto listed = db.loops().list_loops({}, 0);
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].spec.worktree_path == "/state/worktrees/loop-2");
    CHECK(listed[0].spec.worktree_branch == "ralph/loop-2");
    CHECK(listed[1].spec.worktree_path.empty());
    auto loop = db.loops().get_loop(2);
    CHECK(loop.spec.worktree);
    CHECK(loop.spec.worktree_source == "/src/repo");
    CHECK(loop.spec.worktree_base == "abc");

    // gc of the newest loop does not give its id again.
    move_to(db, 2, ralph::proto::loop_state::completed, "", 0, 2000);
    REQUIRE(db.history().remove_loops({2}, false).loop_ids == std::vector<std::int64_t>{2});
    CHECK(db.loops().next_loop_id() == 3);
    CHECK(db.loops().insert_loop(sample_spec(), 3000) == 3);
    move_to(db, 1, ralph::proto::loop_state::completed, "", 0, 2000);
    db.history().remove_loops({1}, false);
    CHECK(db.loops().next_loop_id() == 4);
}

TEST_CASE("store: an idempotency key names at most one loop; loops without one are unlimited") {
    temp_db tmp;
    ralph::store db(tmp.path());
    auto spec = sample_spec();
    const std::int64_t plain_a = db.loops().insert_loop(spec, 1);
    const std::int64_t plain_b = db.loops().insert_loop(spec, 2);
    CHECK(plain_a != plain_b);
    CHECK_FALSE(db.loops().loop_with_idempotency_key("nightly"));

    spec.idempotency_key = "nightly";
    const std::int64_t keyed = db.loops().insert_loop(spec, 3);
    CHECK(db.loops().loop_with_idempotency_key("nightly") == keyed);
    CHECK(db.loops().get_loop(keyed).spec.idempotency_key == "nightly");
    CHECK_THROWS_AS(db.loops().insert_loop(spec, 4), SQLite::Exception);
    CHECK_FALSE(db.loops().loop_with_idempotency_key(""));
    spec.idempotency_key = "weekly";
    CHECK(db.loops().insert_loop(spec, 5) != keyed);
}

TEST_CASE("output_log: the output is cut in spans where each attempt begins, in its format") {
    gc_fixture fixture;
    ralph::store& db = fixture.db;
    ralph::output_log& output = fixture.output;
    const std::int64_t loop_id = db.loops().insert_loop(sample_spec(), 1);
    // Attempt `number` of `iteration`, of agent `agent`, that starts at `start` and writes
    // `bytes` bytes.
    const auto attempt_writes = [&](std::int64_t iteration, std::int64_t number,
                                    const std::string& agent, std::int64_t start,
                                    std::int64_t bytes) {
        ralph::proto::attempt_info a;
        a.loop_id = loop_id;
        a.iteration = iteration;
        a.attempt = number;
        a.agent = agent;
        a.output_start = start;
        a.id = db.attempts().begin_attempt(a, 0);
        output.index(loop_id, a.id, ralph::output_stream::stdout_stream, start, bytes);
        output.write_pending();
    };
    using ralph::agent_stream::format;
    constexpr std::int64_t open_end = std::numeric_limits<std::int64_t>::max();
    attempt_writes(1, 1, "claude", 0, 4);
    CHECK(output.span_at(loop_id, 3).format == format::claude);
    CHECK(output.span_at(loop_id, 3).end == open_end);
    attempt_writes(1, 2, "claude", 4, 6);
    // A judge of another CLI, an attempt that wrote nothing, an agent this ralphd does not know
    // (text, as aider's): the span read before was cached, the new attempts are seen the same.
    attempt_writes(2, 1, "codex", 10, 5);
    attempt_writes(3, 1, "claude", 15, 0);
    attempt_writes(3, 2, "gemini", 15, 5);
    attempt_writes(4, 1, "retired-agent", 20, 5);
    attempt_writes(5, 1, "aider", 25, 5);
    CHECK(output.span_at(loop_id, 0).end == 4);
    CHECK(output.span_at(loop_id, 9).format == format::claude);
    CHECK(output.span_at(loop_id, 9).end == 10);
    CHECK((output.span_at(loop_id, 9).iteration == 1 && output.span_at(loop_id, 9).attempt == 2));
    CHECK(output.span_at(loop_id, 10).format == format::codex);
    CHECK(output.span_at(loop_id, 10).end == 15);
    CHECK(output.span_at(loop_id, 15).format == format::gemini);
    CHECK(output.span_at(loop_id, 15).end == 20);
    CHECK((output.span_at(loop_id, 15).iteration == 3 && output.span_at(loop_id, 15).attempt == 2));
    CHECK(output.span_at(loop_id, 22).format == format::text);
    CHECK(output.span_at(loop_id, 22).end == 25);
    CHECK(output.span_at(loop_id, 27).end == open_end);
    // A ralphd started afresh reads the same from the attempts table.
    ralph::output_log fresh{fixture.io, db.output_index(), fixture.health,
                            fixture.tmp.dir.path / "output", [](std::int64_t, std::int64_t) {}};
    CHECK(fresh.span_at(loop_id, 12).format == format::codex);
    CHECK(fresh.span_at(loop_id, 12).end == 15);
    CHECK(fresh.span_at(loop_id, 12).iteration == 2);
}
