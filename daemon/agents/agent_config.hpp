// What an agent's own configuration asks of its environment: the variables its config files name
// (codex's model provider `env_key`, opencode's {env:NAME}, claude's apiKeyHelper...), read from
// the files the agent itself reads, as the agent would find them (each adapter's file says which
// files and how: adapter::configured_variables). The env policy passes them to the agent besides
// its adapter's own variables (process/environment.hpp), so that an agent configured as its
// users configure it gets what its configuration refers to, and nothing else of ralphd's.
//
// One exception, for --sandbox (SECURITY.md): a file the agent can rewrite there — in its
// workspace, or under its home state paths, which the sandbox leaves writable — would let it
// choose which of ralphd's secrets it gets. What such a file names is not passed; it is reported
// withheld, with the `--env-policy +NAME` that passes it.
#pragma once

#include "daemon/agents/agent.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

class env_policy;

// Where an agent looks for its configuration.
struct config_place {
    std::filesystem::path workspace;  // empty: the user's configuration only (agents.list)
    std::string model;                // the loop's --model
    // A variable of the agent's environment (HOME, XDG_CONFIG_HOME, CODEX_HOME...): the loop's
    // --env, else ralphd's; "" when unset.
    std::function<std::string(std::string_view)> variable;
};

// A variable an agent's configuration names.
struct configured_variable {
    std::string name;  // a name, or a pattern with `*` (claude on Bedrock: AWS_*)
    // The file naming it; "" when a variable's value does (OPENCODE_CONFIG_CONTENT).
    std::string file;
    bool operator==(const configured_variable&) const = default;
};

// The place of a loop's agent: its workspace, its --env over ralphd's environment.
config_place place_of(const proto::submit_params& spec);

// By name, what of ralphd's environment the agent gets, and what its configuration names that it
// does not get (agents.list, loop.get).
proto::agent_environment describe_environment(const agent& adapter,
                                              const proto::submit_params& spec,
                                              const env_policy& policy);

// For the adapters' configured_variables.
namespace agent_config {

// The contents of a config file; "" when it is missing, not a regular file, unreadable, or
// larger than any configuration (1 MiB).
std::string read_file(const std::filesystem::path& path);
// $HOME, and $XDG_CONFIG_HOME (else ~/.config), of the agent's environment.
std::filesystem::path home(const config_place& place);
std::filesystem::path config_home(const config_place& place);
// The workspace and the directories above it up to the top of its git repository (the one with
// .git), outermost first; the workspace alone outside a repository; none without a workspace.
std::vector<std::filesystem::path> project_directories(const config_place& place);
// A JSON config file (comments allowed); null when it is missing or not JSON.
nlohmann::json read_json(const std::filesystem::path& path);
// Appends each of `names` that can name a variable, as named by `file`.
void add(std::vector<configured_variable>& out, const std::vector<std::string>& names,
         const std::filesystem::path& file);

}  // namespace agent_config
}  // namespace ralph
