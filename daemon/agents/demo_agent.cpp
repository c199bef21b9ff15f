// Agent "demo": the bundled ralph-demo-agent (demo/), used by the quick start. It is looked up
// next to the ralphd executable first (build tree or install prefix), then on PATH.
#include "common/paths.hpp"
#include "daemon/agents/agent.hpp"
#include "proto/errors.hpp"

#include <unistd.h>

#include <filesystem>

namespace ralph {
namespace {

constexpr const char* demo_program = "ralph-demo-agent";

std::filesystem::path find_demo_agent(const std::string& search_path) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        // Installed: same bin directory. Build tree: <build>/daemon/ralphd → <build>/demo/.
        for (auto dir : {self.parent_path(), self.parent_path().parent_path() / "demo"}) {
            auto candidate = dir / demo_program;
            if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        }
    }
    return paths::find_executable(demo_program, search_path);
}

class demo_agent_impl : public agent {
public:
    std::string_view name() const override { return "demo"; }

    void validate(const proto::submit_params&, const std::string& search_path) const override {
        if (find_demo_agent(search_path).empty())
            throw proto::rpc_error(proto::error_kind::agent_unavailable,
                                   std::string("the demo agent ") + demo_program +
                                       " is not installed next to ralphd nor on PATH");
    }

    invocation invoke(const invocation_input& input) const override {
        invocation result;
        result.argv.push_back(find_demo_agent(input.search_path).string());
        for (const auto& arg : input.spec.args) result.argv.push_back(arg);
        result.prompt_on_stdin = true;
        return result;
    }

    std::unique_ptr<output_parser> make_parser() const override {
        return std::make_unique<text_output_parser>();
    }
};

}  // namespace

const agent& demo_agent() {
    static const demo_agent_impl instance;
    return instance;
}

}  // namespace ralph
