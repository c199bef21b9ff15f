// Parameter and result types of the API with their JSON conversion. The daemon's store and the
// client use these same types, so a field added here is added everywhere.
// Times are epoch milliseconds in memory (0 = not yet) and ISO 8601 UTC strings (or null) in JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::proto {

// README, "Loops": queued → running ⇄ waiting → completed | exhausted | failed | cancelled |
// stalled; paused from queued/running/waiting.
enum class loop_state {
    queued,
    running,
    waiting,
    paused,
    completed,
    exhausted,
    failed,
    cancelled,
    stalled
};

std::string_view to_string(loop_state state);
// Throws std::invalid_argument for an unknown name.
loop_state loop_state_from_string(std::string_view name);
bool is_terminal(loop_state state);

// How one attempt (one run of the agent process) ended.
enum class termination {
    running,       // not ended yet
    exited,        // exited with status 0
    failed,        // exited with a non-zero status
    crashed,       // killed by a signal it did not get from us
    timeout,       // ran past the per-iteration timeout and was killed
    cancelled,     // killed because the loop was cancelled
    interrupted,   // the daemon stopped or crashed while it ran
    spawn_failed,  // could not be started
};

std::string_view to_string(termination value);
termination termination_from_string(std::string_view name);

// Why an attempt failed, refined from its termination by what the agent said (README, "Failures");
// each class has its own policy in the runner.
enum class failure_class {
    none,             // the attempt succeeded
    rate_limit,       // rate/usage limit: wait for the reset, burn no retry
    transient,        // overload, 5xx, network: short backoff, retry
    auth,             // credentials: stop the loop
    missing_program,  // the agent's program is not there: stop the loop
    timeout,          // ran past the per-iteration timeout: retry
    crash,            // killed by a signal, or a non-zero exit without a known cause: retry
    no_verdict,       // a judge that exited without <ralph_verdict>: retry, never an acceptance
    output_limit,     // wrote more output than ralphd --max-output allows: stop the loop
    // The agent's setup (a variable its configuration needs, an unknown model): stop the loop,
    // saying what to fix. With auth and missing_program, the configuration failures.
    config,
};

std::string_view to_string(failure_class value);
failure_class failure_class_from_string(std::string_view name);

// Tokens, cost and work of one attempt, or summed over a loop's attempts.
struct usage {
    std::int64_t input_tokens = 0;  // cache reads and writes included
    std::int64_t output_tokens = 0;
    std::optional<double> cost_usd;  // what the agent reported; null when it reported none
    std::int64_t turns = 0;
    std::int64_t tool_calls = 0;
    void add(const usage& other);
    bool operator==(const usage&) const = default;
};

// A usage is flattened into the JSON object that has it (a loop, an attempt, a report).
void add_usage(nlohmann::json& j, const usage& u);
usage read_usage(const nlohmann::json& j);

// Times in JSON: an ISO 8601 UTC string, or null for 0 (never happened); reading anything else
// gives 0.
nlohmann::json time_to_json(std::int64_t ms);
std::int64_t time_from_json(const nlohmann::json& j, const char* name);

// The largest values the methods accept (documented in proto/API.md and the README): nothing a
// client sends can overflow a computation or make a limit meaningless.
inline constexpr std::int64_t max_iterations = 1'000'000;
inline constexpr std::int64_t max_count = 1'000'000;     // retries, stall thresholds, priorities,
                                                         // iterations per hour/day
inline constexpr double max_duration_s = 7 * 24 * 3600;  // timeouts, delays, backoffs: 7 days
inline constexpr std::int64_t max_tokens = 1'000'000'000'000;     // token caps and budgets
inline constexpr double max_cost_usd = 1'000'000;                 // cost caps and budgets
inline constexpr std::size_t max_judge_prompt_bytes = 64 * 1024;  // submit's judge_prompt

struct submit_params {
    std::string name;
    std::string workspace;  // absolute, must exist
    std::string agent = "command";
    std::string model;
    std::string command;            // argv template for agent "command"
    std::vector<std::string> args;  // extra arguments appended to the agent's argv
    // "AGENT" or "AGENT:MODEL", in order: what an iteration runs on while a usage limit holds
    // the agents before it (agents_of). `args` and `command` are the loop's own agent's only.
    std::vector<std::string> fallback;
    // The usage quota the loop's own agent draws on, as the user names it (several accounts of
    // one CLI, several programs behind one gateway): "" = the agent's own (quota_of).
    std::string quota_key;
    // A judge before completion: "" = none, else the agent that checks a claim of completion
    // (with its model, and its command for agent "command") before the loop may end `completed`;
    // after judge_max_rejections rejections the loop ends `stalled`.
    std::string judge;
    std::string judge_model;
    std::string judge_command;
    std::int64_t judge_max_rejections = 3;
    // The judge's prompt template (README, "Judge"): the user's own (submit --judge-prompt),
    // else what the daemon reads at submit from .ralph/judge-prompt.md as committed at the
    // workspace's HEAD; "" = the built-in one. Never the working tree's file, which the worker
    // writes. At most max_judge_prompt_bytes.
    std::string judge_prompt;
    std::map<std::string, std::string> env;  // added to the daemon's environment
    std::string prompt;                      // inline prompt text (first prompt source)
    std::string prompt_file;                 // absolute path (second prompt source)
    std::string completion_phrase = "COMPLETE";
    std::int64_t max_iterations = 30;  // 0 = unlimited
    std::int64_t min_iterations = 1;
    double timeout_s = 1800;       // per attempt
    double delay_s = 2;            // between iterations
    std::int64_t max_retries = 3;  // per iteration, for failed attempts
    double retry_backoff_s = 5;    // first retry delay, doubled each time, capped at 10 min
    std::int64_t priority = 0;
    // Memory and judgement (README, "Memory, completion and progress", "Judge").
    std::string specs_file;  // specs/backlog file (relative to the workspace); "" =
                             // SPECS.md, else backlog.md, when present
    std::string status_tag = "ralph_status";  // <TAG>VALUE</TAG> completes; "" = rule off
    std::string status_value = "COMPLETED";
    std::string legacy_phrase;   // plain substring that completes (opt-in; "" = off)
    bool backlog_rule = false;   // completes when every checkbox of the specs file is checked
    std::string verify_command;  // a signal counts only if this exits 0 in the workspace
    bool commit = false;         // commit each iteration's work
    bool allow_dirty = false;    // accept a workspace with uncommitted changes at submit
    std::int64_t stall_iterations =
        3;  // stop as stalled after N iterations without progress (0 = off)
    std::int64_t stall_failures = 5;  // ... or N identical failures in a row (0 = off)
    double inactivity_timeout_s =
        900;  // an agent silent this long (no tool call pending) hangs (0 = off)
    // The loop's own budgets (README, "Scheduling, budgets"; 0 = none): agent runs per rolling
    // hour/day make it wait; reaching its token or cost cap ends it as exhausted.
    std::int64_t iterations_per_hour = 0;
    std::int64_t iterations_per_day = 0;
    std::int64_t max_tokens = 0;  // input + output, summed over its attempts
    double max_cost_usd = 0;
    std::string on_done;  // hook run when the loop ends (split into words, no shell)
    // Webhooks this loop's push notifications go to, besides ralphd --notify's (secrets: the
    // API gives them redacted, redacted_url).
    std::vector<std::string> notify;
    // Run in a new git worktree of the workspace's repository (README, "Worktrees"). The daemon
    // fills in the worktree_* fields at submit and sets `workspace` to the directory of the
    // worktree that matches the submitted one: the loop runs there, and one-loop-per-workspace
    // applies to it.
    bool worktree = false;
    bool sandbox = false;          // run the agent under bubblewrap (daemon/process/sandbox)
    bool sandbox_offline = false;  // ... sharing no network with the host (needs sandbox)
    bool allow_foreign_workspace = false;  // accept a workspace another user owns
    std::string worktree_source;           // the workspace as submitted, in the user's checkout
    std::string worktree_path;             // the top of the loop's worktree
    std::string worktree_branch;           // its new branch, ralph/loop-<id>
    std::string worktree_base;  // the commit it starts from: HEAD of the source at submit
    // The branch the source was on at submit: where --merge lands the loop's branch.
    std::string worktree_target;
    // --merge: when the loop completes, its worktree's work is committed and its branch merged
    // into worktree_target (workspace::merge_branch); --delete-branch: gc deletes the branch of
    // a merged loop with its worktree (else it is kept).
    bool merge = false;
    bool delete_branch = false;
    // --pr [REMOTE]: when the loop completes, its branch is pushed to this remote and a pull
    // request opened with gh (loop/landing.hpp); "" = none (`ralphctl pr` then pushes to
    // default_pr_remote).
    std::string pr_remote;
    // A submit with the key of a loop in the history creates nothing and answers that loop
    // (README, "Using it": a script may retry a submit safely); "" = none.
    std::string idempotency_key;
    // Check everything a submit checks and create nothing (no loop, no row, no file): the result
    // is the loop as it would be, with id 0, and what the daemon has room for
    // (submit_result::capacity), for `ralphctl submit --host auto`. A loop's spec never has it.
    bool dry_run = false;
    bool operator==(const submit_params&) const = default;
};

// Where a pull request's branch goes when the loop names no remote (submit --pr alone).
inline constexpr const char* default_pr_remote = "origin";

void from_json(const nlohmann::json& j, submit_params& p);  // throws rpc_error(invalid_params)
void to_json(nlohmann::json& j, const submit_params& p);

// An agent a loop may run on, with its model ("" = the agent's default).
struct agent_choice {
    std::string agent;
    std::string model;
    bool operator==(const agent_choice&) const = default;
};
// "AGENT" or "AGENT:MODEL" (a model may hold ':' itself).
agent_choice parse_agent_choice(std::string_view text);
// The agents a loop may run on, in the order it prefers them: its own, then its fallbacks.
std::vector<agent_choice> agents_of(const submit_params& spec);
// The usage quota an attempt on `spec` draws on, which a usage limit holds for every loop that
// draws on it (the ledger): `quota_key` when set, else the agent CLI's name, and for `command`
// the program its command runs, "command:NAME". At most 64 bytes.
std::string quota_of(const submit_params& spec);
// The quotas of the loop's agents, its own then its fallbacks (agents_of).
std::vector<std::string> quotas_of(const submit_params& spec);
// The spec as an attempt on `choice` sees it: another agent than the loop's own gets its model
// and none of the loop's own agent's extra arguments.
submit_params on_agent(const submit_params& spec, const agent_choice& choice);
// The spec as the loop's judge sees it: the judge's agent, model and command, none of the loop's
// --arg, no fallback.
submit_params as_judge(const submit_params& spec);

struct loop_info {
    std::int64_t id = 0;
    submit_params spec;  // what was submitted (flattened into the JSON object)
    loop_state state = loop_state::queued;
    std::string stop_reason;
    std::int64_t iterations = 0;  // iterations finished
    std::int64_t attempts = 0;    // agent runs, retries included
    std::int64_t retries = 0;
    std::int64_t created_at = 0;
    std::int64_t started_at = 0;
    std::int64_t finished_at = 0;
    std::int64_t updated_at = 0;
    std::int64_t resume_at = 0;     // when a waiting loop goes on
    std::int64_t output_bytes = 0;  // persisted output, = end offset of the loop's output
    proto::usage usage;             // summed over every attempt
    // What became of a --worktree loop's branch ("" = nothing tried): how --merge or `ralphctl
    // merge` landed it ("merged into main (fast-forward) at <id>") or why not ("conflict: ...").
    std::string landing;
    bool operator==(const loop_info&) const = default;
};

// A URL without what may be a secret (a webhook's token in its path or query, SECURITY.md):
// "scheme://host[:port]/…".
std::string redacted_url(const std::string& url);

// The API's form of a loop: the spec flattened into the object, but for `env`, whose values may
// be secrets: "env_names" lists its names only (SECURITY.md); from_json gives them empty values;
// and `notify`, whose URLs are given redacted (redacted_url).
void to_json(nlohmann::json& j, const loop_info& loop);
void from_json(const nlohmann::json& j, loop_info& loop);
// The fields of a loop's summary, as loop.list gives it: identity, state, limits and counters,
// not the whole spec (keeps a list of thousands of loops small). In output order; each is sent
// under its to_string name.
enum class summary_field {
    id,
    name,
    state,
    stop_reason,
    workspace,
    worktree_path,
    worktree_branch,
    agent,
    priority,
    iterations,
    max_iterations,
    min_iterations,
    attempts,
    retries,
    created_at,
    started_at,
    finished_at,
    updated_at,
    resume_at,
    output_bytes,
    input_tokens,
    output_tokens,
    cost_usd
};

std::string_view to_string(summary_field field);
// Throws std::invalid_argument for an unknown name.
summary_field summary_field_from_string(std::string_view name);

// The loop's summary with only `fields` (empty = all), so that a client asks only for what it
// shows. loop_info's from_json reads it back.
nlohmann::json summary_json(const loop_info& loop, const std::vector<summary_field>& fields = {});

// The structured feedback an agent gives about its own iteration (its <ralph-feedback> block,
// read by daemon/loop/loop_memory), stored with the attempt and put in the next prompt.
struct agent_feedback {
    std::optional<int> score;  // 0..10
    std::string summary;
    std::string improvements;
    std::string next_steps;
    std::string ideas;
    std::string blockers;

    bool empty() const;
    bool operator==(const agent_feedback&) const = default;
};

// {"score": 7 | null, "summary": "…", "improvements": "…", "next_steps": "…", "ideas": "…",
// "blockers": "…"}. from_json never throws: a missing or mistyped member, or a score outside
// 0..10, is left empty.
void to_json(nlohmann::json& j, const agent_feedback& feedback);
void from_json(const nlohmann::json& j, agent_feedback& feedback);

// What an attempt is: the loop's work, or its judge checking a claim of completion.
enum class attempt_kind { work, judge };
std::string_view to_string(attempt_kind value);
attempt_kind attempt_kind_from_string(std::string_view name);  // throws std::invalid_argument

struct attempt_info {
    std::int64_t id = 0;
    attempt_kind kind = attempt_kind::work;
    std::int64_t loop_id = 0;
    std::int64_t iteration = 0;
    std::int64_t attempt = 0;  // 1 for the first try of an iteration, 2 for its retry...
    std::string agent;         // what ran: the loop's own agent or one of its fallbacks
    std::string model;
    std::vector<std::string> argv;
    std::int64_t pid = 0;
    std::int64_t started_at = 0;
    std::int64_t ended_at = 0;
    termination how = termination::running;
    std::optional<int> exit_code;
    std::optional<int> signal;
    bool completion_signal = false;  // the completion rule matched in this attempt's output
    std::string completion_rule;     // which rule, as the stop reason names it ("" = none)
    failure_class failure = failure_class::none;
    std::string error;  // why it failed or could not start
    proto::usage usage;
    std::string summary;  // the first line of the agent's final answer
    // What the attempt did to the workspace (git HEAD, diff stats; file hashes outside git).
    std::string head_before;
    std::string head_after;
    // The tree ids of the git snapshots before and after it, which loop.diff compares ("" = no
    // such snapshot: outside git, a judge's, or after an attempt that did not succeed).
    std::string tree_before;
    std::string tree_after;
    std::int64_t files_changed = 0;
    std::int64_t insertions = 0;
    std::int64_t deletions = 0;
    std::optional<bool> progress;  // HEAD moved, tree or plan/specs changed; unknown if unset
    std::optional<proto::agent_feedback> feedback;  // the agent's <ralph-feedback>
    std::optional<int> verify_exit;                 // --verify's exit status, when it ran
    std::string verify_output;                      // its output (the end of it)
    std::int64_t output_start = 0;                  // [start, end) byte range in the loop's output
    std::int64_t output_end = 0;
    // A judge's: "accept", "reject", or "" (none given, or not a judge).
    std::string verdict;
    std::string verdict_reasons;  // why it rejected (or its whole answer when it gave no reasons)
    bool operator==(const attempt_info&) const = default;
};

void to_json(nlohmann::json& j, const attempt_info& attempt);
void from_json(const nlohmann::json& j, attempt_info& attempt);

// One event of an attempt's agent stream (common/agent_stream), as stored and listed by
// loop.events.
struct event_info {
    std::int64_t id = 0;  // increasing over the whole database
    std::int64_t attempt_id = 0;
    std::int64_t iteration = 0;
    std::int64_t ts = 0;
    std::string kind;  // text, tool_use, tool_result, usage, error, rate_limit, ...
    std::string tool;
    std::string text;
    bool operator==(const event_info&) const = default;
};

void to_json(nlohmann::json& j, const event_info& e);
void from_json(const nlohmann::json& j, event_info& e);

// By name (never values), what of ralphd's environment an agent gets (README, Agents'
// environment).
struct agent_environment {
    // Beyond what every agent gets: for its adapter's variables and those its configuration names.
    std::vector<std::string> passed;
    // Its adapter reads them or its configuration names them, ralphd has them, and the env policy
    // (or a --sandbox, for a file the agent may rewrite) keeps them from it.
    std::vector<std::string> withheld;
    // Its configuration names them, and neither ralphd's environment nor the loop's --env has them.
    std::vector<std::string> unset;
    bool operator==(const agent_environment&) const = default;
};

// An agent adapter as agents.list describes it.
struct agent_info {
    std::string name;
    std::string description;
    std::string program;             // what is looked up (or the configured path)
    std::string path;                // where it was found on the daemon's PATH; empty: missing
    std::string output_format;       // claude, codex, opencode, gemini or text
    bool structured_output = false;  // events (tool use, final answer) are read from the stream
    bool tokens = false;
    bool cost = false;
    bool rate_limit_detection = false;
    agent_environment environment;
    bool operator==(const agent_info&) const = default;
};

void to_json(nlohmann::json& j, const agent_info& a);
void from_json(const nlohmann::json& j, agent_info& a);

// Whether ralphd can write its state. "degraded": a write failed (disk full, read-only); running
// agents go on, no attempt starts, reads and gc go on; ralphd tries again every few seconds and
// is "ok" again by itself once writing works.
struct storage_status {
    std::string state = "ok";        // "ok" or "degraded"
    std::string cause;               // what failed, when degraded
    std::string fix;                 // what to do about it
    std::int64_t since = 0;          // epoch ms, 0 when ok
    std::int64_t failed_writes = 0;  // writes refused since then
    bool operator==(const storage_status&) const = default;
};
void to_json(nlohmann::json& j, const storage_status& s);
void from_json(const nlohmann::json& j, storage_status& s);

// A peer of ralphd --peer: its link that shares the usage-limit holds.
struct peer_status {
    std::string name;     // in the hosts file
    std::string address;  // ssh://…
    bool linked = false;
    std::string error;       // why it is not linked ("" = linked, or not tried yet)
    std::int64_t since = 0;  // epoch ms: linked, or unlinked, since then
    bool operator==(const peer_status&) const = default;
};
void to_json(nlohmann::json& j, const peer_status& p);
void from_json(const nlohmann::json& j, peer_status& p);

struct daemon_info {
    std::string version;
    int protocol_version = 0;
    std::int64_t pid = 0;
    std::string socket;
    std::string database;
    std::int64_t started_at = 0;
    std::int64_t max_concurrent = 1;
    std::map<std::string, std::int64_t> loops_by_state;
    storage_status storage;
    std::string host;     // the daemon's name (ralphd --host-name, else the machine's name)
    std::string account;  // whose usage limits hold its agents (ralphd --account)
    std::vector<peer_status> peers;
    // ralphd --notify's webhooks, each redacted (redacted_url: the address, never the path or
    // the token in it).
    std::vector<std::string> notify_targets;
    bool operator==(const daemon_info&) const = default;
};

void to_json(nlohmann::json& j, const daemon_info& info);
void from_json(const nlohmann::json& j, daemon_info& info);

// The scheduler's settings (scheduler.get / scheduler.set), kept in the database.
struct scheduler_settings {
    std::int64_t max_concurrent = 1;
    bool paused = false;  // no queued loop starts and no running loop begins another iteration
    std::string window;   // "HH:MM-HH:MM" (local time) when loops may run; "" = any time
    bool operator==(const scheduler_settings&) const = default;
};
void to_json(nlohmann::json& j, const scheduler_settings& s);
void from_json(const nlohmann::json& j, scheduler_settings& s);

// The global budgets (budget.get / budget.set), kept in the database; 0 = no limit. Agent runs
// (retries included), tokens (input + output) and cost are counted over rolling windows of the
// persisted attempts.
struct budget_limits {
    std::int64_t iterations_per_hour = 0;
    std::int64_t iterations_per_day = 0;
    std::int64_t tokens_per_day = 0;
    double cost_per_day_usd = 0;
    bool operator==(const budget_limits&) const = default;
};
void to_json(nlohmann::json& j, const budget_limits& b);
void from_json(const nlohmann::json& j, budget_limits& b);

// One budget's use over its rolling window (budget.get).
struct budget_use {
    std::string name;          // "iterations_per_hour", "iterations_per_day", ...
    std::int64_t loop_id = 0;  // 0: the global budget
    double used = 0;
    double limit = 0;  // 0 = no limit
    std::int64_t window_ms = 0;
    std::int64_t frees_at = 0;  // exhausted until then; 0 = not exhausted
    bool operator==(const budget_use&) const = default;
};
void to_json(nlohmann::json& j, const budget_use& u);
void from_json(const nlohmann::json& j, budget_use& u);

}  // namespace ralph::proto
