// Agent "aider": one message per run, every confirmation answered yes. The prompt is passed as
// a file (--message-file, same as --message without the argument-length limit). Plain text
// output; aider prints "Tokens: … sent, … received. Cost: $… message, $… session." lines, which
// ralph reads. aider's configuration names variables two ways: the .env files it loads itself
// (~/.env, the repository's top, the workspace, `env-file:`) refer to ${NAME}; and the model it
// uses (--model, else $AIDER_MODEL, else `model:` of .aider.conf.yml in the home, the
// repository's top and the workspace, the last found winning) names a provider,
// "provider/model", whose variables litellm reads: PROVIDER_* (azure/: AZURE_*), bedrock/ the
// AWS credentials, vertex_ai/ VERTEXAI_* and Google's credentials.
#include "daemon/agents/cli_agent.hpp"
#include "daemon/agents/config_text.hpp"

#include <algorithm>
#include <cctype>

namespace ralph {
namespace {

// The variables litellm reads for the provider of `model`, as patterns.
std::vector<std::string> provider_variables(const std::string& model) {
    const auto slash = model.find('/');
    if (slash == std::string::npos || slash == 0) return {};
    std::string provider = model.substr(0, slash);
    for (char& c : provider)
        c = std::isalnum(static_cast<unsigned char>(c))
                ? char(std::toupper(static_cast<unsigned char>(c)))
                : '_';
    if (provider == "BEDROCK" || provider == "BEDROCK_CONVERSE" || provider == "SAGEMAKER")
        return {"AWS_*"};
    if (provider.starts_with("VERTEX_AI")) return {"VERTEXAI_*", "GOOGLE_APPLICATION_CREDENTIALS"};
    if (provider == "OLLAMA_CHAT") return {"OLLAMA_*"};
    // litellm spells some without their underscore: TOGETHERAI_API_KEY, FIREWORKSAI_API_KEY.
    std::vector<std::string> patterns{provider + "_*"};
    std::string joined = provider;
    std::erase(joined, '_');
    if (joined != provider && !joined.empty()) patterns.push_back(joined + "_*");
    return patterns;
}

std::vector<configured_variable> aider_configuration(const config_place& place) {
    const std::filesystem::path home = agent_config::home(place);
    std::vector<std::filesystem::path> dirs;  // where aider looks, in its order
    if (!home.empty()) dirs.push_back(home);
    if (const auto project = agent_config::project_directories(place); !project.empty()) {
        dirs.push_back(project.front());
        if (project.size() > 1) dirs.push_back(project.back());
    }
    std::vector<configured_variable> configured;
    std::string model = place.model;
    if (model.empty()) model = place.variable("AIDER_MODEL");
    const bool model_given = !model.empty();  // the command line and $AIDER_MODEL win
    std::filesystem::path model_file;
    std::string env_file;
    for (const auto& dir : dirs) {
        const std::string conf = agent_config::read_file(dir / ".aider.conf.yml");
        std::string named = config_text::yaml_top_level_value(conf, "model");
        if (!model_given && !named.empty()) {
            model = std::move(named);
            model_file = dir / ".aider.conf.yml";
        }
        if (named = config_text::yaml_top_level_value(conf, "env-file"); !named.empty())
            env_file = std::move(named);
    }
    for (const auto& pattern : provider_variables(model))
        configured.push_back({pattern, model_file.string()});
    std::vector<std::filesystem::path> env_files;
    for (const auto& dir : dirs) env_files.push_back(dir / ".env");
    if (!env_file.empty() && !place.workspace.empty())
        env_files.push_back(place.workspace / env_file);  // relative to where aider runs
    std::vector<std::string> defined;
    for (const auto& file : env_files) {
        const config_text::dotenv_file dotenv =
            config_text::read_dotenv(agent_config::read_file(file));
        std::vector<std::string> referenced;
        for (const auto& name : dotenv.referenced)
            if (std::find(defined.begin(), defined.end(), name) == defined.end())
                referenced.push_back(name);
        agent_config::add(configured, referenced, file);
        defined.insert(defined.end(), dotenv.defined.begin(), dotenv.defined.end());
    }
    return configured;
}

}  // namespace

const agent& aider_agent() {
    static const cli_agent instance({
        .name = "aider",
        .description = "aider: aider --message-file PROMPT --yes-always (plain text)",
        .program = "aider",
        .format = agent_stream::format::text,
        .tokens = true,
        .cost = true,
        .rate_limits = true,
        .prompt_on_stdin = false,
        .private_tmpdir = false,
        .home_state_paths = {".aider"},
        .environment_variables = {"AIDER_*", "OPENAI_*", "ANTHROPIC_*", "OPENROUTER_*", "GEMINI_*",
                                  "DEEPSEEK_*", "GROQ_*", "MISTRAL_*", "OLLAMA_*"},
        .configuration = aider_configuration,
        .arguments =
            [](const invocation_input& input) {
                std::vector<std::string> args{"--message-file", input.prompt_file, "--yes-always"};
                add_model(args, "--model", input.spec);
                return args;
            },
    });
    return instance;
}

}  // namespace ralph
