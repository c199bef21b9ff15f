// Agent "demo": the bundled ralph-demo-agent (demo/), used by the quick start. It is looked up
// next to the ralphd executable first (build tree or install prefix), then on PATH.
#include "daemon/agents/cli_agent.hpp"

#include <unistd.h>

#include <filesystem>

namespace ralph {
namespace {

constexpr const char* demo_program = "ralph-demo-agent";

std::string demo_agent_program() {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        // Installed: same bin directory. Build tree: <build>/daemon/ralphd → <build>/demo/.
        for (auto dir : {self.parent_path(), self.parent_path().parent_path() / "demo"}) {
            auto candidate = dir / demo_program;
            if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
        }
    }
    return demo_program;
}

}  // namespace

const agent& demo_agent() {
    static const cli_agent instance({
        .name = "demo",
        .description =
            "the bundled demo agent: appends to demo-progress.md, completes on its 3rd run",
        .program = demo_agent_program(),
        .format = agent_stream::format::text,
        .tokens = false,
        .cost = false,
        .rate_limits = false,
        .prompt_on_stdin = true,
        .private_tmpdir = false,
        .home_state_paths = {},
        .environment_variables = {},
        .configuration = {},
        .arguments = [](const invocation_input&) { return std::vector<std::string>{}; },
    });
    return instance;
}

}  // namespace ralph
