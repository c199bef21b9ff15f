// Everything an attempt needs before its agent starts: the agent's explicit environment and,
// for a --sandbox loop or a judge, the sandbox's view (attempt_setting); what the database and
// the settings SIGHUP may change give it, read on the io thread (attempt_inputs); then, on the
// pool, the state file .ralph/loop.md, the prompt (the work's, or the judge's with its diff) and
// the agent's invocation, wrapped in bwrap where it is sandboxed (prepare_attempt → a shim::spec).
#pragma once

#include "common/asio.hpp"
#include "common/shim_protocol.hpp"
#include "daemon/loop/iteration_policy.hpp"
#include "daemon/loop/runner_context.hpp"
#include "daemon/process/sandbox.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/types.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

// Where the attempt's agent runs: its environment, its private TMPDIR (empty when its adapter
// needs none), and its sandbox, which its --verify shares.
struct attempt_setting {
    std::vector<std::string> env;
    std::filesystem::path tmpdir;
    std::string bwrap;  // the bwrap program; "" = no sandbox
    sandbox::layout view;
    workspace::git_directories git;  // the workspace's, before the attempt (a --sandbox loop's)
};

// The agent's environment and, for a --sandbox loop, the sandbox's view (its git paths looked
// up off the io thread). A judge's view: nothing of the workspace writable, where bwrap is
// found; else no sandbox (the judge then runs in a throw-away checkout).
awaitable<attempt_setting> set_up_attempt(runner_context& ctx, const proto::loop_info& loop,
                                          proto::attempt_kind kind, std::int64_t iteration,
                                          std::int64_t attempt_number);

// What preparing an attempt needs of the database and of the settings SIGHUP changes: read on
// the io thread, as the preparation runs on the pool.
struct attempt_inputs {
    std::optional<proto::agent_feedback> previous_feedback;  // the previous iteration's
    std::vector<std::string> steering;
    std::int64_t loop_started_at = 0;
    std::string program;  // the agent's program, as find_program finds it
    std::chrono::milliseconds kill_grace{0};
    std::int64_t max_output_bytes = 0;
    std::string judge_reasons;  // why the judge rejected the previous iteration's claim
    // A judge's: the claim (with the worker's final answer), the loop's base, the claiming
    // attempt's --verify.
    std::optional<completion_claim> claim;
    std::string base_head;
    std::string base_tree;
    std::optional<int> verify_exit;
    std::string verify_output;
};
attempt_inputs read_attempt_inputs(runner_context& ctx, const proto::loop_info& loop,
                                   std::int64_t iteration, const std::vector<std::string>& env,
                                   const std::optional<completion_claim>& claim);

// How to start the agent, and what the attempt needs after.
struct attempt_plan {
    std::string prompt;
    shim::spec agent;
};

// Writes the state file and the prompt and builds the agent's invocation; a judge's prompt
// instead, with the diff since the loop started, and the throw-away checkout it runs in when it
// is not sandboxed. File system work: on the pool thread. What ralph refused to write through a
// link goes to `refusals`.
attempt_plan prepare_attempt(runner_context& ctx, const proto::loop_info& loop,
                             const proto::attempt_info& attempt, const attempt_setting& setting,
                             const attempt_inputs& inputs, std::vector<std::string>& refusals);

}  // namespace ralph
