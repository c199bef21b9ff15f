// Agent "gemini": Gemini CLI in headless mode with stream-json output and every tool allowed
// (--yolo). The prompt is the -p argument. Gemini writes error reports into $TMPDIR, so each
// attempt gets its own. Its endpoint is GOOGLE_GEMINI_BASE_URL (GOOGLE_VERTEX_BASE_URL on
// Vertex): without it gemini calls Google's servers, "fetch failed" where they cannot be
// reached. Its settings.json files name variables as $NAME or ${NAME} in their values: the
// user's (~/.gemini, or $GEMINI_CLI_HOME/.gemini), the workspace's .gemini/, and the system's
// ($GEMINI_CLI_SYSTEM_SETTINGS_PATH, $GEMINI_CLI_SYSTEM_DEFAULTS_PATH, else /etc/gemini-cli).
#include "daemon/agents/cli_agent.hpp"
#include "daemon/agents/config_text.hpp"

namespace ralph {
namespace {

void add_string_references(const nlohmann::json& value, std::vector<std::string>& names,
                           int depth = 0) {
    if (depth > 64) return;
    if (value.is_string()) {
        for (auto& name : config_text::dollar_references(value.get_ref<const std::string&>()))
            names.push_back(std::move(name));
    } else if (value.is_structured()) {
        for (const auto& item : value) add_string_references(item, names, depth + 1);
    }
}

std::vector<configured_variable> gemini_configuration(const config_place& place) {
    std::vector<std::filesystem::path> files;
    std::filesystem::path home = place.variable("GEMINI_CLI_HOME");
    if (home.empty()) home = agent_config::home(place);
    if (!home.empty()) files.push_back(home / ".gemini" / "settings.json");
    if (!place.workspace.empty()) files.push_back(place.workspace / ".gemini" / "settings.json");
    const std::string system = place.variable("GEMINI_CLI_SYSTEM_SETTINGS_PATH");
    files.emplace_back(system.empty() ? "/etc/gemini-cli/settings.json" : system);
    const std::string defaults = place.variable("GEMINI_CLI_SYSTEM_DEFAULTS_PATH");
    files.emplace_back(defaults.empty() ? "/etc/gemini-cli/system-defaults.json" : defaults);
    std::vector<configured_variable> configured;
    for (const auto& file : files) {
        std::vector<std::string> names;
        add_string_references(agent_config::read_json(file), names);
        agent_config::add(configured, names, file);
    }
    return configured;
}

}  // namespace

const agent& gemini_agent() {
    static const cli_agent instance({
        .name = "gemini",
        .description = "Gemini CLI: gemini -p --output-format stream-json --yolo",
        .program = "gemini",
        .format = agent_stream::format::gemini,
        .tokens = true,
        .cost = false,
        .rate_limits = true,
        .prompt_on_stdin = false,
        .private_tmpdir = true,
        .home_state_paths = {".gemini"},
        .environment_variables = {"GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_*", "GOOGLE_GENAI_*",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GEMINI_BASE_URL",
                                  "GOOGLE_VERTEX_BASE_URL"},
        .configuration = gemini_configuration,
        .arguments =
            [](const invocation_input& input) {
                std::vector<std::string> args{"-p", input.prompt, "--yolo", "--output-format",
                                              "stream-json"};
                add_model(args, "-m", input.spec);
                return args;
            },
    });
    return instance;
}

}  // namespace ralph
