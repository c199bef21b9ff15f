// The usage-limit holds that daemons share (ralphd --peer): what this daemon tells its peers
// of its own holds, and what it accepts of theirs. Used by the link it keeps to each peer
// (peer_link) and by the methods its peers' links call (rpc/peer_methods: peer.link,
// peer.hold).
#pragma once

#include "proto/daemon_api.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ralph {

// The longest a peer's hold may last from now: a usage limit resets within a week (weekly
// limits are the longest the agents have). A longer one is shortened to it.
inline constexpr std::chrono::hours max_peer_hold{8 * 24};

// The most holds a peer's link may bring at once (peer.link): a ledger holds one per agent and
// account, a few in practice.
inline constexpr std::size_t max_peer_holds = 1000;

// A hold of this daemon's ledger as its peers are told it: recorded here (no origin), it
// comes from `self`, this daemon's name.
proto::agent_hold hold_as_told(proto::agent_hold hold, const std::string& self);

// A hold a peer sent, as this daemon records it: its origin is `from` (the peer's name) when
// the peer left it empty, and it ends no later than max_peer_hold after now_ms. Throws
// proto::rpc_error(invalid_params) for one without origin (and `from` empty) or whose names are
// too long (an agent, an account above 64 bytes, a reason above 1000, an origin above 255).
proto::agent_hold accepted_peer_hold(proto::agent_hold hold, const std::string& from,
                                     std::int64_t now_ms);

}  // namespace ralph
