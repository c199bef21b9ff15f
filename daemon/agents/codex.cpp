// Agent "codex": Codex CLI `exec` with JSON events, approvals and sandbox bypassed (ralph runs
// it unattended; the loop's workspace is the boundary). The prompt is read from stdin ("-"),
// which also keeps codex from waiting for more input. Its configuration names variables in
// $CODEX_HOME/config.toml: a model provider's env_key (codex fails with "Missing environment
// variable" without it: OpenRouter, Azure, company gateways) and env_http_headers, an MCP
// server's bearer_token_env_var, env_vars and env_http_headers.
#include "daemon/agents/cli_agent.hpp"
#include "daemon/agents/config_text.hpp"

namespace ralph {
namespace {

std::vector<configured_variable> codex_configuration(const config_place& place) {
    std::filesystem::path dir = place.variable("CODEX_HOME");
    if (dir.empty()) {
        const std::filesystem::path home = agent_config::home(place);
        if (home.empty()) return {};
        dir = home / ".codex";
    }
    const std::filesystem::path file = dir / "config.toml";
    std::vector<std::string> names;
    for (const auto& [path, value] : config_text::toml_strings(agent_config::read_file(file))) {
        // [model_providers.ID] and [mcp_servers.ID]: path is {table, ID, field[, header]}.
        if (path.size() < 3) continue;
        const bool provider = path[0] == "model_providers";
        const bool server = path[0] == "mcp_servers";
        const std::string& field = path[2];
        if (path.size() == 4 && (provider || server) && field == "env_http_headers")
            names.push_back(value);
        else if (path.size() == 3 &&
                 ((provider && field == "env_key") ||
                  (server && (field == "bearer_token_env_var" || field == "env_vars"))))
            names.push_back(value);
    }
    std::vector<configured_variable> configured;
    agent_config::add(configured, names, file);
    return configured;
}

}  // namespace

const agent& codex_agent() {
    static const cli_agent instance({
        .name = "codex",
        .description = "OpenAI Codex CLI: codex exec --json",
        .program = "codex",
        .format = agent_stream::format::codex,
        .tokens = true,
        .cost = false,
        .rate_limits = true,
        .prompt_on_stdin = true,
        .private_tmpdir = false,
        .home_state_paths = {".codex"},
        .environment_variables = {"OPENAI_*", "CODEX_*", "AZURE_OPENAI_*"},
        .configuration = codex_configuration,
        .arguments =
            [](const invocation_input& input) {
                std::vector<std::string> args{"exec", "--json",
                                              "--dangerously-bypass-approvals-and-sandbox",
                                              "--skip-git-repo-check"};
                add_model(args, "-m", input.spec);
                args.emplace_back("-");
                return args;
            },
    });
    return instance;
}

}  // namespace ralph
