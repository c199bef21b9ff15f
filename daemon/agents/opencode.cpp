// Agent "opencode": `opencode run` with JSON events; the prompt is the last argument. opencode
// leaves a library of several MB in $TMPDIR on every start, so each attempt gets its own.
#include "daemon/agents/cli_agent.hpp"

namespace ralph {

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
