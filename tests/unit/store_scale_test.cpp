// A year of history costs what a day of it does (bench/README.md, "scale"): the aggregates the
// triggers keep equal what they sum after every kind of write and after the migration of a
// first-schema database; the budgets read from them say what the attempts say; a page of
// loop.list, a report, daemon.info's counts, the budgets and the recovery at start do the same
// work (SQLite's virtual machine steps, counted) whatever the history or the queue holds; gc keeps
// the WAL small and gives the freed pages back to the file system.
#include "daemon/admission/admission.hpp"
#include "daemon/store/gc.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/wal_checkpointer.hpp"

#include "tests/support/files.hpp"
#include "tests/support/store_rows.hpp"

#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ralph::proto::loop_state;
using ralph::test::add_attempt;
using ralph::test::add_loop;
using ralph::test::move_to;

namespace ralph {
// What a call of the store costs: the steps of SQLite's virtual machine on its connection.
struct store_probe {
    template <typename Work>
    static std::int64_t steps(store& db, Work&& work) {
        std::int64_t count = 0;
        sqlite3_progress_handler(
            db.connection_.getHandle(), 1,
            [](void* n) {
                ++*static_cast<std::int64_t*>(n);
                return 0;
            },
            &count);
        work();
        sqlite3_progress_handler(db.connection_.getHandle(), 0, nullptr, nullptr);
        return count;
    }
};
}  // namespace ralph

namespace {

constexpr std::int64_t minute = 60 * 1000, hour = 60 * minute, day = 24 * hour;

struct temp_db {
    ralph::test::temp_dir dir;
    fs::path path() const { return dir.path / "ralph.db"; }
};

std::string text_of(SQLite::Database& db, const std::string& sql) {
    SQLite::Statement q(db, sql);
    return q.executeStep() && !q.getColumn(0).isNull() ? q.getColumn(0).getString() : "";
}

// The aggregates of the database at `path` are what they sum.
void check_aggregates(const fs::path& path) {
    SQLite::Database raw(path.string());
    CHECK(text_of(raw,
                  "SELECT group_concat(state || '=' || loops) FROM (SELECT state, loops "
                  "FROM loop_counts WHERE loops != 0 ORDER BY state)") ==
          text_of(raw,
                  "SELECT group_concat(state || '=' || n) FROM (SELECT state, count(*) AS n "
                  "FROM loops GROUP BY state ORDER BY state)"));
    for (const std::int64_t span : {minute, hour}) {
        CAPTURE(span);
        const std::string each = "slot || ':' || runs || ':' || tokens || ':' || round(cost, 9)";
        CHECK(text_of(raw, "SELECT group_concat(" + each +
                               ") FROM (SELECT slot, runs, tokens, cost FROM attempt_use WHERE "
                               "span = " +
                               std::to_string(span) + " ORDER BY slot)") ==
              text_of(raw, "SELECT group_concat(" + each + ") FROM (SELECT started_at / " +
                               std::to_string(span) +
                               " AS slot, count(*) AS runs, sum(input_tokens + output_tokens) AS "
                               "tokens, total(cost_usd) AS cost FROM attempts GROUP BY 1 ORDER BY "
                               "1)"));
    }
}

// A pseudo-random sequence, the same at every run.
struct sequence {
    std::uint64_t state = 88172645463325252ULL;
    std::int64_t next(std::int64_t below) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return std::int64_t(state % std::uint64_t(below));
    }
};

}  // namespace

TEST_CASE("scale: the loops per state and the attempts' use are what they sum, whatever wrote") {
    temp_db tmp;
    ralph::store db(tmp.path());
    sequence random;
    std::vector<std::int64_t> loops;
    for (int i = 0; i < 12; ++i) loops.push_back(add_loop(db, "l" + std::to_string(i), i));
    std::int64_t t = 5 * day + 17;
    for (std::int64_t id : loops) {
        for (int a = 1; a <= 4; ++a) {
            t += random.next(3 * minute);
            add_attempt(db, id,
                        {.iteration = a,
                         .started_at = t,
                         .ended_at = a == 4 && id % 3 == 0 ? 0 : t + 1000,
                         .input_tokens = random.next(5000),
                         .output_tokens = random.next(500),
                         .cost = id % 2 ? std::optional<double>(double(random.next(100)) / 1000)
                                        : std::nullopt});
        }
    }
    move_to(db, loops[0], loop_state::completed, "done", 0, t);
    move_to(db, loops[1], loop_state::waiting, "delay", t + 10, t);
    move_to(db, loops[2], loop_state::paused, "", 0, t);
    move_to(db, loops[3], loop_state::cancelled, "", 0, t);
    move_to(db, loops[4], loop_state::running, "", 0, t);
    check_aggregates(tmp.path());

    // Recovery: an attempt that never started goes, one that ran is interrupted.
    const auto unfinished = db.attempts().unfinished_attempts();
    REQUIRE(unfinished.size() == 4);
    db.attempts().discard_attempt(unfinished[0].id);
    db.attempts().interrupt_attempt(unfinished[1].id, 0, t + 5);
    check_aggregates(tmp.path());

    move_to(db, loops[5], loop_state::failed, "x", 0, t);
    CHECK(db.history()
              .remove_loops({loops[0], loops[3], loops[5], loops[6]}, false)
              .loop_ids.size() == 3);
    check_aggregates(tmp.path());
    CHECK(db.loops().count_by_state() ==
          std::map<std::string, std::int64_t>{
              {"paused", 1}, {"queued", 6}, {"running", 1}, {"waiting", 1}});
    CHECK(db.loops().count_loops({}) == 9);
    CHECK(db.loops().count_loops({loop_state::queued, loop_state::running}) == 7);
}

TEST_CASE("scale: a first-schema database gets the aggregates and incremental auto-vacuum") {
    temp_db tmp;
    fs::copy_file(RALPH_FIXTURES_DIR "/schema-v1.db", tmp.path());
    {
        ralph::store db(tmp.path());
        CHECK(db.schema_version() == ralph::store::latest_schema_version());
        CHECK(db.loops().count_loops({}) == 4);
        CHECK(db.attempts().unfinished_attempts().size() == 1);
    }
    check_aggregates(tmp.path());
    SQLite::Database raw(tmp.path().string());
    CHECK(raw.execAndGet("PRAGMA auto_vacuum").getInt() == 2);  // incremental
    CHECK(raw.execAndGet("PRAGMA journal_mode").getString() == "wal");
}

TEST_CASE("scale: the budgets' use and when they free up are what the attempts say") {
    temp_db tmp;
    ralph::store db(tmp.path());
    ralph::admission gate(db, "default");
    sequence random;
    // Two days of attempts: bursts of several a minute, and minutes and hours without any.
    const std::int64_t start = 40 * day + 13 * minute + 7;
    std::int64_t t = start;
    const std::int64_t loop = add_loop(db, "busy", start);
    while (t < start + 2 * day) {
        add_attempt(db, loop,
                    {.started_at = t,
                     .ended_at = t + 10,
                     .input_tokens = random.next(1000),
                     .output_tokens = random.next(100),
                     // Binary fractions: their sums are exact in any order.
                     .cost = random.next(4) ? std::optional<double>(double(random.next(50)) / 1024)
                                            : std::nullopt});
        t += random.next(5) == 0 ? random.next(3 * hour) : random.next(40 * 1000);
    }
    // What the attempts say, one by one (admission before the aggregates).
    SQLite::Database raw(tmp.path().string());
    auto expected = [&raw](std::int64_t now, std::int64_t window, const std::string& charge,
                           double limit, double& used) {
        SQLite::Statement q(raw, "SELECT started_at, " + charge +
                                     " FROM attempts WHERE started_at > ? ORDER BY started_at");
        q.bind(1, now - window);
        std::vector<std::pair<std::int64_t, double>> attempts;
        used = 0;
        while (q.executeStep()) {
            attempts.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).getDouble());
            used += attempts.back().second;
        }
        std::int64_t frees_at = 0;
        double remaining = used;
        for (auto it = attempts.begin(); remaining >= limit && it != attempts.end(); ++it) {
            remaining -= it->second;
            frees_at = it->first + window;
        }
        return frees_at;
    };
    for (const std::int64_t now : {start + day + 37 * minute + 11, start + 2 * day - 1,
                                   start + day + 5 * hour, t + hour / 2}) {
        for (const double share : {0.1, 0.5, 0.99, 1.0, 2.0}) {
            CAPTURE(now);
            CAPTURE(share);
            double hourly_runs = 0, daily_runs = 0, tokens = 0, cost = 0;
            expected(now, hour, "1", 1e18, hourly_runs);
            expected(now, day, "1", 1e18, daily_runs);
            expected(now, day, "input_tokens + output_tokens", 1e18, tokens);
            expected(now, day, "ifnull(cost_usd, 0)", 1e18, cost);
            ralph::proto::budget_limits limits;
            limits.iterations_per_hour =
                std::max<std::int64_t>(1, std::llround(hourly_runs * share));
            limits.iterations_per_day = std::max<std::int64_t>(1, std::llround(daily_runs * share));
            limits.tokens_per_day = std::max<std::int64_t>(1, std::llround(tokens * share));
            limits.cost_per_day_usd = std::max(0.001, cost * share);
            gate.set_budgets(limits);
            const auto uses = gate.budget_use(now);
            REQUIRE(uses.size() == 4);
            for (const auto& use : uses) {
                CAPTURE(use.name);
                const std::string charge = use.name == "tokens_per_day"
                                               ? "input_tokens + output_tokens"
                                           : use.name == "cost_per_day_usd" ? "ifnull(cost_usd, 0)"
                                                                            : "1";
                double used = 0;
                const std::int64_t frees_at = expected(now, use.window_ms, charge, use.limit, used);
                CHECK(use.used == doctest::Approx(used));
                CHECK(use.frees_at == (used >= use.limit ? frees_at : 0));
            }
        }
    }
}

TEST_CASE("scale: loop.list reads a page per state, newest first, from a cursor") {
    temp_db tmp;
    ralph::store db(tmp.path());
    const std::vector<loop_state> states{loop_state::queued, loop_state::completed,
                                         loop_state::paused, loop_state::failed};
    std::vector<std::pair<std::int64_t, loop_state>> all;
    for (int i = 0; i < 40; ++i) {
        const loop_state state = states[std::size_t(i * 7 % 4)];
        const std::int64_t id = add_loop(db, "l" + std::to_string(i), i);
        move_to(db, id, state, "", 0, i);
        all.emplace_back(id, state);
    }
    auto expected = [&all](const std::vector<loop_state>& wanted, std::int64_t limit,
                           std::int64_t before) {
        std::vector<std::int64_t> ids;
        for (auto it = all.rbegin(); it != all.rend(); ++it)
            if ((wanted.empty() || std::count(wanted.begin(), wanted.end(), it->second)) &&
                (before == 0 || it->first < before) &&
                (limit == 0 || std::int64_t(ids.size()) < limit))
                ids.push_back(it->first);
        return ids;
    };
    auto listed = [&db](const std::vector<loop_state>& wanted, std::int64_t limit,
                        std::int64_t before) {
        std::vector<std::int64_t> ids;
        for (const auto& loop : db.loops().list_loops(wanted, limit, before))
            ids.push_back(loop.id);
        return ids;
    };
    for (const auto& wanted : std::vector<std::vector<loop_state>>{
             {},
             {loop_state::queued},
             {loop_state::queued, loop_state::paused},
             {loop_state::completed, loop_state::failed, loop_state::running}}) {
        for (const std::int64_t limit : {0, 1, 5, 100}) {
            for (const std::int64_t before : {0, 1, 17, 30, 41}) {
                CAPTURE(wanted.size());
                CAPTURE(limit);
                CAPTURE(before);
                CHECK(listed(wanted, limit, before) == expected(wanted, limit, before));
            }
        }
        CHECK(db.loops().count_loops(wanted) == std::int64_t(expected(wanted, 0, 0).size()));
    }
}

namespace {

// Loops written straight into the database at `path`, as bench/year_db.py writes a year (the
// triggers keep the aggregates): `loops` loops, the i-th submitted at first + i * every, each with
// `attempts` attempts `spacing` ms apart (1 s long, 100 tokens, $0.01 each); ended unless `ended`
// is false, then running with its last attempt.
void add_loops(const fs::path& path, int loops, std::int64_t first, std::int64_t every,
               int attempts, std::int64_t spacing, bool ended) {
    SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
    SQLite::Transaction tx(raw);
    const std::int64_t last_id = raw.execAndGet("SELECT ifnull(max(id), 0) FROM loops").getInt64();
    ralph::proto::submit_params spec;
    spec.workspace = "/tmp";
    spec.command = "true";
    SQLite::Statement add(
        raw,
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 - 1) "
        "INSERT INTO loops (name, workspace, agent, max_iterations, min_iterations, priority, "
        "spec, state, created_at, started_at, finished_at, updated_at) "
        "SELECT 'l' || i, '/tmp', 'command', 10, 1, 0, ?2, CASE WHEN ?3 THEN 'completed' ELSE "
        "'running' END, ?4 + i * ?5, ?4 + i * ?5, CASE WHEN ?3 THEN ?4 + i * ?5 + ?6 ELSE 0 END, "
        "?4 + i * ?5 FROM k");
    add.bind(1, loops);
    add.bind(2, nlohmann::json(spec).dump());
    add.bind(3, ended ? 1 : 0);
    add.bind(4, first);
    add.bind(5, every);
    add.bind(6, attempts * spacing + 1000);
    add.exec();
    SQLite::Statement runs(
        raw,
        "WITH RECURSIVE j(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM j WHERE n < ?1 - 1) "
        "INSERT INTO attempts (loop_id, iteration, attempt, argv, started_at, ended_at, "
        "termination, input_tokens, cost_usd) "
        "SELECT l.id, j.n + 1, 1, '[]', l.created_at + j.n * ?2, CASE WHEN NOT ?3 AND j.n = ?1 - 1 "
        "THEN 0 ELSE l.created_at + j.n * ?2 + 1000 END, CASE WHEN NOT ?3 AND j.n = ?1 - 1 THEN "
        "'running' ELSE 'exited' END, 100, 0.01 FROM loops l, j WHERE l.id > ?4 "
        "ORDER BY l.id, j.n");
    runs.bind(1, attempts);
    runs.bind(2, spacing);
    runs.bind(3, ended ? 1 : 0);
    runs.bind(4, last_id);
    runs.exec();
    tx.commit();
}

// A day's loops (80, ending at `now`: 77 ended, 3 running) with `attempts_today` attempts, and
// before them `old_loops` loops of the 100 days before, each with five attempts.
void add_history(const fs::path& path, std::int64_t now, int old_loops, int attempts_today) {
    if (old_loops > 0)
        add_loops(path, old_loops, now - 100 * day, 98 * day / old_loops, 5, minute, true);
    const int each = attempts_today / 80;
    add_loops(path, 77, now - day, day / 80, each, day / 80 / each, true);
    add_loops(path, 3, now - 3 * day / 80, day / 80, each, day / 80 / each, false);
}

// The work of what the API calls and the start-up read, on a database.
struct work {
    std::int64_t info, active_page, ended_page, all_page, report, budgets, recovery;
};

work measure(ralph::store& db, std::int64_t now) {
    ralph::admission gate(db, "default");
    ralph::proto::budget_limits limits;
    limits.iterations_per_hour = limits.iterations_per_day = 1'000'000;
    limits.tokens_per_day = 1'000'000'000;
    limits.cost_per_day_usd = 1'000;
    gate.set_budgets(limits);
    using probe = ralph::store_probe;
    const std::vector<loop_state> active{loop_state::queued, loop_state::running,
                                         loop_state::waiting, loop_state::paused};
    const std::vector<loop_state> ended{loop_state::completed, loop_state::exhausted,
                                        loop_state::failed, loop_state::cancelled,
                                        loop_state::stalled};
    return {probe::steps(db, [&] { db.loops().count_by_state(); }),
            probe::steps(db,
                         [&] {
                             db.loops().list_loops(active, 50);
                             db.loops().count_loops(active);
                         }),
            probe::steps(db, [&] { db.loops().list_loops(ended, 50); }),
            probe::steps(db, [&] { db.loops().list_loops({}, 10, db.loops().next_loop_id() - 5); }),
            probe::steps(db, [&] { db.history().report_loops(now - 12 * hour, now); }),
            probe::steps(db,
                         [&] {
                             gate.budget_use(now);
                             gate.global(now);
                         }),
            probe::steps(db, [&] { db.attempts().unfinished_attempts(); })};
}

void check_flat(const work& day_only, const work& year, double most) {
    CHECK(year.info <= day_only.info * most);
    CHECK(year.active_page <= day_only.active_page * most);
    CHECK(year.ended_page <= day_only.ended_page * most);
    CHECK(year.all_page <= day_only.all_page * most);
    CHECK(year.report <= day_only.report * most);
    CHECK(year.budgets <= day_only.budgets * most);
    CHECK(year.recovery <= day_only.recovery * most);
}

}  // namespace

TEST_CASE("scale: what the API and the start-up read does not grow with the history") {
    const std::int64_t now = 400 * day + 7 * hour + 123;
    temp_db day_tmp, year_tmp;
    ralph::store day_db(day_tmp.path()), year_db(year_tmp.path());
    add_history(day_tmp.path(), now, 0, 800);
    add_history(year_tmp.path(), now, 20000, 800);
    const work day_only = measure(day_db, now), year = measure(year_db, now);
    CAPTURE(year.report);
    CAPTURE(day_only.report);
    check_flat(day_only, year, 1.1);
}

TEST_CASE("scale: the budgets cost the same with 4,000 or 40,000 attempts in their windows") {
    const std::int64_t now = 400 * day + 7 * hour + 123;
    temp_db few_tmp, many_tmp;
    ralph::store few(few_tmp.path()), many(many_tmp.path());
    add_history(few_tmp.path(), now, 0, 4000);
    add_history(many_tmp.path(), now, 0, 40000);
    const work a = measure(few, now), b = measure(many, now);
    CAPTURE(a.budgets);
    CAPTURE(b.budgets);
    CHECK(b.budgets <= a.budgets * 1.5);
}

TEST_CASE("scale: gc of a long history keeps the WAL small and gives the space back") {
    temp_db tmp;
    ralph::store db(tmp.path());
    ralph::wal_checkpointer checkpointer(db, tmp.path());
    ralph::net::io_context io;
    ralph::storage_health health{io, db.settings(), ralph::state_dir(tmp.dir.path), [] {}};
    ralph::output_log output{io, db.output_index(), health, tmp.dir.path / "output",
                             [](std::int64_t, std::int64_t) {}};
    // 1,500 loops of 10 attempts with 4 events of 1 KiB each: about 60 MiB to remove.
    add_loops(tmp.path(), 1500, 1000, 10, 10, 100, true);
    {
        SQLite::Database raw(tmp.path().string(), SQLite::OPEN_READWRITE);
        raw.exec(
            "INSERT INTO events (loop_id, attempt_id, ts, kind, text) SELECT loop_id, id, "
            "started_at, 'text', printf('%.1024c', 'x') FROM attempts, (SELECT 1 UNION ALL "
            "SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)");
        raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");  // what gc writes to it, alone
    }
    const auto size_before = fs::file_size(tmp.path());

    ralph::net::thread_pool pool(1);
    const ralph::gc_context ctx{db,
                                output,
                                health,
                                pool,
                                [](std::int64_t) { return false; },
                                [&](std::int64_t id) {
                                    output.forget(id);
                                    return ralph::loop_files{output.file_of(id), "", ""};
                                }};
    const ralph::proto::gc_request request{1, false};
    const std::vector<ralph::proto::budget_use> budgets;
    bool done = false;
    std::uintmax_t largest_wal = 0;
    const fs::path wal = tmp.path().string() + "-wal";
    std::function<void()> look = [&] {
        std::error_code ec;
        largest_wal = std::max(largest_wal, fs::file_size(wal, ec));
        if (!done) ralph::net::post(io, look);
    };
    ralph::proto::gc_result result;
    ralph::net::co_spawn(io, ralph::collect_garbage(request, 1'000'000, budgets, ctx),
                         [&](std::exception_ptr error, ralph::proto::gc_result r) {
                             CHECK_FALSE(error);
                             result = std::move(r);
                             done = true;
                         });
    ralph::net::post(io, look);
    io.run();
    CHECK(result.loop_ids.size() == 1500);
    CHECK(result.attempts == 1500 * 10);
    CHECK(result.events == 1500 * 40);
    CAPTURE(largest_wal);
    CHECK(largest_wal < 16 * 1024 * 1024);
    ralph::checkpoint_wal(tmp.path());
    CAPTURE(size_before);
    CHECK(fs::file_size(tmp.path()) < size_before / 4);
    check_aggregates(tmp.path());
}
