// Agent "kiro": Kiro CLI chat without interaction, every tool trusted; the prompt is the last
// argument. Plain text output.
#include "daemon/agents/cli_agent.hpp"

namespace ralph {

const agent& kiro_agent() {
    static const cli_agent instance({
        .name = "kiro",
        .description = "Kiro CLI: kiro-cli chat --no-interactive --trust-all-tools (plain text)",
        .program = "kiro-cli",
        .format = agent_stream::format::text,
        .tokens = false,
        .cost = false,
        .rate_limits = false,
        .prompt_on_stdin = false,
        .private_tmpdir = false,
        .home_state_paths = {".kiro", ".local/share/kiro-cli"},
        .environment_variables = {"KIRO_*"},
        .configuration = {},
        .arguments =
            [](const invocation_input& input) {
                std::vector<std::string> args{"chat", "--no-interactive", "--trust-all-tools"};
                add_model(args, "--model", input.spec);
                args.push_back(input.prompt);
                return args;
            },
    });
    return instance;
}

}  // namespace ralph
