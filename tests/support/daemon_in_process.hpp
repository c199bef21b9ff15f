// A real ralphd in the test's process, for the unit tests of the API's handlers: built as
// ralphd's main builds it, but not started (no socket, no recovery, no peers), its database and
// state in a temporary directory and its wall clock a test clock (debug.clock). Its scheduler is
// paused, so that no agent ever starts: a submitted loop stays queued. The methods are called
// through its registry, as the server dispatches a request, on its io_context (which runs only
// while a call is in progress).
#pragma once

#include "daemon/daemon.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/rpc/session.hpp"
#include "tests/support/files.hpp"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ralph::test {

// What a WebSocket session is asked by the handlers of loop.tail, events.subscribe and
// peer.link, recorded.
class recording_session : public tail_sink {
  public:
    std::vector<tail_request> tails;
    int event_subscriptions = 0;
    int hold_subscriptions = 0;

    void add_tail(const tail_request& request) override { tails.push_back(request); }
    void on_output(std::int64_t, std::int64_t) override {}
    void on_state(const proto::loop_info&) override {}
    void on_removed(std::int64_t) override {}
    void subscribe_events() override { ++event_subscriptions; }
    void on_event(const proto::loop_info&) override {}
    void subscribe_holds() override { ++hold_subscriptions; }
    void on_hold(const proto::agent_hold&) override {}
};

class daemon_in_process {
  public:
    static constexpr std::int64_t start_ms = 1'795'352'400'000;  // 2026-11-22T13:00:00Z

    daemon_in_process() : daemon_(io_, options_in(dir_.path)) {
        std::filesystem::create_directory(workspace());
        result("scheduler.set", {{"paused", true}});
    }

    // A directory for the loops' workspaces (not a git work tree).
    std::filesystem::path workspace() const { return dir_.path / "work"; }
    const rpc::method_registry& registry() const { return daemon_.registry(); }

    // The response to a call of `method` with `params` (none when null) on a connection
    // described by `ctx`: the response object, with its "result" or its "error".
    nlohmann::json call(const std::string& method, const nlohmann::json& params = nullptr,
                        rpc::call_context ctx = {}) {
        nlohmann::json request{{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}};
        if (!params.is_null()) request["params"] = params;
        const std::string body = request.dump();
        std::optional<std::optional<std::string>> reply;
        std::exception_ptr failure;
        net::co_spawn(io_, daemon_.registry().handle_text(body, ctx),
                      [&](std::exception_ptr e, std::optional<std::string> text) {
                          failure = e;
                          reply = std::move(text);
                      });
        io_.restart();
        while (!reply && !failure) io_.run_one();
        if (failure) std::rethrow_exception(failure);
        if (!*reply) throw std::logic_error(method + ": no reply to a call with an id");
        return nlohmann::json::parse(**reply);
    }

    // The result of the call; throws (failing the test with the error) when it was refused.
    nlohmann::json result(const std::string& method, const nlohmann::json& params = nullptr,
                          rpc::call_context ctx = {}) {
        nlohmann::json response = call(method, params, ctx);
        if (!response.contains("result"))
            throw std::runtime_error(method + " failed: " + response.dump());
        return response["result"];
    }

    // The error of the call; throws when it succeeded.
    nlohmann::json error(const std::string& method, const nlohmann::json& params = nullptr,
                         rpc::call_context ctx = {}) {
        nlohmann::json response = call(method, params, ctx);
        if (!response.contains("error"))
            throw std::runtime_error(method + " did not fail: " + response.dump());
        return response["error"];
    }

    // The daemon's clock now (the test clock runs from start_ms; debug.clock shifts it).
    std::int64_t clock_ms() { return result("debug.clock", nlohmann::json::object())["now_ms"]; }

    // A loop submitted in workspace() that runs `/bin/true`, with `more` params; its id.
    std::int64_t submit(const nlohmann::json& more = nlohmann::json::object()) {
        nlohmann::json params{{"workspace", workspace().string()},
                              {"command", "/bin/true"},
                              {"prompt", "do the work"}};
        params.update(more);
        return result("loop.submit", params)["id"].get<std::int64_t>();
    }

  private:
    static daemon_options options_in(const std::filesystem::path& root) {
        spdlog::set_level(spdlog::level::warn);  // not the migrations and submits of every test
        daemon_options options;
        options.socket_path = root / "ralphd.sock";  // named in daemon.info; never bound
        options.db_path = root / "state" / "ralph.db";
        std::filesystem::create_directory(root / "state");
        options.test_clock = true;
        options.test_clock_start_ms = start_ms;
        options.cgroups = false;
        options.host_name = "unit";
        return options;
    }

    temp_dir dir_;
    net::io_context io_;
    ralphd daemon_;
};

}  // namespace ralph::test
