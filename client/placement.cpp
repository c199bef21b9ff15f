// The placement rule of `submit --host auto` (see placement.hpp).
#include "client/placement.hpp"

#include <tuple>

namespace ralph::client {
namespace {

// The order of preference, compared member by member: the greater is the better host.
auto placement_rank(const placement_offer& offer) {
    const proto::host_capacity& room = offer.capacity;
    return std::tuple(offer.has_loop, !room.scheduler_held, room.free_slots, -room.queued,
                      !room.agent_held);
}

}  // namespace

std::optional<std::size_t> choose_host(const std::vector<std::optional<placement_offer>>& offers) {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < offers.size(); ++i)
        if (offers[i] && (!best || placement_rank(*offers[i]) > placement_rank(*offers[*best])))
            best = i;
    return best;
}

}  // namespace ralph::client
