// Agent "opencode": `opencode run` with JSON events; the prompt is the last argument. opencode
// leaves a library of several MB in $TMPDIR on every start, so each attempt gets its own. Its
// config files name variables as {env:NAME} (a provider's apiKey, an MCP server's headers): the
// global ones in ~/.config/opencode, $OPENCODE_CONFIG, the project's opencode.json(c) and
// .opencode/opencode.json(c) from the workspace up to the top of its repository, and the
// inline $OPENCODE_CONFIG_CONTENT.
#include "daemon/agents/cli_agent.hpp"
#include "daemon/agents/config_text.hpp"

namespace ralph {
namespace {

std::vector<configured_variable> opencode_configuration(const config_place& place) {
    std::vector<std::filesystem::path> files;
    if (const std::filesystem::path global = agent_config::config_home(place); !global.empty())
        for (const char* name : {"config.json", "opencode.json", "opencode.jsonc"})
            files.push_back(global / "opencode" / name);
    if (const std::string custom = place.variable("OPENCODE_CONFIG"); !custom.empty())
        files.emplace_back(custom);
    for (const auto& dir : agent_config::project_directories(place))
        for (const char* name : {"opencode.json", "opencode.jsonc", ".opencode/opencode.json",
                                 ".opencode/opencode.jsonc"})
            files.push_back(dir / name);
    std::vector<configured_variable> configured;
    for (const auto& file : files)
        agent_config::add(configured,
                          config_text::opencode_references(agent_config::read_file(file)), file);
    agent_config::add(configured,
                      config_text::opencode_references(place.variable("OPENCODE_CONFIG_CONTENT")),
                      {});
    return configured;
}

}  // namespace

const agent& opencode_agent() {
    static const cli_agent instance({
        .name = "opencode",
        .description = "opencode: opencode run --format json",
        .program = "opencode",
        .format = agent_stream::format::opencode,
        .tokens = true,
        .cost = true,
        .rate_limits = true,
        .prompt_on_stdin = false,
        .private_tmpdir = true,
        .home_state_paths = {".local/share/opencode", ".local/state/opencode", ".config/opencode",
                             ".cache/opencode"},
        .environment_variables = {"OPENCODE_*", "ANTHROPIC_*", "OPENAI_*", "OPENROUTER_*",
                                  "GEMINI_*", "GOOGLE_GENERATIVE_AI_API_KEY", "GROQ_*", "MISTRAL_*",
                                  "DEEPSEEK_*", "XAI_*"},
        .configuration = opencode_configuration,
        .arguments =
            [](const invocation_input& input) {
                std::vector<std::string> args{"run", "--format", "json"};
                add_model(args, "--model", input.spec);
                args.push_back(input.prompt);
                return args;
            },
    });
    return instance;
}

}  // namespace ralph
