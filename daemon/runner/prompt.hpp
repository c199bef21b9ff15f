// The prompt of one iteration (SPEC §3). The source is re-read from disk every iteration, first
// that applies: inline text > prompt_file > PROMPT.md in the workspace > the embedded default.
// The source is wrapped with the loop's completion criteria so the agent knows the contract.
#pragma once

#include "proto/types.hpp"

#include <string>

namespace ralph {

// The embedded default prompt (what `ralphctl init` will write as PROMPT.md).
extern const char* const default_prompt;

struct prompt_source {
    std::string text;
    std::string origin;  // "inline", the file's path, or "default"
};

// Throws proto::rpc_error(invalid_prompt) when prompt_file is set but unreadable.
prompt_source read_prompt_source(const proto::submit_params& spec);

std::string build_prompt(const proto::loop_info& loop, std::int64_t iteration);

}  // namespace ralph
