#include "daemon/runner/prompt.hpp"

#include "proto/errors.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ralph {

const char* const default_prompt =
    "Study the repository in the current directory: its specs, plan and notes.\n"
    "Pick the single most important unfinished task, implement it completely, test it,\n"
    "and commit it with a clear message. Record what you learned for the next iteration.\n";

namespace {

bool read_file(const std::filesystem::path& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream buffer;
    buffer << in.rdbuf();
    out = buffer.str();
    return true;
}

}  // namespace

prompt_source read_prompt_source(const proto::submit_params& spec) {
    if (!spec.prompt.empty()) return {spec.prompt, "inline"};
    std::string text;
    if (!spec.prompt_file.empty()) {
        if (!read_file(spec.prompt_file, text))
            throw proto::rpc_error(proto::error_kind::invalid_prompt,
                                   "cannot read prompt file " + spec.prompt_file);
        return {text, spec.prompt_file};
    }
    auto workspace_prompt = std::filesystem::path(spec.workspace) / "PROMPT.md";
    if (read_file(workspace_prompt, text)) return {text, workspace_prompt.string()};
    return {default_prompt, "default"};
}

std::string build_prompt(const proto::loop_info& loop, std::int64_t iteration) {
    const auto& spec = loop.spec;
    prompt_source source = read_prompt_source(spec);
    std::string of_max = spec.max_iterations > 0 ? fmt::format(" of {}", spec.max_iterations) : "";
    std::string minimum =
        spec.min_iterations > 1
            ? fmt::format("- The loop runs at least {} iterations; a completion signal before "
                          "iteration {} is ignored.\n",
                          spec.min_iterations, spec.min_iterations)
            : "";
    return fmt::format(
        "{}\n\n"
        "---\n"
        "You are running inside a Ralph loop: this prompt is given to you again in every "
        "iteration, and your only memory between iterations is the files in this workspace.\n"
        "- This is iteration {}{}.\n"
        "{}"
        "- Do one task per iteration, then stop.\n"
        "- When, and only when, everything is truly done, end your final answer with "
        "<promise>{}</promise>. Do not write it otherwise.\n",
        source.text, iteration, of_max, minimum, spec.completion_phrase);
}

}  // namespace ralph
