// Agent "claude": Claude Code in print mode with its stream-json output. The prompt goes on
// stdin (no argument-length limit). Claude Code refuses --dangerously-skip-permissions as root
// unless IS_SANDBOX=1 is in its environment; ralph does not set it (pass --env IS_SANDBOX=1).
#include "daemon/agents/cli_agent.hpp"

namespace ralph {

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
