// Agent "gemini": Gemini CLI in headless mode with stream-json output and every tool allowed
// (--yolo). The prompt is the -p argument. Gemini writes error reports into $TMPDIR, so each
// attempt gets its own.
#include "daemon/agents/cli_agent.hpp"

namespace ralph {

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
                                  "GOOGLE_APPLICATION_CREDENTIALS"},
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
