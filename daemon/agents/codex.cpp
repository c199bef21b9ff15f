// Agent "codex": Codex CLI `exec` with JSON events, approvals and sandbox bypassed (ralph runs
// it unattended; the loop's workspace is the boundary). The prompt is read from stdin ("-"),
// which also keeps codex from waiting for more input.
#include "daemon/agents/cli_agent.hpp"

namespace ralph {

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
