// The JSON-RPC dispatcher against the examples of the JSON-RPC 2.0 specification
// (tests/fixtures/jsonrpc-spec-vectors.json) and ralph's own rules: batch bound, typed params,
// internal errors that do not leak. Also the subscriber hub's bookkeeping.
#include "daemon/rpc/registry.hpp"
#include "daemon/server/subscriber_hub.hpp"
#include "proto/errors.hpp"
#include "proto/fields.hpp"
#include "tests/support/run_awaitable.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

using nlohmann::json;
using ralph::proto::any_caller;
using ralph::rpc::call_context;
using ralph::rpc::method_registry;

namespace {

// The registry's reply to `body`, its dispatch run to its end.
std::optional<std::string> handle_text(const method_registry& registry, std::string_view body,
                                       call_context& ctx) {
    return ralph::test::run_awaitable(registry.handle_text(body, ctx));
}

std::int64_t subtract(const json& params) {
    if (params.is_array())
        return params.at(0).get<std::int64_t>() - params.at(1).get<std::int64_t>();
    return params.at("minuend").get<std::int64_t>() - params.at("subtrahend").get<std::int64_t>();
}

// The methods the specification's examples call; "foobar" and "foo.get" stay unknown.
method_registry spec_registry() {
    method_registry registry;
    registry.add("subtract", any_caller,
                 [](const json& params, call_context&) { return json(subtract(params)); });
    registry.add("sum", any_caller, [](const json& params, call_context&) {
        std::int64_t total = 0;
        for (const auto& term : params) total += term.get<std::int64_t>();
        return json(total);
    });
    registry.add("update", any_caller, [](const json&, call_context&) { return json(nullptr); });
    registry.add("notify_hello", any_caller,
                 [](const json&, call_context&) { return json(nullptr); });
    registry.add("get_data", any_caller, [](const json&, call_context&) {
        return json::array({"hello", 5});
    });
    return registry;
}

json load_vectors() {
    std::ifstream file(std::string(RALPH_FIXTURES_DIR) + "/jsonrpc-spec-vectors.json");
    REQUIRE(file.good());
    return json::parse(file);
}

bool is_standard_code(int code) { return code == -32700 || code == -32600 || code == -32601; }

// Compares one response object: jsonrpc, id, result, and for errors the code (plus the message
// of the standard codes, whose text the specification fixes).
void check_response(const json& actual, const json& expected) {
    CHECK(actual.at("jsonrpc") == "2.0");
    CHECK(actual.at("id") == expected.at("id"));
    if (expected.contains("result")) {
        CHECK_FALSE(actual.contains("error"));
        CHECK(actual.at("result") == expected.at("result"));
        return;
    }
    CHECK_FALSE(actual.contains("result"));
    const int code = expected.at("error").at("code").get<int>();
    CHECK(actual.at("error").at("code") == code);
    if (is_standard_code(code))
        CHECK(actual.at("error").at("message") == expected.at("error").at("message"));
}

// Batch responses may come in any order: sorted by their serialization, id first.
std::vector<json> sorted(const json& responses) {
    std::vector<json> items(responses.begin(), responses.end());
    std::sort(items.begin(), items.end(), [](const json& a, const json& b) {
        return a.at("id").dump() + a.dump() < b.at("id").dump() + b.dump();
    });
    return items;
}

json call(const method_registry& registry, const std::string& body) {
    call_context ctx;
    auto reply = handle_text(registry, body, ctx);
    REQUIRE(reply.has_value());
    return json::parse(*reply);
}

struct typed_params {
    std::int64_t count = 0;
};

void from_json(const json& j, typed_params& p) {
    ralph::proto::read_required(ralph::proto::params_object(j), "count", p.count);
}

// A method of the tests' own: typed params, an integer result.
struct count_method {
    static constexpr const char* name = "count";
    using request = typed_params;
    using result = std::int64_t;
    static constexpr ralph::proto::method_policy policy = any_caller;
};

class recording_sink : public ralph::tail_sink {
  public:
    void add_tail(const ralph::tail_request&) override {}
    void on_output(std::int64_t loop_id, std::int64_t end) override {
        outputs.emplace_back(loop_id, end);
    }
    void on_state(const ralph::proto::loop_info& loop) override { states.push_back(loop.id); }
    void on_removed(std::int64_t loop_id) override { removed.push_back(loop_id); }
    void subscribe_events() override {}
    void on_event(const ralph::proto::loop_info& loop) override { events.push_back(loop.id); }
    void subscribe_holds() override {}
    void on_hold(const ralph::proto::agent_hold& hold) override { holds.push_back(hold.agent); }

    std::vector<std::pair<std::int64_t, std::int64_t>> outputs;
    std::vector<std::int64_t> states;
    std::vector<std::int64_t> removed;
    std::vector<std::int64_t> events;
    std::vector<std::string> holds;
};

}  // namespace

TEST_CASE("jsonrpc: every example of the JSON-RPC 2.0 specification gets the specified reply") {
    const method_registry registry = spec_registry();
    const json vectors = load_vectors();
    REQUIRE(vectors.size() == 15);

    for (const auto& vector : vectors) {
        CAPTURE(vector.at("name").get<std::string>());
        call_context ctx;
        const auto reply = handle_text(registry, vector.at("request").get<std::string>(), ctx);
        const json& expected = vector.at("response");

        if (expected.is_null()) {
            CHECK_FALSE(reply.has_value());
            continue;
        }
        REQUIRE(reply.has_value());
        const json actual = json::parse(*reply);
        if (!expected.is_array()) {
            REQUIRE(actual.is_object());
            check_response(actual, expected);
            continue;
        }
        REQUIRE(actual.is_array());
        REQUIRE(actual.size() == expected.size());
        const bool any_order = vector.value("response_order_insensitive", false);
        const std::vector<json> actual_items =
            any_order ? sorted(actual) : std::vector<json>(actual.begin(), actual.end());
        const std::vector<json> expected_items =
            any_order ? sorted(expected) : std::vector<json>(expected.begin(), expected.end());
        for (std::size_t i = 0; i < expected_items.size(); ++i)
            check_response(actual_items[i], expected_items[i]);
    }
}

TEST_CASE("jsonrpc: a batch over the limit gets one Invalid Request error naming the limit") {
    method_registry registry = spec_registry();
    registry.set_limits({.max_batch = 3});
    const json one = {{"jsonrpc", "2.0"}, {"method", "get_data"}, {"id", 1}};

    const json reply = call(registry, json::array({one, one, one, one}).dump());
    REQUIRE(reply.is_object());
    CHECK(reply.at("id").is_null());
    CHECK(reply.at("error").at("code") == -32600);
    CHECK(reply.at("error").at("message") == "Invalid Request");
    CHECK(reply.at("error").at("data").get<std::string>().find("at most 3") != std::string::npos);

    const json at_limit = call(registry, json::array({one, one, one}).dump());
    CHECK(at_limit.is_array());
    CHECK(at_limit.size() == 3);
}

TEST_CASE("jsonrpc: params of the wrong type give Invalid params naming the field") {
    method_registry registry;
    registry.add<count_method>([](const typed_params& p, call_context&) { return p.count; });

    const json wrong_type =
        call(registry, R"({"jsonrpc":"2.0","method":"count","params":{"count":"3"},"id":7})");
    CHECK(wrong_type.at("id") == 7);
    CHECK(wrong_type.at("error").at("code") == -32602);
    CHECK(wrong_type.at("error").at("message").get<std::string>().find("params.count") !=
          std::string::npos);

    const json missing = call(registry, R"({"jsonrpc":"2.0","method":"count","params":{},"id":8})");
    CHECK(missing.at("error").at("code") == -32602);
    CHECK(missing.at("error").at("message") == "params.count is required");

    const json positional =
        call(registry, R"({"jsonrpc":"2.0","method":"count","params":[3],"id":9})");
    CHECK(positional.at("error").at("code") == -32602);

    const json good =
        call(registry, R"({"jsonrpc":"2.0","method":"count","params":{"count":3},"id":10})");
    CHECK(good.at("result") == 3);
}

TEST_CASE("jsonrpc: a number beyond a double's range is Invalid params naming its field") {
    method_registry registry;
    registry.add<count_method>([](const typed_params& p, call_context&) { return p.count; });

    const json in_params =
        call(registry, R"({"jsonrpc":"2.0","id":3,"method":"count","params":{"count":1e400}})");
    CHECK(in_params.at("id") == 3);
    CHECK(in_params.at("error").at("code") == -32602);
    CHECK(in_params.at("error").at("message").get<std::string>().starts_with("params.count:"));

    const json in_id = call(
        registry, R"({"jsonrpc":"2.0","id":-)" + std::string(500, '9') + R"(,"method":"count"})");
    CHECK(in_id.at("id").is_null());
    CHECK(in_id.at("error").at("message").get<std::string>().starts_with("id:"));

    const json in_batch =
        call(registry, R"([{"jsonrpc":"2.0","id":1,"method":"count","params":{"count":1}},)"
                       R"({"jsonrpc":"2.0","id":2,"method":"count","params":{"n":[0,1,2e999]}}])");
    CHECK(in_batch.at("error").at("code") == -32602);
    CHECK(in_batch.at("error").at("message").get<std::string>().starts_with("[1].params.n[2]:"));
}

TEST_CASE("fields: loop ids are positive and numbers are checked against their range") {
    std::int64_t id = 0;
    CHECK_THROWS_WITH(ralph::proto::read_loop_id(json{{"id", 0}}, "id", id),
                      doctest::Contains("params.id: must be in 1..9223372036854775807"));
    ralph::proto::read_loop_id(json{{"id", 42}}, "id", id);
    CHECK(id == 42);
    CHECK_THROWS_WITH(ralph::proto::check_range("timeout_s", 1e308, 0.0, 604800.0),
                      "params.timeout_s: must be in 0..604800, not 1e+308");
    CHECK_THROWS(ralph::proto::check_range("delay_s", std::nan(""), 0.0, 1.0));
    CHECK_NOTHROW(ralph::proto::check_range("delay_s", 1.0, 0.0, 1.0));
}

TEST_CASE("jsonrpc: an integer beyond int64 is Invalid params naming the field, never wrapped") {
    // Found by tests/fuzz/fuzz_jsonrpc: 9223372036854775808 and up are unsigned in nlohmann, and
    // read_field gave them to the handler wrapped to negative numbers.
    method_registry registry;
    registry.add<count_method>([](const typed_params& p, call_context&) { return p.count; });

    const auto reply_to = [&registry](const std::string& count) {
        return call(registry, R"({"jsonrpc":"2.0","method":"count","params":{"count":)" + count +
                                  R"(},"id":1})");
    };
    for (const std::string count : {"9223372036854775808", "18446744073709551615"}) {
        CAPTURE(count);
        const json reply = reply_to(count);
        CHECK(reply.at("error").at("code") == -32602);
        CHECK(reply.at("error").at("message") ==
              "params.count: " + count + " is out of range (at most 9223372036854775807)");
    }
    for (const std::string count : {"9223372036854775807", "-9223372036854775808"}) {
        CAPTURE(count);
        CHECK(reply_to(count).at("result").dump() == count);
    }
}

TEST_CASE(
    "jsonrpc: a handler failing with an unexpected exception gives Internal error without its "
    "text") {
    method_registry registry;
    registry.add("explode", any_caller, [](const json&, call_context&) -> json {
        throw std::runtime_error("secret detail /home/user/.ralph");
    });

    call_context ctx;
    const auto reply =
        handle_text(registry, R"({"jsonrpc":"2.0","method":"explode","id":"x"})", ctx);
    REQUIRE(reply.has_value());
    CHECK(reply->find("secret") == std::string::npos);
    const json response = json::parse(*reply);
    CHECK(response.at("id") == "x");
    CHECK(response.at("error").at("code") == -32603);
    CHECK(response.at("error").at("message") == "Internal error");
    CHECK_FALSE(response.at("error").contains("data"));
}

// A handler's coroutine that waits (as loop.submit waits for its checks on the pool) before it
// answers `value`, or fails for a negative one.
ralph::awaitable<json> after_a_pause(std::int64_t value) {
    ralph::net::steady_timer pause(co_await ralph::net::this_coro::executor,
                                   std::chrono::milliseconds(1));
    co_await pause.async_wait(ralph::use_awaitable);
    if (value < 0)
        throw ralph::proto::rpc_error(ralph::proto::error_kind::invalid_params, "negative");
    co_return json(value);
}

TEST_CASE("jsonrpc: a handler that waits answers as the others do, in its place in a batch") {
    method_registry registry = spec_registry();
    registry.add("later", any_caller, [](const json& params, call_context&) {
        return after_a_pause(params.at(0).get<std::int64_t>());
    });
    const json replies = call(registry, R"([
        {"jsonrpc":"2.0","method":"later","params":[7],"id":1},
        {"jsonrpc":"2.0","method":"later","params":[-1],"id":2},
        {"jsonrpc":"2.0","method":"sum","params":[2,3],"id":3},
        {"jsonrpc":"2.0","method":"later","params":[8]}])");
    REQUIRE(replies.size() == 3);
    CHECK(replies[0] == json{{"jsonrpc", "2.0"}, {"result", 7}, {"id", 1}});
    CHECK(replies[1].at("error").at("code") == -32602);
    CHECK(replies[1].at("error").at("message") == "negative");
    CHECK(replies[2].at("result") == 5);
}

TEST_CASE("jsonrpc: a notification never gets a reply, not even for an error") {
    method_registry registry;
    registry.add("explode", any_caller,
                 [](const json&, call_context&) -> json { throw std::runtime_error("boom"); });
    registry.add("refuse", any_caller, [](const json&, call_context&) -> json {
        throw ralph::proto::rpc_error(ralph::proto::error_kind::loop_not_found, "no loop 4");
    });
    call_context ctx;
    CHECK_FALSE(handle_text(registry, R"({"jsonrpc":"2.0","method":"explode"})", ctx).has_value());
    CHECK_FALSE(handle_text(registry, R"({"jsonrpc":"2.0","method":"refuse"})", ctx).has_value());
    CHECK_FALSE(handle_text(registry, R"({"jsonrpc":"2.0","method":"missing","params":[1]})", ctx)
                    .has_value());
}

TEST_CASE("jsonrpc: an application error keeps its code, its message and its data") {
    method_registry registry;
    registry.add("find", any_caller, [](const json&, call_context&) -> json {
        throw ralph::proto::rpc_error(ralph::proto::error_kind::loop_not_found, "no loop with id 4",
                                      json{{"id", 4}});
    });
    const json reply = call(registry, R"({"jsonrpc":"2.0","method":"find","id":1})");
    CHECK(reply.at("error").at("code") == -32001);
    CHECK(reply.at("error").at("message") == "no loop with id 4");
    CHECK(reply.at("error").at("data") == json{{"id", 4}});
}

TEST_CASE(
    "jsonrpc: a standard error thrown by a handler keeps the standard message, its detail in "
    "data") {
    method_registry registry;
    registry.add("strict", any_caller, [](const json&, call_context&) -> json {
        throw ralph::proto::rpc_error(ralph::proto::error_kind::invalid_request, "batch too deep");
    });
    const json reply = call(registry, R"({"jsonrpc":"2.0","method":"strict","id":1})");
    CHECK(reply.at("error").at("code") == -32600);
    CHECK(reply.at("error").at("message") == "Invalid Request");
    CHECK(reply.at("error").at("data") == "batch too deep");
}

TEST_CASE("jsonrpc: malformed request objects are Invalid Request with a null id") {
    const method_registry registry = spec_registry();
    const char* bodies[] = {
        R"({"jsonrpc":"1.0","method":"get_data","id":1})",
        R"({"method":"get_data","id":1})",
        R"({"jsonrpc":"2.0","id":1})",
        R"({"jsonrpc":"2.0","method":"get_data","params":"text","id":1})",
        R"({"jsonrpc":"2.0","method":"get_data","params":3,"id":1})",
        R"({"jsonrpc":"2.0","method":"get_data","id":{"a":1}})",
        R"({"jsonrpc":"2.0","method":"get_data","id":[1]})",
        R"({"jsonrpc":"2.0","method":"get_data","id":true})",
        R"("just a string")",
        R"(null)",
    };
    for (const char* body : bodies) {
        CAPTURE(body);
        const json reply = call(registry, body);
        CHECK(reply.at("id").is_null());
        CHECK(reply.at("error").at("code") == -32600);
        CHECK(reply.at("error").at("message") == "Invalid Request");
        CHECK(reply.at("error").at("data").is_string());
    }
}

TEST_CASE("jsonrpc: ids may be strings, numbers or null and come back unchanged") {
    const method_registry registry = spec_registry();
    CHECK(call(registry, R"({"jsonrpc":"2.0","method":"get_data","id":"abc"})").at("id") == "abc");
    CHECK(call(registry, R"({"jsonrpc":"2.0","method":"get_data","id":-12})").at("id") == -12);
    CHECK(call(registry, R"({"jsonrpc":"2.0","method":"get_data","id":1.5})").at("id") == 1.5);
    const json null_id = call(registry, R"({"jsonrpc":"2.0","method":"get_data","id":null})");
    CHECK(null_id.at("id").is_null());
    CHECK(null_id.at("result") == json::array({"hello", 5}));
}

TEST_CASE("jsonrpc: unparsable input is a Parse error with the position in data") {
    const method_registry registry = spec_registry();
    for (const char* body :
         {"", "{", "[1,", "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\",\"id\":1}"}) {
        CAPTURE(body);
        const json reply = call(registry, body);
        CHECK(reply.at("id").is_null());
        CHECK(reply.at("error").at("code") == -32700);
        CHECK(reply.at("error").at("message") == "Parse error");
        CHECK(reply.at("error").at("data").get<std::string>().find("json.exception") ==
              std::string::npos);
    }
}

TEST_CASE("jsonrpc: a number too large for a double is Invalid params, not an exception") {
    // Found by tests/fuzz/fuzz_jsonrpc: nlohmann reports the overflow as out_of_range, which
    // escaped handle_text, and the daemon closed the connection without a reply.
    const method_registry registry = spec_registry();
    const std::string huge_id =
        R"({"jsonrpc":"2.0","method":"get_data","id":)" + std::string(400, '9') + "}";
    for (const auto& sample :
         {std::pair{
              std::string(R"({"jsonrpc":"2.0","method":"subtract","params":[1e400,1],"id":1})"),
              std::string("params[0]:")},
          std::pair{std::string("2222E2222"), std::string("a number:")},
          std::pair{huge_id, std::string("id:")}}) {
        // Not a structured binding: Clang cannot capture one in CAPTURE's lambda.
        const std::string& body = sample.first;
        const std::string& field = sample.second;
        CAPTURE(body);
        const json reply = call(registry, body);
        CHECK(reply.at("id").is_null());
        CHECK(reply.at("error").at("code") == -32602);
        CHECK(reply.at("error").at("message").get<std::string>().starts_with(field));
    }
}

TEST_CASE(
    "jsonrpc: a body with a number too large for a double that is not JSON either is a "
    "Parse error") {
    // Found by tests/fuzz/fuzz_jsonrpc: the parse stops at the number, before the rest shows that
    // the body is not JSON at all.
    const method_registry registry = spec_registry();
    for (const char* body : {R"({"params":{"max_iterations":-1e400,"priority":-9)",
                             R"([1e400,2e500,})", R"({"id":1,"a":1e400 "b":2})", "[1e400-5]",
                             // What follows an overflowing number, read as 0, is no number
                             // either (fuzz_jsonrpc, twice).
                             "86231.57e3083769313486231.57e30833333", "1.5e999.5e999"}) {
        CAPTURE(body);
        const json reply = call(registry, body);
        CHECK(reply.at("id").is_null());
        CHECK(reply.at("error").at("code") == -32700);
    }
    const json valid = call(registry, R"({"jsonrpc":"2.0","id":7,"method":"subtract",)"
                                      R"("params":{"a":[1,-1e400,{"b":2e999}]}})");
    CHECK(valid.at("id") == 7);
    CHECK(valid.at("error").at("code") == -32602);
    CHECK(valid.at("error").at("message").get<std::string>().starts_with("params.a[1]:"));
}

TEST_CASE("jsonrpc: a result holding invalid UTF-8 is still sent, with the bad bytes replaced") {
    method_registry registry;
    registry.add("bytes", any_caller,
                 [](const json&, call_context&) { return json(std::string("ok\xff")); });
    const json reply = call(registry, R"({"jsonrpc":"2.0","method":"bytes","id":1})");
    CHECK(reply.at("result") == "ok\xEF\xBF\xBD");
}

TEST_CASE("jsonrpc: the handler sees the call context of its connection") {
    method_registry registry;
    registry.add("who", any_caller,
                 [](const json&, call_context& ctx) { return json(ctx.session != nullptr); });
    recording_sink sink;
    call_context ws_ctx{&sink};
    const auto reply = handle_text(registry, R"({"jsonrpc":"2.0","method":"who","id":1})", ws_ctx);
    REQUIRE(reply.has_value());
    CHECK(json::parse(*reply).at("result") == true);
    CHECK(call(registry, R"({"jsonrpc":"2.0","method":"who","id":1})").at("result") == false);
}

TEST_CASE("jsonrpc: registering a method twice is a programming error") {
    method_registry registry;
    registry.add("once", any_caller, [](const json&, call_context&) { return json(1); });
    CHECK_THROWS_AS(
        registry.add("once", any_caller, [](const json&, call_context&) { return json(2); }),
        std::logic_error);
}

TEST_CASE("jsonrpc: a notification from the daemon has no id") {
    const json n = ralph::rpc::make_notification("loop.state", {{"id", 3}});
    CHECK(n == json{{"jsonrpc", "2.0"}, {"method", "loop.state"}, {"params", {{"id", 3}}}});
}

// Sink a watches loop 1; sink b loops 1 and 2.
struct hub_with_two_sinks {
    ralph::subscriber_hub hub;
    recording_sink a;
    recording_sink b;
    hub_with_two_sinks() {
        hub.join(1, &a);
        hub.join(1, &b);
        hub.join(2, &b);
    }
};

TEST_CASE_FIXTURE(hub_with_two_sinks,
                  "subscriber hub: only the sinks of a loop hear about it, until they leave") {
    hub.output_committed(1, 100);
    ralph::proto::loop_info loop;
    loop.id = 2;
    hub.state_changed(loop);
    CHECK(a.outputs == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 100}});
    CHECK(b.outputs == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 100}});
    CHECK(a.states.empty());
    CHECK(b.states == std::vector<std::int64_t>{2});

    hub.leave(1, &a);
    hub.leave_all(&b);
    hub.output_committed(1, 200);
    hub.state_changed(loop);
    CHECK(a.outputs.size() == 1);
    CHECK(b.outputs.size() == 1);
    CHECK(b.states.size() == 1);
}

TEST_CASE_FIXTURE(hub_with_two_sinks,
                  "subscriber hub: a removed loop ends its subscriptions, and only its own") {
    hub.loop_removed(1);
    CHECK(a.removed == std::vector<std::int64_t>{1});
    CHECK(b.removed == std::vector<std::int64_t>{1});
    // Nobody watches loop 1 any more (a new loop may get its id); loop 2 is still watched.
    hub.output_committed(1, 100);
    hub.output_committed(2, 100);
    CHECK(a.outputs.empty());
    CHECK(b.outputs == std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 100}});
}

TEST_CASE_FIXTURE(
    hub_with_two_sinks,
    "subscriber hub: an events sink hears every loop's state changes, until it leaves") {
    recording_sink events;
    CHECK_FALSE(hub.watched(3));
    hub.join_events(&events);
    CHECK(hub.watched(3));  // the daemon reads a loop's new state for it
    ralph::proto::loop_info loop;
    for (std::int64_t id : {1, 2, 3}) {
        loop.id = id;
        hub.state_changed(loop);
    }
    CHECK(events.events == std::vector<std::int64_t>{1, 2, 3});
    CHECK(events.states.empty());  // not a tail of any loop
    CHECK(a.states == std::vector<std::int64_t>{1});
    CHECK(a.events.empty());
    hub.output_committed(3, 10);
    CHECK(events.outputs.empty());

    hub.leave_all(&events);
    CHECK_FALSE(hub.watched(3));
    hub.state_changed(loop);
    CHECK(events.events.size() == 3);
}

TEST_CASE_FIXTURE(hub_with_two_sinks,
                  "subscriber hub: a peer's link hears the holds taken, nothing else, until it "
                  "leaves") {
    recording_sink link;
    hub.join_holds(&link);
    CHECK_FALSE(hub.watched(3));
    ralph::proto::loop_info loop;
    loop.id = 1;
    hub.state_changed(loop);
    hub.hold_taken({"claude", "default", 1000, "limit", ""});
    CHECK(link.holds == std::vector<std::string>{"claude"});
    CHECK(link.events.empty());
    CHECK(link.states.empty());
    CHECK(a.holds.empty());
    hub.leave_all(&link);
    hub.hold_taken({"codex", "default", 1000, "limit", ""});
    CHECK(link.holds.size() == 1);
}

TEST_CASE("subscriber hub: a sink removed while the hub notifies is not called afterwards") {
    ralph::subscriber_hub hub;
    struct leaving_sink : recording_sink {
        ralph::subscriber_hub* hub = nullptr;
        recording_sink* other = nullptr;
        void on_output(std::int64_t loop_id, std::int64_t end) override {
            recording_sink::on_output(loop_id, end);
            hub->leave_all(other);
            hub->leave_all(this);
        }
    };
    recording_sink other;
    leaving_sink first;
    first.hub = &hub;
    first.other = &other;
    hub.join(1, &first);
    hub.join(1, &other);

    hub.output_committed(1, 10);
    // The set is ordered by address; whichever came first, `other` is called at most before
    // `first` removed it, and nobody is called after leaving.
    CHECK(first.outputs.size() == 1);
    CHECK(other.outputs.size() <= 1);
    hub.output_committed(1, 20);
    CHECK(first.outputs.size() == 1);
    CHECK(other.outputs.size() <= 1);
}
