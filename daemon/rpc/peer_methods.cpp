// peer.link and peer.hold: the methods a peer's link calls (ralphd --peer on the other
// machine, daemon/peers/peer_link) to join its ledger of usage-limit holds to this daemon's.
#include "daemon/admission/admission.hpp"
#include "daemon/clock.hpp"
#include "daemon/peers/peer_holds.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/rpc/session.hpp"
#include "daemon/store/store.hpp"
#include "proto/methods.hpp"

namespace ralph::rpc {

void register_peer_methods(method_registry& registry, method_services& services) {
    using proto::error_kind;
    using proto::rpc_error;
    // The caller's holds are learnt first, then the session hears this daemon's ledger: its
    // own holds are not sent back to it. (Its policy has the registry refuse a call without a
    // session, or from a web client.)
    registry.add<proto::method::peer_link>([&services](const proto::peer_link_request& request,
                                                       call_context& ctx) {
        if (request.holds.size() > max_peer_holds)
            throw rpc_error(error_kind::invalid_params,
                            "peer.link: more than " + std::to_string(max_peer_holds) + " holds");
        for (const auto& hold : request.holds) services.learn_hold(hold, request.host);
        ctx.session->subscribe_holds();
        return proto::peer_link_result{services.identity.host, services.holds_in_force()};
    });
    registry.add<proto::method::peer_hold>(
        [&services](const proto::agent_hold& hold, call_context&) {
            return proto::peer_hold_result{services.learn_hold(hold, "")};
        });
}

}  // namespace ralph::rpc
