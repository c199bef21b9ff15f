#include "daemon/store/store.hpp"

#include "proto/errors.hpp"

#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct temp_db {
    fs::path dir;
    temp_db() {
        char tmpl[] = "/tmp/ralph-store-test-XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    ~temp_db() { fs::remove_all(dir); }
    fs::path path() const { return dir / "ralph.db"; }
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

TEST_CASE("store: reopening a migrated database keeps its data and does not migrate again") {
    temp_db tmp;
    std::int64_t id = 0;
    {
        ralph::store db(tmp.path());
        id = db.insert_loop(sample_spec(), 1000);
    }
    ralph::store again(tmp.path());
    CHECK(again.schema_version() == ralph::store::latest_schema_version());
    CHECK(again.get_loop(id).spec.name == "sample");
}

TEST_CASE("store: a database from a newer ralphd is refused rather than damaged") {
    temp_db tmp;
    {
        SQLite::Database raw(tmp.path().string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec("PRAGMA user_version = 999");
    }
    CHECK_THROWS_WITH_AS(ralph::store(tmp.path()),
                         doctest::Contains("newer than this ralphd understands"), std::runtime_error);
}

TEST_CASE("store: a loop round-trips with its spec, state and timestamps") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t id = db.insert_loop(sample_spec(), 1000);
    auto loop = db.get_loop(id);
    CHECK(loop.state == ralph::proto::loop_state::queued);
    CHECK(loop.spec.env.at("K") == "V");
    CHECK(loop.spec.max_iterations == 5);
    CHECK(loop.created_at == 1000);

    db.set_state(id, ralph::proto::loop_state::running, "", 0, 2000);
    db.set_state(id, ralph::proto::loop_state::completed, "done", 0, 3000);
    loop = db.get_loop(id);
    CHECK(loop.started_at == 2000);
    CHECK(loop.finished_at == 3000);
    CHECK(loop.stop_reason == "done");
    CHECK_THROWS_AS(db.get_loop(id + 1), ralph::proto::rpc_error);
}

TEST_CASE("store: queued loops come by priority, then in submit order") {
    temp_db tmp;
    ralph::store db(tmp.path());
    auto spec = sample_spec();
    std::int64_t first = db.insert_loop(spec, 1);
    spec.priority = 5;
    std::int64_t urgent = db.insert_loop(spec, 2);
    spec.priority = 0;
    std::int64_t last = db.insert_loop(spec, 3);
    std::vector<std::int64_t> order;
    for (const auto& loop : db.queued_loops()) order.push_back(loop.id);
    CHECK(order == std::vector<std::int64_t>{urgent, first, last});
    CHECK(db.queued_loops().front().workspace == "/tmp");
}

TEST_CASE("store: attempts are separate rows and unfinished ones are found for recovery") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t loop_id = db.insert_loop(sample_spec(), 1);
    ralph::proto::attempt_info a;
    a.loop_id = loop_id;
    a.iteration = 1;
    a.attempt = 1;
    a.argv = {"true"};
    a.started_at = 10;
    a.id = db.begin_attempt(a);
    a.how = ralph::proto::termination::failed;
    a.exit_code = 3;
    a.ended_at = 20;
    db.finish_attempt(a);
    ralph::proto::attempt_info retry = a;
    retry.attempt = 2;
    retry.how = ralph::proto::termination::running;
    retry.id = db.begin_attempt(retry);
    db.set_attempt_process(retry.id, 4242, 777);

    auto attempts = db.attempts_of(loop_id);
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].how == ralph::proto::termination::failed);
    CHECK(attempts[0].exit_code == 3);
    auto loop = db.get_loop(loop_id);
    CHECK(loop.attempts == 2);
    CHECK(loop.retries == 1);
    auto unfinished = db.unfinished_attempts();
    REQUIRE(unfinished.size() == 1);
    CHECK(unfinished[0].pgid == 4242);
    CHECK(unfinished[0].process_start_time == 777);
    db.interrupt_attempt(retry.id, 0, 30);
    CHECK(db.unfinished_attempts().empty());
    CHECK(db.attempts_of(loop_id)[1].how == ralph::proto::termination::interrupted);
}

TEST_CASE("store: output index rows and the loop's committed end are written together") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t loop_id = db.insert_loop(sample_spec(), 1);
    db.record_output({{loop_id, 1, 0, 100, 5, "stdout"}, {loop_id, 1, 100, 20, 6, "stderr"}},
                     {{loop_id, 120}});
    CHECK(db.output_bytes(loop_id) == 120);
    SQLite::Database raw(tmp.path().string());
    CHECK(raw.execAndGet("SELECT count(*) FROM output_chunks").getInt() == 2);
}

TEST_CASE("store: a database of the first released schema (v1) is migrated with its history intact") {
    // tests/fixtures/schema-v1.db was written by ralphd 0.1.0 (schema 1): a completed demo loop,
    // an exhausted loop with stdout and stderr, a running loop (the daemon was killed) and a
    // queued one.
    temp_db tmp;
    fs::copy_file(RALPH_TEST_FIXTURES_DIR "/schema-v1.db", tmp.path());
    ralph::store db(tmp.path());
    CHECK(db.schema_version() == ralph::store::latest_schema_version());

    auto loops = db.list_loops({}, 0);
    REQUIRE(loops.size() == 4);
    CHECK(loops[3].spec.name == "demo-loop");
    CHECK(loops[3].state == ralph::proto::loop_state::completed);
    CHECK(loops[3].iterations == 3);
    CHECK(loops[2].state == ralph::proto::loop_state::exhausted);
    CHECK(loops[1].state == ralph::proto::loop_state::running);
    CHECK(loops[0].state == ralph::proto::loop_state::queued);
    CHECK(db.get_loop(loops[3].id).spec.agent == "demo");
    // New columns start empty: no tokens, no cost, no failure class, no events.
    CHECK(loops[3].usage.input_tokens == 0);
    CHECK_FALSE(loops[3].usage.cost_usd.has_value());
    auto attempts = db.attempts_of(loops[3].id);
    REQUIRE(attempts.size() == 3);
    CHECK(attempts[2].completion_signal);
    CHECK(attempts[2].failure == ralph::proto::failure_class::none);
    CHECK(db.events_of(loops[3].id, 0, 0, 100).empty());
    CHECK(db.output_bytes(loops[2].id) > 0);
    REQUIRE(db.unfinished_attempts().size() == 1);
    CHECK(db.unfinished_attempts()[0].loop_id == loops[1].id);
    CHECK_FALSE(db.agent_hold_of("claude", 0).has_value());
}

TEST_CASE("store: an attempt's usage is added to its loop's totals, cost only when reported") {
    temp_db tmp;
    ralph::store db(tmp.path());
    std::int64_t id = db.insert_loop(sample_spec(), 1000);
    for (int i = 1; i <= 2; ++i) {
        ralph::proto::attempt_info a;
        a.loop_id = id;
        a.iteration = i;
        a.attempt = 1;
        a.started_at = 1000;
        a.id = db.begin_attempt(a);
        a.how = ralph::proto::termination::exited;
        a.usage.input_tokens = 100;
        a.usage.output_tokens = 10;
        a.usage.tool_calls = 2;
        if (i == 2) a.usage.cost_usd = 0.25;
        a.summary = "done";
        db.finish_attempt(a);
    }
    auto loop = db.get_loop(id);
    CHECK(loop.usage.input_tokens == 200);
    CHECK(loop.usage.output_tokens == 20);
    CHECK(loop.usage.tool_calls == 4);
    REQUIRE(loop.usage.cost_usd.has_value());
    CHECK(*loop.usage.cost_usd == doctest::Approx(0.25));
    auto attempts = db.attempts_of(id);
    CHECK_FALSE(attempts[0].usage.cost_usd.has_value());
    CHECK(attempts[1].summary == "done");
}

TEST_CASE("store: an agent hold only ever moves later") {
    temp_db tmp;
    ralph::store db(tmp.path());
    db.hold_agent("claude", 5000, "first");
    db.hold_agent("claude", 3000, "earlier");
    auto hold = db.agent_hold_of("claude", 1000);
    REQUIRE(hold.has_value());
    CHECK(hold->until_ms == 5000);
    CHECK(hold->reason == "first");
    db.hold_agent("claude", 9000, "later");
    CHECK(db.agent_hold_of("claude", 1000)->until_ms == 9000);
    CHECK_FALSE(db.agent_hold_of("claude", 9000).has_value());
    CHECK_FALSE(db.agent_hold_of("codex", 1000).has_value());
}

TEST_CASE("store: next_loop_id is the id insert_loop gives, and a worktree is listed") {
    temp_db tmp;
    ralph::store db(tmp.path());
    CHECK(db.next_loop_id() == 1);
    auto spec = sample_spec();
    CHECK(db.insert_loop(spec, 1000) == 1);
    CHECK(db.next_loop_id() == 2);
    spec.worktree = true;
    spec.worktree_source = "/src/repo";
    spec.worktree_path = "/state/worktrees/loop-2";
    spec.worktree_branch = "ralph/loop-2";
    spec.worktree_base = "abc";
    CHECK(db.insert_loop(spec, 1000) == 2);
    auto listed = db.list_loops({}, 0);
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].spec.worktree_path == "/state/worktrees/loop-2");
    CHECK(listed[0].spec.worktree_branch == "ralph/loop-2");
    CHECK(listed[1].spec.worktree_path.empty());
    auto loop = db.get_loop(2);
    CHECK(loop.spec.worktree);
    CHECK(loop.spec.worktree_source == "/src/repo");
    CHECK(loop.spec.worktree_base == "abc");
}
