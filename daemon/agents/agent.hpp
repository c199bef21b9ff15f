// Agent adapters (SPEC §4): how to invoke an agent CLI non-interactively and how to read its
// output. One adapter per agent; find_agent() is the registry. An adapter is stateless; the
// per-attempt state of reading a stream lives in the output_parser it makes.
#pragma once

#include "proto/types.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

enum class output_stream;

// How to run one attempt.
struct invocation {
    std::vector<std::string> argv;
    bool prompt_on_stdin = true;  // stdin = the prompt file; else /dev/null
};

// What an attempt needs to build its invocation.
struct invocation_input {
    const proto::submit_params& spec;
    const std::string& prompt;       // the full prompt text of this iteration
    const std::string& prompt_file;  // a file holding exactly `prompt`
    const std::string& search_path;  // PATH the agent will run with
};

// Reads one attempt's output as it arrives, in pieces of any size.
class output_parser {
public:
    virtual ~output_parser() = default;
    virtual void feed(output_stream stream, std::string_view bytes) = 0;
    // The text in which completion signals are looked for: the agent's final answer.
    virtual std::string final_answer() const = 0;
};

class agent {
public:
    virtual ~agent() = default;
    virtual std::string_view name() const = 0;
    // Checked at submit: throws proto::rpc_error (agent_unavailable, invalid_params) when the
    // loop cannot run, e.g. its binary is not found on `search_path`.
    virtual void validate(const proto::submit_params& spec, const std::string& search_path) const = 0;
    // Throws proto::rpc_error when the invocation cannot be built.
    virtual invocation invoke(const invocation_input& input) const = 0;
    virtual std::unique_ptr<output_parser> make_parser() const = 0;
};

// Throws proto::rpc_error(agent_unavailable) naming the known agents when `name` is unknown.
const agent& find_agent(std::string_view name);

// For plain-text agents: the final answer is the end of stdout (the last 256 KiB).
class text_output_parser : public output_parser {
public:
    void feed(output_stream stream, std::string_view bytes) override;
    std::string final_answer() const override { return tail_; }

private:
    std::string tail_;
};

// The agents (one file each).
const agent& command_agent();
const agent& demo_agent();

}  // namespace ralph
