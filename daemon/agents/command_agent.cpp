// Agent "command": any argv template, split like a shell would split words but never run
// through a shell. "{prompt}" and "{prompt_file}" are replaced as whole arguments (and inside
// arguments: "--prompt-file={prompt_file}"), so user text is never re-split or interpreted.
// The prompt goes on stdin unless the template places "{prompt}".
#include "common/text.hpp"
#include "daemon/agents/agent_config.hpp"
#include "proto/errors.hpp"

namespace ralph {
namespace {

std::vector<std::string> split_template(const std::string& command) {
    if (command.empty())
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               "agent \"command\" needs a command template (--command)");
    std::vector<std::string> words;
    try {
        words = text::split_command_words(command);
    } catch (const std::invalid_argument& e) {
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               std::string("command template: ") + e.what());
    }
    if (words.empty())
        throw proto::rpc_error(proto::error_kind::invalid_params, "command template is empty");
    return words;
}

void replace_all(std::string& word, std::string_view placeholder, const std::string& value) {
    for (auto pos = word.find(placeholder); pos != std::string::npos;
         pos = word.find(placeholder, pos + value.size()))
        word.replace(pos, placeholder.size(), value);
}

class command_agent_impl : public agent {
  public:
    std::string_view name() const override { return "command"; }
    std::string_view description() const override {
        return "any program: --command 'prog --flag {prompt_file}' (plain text)";
    }
    agent_stream::format output_format() const override { return agent_stream::format::text; }
    bool reports_tokens() const override { return false; }
    bool reports_cost() const override { return false; }
    bool detects_rate_limits() const override { return false; }
    bool needs_private_tmpdir() const override { return false; }
    std::vector<std::string> home_state_paths() const override { return {}; }
    // Unknown: what the program needs comes with `submit --env` or `ralphd --env-policy`.
    std::vector<std::string> environment_variables() const override { return {}; }
    std::vector<configured_variable> configured_variables(const config_place&) const override {
        return {};
    }

    std::string program(const proto::submit_params& spec) const override {
        return split_template(spec.command).front();
    }

    invocation invoke(const invocation_input& input) const override {
        invocation result;
        result.argv = split_template(input.spec.command);
        result.argv.front() = input.program;
        bool prompt_in_argv = false;
        for (auto& word : result.argv) {
            if (word.find("{prompt}") != std::string::npos) prompt_in_argv = true;
            replace_all(word, "{prompt_file}", input.prompt_file);
            replace_all(word, "{prompt}", input.prompt);
        }
        for (const auto& arg : input.spec.args) result.argv.push_back(arg);
        result.prompt_on_stdin = !prompt_in_argv;
        return result;
    }
};

}  // namespace

const agent& command_agent() {
    static const command_agent_impl instance;
    return instance;
}

}  // namespace ralph
