#include "daemon/agents/agent.hpp"

#include "daemon/agents/agent_config.hpp"

#include "common/paths.hpp"
#include "proto/errors.hpp"

#include <filesystem>

namespace ralph {

const std::vector<const agent*>& all_agents() {
    static const std::vector<const agent*> agents{
        &claude_agent(), &codex_agent(), &opencode_agent(), &gemini_agent(),
        &aider_agent(),  &kiro_agent(),  &command_agent(),  &demo_agent()};
    return agents;
}

const agent& find_agent(std::string_view name) {
    std::string known;
    for (const agent* candidate : all_agents()) {
        if (candidate->name() == name) return *candidate;
        known += (known.empty() ? "" : ", ") + std::string(candidate->name());
    }
    throw proto::rpc_error(proto::error_kind::agent_unavailable,
                           "unknown agent '" + std::string(name) + "' (known: " + known + ")");
}

std::string locate_program(const agent& adapter, const proto::submit_params& spec,
                           const agent_binaries& binaries, const std::string& search_path) {
    std::string program = adapter.program(spec);
    if (auto configured = binaries.find(adapter.name()); configured != binaries.end())
        program = configured->second;
    // A relative path names a program in the workspace, where the agent runs.
    return paths::find_executable(program, search_path, spec.workspace).string();
}

std::string find_program(const agent& adapter, const proto::submit_params& spec,
                         const agent_binaries& binaries, const std::string& search_path) {
    std::string found = locate_program(adapter, spec, binaries, search_path);
    if (!found.empty()) return found;
    std::string program = adapter.program(spec);
    if (auto configured = binaries.find(adapter.name()); configured != binaries.end())
        throw proto::rpc_error(proto::error_kind::agent_unavailable,
                               "agent " + std::string(adapter.name()) + ": configured program " +
                                   configured->second + " is not an executable file");
    throw proto::rpc_error(proto::error_kind::agent_unavailable,
                           "agent " + std::string(adapter.name()) + ": program '" + program +
                               "' not found on the daemon's PATH (" + search_path +
                               "); install it, or start ralphd with --agent-binary " +
                               std::string(adapter.name()) + "=/path/to/" + program);
}

}  // namespace ralph

namespace ralph {

proto::agent_info describe_agent(const agent& adapter, const proto::submit_params& spec,
                                 const agent_binaries& binaries, const std::string& search_path,
                                 const env_policy& policy) {
    proto::agent_info info;
    info.name = adapter.name();
    info.description = adapter.description();
    info.output_format = agent_stream::to_string(adapter.output_format());
    info.structured_output = adapter.output_format() != agent_stream::format::text;
    info.tokens = adapter.reports_tokens();
    info.cost = adapter.reports_cost();
    info.rate_limit_detection = adapter.detects_rate_limits();
    info.environment = describe_environment(adapter, spec, policy);
    try {
        auto configured = binaries.find(adapter.name());
        info.program = configured != binaries.end() ? configured->second : adapter.program(spec);
        info.path = locate_program(adapter, spec, binaries, search_path);
    } catch (const proto::rpc_error&) {
        // "command" without a template names no program.
    }
    return info;
}

}  // namespace ralph
