// What a daemon accepts of a peer's usage-limit hold (daemon/peers/peer_holds): a hostile or
// broken peer cannot hold an agent for longer than max_peer_hold, pass a hold as this daemon's
// own, or bloat the ledger with long names.
#include "daemon/peers/peer_holds.hpp"
#include "proto/errors.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

namespace {

constexpr std::int64_t now = 1'000'000;
constexpr std::int64_t week_and_a_day =
    std::chrono::duration_cast<std::chrono::milliseconds>(ralph::max_peer_hold).count();

}  // namespace

TEST_CASE("a peer's hold ends no later than max_peer_hold from now, and names its origin") {
    const ralph::proto::agent_hold forever{"claude", "default", now * 1000, "limit", "build2"};
    const auto accepted = ralph::accepted_peer_hold(forever, "build1", now);
    CHECK(accepted.until == now + week_and_a_day);
    CHECK(accepted.origin == "build2");  // where the limit was hit, not the link it came by

    const ralph::proto::agent_hold soon{"claude", "default", now + 5000, "limit", ""};
    const auto from_link = ralph::accepted_peer_hold(soon, "build1", now);
    CHECK(from_link.until == now + 5000);
    CHECK(from_link.origin == "build1");  // never taken for this daemon's own

    CHECK_THROWS_AS(ralph::accepted_peer_hold(soon, "", now), ralph::proto::rpc_error);
}

TEST_CASE("a peer's hold with names too long is refused") {
    ralph::proto::agent_hold hold{"claude", "default", now + 5000, "limit", "build2"};
    CHECK_NOTHROW(ralph::accepted_peer_hold(hold, "b", now));
    for (auto make : {+[](ralph::proto::agent_hold& h) { h.agent = std::string(65, 'x'); },
                      +[](ralph::proto::agent_hold& h) { h.account = std::string(65, 'x'); },
                      +[](ralph::proto::agent_hold& h) { h.reason = std::string(1001, 'x'); },
                      +[](ralph::proto::agent_hold& h) { h.origin = std::string(256, 'x'); }}) {
        ralph::proto::agent_hold bloated = hold;
        make(bloated);
        CHECK_THROWS_AS(ralph::accepted_peer_hold(bloated, "b", now), ralph::proto::rpc_error);
    }
}

TEST_CASE("peers are told a hold recorded here as coming from this daemon") {
    const ralph::proto::agent_hold own{"codex", "default", now, "limit", ""};
    CHECK(ralph::hold_as_told(own, "laptop").origin == "laptop");
    const ralph::proto::agent_hold learnt{"codex", "default", now, "limit", "build2"};
    CHECK(ralph::hold_as_told(learnt, "laptop").origin == "build2");
}
