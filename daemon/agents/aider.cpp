// Agent "aider": one message per run, every confirmation answered yes. The prompt is passed as
// a file (--message-file, same as --message without the argument-length limit). Plain text
// output; aider prints "Tokens: … sent, … received. Cost: $… message, $… session." lines, which
// ralph reads.
#include "daemon/agents/cli_agent.hpp"

namespace ralph {

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
