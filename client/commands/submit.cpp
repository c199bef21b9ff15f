// `ralphctl submit [PROMPT] [options]`: creates a loop (loop.submit) and prints its id, or with
// --json the loop object, whether it was created (not with the --idempotency-key of an earlier
// loop) and the daemon's warnings (also printed to stderr). The options fill in the request, a
// proto::submit_params, whose defaults (proto/types.hpp) are the daemon's too: an option not given
// keeps its default. Paths (workspace, prompt file) are made absolute here, since the daemon does
// not share our working directory. A workspace with uncommitted changes is refused; on a terminal
// the changes are shown and the user may start anyway.
// --follow tails the new loop right away (the "submitted" line then goes to stderr); --wait
// blocks until it ends, printing only its state. Both exit like `tail -f` (README, "Using it");
// with
// --json they print the loop object and then the NDJSON events of `tail --json`.
// --host auto: every host of the hosts file and `local` is asked at once to check the submit
// without creating anything (loop.submit's dry run, which also tells its capacity); the loop is
// submitted to the host with the most room (client/placement.hpp) and its id printed qualified
// by that host (build1:17; --json: `host`, and `placement`, every host's answer); a warning says
// when that host starts no loop now (paused…: so were all). When no host accepts, the error lists
// each host's reason: exit 1, or 3 when none could be reached.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "client/placement.hpp"
#include "common/secret_file.hpp"
#include "common/text.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

namespace ralph::client {
namespace {

struct submit_options {
    proto::submit_params spec;
    const CLI::Option* agent = nullptr;  // --agent, to know whether it was given
    const CLI::Option* model = nullptr;
    std::vector<std::string> env;   // K=V, or K: ralphctl's own value
    std::string env_file;           // K=V (or K) lines
    std::string notify_file;        // webhook URLs, one a line
    std::string judge_prompt_file;  // --judge-prompt: its text is sent as spec.judge_prompt
    std::string sandbox;  // --sandbox: "true"; --sandbox=offline: "offline"; "" = not given
    std::string pr;       // --pr: "true"; --pr=REMOTE: REMOTE; "" = not given
    bool follow = false;
    bool wait = false;
};

std::string absolute_path(const std::string& path) {
    std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
    // "/a/b/" normalises to "/a/b/": drop the empty last component.
    if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
    return p.string();
}

// The refusal's message, then the changes it lists (`git status --porcelain` lines), indented.
std::string describe_dirty(const daemon_error& refusal) {
    std::string text = escape_controls(refusal.what());
    const auto dirty = refusal.data<proto::dirty_workspace>();
    if (dirty.changes.empty()) return text;
    text += ":";
    // File names are the repository's: any byte but '/' and NUL.
    for (const auto& change : dirty.changes) text += "\n  " + escape_controls(change);
    return text;
}

// The workspace has uncommitted changes: on a terminal, show them and ask; elsewhere, no.
bool confirm_dirty(const std::string& changes) {
    if (::isatty(STDIN_FILENO) != 1 || ::isatty(STDERR_FILENO) != 1) return false;
    fmt::print(stderr, "{}\n", changes);
    fmt::print(stderr, "The agent will work on top of them. Start the loop anyway? [y/N] ");
    std::string answer;
    std::getline(std::cin, answer);
    return answer == "y" || answer == "Y" || answer == "yes";
}

// The agent CLIs a loop runs on when the submit names none (no --agent, --command or
// ralphctl.conf's agent): the first of these that ralphd finds on its PATH.
const std::vector<std::string> preferred_agents{"claude",   "codex", "gemini",
                                                "opencode", "aider", "kiro"};

// Chooses the loop's agent when --agent was not given: `command` for --command, else
// ralphctl.conf's (with its model), else the first preferred agent the ralphd at `address` finds.
// Returns where the choice came from, for the submitted line ("" when there is nothing to say).
std::string choose_agent(const std::string& address, submit_options& options,
                         const client_config& config) {
    auto& spec = options.spec;
    if (options.agent->count() > 0 || !spec.command.empty()) {
        if (spec.agent == config.agent && options.model->count() == 0) spec.model = config.model;
        return {};
    }
    if (!config.agent.empty()) {
        spec.agent = config.agent;
        if (options.model->count() == 0) spec.model = config.model;
        return "set in " + shorten_home(config.path.string());
    }
    const auto agents = connection(address).call<proto::method::agents_list>({}).agents;
    for (const auto& preferred : preferred_agents) {
        for (const auto& agent : agents) {
            if (agent.name != preferred || agent.path.empty()) continue;
            spec.agent = agent.name;
            return "the first agent CLI ralphd finds on its PATH; choose one with --agent, or "
                   "agent = NAME in ~/.config/ralph/ralphctl.conf";
        }
    }
    throw client_error(
        exit_code::usage,
        fmt::format("no --agent given, and ralphd finds none of {} on its PATH",
                    text::join_words(preferred_agents, ", ")),
        "install one, or name the agent: --agent NAME (ralphctl agents lists them), or agent = "
        "NAME in ~/.config/ralph/ralphctl.conf; --command 'PROGRAM {prompt}' runs any program");
}

// ralphd refused an agent: when one of those the submit names is not an agent of ralphd's at all
// (a typo), a usage error that says which it probably meant.
void explain_unknown_agent(connection& daemon, const daemon_error& refusal,
                           const proto::submit_params& spec) {
    std::vector<std::string> known;
    for (const auto& agent : daemon.call<proto::method::agents_list>({}).agents)
        known.push_back(agent.name);
    std::vector<std::string> named{spec.agent, spec.judge};
    for (const auto& fallback : spec.fallback)
        named.push_back(fallback.substr(0, fallback.find(':')));
    for (const auto& name : named) {
        if (name.empty() || std::find(known.begin(), known.end(), name) != known.end()) continue;
        const std::string meant = closest_word(name, known);
        throw client_error(
            exit_code::usage, refusal.what(),
            (meant.empty() ? std::string() : fmt::format("did you mean '{}'? ", meant)) +
                "ralphctl agents lists them");
    }
}

// loop.submit; when the daemon refuses the workspace's uncommitted changes, the user may start
// anyway (allow_dirty).
proto::submit_result submit(connection& daemon, proto::submit_params& spec) {
    using proto::method::loop_submit;
    try {
        return daemon.call<loop_submit>(spec);
    } catch (const daemon_error& refusal) {
        if (refusal.kind() == proto::error_kind::agent_unavailable)
            explain_unknown_agent(daemon, refusal, spec);
        if (refusal.kind() != proto::error_kind::workspace_dirty) throw;
        const std::string changes = describe_dirty(refusal);
        if (!confirm_dirty(changes))
            throw client_error(exit_code::failure, changes,
                               "commit or stash the changes, or submit with --allow-dirty");
    }
    spec.allow_dirty = true;
    return daemon.call<loop_submit>(spec);
}

// A host's answer to the dry run of the submit: the loop as it would be, or why not.
struct dry_run_answer {
    std::optional<proto::submit_result> accepted;
    std::string refusal;
    proto::error_kind refused_as = proto::error_kind::internal_error;
};

// Where --host auto put the loop: every host, its answer to the dry run, the one chosen.
struct placement {
    std::vector<host_entry> hosts;
    std::vector<host_answer<dry_run_answer>> answers;  // by index of `hosts`
    std::size_t chosen = 0;
};

// Every host's dry run of `spec`, at once. A refusal is an answer; a host that cannot be reached
// (or not within fleet_timeout) has none.
std::vector<host_answer<dry_run_answer>> dry_runs(fleet<dry_run_answer>& hosts,
                                                  proto::submit_params spec) {
    spec.dry_run = true;
    return hosts.ask_each(
        // By value: a query still running after the timeout outlives this function.
        [spec, all = hosts.hosts()](connection& daemon, std::size_t host) {
            dry_run_answer answer;
            try {
                answer.accepted = daemon.call<proto::method::loop_submit>(spec);
            } catch (const daemon_error& refusal) {
                answer.refusal = refusal.what();
                answer.refused_as = refusal.kind();
            }
            // A ralphd older than dry_run took the request for a submit.
            if (answer.accepted && !answer.accepted->capacity) {
                answer.refusal = fmt::format(
                    "its ralphd does not know dry runs (older than this ralphctl) and created "
                    "loop {}:{}: cancel it",
                    all[host].name, answer.accepted->loop.id);
                answer.accepted.reset();
            }
            return answer;
        },
        std::vector<bool>(hosts.hosts().size(), true));
}

// No host accepted: one line per host saying why; exit 1, or 3 when no host could be reached.
[[noreturn]] void refuse_everywhere(const placement& where) {
    std::string text = "no host accepted the loop:";
    bool reachable = false;
    bool dirty = false;
    for (std::size_t i = 0; i < where.hosts.size(); ++i) {
        const host_entry& host = where.hosts[i];
        const auto& answer = where.answers[i];
        if (answer.result) {
            reachable = true;
            dirty = dirty || answer.result->refused_as == proto::error_kind::workspace_dirty;
            text += fmt::format("\n  {}: {}", host.name, answer.result->refusal);
        } else {
            text += fmt::format("\n  {} ({}): not reachable: {}", host.name, host.address,
                                answer.error);
        }
    }
    throw client_error(reachable ? exit_code::failure : exit_code::unreachable, text,
                       dirty ? "commit or stash the changes, or submit with --allow-dirty" : "");
}

// --host auto: the dry runs, then the host with the most room of those that accept.
placement place(const client_context& ctx, const proto::submit_params& spec) {
    placement where;
    fleet<dry_run_answer> hosts(ctx.local_socket);
    where.hosts = hosts.hosts();
    where.answers = dry_runs(hosts, spec);
    std::vector<std::optional<placement_offer>> offers;
    for (const auto& answer : where.answers) {
        std::optional<placement_offer> offer;
        if (answer.result && answer.result->accepted) {
            const proto::submit_result& dry = *answer.result->accepted;
            // A loop id: the key's loop, which is there already.
            offer = placement_offer{*dry.capacity, dry.loop.id != 0};
        }
        offers.push_back(std::move(offer));
    }
    const std::optional<std::size_t> chosen = choose_host(offers);
    if (!chosen) refuse_everywhere(where);
    where.chosen = *chosen;
    return where;
}

// --json's `placement`: every host's answer to the dry run.
nlohmann::json placement_json(const placement& where) {
    nlohmann::json hosts = nlohmann::json::array();
    for (std::size_t i = 0; i < where.hosts.size(); ++i) {
        const auto& answer = where.answers[i];
        const bool accepted = answer.result && answer.result->accepted;
        nlohmann::json entry{{"host", where.hosts[i].name},
                             {"address", where.hosts[i].address},
                             {"reachable", answer.result.has_value()},
                             {"accepted", accepted},
                             {"error", answer.result ? answer.result->refusal : answer.error}};
        entry["capacity"] =
            accepted ? nlohmann::json(*answer.result->accepted->capacity) : nlohmann::json();
        hosts.push_back(std::move(entry));
    }
    return hosts;
}

// The host chosen starts no loop now (choose_host prefers one that does: none accepted): the loop
// waits there until its scheduler lets it start, which the user should know.
void warn_if_held(const placement& where, std::int64_t loop_id) {
    const proto::host_capacity& room = *where.answers[where.chosen].result->accepted->capacity;
    if (!room.scheduler_held) return;
    const std::string& name = where.hosts[where.chosen].name;
    fmt::print(stderr,
               "ralphctl: warning: no host that accepted the loop starts loops now: loop {}:{} "
               "waits on {} ({})\n",
               name, loop_id, name, escape_controls(room.scheduler_held_reason));
}

// NAME=VALUE, or NAME alone (its value in ralphctl's environment); "" when it is one of them.
std::string env_assignment_error(const std::string& value) {
    const auto equals = value.find('=');
    if (equals == 0 || value.empty())
        return fmt::format("'{}' is not of the form NAME=VALUE or NAME", value);
    return {};
}

CLI::Validator env_assignment() {
    return CLI::Validator([](std::string& value) { return env_assignment_error(value); },
                          "NAME[=VALUE]");
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

int run_submit(const client_context& ctx, submit_options& options) {
    auto& spec = options.spec;
    spec.workspace = absolute_path(spec.workspace.empty() ? "." : spec.workspace);
    if (!spec.prompt_file.empty()) spec.prompt_file = absolute_path(spec.prompt_file);
    add_env(spec, options.env, "--env");
    if (!options.env_file.empty()) {
        std::vector<std::string> assignments;
        for (const auto& line : secret_lines(options.env_file, "--env-file")) {
            if (std::string problem = env_assignment_error(line.text); !problem.empty())
                throw client_error(exit_code::usage,
                                   fmt::format("--env-file {}, line {}: {}", options.env_file,
                                               line.number, problem));
            assignments.push_back(line.text);
        }
        add_env(spec, assignments, "--env-file " + options.env_file);
    }
    if (!options.judge_prompt_file.empty())
        spec.judge_prompt = read_judge_prompt(options.judge_prompt_file);
    if (!options.notify_file.empty())
        for (const auto& line : secret_lines(options.notify_file, "--notify-file"))
            spec.notify.emplace_back(text::trim(line.text));
    spec.sandbox = !options.sandbox.empty();
    spec.sandbox_offline = options.sandbox == "offline";
    spec.pr_remote = options.pr == "true" ? proto::default_pr_remote : options.pr;

    client_context target = ctx;  // the daemon that gets the loop
    // With --host auto, the agent is chosen by what this machine's ralphd finds.
    const std::string agent_chosen =
        choose_agent(ctx.place_anywhere ? ctx.local_socket : ctx.socket, options, ctx.config);
    std::optional<placement> placed;
    if (ctx.place_anywhere) {
        placed = place(ctx, spec);
        target.socket = placed->hosts[placed->chosen].address;
    }
    connection daemon(target.socket);
    const proto::submit_result submitted = submit(daemon, spec);
    const proto::loop_info& loop = submitted.loop;
    // What the daemon wants the user to know (e.g. changes left behind by --worktree).
    for (const auto& warning : submitted.warnings)
        fmt::print(stderr, "ralphctl: warning: {}\n", escape_controls(warning, line_breaks::kept));
    if (placed && submitted.created) warn_if_held(*placed, loop.id);
    if (ctx.json) {
        nlohmann::json out{
            {"loop", loop}, {"created", submitted.created}, {"warnings", submitted.warnings}};
        if (placed) {
            out["host"] = placed->hosts[placed->chosen].name;
            out["placement"] = placement_json(*placed);
        }
        print_json(std::move(out));
    } else {
        const auto& branch = loop.spec.worktree_branch;
        // Placed: the id as commands take it, qualified by its host.
        const std::string id =
            placed ? fmt::format("{}:{}", placed->hosts[placed->chosen].name, loop.id)
                   : std::to_string(loop.id);
        // With --follow, stdout is for the loop's output.
        fmt::print(
            options.follow ? stderr : stdout, "submitted loop {}{} in {}{}{}\n", id,
            loop.spec.name.empty() ? "" : fmt::format(" ({})", escape_controls(loop.spec.name)),
            escape_controls(loop.spec.workspace),
            branch.empty() ? ""
                           : fmt::format(" (a new worktree, branch {})", escape_controls(branch)),
            agent_chosen.empty()
                ? ""
                : fmt::format(" with {}{} ({})", loop.spec.agent,
                              loop.spec.model.empty() ? "" : " " + loop.spec.model, agent_chosen));
        std::fflush(stdout);
    }
    if (!options.follow && !options.wait) return exit_code::ok;
    tail_selection selection;
    selection.output = options.follow;
    return follow_loops(target, {loop.id}, selection);
}

// `check` of a path that must exist where the daemon runs, made here only when that is this
// machine: not over ssh, nor with --host auto, whose host is not chosen yet (its daemon checks).
CLI::Validator on_this_machine(const client_context& ctx, const CLI::Validator& check) {
    return CLI::Validator(
        [&ctx, check](std::string& value) -> std::string {
            if (ctx.place_anywhere || ctx.socket.starts_with("ssh://")) return {};
            return check(value);
        },
        check.get_description());
}

}  // namespace

void register_submit_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<submit_options>();
    auto& spec = options->spec;
    // ralphctl.conf's limits are the options' defaults (--help shows them).
    const client_config& config = ctx.config;
    spec.max_iterations = config.max_iterations.value_or(spec.max_iterations);
    spec.timeout_s = config.timeout_s.value_or(spec.timeout_s);
    spec.max_cost_usd = config.max_cost_usd.value_or(spec.max_cost_usd);
    spec.max_tokens = config.max_tokens.value_or(spec.max_tokens);
    auto* cmd = app.add_subcommand(
        "submit", "Submit a new loop (with --host auto: to the host with the most room)");
    // Sections of --help. (CLI11 also compares a new option's names with those of its own
    // section only, which keeps the start of every submit short.)
    auto* completion = cmd->add_option_group("Completion", "When the loop is done");
    auto* attempts =
        cmd->add_option_group("Attempts", "Each run of the agent, its retries and stalls");
    auto* budgets = cmd->add_option_group("Budgets", "This loop's own limits");
    auto* git = cmd->add_option_group("Git and hooks");
    auto* prompt = cmd->add_option("prompt", spec.prompt,
                                   "Prompt text (else --prompt-file, else PROMPT.md in the "
                                   "workspace, else the built-in prompt)");
    cmd->add_option("-f,--prompt-file", spec.prompt_file,
                    "File holding the prompt, re-read at every iteration")
        ->check(on_this_machine(ctx, CLI::ExistingFile))
        ->excludes(prompt);
    options->agent = cmd->add_option(
        "--agent", spec.agent,
        "claude, codex, opencode, gemini, aider, kiro, command (any program, see --command) or "
        "demo (the bundled demo agent); default: command with --command, else agent in "
        "ralphctl.conf, else the first of claude, codex, gemini, opencode, aider, kiro that "
        "ralphd finds");
    cmd->add_option("--command", spec.command,
                    "Argv template for --agent command; {prompt} and {prompt_file} are "
                    "replaced, nothing goes through a shell");
    options->model = cmd->add_option(
        "--model", spec.model,
        "Model passed to the agent (default: model in ralphctl.conf, with its agent)");
    cmd->add_option("--fallback", spec.fallback,
                    "AGENT[:MODEL] an iteration runs on while a usage limit holds the agents "
                    "before it (repeatable, in order; back to --agent once its limit resets)")
        ->allow_extra_args(false);
    cmd->add_option("--quota-key", spec.quota_key,
                    "The usage quota --agent draws on, when it is not the agent's own (another "
                    "account, a gateway): a usage limit holds the loops of the same quota only "
                    "(default: the agent, or for command its program)");
    cmd->add_option("--arg", spec.args,
                    "Extra argument for the agent (repeatable; write --arg=-x for one "
                    "starting with -)")
        ->allow_extra_args(false);
    cmd->add_option("--env", options->env,
                    "Variable for the agent's environment (repeatable); NAME alone passes "
                    "ralphctl's own value, which keeps a secret off the command line")
        ->allow_extra_args(false)
        ->check(env_assignment());
    cmd->add_option("--env-file", options->env_file,
                    "Variables for the agent's environment, one NAME=VALUE (or NAME) a line, "
                    "from a file only you can read (chmod 600): for API keys and other secrets, "
                    "which a command line shows every user of the machine")
        ->type_name("FILE");
    completion->add_option("-m,--max-iterations", spec.max_iterations, "0 = unlimited")
        ->check(non_negative())
        ->capture_default_str();
    completion
        ->add_option("-n,--min-iterations", spec.min_iterations,
                     "Completion signals before this are ignored")
        ->check(non_negative())
        ->capture_default_str();
    completion
        ->add_option("-p,--promise", spec.completion_phrase,
                     "Completion phrase: the agent answers <promise>PHRASE</promise>")
        ->capture_default_str();
    attempts
        ->add_option("--timeout", spec.timeout_s,
                     "Per-attempt timeout, e.g. 90s, 15m, 2h (default in seconds)")
        ->transform(duration_seconds())
        ->type_name("DURATION")
        ->capture_default_str();
    attempts->add_option("--delay", spec.delay_s, "Pause between iterations")
        ->transform(duration_seconds())
        ->type_name("DURATION")
        ->capture_default_str();
    attempts->add_option("--retries", spec.max_retries, "Retries of a failed attempt")
        ->check(non_negative())
        ->capture_default_str();
    attempts
        ->add_option("--backoff", spec.retry_backoff_s,
                     "First retry delay, doubled for each further retry")
        ->transform(duration_seconds())
        ->type_name("DURATION")
        ->capture_default_str();
    cmd->add_option("--priority", spec.priority, "Higher runs first")->capture_default_str();
    completion->add_option("--specs", spec.specs_file,
                           "Specs/backlog file injected into every prompt (default: SPECS.md, else "
                           "backlog.md, in the workspace)");
    completion
        ->add_option("--status-tag", spec.status_tag,
                     "<TAG>VALUE</TAG> in the final answer also completes (\"\" = off)")
        ->capture_default_str();
    completion->add_option("--status-value", spec.status_value, "The VALUE of --status-tag")
        ->capture_default_str();
    completion->add_option(
        "--legacy-phrase", spec.legacy_phrase,
        "Also complete on this plain text anywhere in the final answer (opt-in)");
    completion->add_flag("--backlog", spec.backlog_rule,
                         "Complete when every checkbox of the specs/backlog file is checked");
    completion->add_option(
        "--verify", spec.verify_command,
        "Command run in the workspace (no shell) when a completion signal comes; "
        "the signal counts only if it exits 0");
    completion->add_option(
        "--judge", spec.judge,
        "AGENT that checks a claim of completion before the loop ends (read-only, under "
        "bubblewrap, which it needs); its REJECT reasons go to the next iteration");
    completion->add_option("--judge-model", spec.judge_model, "Model of the --judge agent");
    completion->add_option("--judge-command", spec.judge_command,
                           "Argv template of --judge command (as --command)");
    completion->add_option(
        "--judge-prompt", options->judge_prompt_file,
        "FILE whose text replaces the judge's prompt (placeholders as the built-in one; default: "
        ".ralph/judge-prompt.md as committed at HEAD, never the working tree's)");
    completion
        ->add_option("--judge-max-rejections", spec.judge_max_rejections,
                     "Rejections after which the loop ends stalled")
        ->check(number_between(1, double(proto::max_count)))
        ->capture_default_str();
    git->add_flag("--commit", spec.commit, "Commit each iteration's work (git workspaces)");
    git->add_flag("--allow-dirty", spec.allow_dirty,
                  "Start even though the workspace has uncommitted changes");
    git->add_flag("--worktree", spec.worktree,
                  "Run in a new git worktree of the workspace's repository (branch "
                  "ralph/loop-ID from HEAD; uncommitted changes are not carried over)");
    git->add_flag("--merge", spec.merge,
                  "With --worktree: when the loop completes, commit its worktree's work and merge "
                  "its branch into the branch the workspace is on (fast-forward, else a merge "
                  "commit; never into uncommitted changes; a conflict changes nothing)");
    git->add_flag("--delete-branch", spec.delete_branch,
                  "With --worktree: gc deletes the loop's branch with its merged worktree (kept "
                  "otherwise)");
    // Flags, so that they never take the prompt after them as their value.
    git->add_flag("--pr", options->pr,
                  "With --worktree: when the loop completes, commit its worktree's work, push its "
                  "branch to origin (--pr=REMOTE: to REMOTE) and open a pull request with gh")
        ->type_name("[=REMOTE]");
    git->add_flag("--sandbox", options->sandbox,
                  "Run the agent (and --verify) under bubblewrap: it may write only in the "
                  "workspace, its git directory and its own config dirs; /tmp is its own; ralph's "
                  "socket, state and other loops' workspaces are hidden. --sandbox=offline: no "
                  "network either")
        ->check(CLI::IsMember({"true", "offline"}).description("[=offline]"));
    git->add_flag("--allow-foreign-workspace", spec.allow_foreign_workspace,
                  "Run in a workspace that belongs to another user (refused otherwise)");
    git->add_option("--on-done", spec.on_done,
                    "Command run when the loop ends, with its outcome in RALPH_* variables "
                    "(split into words, no shell)");
    git->add_option("--notify", spec.notify,
                    "Webhook for this loop's push notifications, besides ralphd --notify's "
                    "(http(s)://..., or FORMAT+https://... with FORMAT ntfy, slack, discord, "
                    "telegram or generic; repeatable)")
        ->type_name("URL")
        ->allow_extra_args(false);
    git->add_option("--notify-file", options->notify_file,
                    "Also --notify each URL of this file, one a line: a webhook's URL holds its "
                    "secret (the file must be yours only: chmod 600)")
        ->type_name("FILE");
    attempts
        ->add_option("--stall-after", spec.stall_iterations,
                     "Stop as stalled after N iterations without progress (0 = never)")
        ->check(non_negative())
        ->capture_default_str();
    attempts
        ->add_option("--stall-failures", spec.stall_failures,
                     "Stop as stalled after N identical failures in a row (0 = never)")
        ->check(non_negative())
        ->capture_default_str();
    attempts
        ->add_option("--inactivity-timeout", spec.inactivity_timeout_s,
                     "An agent silent this long while no tool runs is hung (0 = never)")
        ->transform(duration_seconds())
        ->type_name("DURATION")
        ->capture_default_str();
    budgets
        ->add_option("--iterations-per-hour", spec.iterations_per_hour,
                     "This loop's budget: agent runs in any rolling hour (0 = none)")
        ->check(non_negative());
    budgets
        ->add_option("--iterations-per-day", spec.iterations_per_day,
                     "This loop's budget: agent runs in any rolling 24 hours (0 = none)")
        ->check(non_negative());
    budgets
        ->add_option("--max-tokens", spec.max_tokens,
                     "End the loop as exhausted once its agents used this many tokens")
        ->check(non_negative());

    budgets
        ->add_option("--max-cost", spec.max_cost_usd,
                     "End the loop as exhausted once its agents reported this many US dollars")
        ->check(non_negative_number());
    cmd->add_option("--workspace", spec.workspace,
                    "Directory the agent works in (default: .), on the daemon's machine")
        ->check(on_this_machine(ctx, CLI::ExistingDirectory));
    cmd->add_option("--name", spec.name, "Name shown in lists");
    cmd->add_option("--idempotency-key", spec.idempotency_key,
                    "Submit at most once with this key: a submit with the key of a loop in "
                    "the history creates nothing and answers that loop");
    auto* follow = cmd->add_flag("--follow", options->follow,
                                 "Print the loop's output until it ends (like tail -f)");
    cmd->add_flag("--wait", options->wait, "Wait until the loop ends, without printing its output")
        ->excludes(follow);
    cmd->callback([&ctx, options] { ctx.exit_code = run_submit(ctx, *options); });
}

}  // namespace ralph::client
