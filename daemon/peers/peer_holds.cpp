// The holds daemons share (see peer_holds.hpp).
#include "daemon/peers/peer_holds.hpp"

#include "proto/errors.hpp"

#include <algorithm>

namespace ralph {
namespace {

void check_length(const char* what, const std::string& value, std::size_t max) {
    if (value.size() > max)
        throw proto::rpc_error(
            proto::error_kind::invalid_params,
            std::string("a hold's ") + what + " is longer than " + std::to_string(max) + " bytes");
}

}  // namespace

proto::agent_hold hold_as_told(proto::agent_hold hold, const std::string& self) {
    if (hold.origin.empty()) hold.origin = self;
    return hold;
}

proto::agent_hold accepted_peer_hold(proto::agent_hold hold, const std::string& from,
                                     std::int64_t now_ms) {
    check_length("agent", hold.agent, 64);
    check_length("account", hold.account, 64);
    check_length("reason", hold.reason, 1000);
    check_length("origin", hold.origin, 255);
    if (hold.origin.empty()) hold.origin = from;
    if (hold.origin.empty())
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               "a peer's hold names the host whose loop hit the limit (origin)");
    hold.until = std::min(
        hold.until,
        now_ms + std::chrono::duration_cast<std::chrono::milliseconds>(max_peer_hold).count());
    return hold;
}

}  // namespace ralph
