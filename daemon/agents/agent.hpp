// Agent adapters (README, "Agents"): how to invoke each agent CLI non-interactively, which program
// it is, which output format it prints (read by common/agent_stream) and what ralph can learn from
// it. One adapter per agent, one file each; find_agent() is the registry. Adapters are stateless.
#pragma once

#include "common/agent_stream/agent_stream.hpp"
#include "proto/types.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

class env_policy;
struct config_place;         // agent_config.hpp
struct configured_variable;  // agent_config.hpp

// Programs configured for agents instead of a PATH lookup (ralphd --agent-binary NAME=PATH).
using agent_binaries = std::map<std::string, std::string, std::less<>>;

// How to run one attempt.
struct invocation {
    std::vector<std::string> argv;
    bool prompt_on_stdin = true;  // stdin = the prompt file; else /dev/null
};

// What an attempt needs to build its invocation.
struct invocation_input {
    const proto::submit_params& spec;
    const std::string& program;      // the resolved program (find_program)
    const std::string& prompt;       // the full prompt text of this iteration
    const std::string& prompt_file;  // a file holding exactly `prompt`
};

class agent {
  public:
    virtual ~agent() = default;
    virtual std::string_view name() const = 0;
    // A line for `ralphctl agents`.
    virtual std::string_view description() const = 0;
    virtual agent_stream::format output_format() const = 0;
    // Whether ralph reads token counts / cost from this agent's output.
    virtual bool reports_tokens() const = 0;
    virtual bool reports_cost() const = 0;
    // Whether ralph knows how this agent reports rate/usage limits (else: heuristics on text).
    virtual bool detects_rate_limits() const = 0;
    // Whether each attempt gets its own TMPDIR, removed afterwards (for agents that leave files
    // in $TMPDIR on every start).
    virtual bool needs_private_tmpdir() const = 0;
    // Where under $HOME the agent keeps its config, sessions and caches: writable for it in a
    // --sandbox (daemon/process/sandbox), where everything else outside the workspace is not.
    virtual std::vector<std::string> home_state_paths() const = 0;
    // The variables of ralphd's environment the agent reads (its API keys, endpoints, options),
    // as patterns with `*` ("ANTHROPIC_*"): passed to it besides the defaults (environment.hpp).
    virtual std::vector<std::string> environment_variables() const = 0;
    // The variables the agent's own configuration names, read from its config files as it would
    // find them at `place` (agent_config.hpp): passed to it besides environment_variables().
    virtual std::vector<configured_variable> configured_variables(
        const config_place& place) const = 0;
    // The program to run: a name looked up on PATH, or an absolute path. Throws
    // proto::rpc_error(invalid_params) when the spec cannot name one (an empty command template).
    virtual std::string program(const proto::submit_params& spec) const = 0;
    // Throws proto::rpc_error when the invocation cannot be built.
    virtual invocation invoke(const invocation_input& input) const = 0;
};

// Throws proto::rpc_error(agent_unavailable) naming the known agents when `name` is unknown.
const agent& find_agent(std::string_view name);
// Every adapter, in the order `ralphctl agents` lists them.
const std::vector<const agent*>& all_agents();

// The program's absolute path: the configured binary for the agent, else a PATH lookup in
// `search_path`; empty when not found.
std::string locate_program(const agent& adapter, const proto::submit_params& spec,
                           const agent_binaries& binaries, const std::string& search_path);
// Same, but throws proto::rpc_error(agent_unavailable) with what to do when not found.
std::string find_program(const agent& adapter, const proto::submit_params& spec,
                         const agent_binaries& binaries, const std::string& search_path);

// The variables of ralphd's environment the agent of `spec` gets besides those every agent gets:
// its adapter's patterns and what its configuration names, but not what a file it may rewrite
// in its --sandbox names (agent_config.hpp). For env_policy and agent_environment.
std::vector<std::string> agent_variables(const agent& adapter, const proto::submit_params& spec);

// The adapter as agents.list and loop.get describe it, with where its program was found and what
// of ralphd's environment `policy` gives it.
proto::agent_info describe_agent(const agent& adapter, const proto::submit_params& spec,
                                 const agent_binaries& binaries, const std::string& search_path,
                                 const env_policy& policy);

// The agents (one file each).
const agent& claude_agent();
const agent& codex_agent();
const agent& opencode_agent();
const agent& gemini_agent();
const agent& aider_agent();
const agent& kiro_agent();
const agent& command_agent();
const agent& demo_agent();

}  // namespace ralph
