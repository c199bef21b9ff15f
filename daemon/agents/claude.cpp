// Agent "claude": Claude Code in print mode with its stream-json output. The prompt goes on
// stdin (no argument-length limit). Claude Code refuses --dangerously-skip-permissions as root
// unless IS_SANDBOX=1 is in its environment; ralph does not set it (pass --env IS_SANDBOX=1).
// Its settings files (~/.claude/settings.json or $CLAUDE_CONFIG_DIR's, the workspace's
// .claude/settings.json and settings.local.json, /etc/claude-code/managed-settings.json) name
// variables in the shell commands claude runs with its environment (apiKeyHelper and the like);
// on Bedrock or Vertex (CLAUDE_CODE_USE_BEDROCK/_VERTEX, in the environment or a settings
// file's `env`) claude needs that cloud's credentials from the environment.
#include "daemon/agents/cli_agent.hpp"
#include "daemon/agents/config_text.hpp"

#include <cctype>
#include <optional>

namespace ralph {
namespace {

// Claude Code's own reading of a flag variable.
bool is_truthy(std::string value) {
    for (char& c : value) c = char(std::tolower(static_cast<unsigned char>(c)));
    return value == "1" || value == "true" || value == "yes" || value == "on";
}

std::vector<configured_variable> claude_configuration(const config_place& place) {
    std::vector<std::filesystem::path> files;
    std::filesystem::path dir = place.variable("CLAUDE_CONFIG_DIR");
    if (dir.empty() && !agent_config::home(place).empty())
        dir = agent_config::home(place) / ".claude";
    if (!dir.empty()) files.push_back(dir / "settings.json");
    if (!place.workspace.empty()) {
        files.push_back(place.workspace / ".claude" / "settings.json");
        files.push_back(place.workspace / ".claude" / "settings.local.json");
    }
    files.emplace_back("/etc/claude-code/managed-settings.json");
    std::vector<configured_variable> configured;
    // Which cloud, and the file that chose it ("" for the environment).
    std::optional<std::string> bedrock, vertex;
    if (is_truthy(place.variable("CLAUDE_CODE_USE_BEDROCK"))) bedrock = "";
    if (is_truthy(place.variable("CLAUDE_CODE_USE_VERTEX"))) vertex = "";
    for (const auto& file : files) {
        const nlohmann::json settings = agent_config::read_json(file);
        if (!settings.is_object()) continue;
        for (const char* helper :
             {"apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper"})
            if (auto it = settings.find(helper); it != settings.end() && it->is_string())
                agent_config::add(configured,
                                  config_text::dollar_references(it->get_ref<const std::string&>()),
                                  file);
        const auto env = settings.find("env");
        if (env == settings.end() || !env->is_object()) continue;
        auto flag_set = [&](const char* flag) {
            auto it = env->find(flag);
            return it != env->end() && it->is_string() && is_truthy(it->get<std::string>());
        };
        if (!bedrock && flag_set("CLAUDE_CODE_USE_BEDROCK")) bedrock = file.string();
        if (!vertex && flag_set("CLAUDE_CODE_USE_VERTEX")) vertex = file.string();
    }
    // The AWS SDK's credential chain; Google Cloud's credentials and regions.
    if (bedrock) configured.push_back({"AWS_*", *bedrock});
    if (vertex)
        for (const char* pattern : {"CLOUD_ML_REGION", "VERTEX_REGION_*",
                                    "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_*"})
            configured.push_back({pattern, *vertex});
    return configured;
}

}  // namespace

const agent& claude_agent() {
    static const cli_agent instance({
        .name = "claude",
        .description = "Claude Code: claude -p --output-format stream-json",
        .program = "claude",
        .format = agent_stream::format::claude,
        .tokens = true,
        .cost = true,
        .rate_limits = true,
        .prompt_on_stdin = true,
        .private_tmpdir = false,
        .home_state_paths = {".claude", ".claude.json"},
        .environment_variables = {"ANTHROPIC_*", "CLAUDE_*", "DISABLE_*", "MCP_*",
                                  "MAX_THINKING_TOKENS", "MAX_MCP_OUTPUT_TOKENS",
                                  "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "IS_SANDBOX"},
        .configuration = claude_configuration,
        .arguments =
            [](const invocation_input& input) {
                std::vector<std::string> args{"-p", "--output-format", "stream-json", "--verbose",
                                              "--dangerously-skip-permissions"};
                add_model(args, "--model", input.spec);
                return args;
            },
    });
    return instance;
}

}  // namespace ralph
