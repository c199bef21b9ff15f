// The API's handlers in-process (daemon/rpc/*_methods.cpp), in the manner of pueue's message
// handlers: ralphd's real registry and handlers over a real SQLite file in a temporary directory
// and a test clock (tests/support/daemon_in_process.hpp), each method called as the server
// dispatches it, its result and the state it left checked; no socket, no binary, no agent runs.
#include "common/text.hpp"
#include "tests/support/daemon_in_process.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using nlohmann::json;
using ralph::test::daemon_in_process;

namespace {

// The loops' ids and states as loop.list gives them, newest first.
json listed(daemon_in_process& daemon) {
    json states = json::array();
    const json list = daemon.result("loop.list");
    for (const json& loop : list["loops"]) states.push_back({loop["id"], loop["state"]});
    return states;
}

std::int64_t ms_of(const json& time) {
    return ralph::text::parse_iso8601_or_zero(time.get<std::string>());
}

}  // namespace

TEST_CASE("handlers: loop.submit queues the loop it checked; loop.get and loop.list read it") {
    daemon_in_process daemon;
    const json submitted = daemon.result("loop.submit", {{"workspace", daemon.workspace()},
                                                         {"command", "/bin/true {prompt}"},
                                                         {"prompt", "do the work"},
                                                         {"name", "first"},
                                                         {"max_iterations", 4}});
    CHECK(submitted["created"] == true);
    CHECK(submitted["state"] == "queued");
    CHECK(submitted["name"] == "first");
    CHECK(submitted["max_iterations"] == 4);
    CHECK(ms_of(submitted["created_at"]) >= daemon_in_process::start_ms);
    CHECK(ms_of(submitted["created_at"]) <= daemon.clock_ms());
    const std::int64_t id = submitted["id"];

    const json got = daemon.result("loop.get", {{"id", id}});
    CHECK(got["id"] == id);
    CHECK(got["workspace"] == std::filesystem::canonical(daemon.workspace()).string());
    CHECK(got["agent_info"]["name"] == "command");

    const std::int64_t second = daemon.submit({{"name", "second"}});
    CHECK(listed(daemon) == json{{second, "queued"}, {id, "queued"}});
    const json page = daemon.result("loop.list", {{"limit", 1}});
    CHECK(page["total"] == 2);
    CHECK(page["loops"].size() == 1);
    CHECK(daemon.result("daemon.info")["loops_by_state"] == json{{"queued", 2}});
}

TEST_CASE("handlers: a submit retried with its key gets its loop; a dry run creates nothing") {
    daemon_in_process daemon;
    const std::int64_t id = daemon.submit({{"idempotency_key", "k1"}});
    const json again = daemon.result(
        "loop.submit",
        {{"workspace", daemon.workspace()}, {"command", "/bin/true"}, {"idempotency_key", "k1"}});
    CHECK(again["created"] == false);
    CHECK(again["id"] == id);
    REQUIRE(again["warnings"].size() == 1);
    CHECK(again["warnings"][0].get<std::string>().find("idempotency key 'k1'") !=
          std::string::npos);

    const json dry = daemon.result(
        "loop.submit",
        {{"workspace", daemon.workspace()}, {"command", "/bin/true"}, {"dry_run", true}});
    CHECK(dry["created"] == false);
    CHECK(dry["id"] == 0);
    CHECK(dry["capacity"]["scheduler_held"] == true);  // the fixture's scheduler is paused
    CHECK(listed(daemon) == json{{id, "queued"}});
}

TEST_CASE("handlers: a refused submit says why with its code and stores nothing") {
    daemon_in_process daemon;
    const std::string workspace = daemon.workspace().string();
    auto refusal = [&](const json& params) {
        const json error = daemon.error("loop.submit", params);
        CAPTURE(error);
        return std::pair{error["code"].get<int>(), error["message"].get<std::string>()};
    };
    auto [code, message] = refusal({{"workspace", workspace + "/missing"}, {"command", "x"}});
    CHECK(code == -32003);
    CHECK(message.find(workspace + "/missing") != std::string::npos);

    std::tie(code, message) = refusal({{"command", "/bin/true"}});
    CHECK(code == -32003);  // none given
    CHECK(message.find("workspace") != std::string::npos);

    std::tie(code, message) = refusal({{"workspace", 7}, {"command", "/bin/true"}});
    CHECK(code == -32602);
    CHECK(message.find("workspace") != std::string::npos);

    std::tie(code, message) =
        refusal({{"workspace", workspace}, {"command", "/bin/true"}, {"max_iterations", -1}});
    CHECK(code == -32602);
    CHECK(message.find("max_iterations") != std::string::npos);

    std::tie(code, message) = refusal({{"workspace", workspace}, {"agent", "nope"}});
    CHECK(code == -32004);
    CHECK(message.find("nope") != std::string::npos);

    std::tie(code, message) = refusal({{"workspace", workspace}, {"command", "/no/such/program"}});
    CHECK(code == -32004);

    CHECK(daemon.result("loop.list")["total"] == 0);
}

TEST_CASE("handlers: loop.cancel ends a queued loop, once; pause and resume take it out and back") {
    daemon_in_process daemon;
    const std::int64_t cancelled = daemon.submit();
    const std::int64_t paused = daemon.submit();

    CHECK(daemon.result("loop.cancel", {{"id", cancelled}})["state"] == "cancelled");
    const json again = daemon.error("loop.cancel", {{"id", cancelled}});
    CHECK(again["code"] == -32002);
    CHECK(again["message"] == "cannot cancel loop 1: it has already ended (cancelled)");

    const json pause = daemon.result("loop.pause", {{"id", paused}});
    CHECK(pause["state"] == "paused");
    CHECK(pause["stop_reason"] == "paused by the user");
    CHECK(daemon.error("loop.pause", {{"id", cancelled}})["code"] == -32002);
    CHECK(daemon.result("loop.resume", {{"id", paused}})["state"] == "queued");
    const json not_paused = daemon.error("loop.resume", {{"id", paused}});
    CHECK(not_paused["code"] == -32002);
    CHECK(not_paused["message"] == "cannot resume loop 2: it is queued, not paused");

    CHECK(listed(daemon) == json{{paused, "queued"}, {cancelled, "cancelled"}});
    CHECK(daemon.result("daemon.info")["loops_by_state"] == json{{"queued", 1}, {"cancelled", 1}});
}

TEST_CASE("handlers: loop.steer queues a hint for the next iteration, not for an ended loop") {
    daemon_in_process daemon;
    const std::int64_t id = daemon.submit();
    const json steered = daemon.result("loop.steer", {{"id", id}, {"text", "try the other way"}});
    CHECK(steered["id"] == id);
    CHECK(steered["steering_id"] == 1);
    CHECK(steered["next_iteration"] == 1);
    CHECK(daemon.result("loop.steer", {{"id", id}, {"text", "and test it"}})["steering_id"] == 2);

    CHECK(daemon.error("loop.steer", {{"id", id}, {"text", "  "}})["code"] == -32602);
    CHECK(daemon.error("loop.steer", {{"id", 99}, {"text", "hello"}})["code"] == -32001);
    daemon.result("loop.cancel", {{"id", id}});
    CHECK(daemon.error("loop.steer", {{"id", id}, {"text", "too late"}})["code"] == -32002);
}

TEST_CASE("handlers: budget.set changes the global budgets that budget.get reports") {
    daemon_in_process daemon;
    const json before = daemon.result("budget.get");
    CHECK(before["limits"]["iterations_per_hour"] == 0);
    CHECK(before["use"].empty());
    CHECK(ms_of(before["now"]) >= daemon_in_process::start_ms);

    const json set =
        daemon.result("budget.set", {{"iterations_per_hour", 2}, {"cost_per_day_usd", 5}});
    CHECK(set["limits"]["iterations_per_hour"] == 2);
    CHECK(set["limits"]["cost_per_day_usd"] == 5.0);
    REQUIRE(set["use"].size() == 2);
    CHECK(set["use"][0]["name"] == "iterations_per_hour");
    CHECK(set["use"][0]["used"] == 0.0);
    CHECK(daemon.result("budget.get")["limits"] == set["limits"]);

    // Out of range: nothing changes.
    CHECK(daemon.error("budget.set", {{"iterations_per_hour", -1}})["code"] == -32602);
    CHECK(daemon.error("budget.set", {{"tokens_per_day", "many"}})["code"] == -32602);
    CHECK(daemon.result("budget.get")["limits"] == set["limits"]);

    // A loop's own budgets come with it.
    const std::int64_t id = daemon.submit({{"iterations_per_day", 7}});
    const json with_loop = daemon.result("budget.get", {{"id", id}});
    CHECK(with_loop["use"].back()["loop_id"] == id);
    CHECK(with_loop["use"].back()["limit"] == 7.0);
    CHECK(daemon.error("budget.get", {{"id", 99}})["code"] == -32001);
}

TEST_CASE("handlers: daemon.info, scheduler.get/set and debug.clock") {
    daemon_in_process daemon;
    const json info = daemon.result("daemon.info");
    CHECK(info["host"] == "unit");
    CHECK(info["account"] == "default");
    CHECK(info["max_concurrent"] == 1);
    CHECK(info["storage"]["state"] == "ok");
    CHECK(info["peers"].empty());
    CHECK(info["loops_by_state"].empty());

    const json scheduler = daemon.result("scheduler.set", {{"max_concurrent", 3}});
    CHECK(scheduler["max_concurrent"] == 3);
    CHECK(scheduler["paused"] == true);  // left as it was
    CHECK(daemon.result("daemon.info")["max_concurrent"] == 3);
    CHECK(daemon.error("scheduler.set", {{"max_concurrent", 0}})["code"] == -32602);
    CHECK(daemon.result("scheduler.get")["max_concurrent"] == 3);

    const std::int64_t before = daemon.clock_ms();
    const json moved = daemon.result("debug.clock", {{"advance_ms", 3'600'000}});
    CHECK(moved["now_ms"].get<std::int64_t>() >= before + 3'600'000);
    CHECK(daemon.clock_ms() >= before + 3'600'000);
}

TEST_CASE("handlers: bad params name the field; unknown loops and methods their own codes") {
    daemon_in_process daemon;
    const json wrong_type = daemon.error("loop.get", {{"id", "seven"}});
    CHECK(wrong_type["code"] == -32602);
    CHECK(wrong_type["message"].get<std::string>().find("id") != std::string::npos);
    CHECK(daemon.error("loop.get")["code"] == -32602);  // id is required
    CHECK(daemon.error("loop.cancel", json::array({1}))["code"] == -32602);

    const json missing = daemon.error("loop.get", {{"id", 99}});
    CHECK(missing["code"] == -32001);
    CHECK(missing["message"] == "no loop with id 99");
    CHECK(daemon.error("loop.pause", {{"id", 99}})["code"] == -32001);
    CHECK(daemon.error("loop.resume", {{"id", 99}})["code"] == -32001);
    CHECK(daemon.error("loop.iterations", {{"id", 99}})["code"] == -32001);

    const json unknown = daemon.error("loop.nope");
    CHECK(unknown["code"] == -32601);
    CHECK(unknown["data"] == "no method named 'loop.nope'");
}
