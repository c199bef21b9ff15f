// ralphctl's own settings, for what a person would otherwise give on every command:
// $XDG_CONFIG_HOME/ralph/ralphctl.conf (else ~/.config/ralph/ralphctl.conf), lines of
// `name = value` (ralphd.conf's form; `#` starts a comment, quotes around a value are optional):
//   agent = claude          submit's agent when --agent is not given
//   model = sonnet          with that agent, when --model is not given
//   host = build1           the ralphd to talk to (as --host; RALPH_HOST, RALPH_SOCKET and the
//                           command line win)
//   max-iterations = 40     submit's defaults, as its options take them
//   timeout = 45m
//   max-cost = 5
//   max-tokens = 2000000
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ralph::client {

struct client_config {
    std::filesystem::path path;  // the file read; empty when there was none
    std::string agent;
    std::string model;
    std::string host;
    std::optional<std::int64_t> max_iterations;
    std::optional<double> timeout_s;
    std::optional<double> max_cost_usd;
    std::optional<std::int64_t> max_tokens;
};

// The settings of the file at `path`; a file that does not exist is no setting. A line that is
// not right (an unknown name, a bad value) is a client_error (usage) naming the file, the line
// and the fix.
client_config read_client_config(const std::filesystem::path& path);

}  // namespace ralph::client
