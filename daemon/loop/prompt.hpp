// The prompt of one iteration (README, "Prompts"): the prompt source wrapped with what the agent
// needs to know about the loop. Everything is read from disk again at every call, so the agent (or
// the user) may edit any of these files between iterations.
//
// The source, first that applies: inline text > prompt_file > PROMPT.md in the workspace >
// .ralph/prompt.md in the workspace > the embedded default (common/templates.hpp). A PROMPT.md
// or .ralph/prompt.md that is empty or only whitespace does not apply.
//
// The wrapper is .ralph/prompt-template.md in the workspace when that file exists, else the
// embedded one (templates::prompt_wrapper); a wrapper without {{prompt}} gets the source put
// before it. It is rendered with templates::render and these values ("" = absent/off):
//   prompt             the source text
//   specs, specs_name, specs_cut        the specs/backlog file (first 64 KiB), its name, "yes"
//                                       when it was cut
//   conventions, conventions_cut        CONVENTIONS.md (first 64 KiB)
//   notes, notes_file, notes_cut        .ralph/notes.md (its last 16 KiB, from a line start)
//   feedback           the previous iteration's feedback (markdown)
//   judge_reasons      why the judge rejected the previous iteration's claim of completion
//   steering           the steering hints of this iteration, as a "- " list
//   iteration          N
//   max_iterations     the limit, "" when unlimited
//   min_iterations     the minimum, "" when it is 1 or less (no rule to state)
//   completion_phrase, completion_signal   PHRASE and <promise>PHRASE</promise>
//   status_signal      <TAG>VALUE</TAG>, "" when the status rule is off
//   backlog_rule       "yes" when the loop ends once every checkbox of the specs file is checked
//   state_file         .ralph/loop.md
//
// The judge's prompt (submit --judge) is the loop's judge_prompt, fixed at submit (the user's
// --judge-prompt, else .ralph/judge-prompt.md as committed at the workspace's HEAD), else
// templates::judge_prompt; never the working tree's .ralph/judge-prompt.md, which the worker
// writes. It is rendered with: prompt, specs, specs_name (as above);
// iteration, completion_rule (the rule the worker's claim met), final_answer (the worker's, its
// last 64 KiB);
// diff (since the loop's first iteration, the workspace's part, first 256 KiB), diff_cut,
// base_head, diff_unavailable (why there is no diff); verify_command, verify_exit,
// verify_output (when --verify ran).
#pragma once

#include "proto/types.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

// Injected files are cut to these sizes: the specs and CONVENTIONS.md keep their start, the
// notes (which grow at the end) their end.
inline constexpr std::size_t max_specs_bytes = 64 * 1024;
inline constexpr std::size_t max_notes_bytes = 16 * 1024;
// The judge's prompt keeps the end of the worker's final answer.
inline constexpr std::size_t max_answer_bytes = 64 * 1024;

// Paths relative to the workspace.
inline constexpr const char* notes_file_name = ".ralph/notes.md";
inline constexpr const char* state_file_name = ".ralph/loop.md";
inline constexpr const char* wrapper_override_name = ".ralph/prompt-template.md";
inline constexpr const char* judge_prompt_override_name = ".ralph/judge-prompt.md";  // committed

struct prompt_source {
    std::string text;
    std::string origin;  // "inline", the file's path, or "default"
};

// The whole regular file `path` (beneath `workspace`, or elsewhere when the user named it so),
// read without leaving the workspace through a symbolic link (common/safe_open); false when it
// is missing, unreadable or behind such a link (logged).
bool read_workspace_file(const std::filesystem::path& workspace, const std::filesystem::path& path,
                         std::string& out);
// The end of the workspace's notes (.ralph/notes.md) as the prompt has it: at most its last
// `limit` bytes, from the start of a line; "" when there are none.
std::string read_notes_tail(const std::filesystem::path& workspace, std::size_t limit);

// Throws proto::rpc_error(invalid_prompt) when prompt_file is set but unreadable.
prompt_source read_prompt_source(const proto::submit_params& spec);

// What the runner adds to one iteration's prompt besides the files.
struct prompt_extras {
    std::string previous_feedback;      // markdown of the previous iteration's feedback, or ""
    std::vector<std::string> steering;  // hints from `ralphctl steer`, given this iteration only
    std::string judge_reasons;  // why the judge rejected the previous iteration's claim, or ""
};

// The whole prompt of `iteration` (1-based) of `loop`. Throws what read_prompt_source throws.
std::string build_prompt(const proto::loop_info& loop, std::int64_t iteration,
                         const prompt_extras& extras);

// What the judge's prompt shows besides the workspace's files.
struct judge_inputs {
    std::int64_t iteration = 0;
    std::string completion_rule;
    std::string final_answer;
    std::string base_head;
    std::string diff;  // "" when there is none: diff_unavailable says why
    bool diff_cut = false;
    std::string diff_unavailable;
    std::optional<int> verify_exit;  // when --verify ran
    std::string verify_output;
};

// The prompt of the judge of `loop`. Throws what read_prompt_source throws.
std::string build_judge_prompt(const proto::loop_info& loop, const judge_inputs& inputs);

// The specs/backlog file the loop uses (absolute), or "" when none exists: spec.specs_file
// (relative to the workspace, or absolute) when set, else SPECS.md, else backlog.md.
std::filesystem::path specs_path(const proto::submit_params& spec);

}  // namespace ralph
