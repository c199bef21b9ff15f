// agents.list: every adapter, where its program is on the daemon's PATH (or configured), what
// ralph reads from its output, and what of ralphd's environment it gets (by name).
#include "daemon/agents/agent.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/process/process.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "proto/methods.hpp"

namespace ralph::rpc {

void register_agent_methods(method_registry& registry, method_services& services) {
    registry.add<proto::method::agents_list>([&services](const proto::no_params&, call_context&) {
        const std::string search_path = search_path_with({});
        proto::agent_list list;
        for (const agent* adapter : all_agents())
            list.agents.push_back(
                describe_agent(*adapter, {}, services.binaries, search_path, services.agent_env));
        for (auto& name : environment_names())
            if (services.agent_env.passes(name, {})) list.environment.push_back(std::move(name));
        return list;
    });
}

}  // namespace ralph::rpc
