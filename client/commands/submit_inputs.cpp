// The reading of submit_inputs.hpp: --env and --env-file into the agent's variables,
// --judge-prompt's text, --notify-file's URLs.
#include "client/commands/submit_inputs.hpp"

#include "client/commands/commands.hpp"
#include "client/output.hpp"
#include "common/secret_file.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace ralph::client {
namespace {

// NAME=VALUE, or NAME alone (its value in ralphctl's environment); "" when it is one of them.
std::string env_assignment_error(const std::string& value) {
    const auto equals = value.find('=');
    if (equals == 0 || value.empty())
        return fmt::format("'{}' is not of the form NAME=VALUE or NAME", value);
    return {};
}

std::vector<secret_file::line> secret_lines(const std::string& path, std::string_view option) {
    try {
        return secret_file::read_lines(path, option);
    } catch (const std::invalid_argument& e) {
        throw client_error(exit_code::usage, e.what());
    }
}

// Adds NAME=VALUE assignments (NAME alone: ralphctl's own value of NAME) to the loop's env.
void add_env(proto::submit_params& spec, const std::vector<std::string>& assignments,
             const std::string& given_by) {
    for (const auto& assignment : assignments) {
        const auto equals = assignment.find('=');
        if (equals != std::string::npos) {
            spec.env[assignment.substr(0, equals)] = assignment.substr(equals + 1);
            continue;
        }
        const char* value = std::getenv(assignment.c_str());
        if (value == nullptr)
            throw client_error(exit_code::usage,
                               fmt::format("{} {}: {} is not set in ralphctl's environment",
                                           given_by, assignment, assignment));
        spec.env[assignment] = value;
    }
}

// The text of --judge-prompt FILE, read here: the daemon may be another machine's.
std::string read_judge_prompt(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw client_error(exit_code::usage,
                           fmt::format("--judge-prompt {}: cannot read it: {}", path,
                                       std::generic_category().message(errno)));
    std::string text(proto::max_judge_prompt_bytes + 1, '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(file.gcount()));
    if (file.bad())
        throw client_error(exit_code::usage, "--judge-prompt " + path + ": cannot read it");
    if (text.size() > proto::max_judge_prompt_bytes)
        throw client_error(exit_code::usage,
                           fmt::format("--judge-prompt {}: larger than the {} bytes allowed", path,
                                       proto::max_judge_prompt_bytes));
    if (text::to_valid_utf8(text) != text)
        throw client_error(exit_code::usage, "--judge-prompt " + path + ": not UTF-8 text");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw client_error(exit_code::usage, "--judge-prompt " + path + ": it is empty");
    return text;
}

}  // namespace

void read_submit_inputs(const submit_inputs& inputs, proto::submit_params& spec) {
    add_env(spec, inputs.env, "--env");
    if (!inputs.env_file.empty()) {
        std::vector<std::string> assignments;
        for (const auto& line : secret_lines(inputs.env_file, "--env-file")) {
            if (std::string problem = env_assignment_error(line.text); !problem.empty())
                throw client_error(exit_code::usage,
                                   fmt::format("--env-file {}, line {}: {}", inputs.env_file,
                                               line.number, problem));
            assignments.push_back(line.text);
        }
        add_env(spec, assignments, "--env-file " + inputs.env_file);
    }
    if (!inputs.judge_prompt_file.empty())
        spec.judge_prompt = read_judge_prompt(inputs.judge_prompt_file);
    if (!inputs.notify_file.empty())
        for (const auto& line : secret_lines(inputs.notify_file, "--notify-file"))
            spec.notify.emplace_back(text::trim(line.text));
}

CLI::Validator env_assignment() {
    return CLI::Validator([](std::string& value) { return env_assignment_error(value); },
                          "NAME[=VALUE]");
}

}  // namespace ralph::client
