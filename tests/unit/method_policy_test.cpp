// Who may call each method of the API, and on what (proto::method_policy, enforced by
// rpc::method_registry): the full list as ralphd registers it, so that a method added without its
// policy decided here fails; and each refusal as a client gets it.
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "tests/support/daemon_in_process.hpp"
#include "tests/support/run_awaitable.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <tuple>
#include <type_traits>

using nlohmann::json;
using ralph::rpc::call_context;
using ralph::test::daemon_in_process;
using ralph::test::recording_session;

namespace {

// A method's policy as the list below spells it.
struct decided {
    bool needs_session = false;
    bool peer_only = false;
    bool web = true;
    bool operator==(const decided&) const = default;
};

constexpr decided anyone{};
constexpr decided session{.needs_session = true};

// Every method ralphd registers (debug.clock with --test-clock), with its policy.
const std::map<std::string, decided> every_method{
    {"daemon.info", anyone},
    {"daemon.shutdown", anyone},
    {"loop.submit", anyone},
    {"loop.list", anyone},
    {"loop.get", anyone},
    {"loop.cancel", anyone},
    {"loop.pause", anyone},
    {"loop.resume", anyone},
    {"loop.retry", anyone},
    {"loop.extend", anyone},
    {"loop.remove", anyone},
    {"loop.merge", anyone},
    {"loop.pr", anyone},
    {"loop.iterations", anyone},
    {"loop.diff", anyone},
    {"loop.steer", anyone},
    {"loop.events", anyone},
    {"loop.output", anyone},
    {"loop.tail", session},
    {"events.subscribe", session},
    {"agents.list", anyone},
    {"scheduler.get", anyone},
    {"scheduler.set", anyone},
    {"budget.get", anyone},
    {"budget.set", anyone},
    {"notify.test", anyone},
    {"web.info", anyone},
    {"web.rotate_token", anyone},
    {"web.login_code", anyone},
    {"debug.clock", anyone},
    {"history.report", anyone},
    {"history.gc", anyone},
    {"peer.link", {.needs_session = true, .peer_only = true, .web = false}},
    {"peer.hold", {.peer_only = true, .web = false}},
};

decided decided_of(ralph::proto::method_policy policy) {
    return {policy.needs_session, policy.peer_only, policy.web_allowed()};
}

// The policies of proto/methods.hpp's list of methods, by name.
template <typename... Methods>
std::map<std::string, decided> typed_policies(std::type_identity<std::tuple<Methods...>>) {
    return {{Methods::name, decided_of(Methods::policy)}...};
}

const std::string session_needed =
    " sends notifications and needs a WebSocket session (GET /rpc with Upgrade: websocket)";

}  // namespace

TEST_CASE("method policy: every method ralphd registers is listed with the policy decided") {
    daemon_in_process daemon;
    std::map<std::string, decided> registered;
    for (const auto& [name, policy] : daemon.registry().policies())
        registered.emplace(name, decided_of(policy));
    // (CAPTURE names no structured binding: Clang refuses a lambda capturing one.)
    for (const auto& method : registered) {
        const std::string& name = method.first;
        CAPTURE(name);
        REQUIRE_MESSAGE(every_method.contains(name), "a method without its policy listed here");
        CHECK(method.second == every_method.at(name));
    }
    for (const auto& method : every_method) {
        const std::string& name = method.first;
        CAPTURE(name);
        CHECK_MESSAGE(registered.contains(name), "listed here, not registered by ralphd");
    }
    // The typed methods the client calls are those ralphd registers, under the same policy.
    CHECK(typed_policies(std::type_identity<ralph::proto::method::all_methods>{}) == registered);
}

TEST_CASE("method policy: each refusal, whatever the params, and before the handler runs") {
    daemon_in_process daemon;
    recording_session ws;
    for (const auto& method : daemon.registry().policies()) {
        const std::string& name = method.first;
        const ralph::proto::method_policy policy = method.second;
        CAPTURE(name);
        if (policy.needs_session) {
            const json refused = daemon.error(name);
            CHECK(refused["code"] == -32602);
            CHECK(refused["message"] == name + session_needed);
        }
        if (!policy.web_allowed()) {
            const call_context web_session{&ws, true};
            for (const call_context& ctx : {call_context{.web = true}, web_session}) {
                const json refused = daemon.error(name, json::object(), ctx);
                CHECK(refused["code"] == -32601);
                CHECK(refused["message"] == "Method not found");
                CHECK(refused["data"] ==
                      name +
                          " is not available to a web client (ralphd --listen): it is for "
                          "ralphd --peer's link, which comes over ssh to the Unix socket");
            }
        }
    }
    // Nothing of the refused calls reached a handler.
    CHECK(ws.tails.empty());
    CHECK(ws.hold_subscriptions == 0);
    CHECK(daemon.result("budget.get")["holds"].empty());
}

TEST_CASE("method policy: a refused notification is silent, as any notification") {
    daemon_in_process daemon;
    ralph::rpc::call_context plain;
    const auto reply = ralph::test::run_awaitable(
        daemon.registry().handle_text(R"({"jsonrpc":"2.0","method":"events.subscribe"})", plain));
    CHECK_FALSE(reply);
}

TEST_CASE("method policy: a session gets what needs one, a web client all but the peers'") {
    daemon_in_process daemon;
    recording_session ws;
    const call_context on_session{&ws};
    const call_context web_session{&ws, true};

    const std::int64_t id = daemon.submit();
    const json tail = daemon.result("loop.tail", {{"id", id}}, web_session);
    CHECK(tail["id"] == id);
    CHECK(tail["state"] == "queued");
    REQUIRE(ws.tails.size() == 1);
    CHECK(ws.tails[0].loop_id == id);

    CHECK(daemon.result("events.subscribe", nullptr, web_session)["subscribed"] == true);
    CHECK(ws.event_subscriptions == 1);
    CHECK(daemon.result("daemon.info", nullptr, call_context{.web = true})["host"] == "unit");

    // A peer's link on the Unix socket: its holds are learnt, it hears this daemon's.
    json hold{{"agent", "claude"},
              {"until", ralph::text::format_iso8601(daemon_in_process::start_ms + 3'600'000)},
              {"reason", "claude usage limit"}};
    const json linked =
        daemon.result("peer.link", {{"host", "build1"}, {"holds", {hold}}}, on_session);
    CHECK(linked["host"] == "unit");
    REQUIRE(linked["holds"].size() == 1);
    CHECK(linked["holds"][0]["origin"] == "build1");
    CHECK(ws.hold_subscriptions == 1);
    // peer.hold needs no session: a hold not longer than the one held is no news.
    hold["origin"] = "build1";
    CHECK(daemon.result("peer.hold", hold)["changed"] == false);
}
