// What `ralphctl submit` reads besides its options and the prompt (which the daemon reads, at
// every iteration): the agent's variables from ralphctl's environment (--env NAME) and from
// --env-file, the judge's prompt (--judge-prompt FILE) and webhook URLs (--notify-file). They are
// read here, since the daemon may be another machine's, and go in the request. A problem is a
// usage error that names the option, the file and its line.
#pragma once

#include "proto/types.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ralph::client {

struct submit_inputs {
    std::vector<std::string> env;   // --env: K=V, or K: ralphctl's own value
    std::string env_file;           // K=V (or K) lines
    std::string notify_file;        // webhook URLs, one a line
    std::string judge_prompt_file;  // --judge-prompt: its text is sent as spec.judge_prompt
};

// Adds what `inputs` name to spec.env, spec.judge_prompt and spec.notify. Throws client_error
// (usage).
void read_submit_inputs(const submit_inputs& inputs, proto::submit_params& spec);

// --env's check: NAME=VALUE, or NAME alone.
CLI::Validator env_assignment();

}  // namespace ralph::client
