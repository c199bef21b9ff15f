// The shape of most adapters: a fixed program with fixed flags around the prompt. Each agent's
// file fills in a cli_agent::definition; the program is looked up like every other.
#pragma once

#include "daemon/agents/agent.hpp"
#include "daemon/agents/agent_config.hpp"

#include <functional>

namespace ralph {

class cli_agent : public agent {
  public:
    struct definition {
        std::string name;
        std::string description;
        std::string program;  // looked up on PATH unless configured
        agent_stream::format format = agent_stream::format::text;
        bool tokens = false;
        bool cost = false;
        bool rate_limits = false;
        bool prompt_on_stdin = false;  // else the prompt is in the arguments and stdin is /dev/null
        bool private_tmpdir = false;
        std::vector<std::string> home_state_paths;       // agent::home_state_paths
        std::vector<std::string> environment_variables;  // agent::environment_variables
        // agent::configured_variables; none when empty.
        std::function<std::vector<configured_variable>(const config_place&)> configuration;
        // The arguments after the program, before the loop's extra args.
        std::function<std::vector<std::string>(const invocation_input&)> arguments;
    };

    explicit cli_agent(definition def) : def_(std::move(def)) {}

    std::string_view name() const override { return def_.name; }
    std::string_view description() const override { return def_.description; }
    agent_stream::format output_format() const override { return def_.format; }
    bool reports_tokens() const override { return def_.tokens; }
    bool reports_cost() const override { return def_.cost; }
    bool detects_rate_limits() const override { return def_.rate_limits; }
    bool needs_private_tmpdir() const override { return def_.private_tmpdir; }
    std::vector<std::string> home_state_paths() const override { return def_.home_state_paths; }
    std::vector<std::string> environment_variables() const override {
        return def_.environment_variables;
    }
    std::vector<configured_variable> configured_variables(
        const config_place& place) const override {
        return def_.configuration ? def_.configuration(place) : std::vector<configured_variable>{};
    }
    std::string program(const proto::submit_params&) const override { return def_.program; }

    invocation invoke(const invocation_input& input) const override {
        invocation result;
        result.argv.push_back(input.program);
        for (auto& arg : def_.arguments(input)) result.argv.push_back(std::move(arg));
        for (const auto& arg : input.spec.args) result.argv.push_back(arg);
        result.prompt_on_stdin = def_.prompt_on_stdin;
        return result;
    }

  private:
    definition def_;
};

// Appends `flag model` when the loop names a model.
inline void add_model(std::vector<std::string>& args, std::string_view flag,
                      const proto::submit_params& spec) {
    if (spec.model.empty()) return;
    args.emplace_back(flag);
    args.push_back(spec.model);
}

}  // namespace ralph
