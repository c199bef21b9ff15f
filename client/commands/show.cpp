// `ralphctl show ID [--events]`: one loop in detail (loop.get) and its attempts
// (loop.iterations) as a key/value block and a table, then each iteration's summary (the first
// line of the agent's final answer); --events adds what the agent did (loop.events). With --json
// {"loop": {...}, "attempts": [...]} (and "events": [...]).
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <iterator>
#include <map>
#include <memory>

namespace ralph::client {
namespace {

// The first line of an inline prompt, cut to 60 characters.
std::string preview(std::string_view prompt) {
    constexpr std::size_t max_chars = 60;
    const std::string_view line = prompt.substr(0, prompt.find('\n'));
    std::size_t cut = 0;
    std::size_t chars = 0;
    while (cut < line.size()) {
        // Count code points, not bytes, and never cut one in half.
        if ((static_cast<unsigned char>(line[cut]) & 0xC0) != 0x80 && ++chars > max_chars) break;
        ++cut;
    }
    return fmt::format("\"{}{}\"", line.substr(0, cut), cut < prompt.size() ? "…" : "");
}

// The prompt source the daemon uses, first that applies (README, "Prompts").
std::string prompt_source(const proto::submit_params& spec) {
    if (!spec.prompt.empty()) return preview(spec.prompt);
    if (!spec.prompt_file.empty()) return spec.prompt_file;
    return "PROMPT.md in the workspace, else the built-in prompt";
}

// "1,234 in / 56 out tokens, $0.0123, 3 turns, 2 tool calls"; what the agent did not report is
// left out.
std::string describe_usage(const proto::usage& usage) {
    std::string text =
        fmt::format("{} in / {} out tokens", usage.input_tokens, usage.output_tokens);
    if (usage.cost_usd) text += fmt::format(", ${:.4f}", *usage.cost_usd);
    text += fmt::format(", {} turn{}, {} tool call{}", usage.turns, usage.turns == 1 ? "" : "s",
                        usage.tool_calls, usage.tool_calls == 1 ? "" : "s");
    return text;
}

// What ralph cannot read from this agent's output, or empty.
std::string missing_capabilities(const proto::agent_info& agent) {
    std::vector<std::string> missing;
    if (!agent.structured_output)
        missing.emplace_back("no tool events or final answer (plain text)");
    if (!agent.tokens) missing.emplace_back("no token counts");
    if (!agent.cost) missing.emplace_back("no cost");
    if (!agent.rate_limit_detection) missing.emplace_back("rate limits only guessed from its text");
    return text::join_words(missing);
}

void append_time(fmt::memory_buffer& out, std::string_view key, std::int64_t at, std::int64_t now) {
    if (at == 0) return;
    const std::string relative =
        at <= now ? format_age(now - at) + " ago" : "in " + format_age(at - now);
    append_field(out, key, fmt::format("{} ({})", format_local_time(at), relative));
}

// `why`: why it does not run now, and until when (describe_wait), or "".
void append_loop(fmt::memory_buffer& out, const proto::loop_info& loop,
                 const proto::agent_info& agent, const std::vector<proto::attempt_info>& attempts,
                 const std::string& why, bool use_colour) {
    const auto& spec = loop.spec;
    const std::int64_t now = text::now_ms();
    append_field(out, "id", fmt::format("{}", loop.id));
    if (!spec.name.empty()) append_field(out, "name", spec.name);
    append_field(out, "state", proto::to_string(loop.state), state_colour(loop.state), use_colour);
    if (!why.empty())
        append_field(out, "waits", why, colour::yellow, use_colour);
    else if (!loop.stop_reason.empty())
        append_field(out, "stop reason", loop.stop_reason);
    append_field(out, "workspace", spec.workspace);
    if (!spec.worktree_path.empty())
        append_field(
            out, "worktree",
            fmt::format("{}, branch {} from {} of {}", spec.worktree_path, spec.worktree_branch,
                        spec.worktree_base.substr(0, 12), spec.worktree_source));
    if (spec.merge)
        append_field(out, "merge",
                     fmt::format("into {} when it completes{}", spec.worktree_target,
                                 spec.delete_branch ? ", branch deleted by gc" : ""));
    if (!spec.pr_remote.empty())
        append_field(out, "pr",
                     fmt::format("to {} when it completes{}", spec.pr_remote,
                                 spec.delete_branch ? ", branch deleted by gc" : ""));
    if (!loop.landing.empty()) append_field(out, "landing", loop.landing);
    append_field(out, "agent", spec.agent);
    if (std::string missing = missing_capabilities(agent); !missing.empty())
        append_field(out, "agent lacks", missing);
    if (!spec.model.empty()) append_field(out, "model", spec.model);
    if (!spec.command.empty()) append_field(out, "command", spec.command);
    if (!spec.args.empty()) append_field(out, "args", text::join_words(spec.args));
    if (!spec.fallback.empty())
        append_field(out, "fallback", text::join_words(spec.fallback, ", "));
    // Only the names: values are often API keys.
    if (!spec.env.empty()) {
        std::vector<std::string> names;
        for (const auto& entry : spec.env) names.push_back(entry.first);
        append_field(out, "env", text::join_words(names));
    }
    append_field(out, "prompt", prompt_source(spec));
    std::string rules = fmt::format("<promise>{}</promise>", spec.completion_phrase);
    if (!spec.status_tag.empty())
        rules += fmt::format(", <{}>{}</{}>", spec.status_tag, spec.status_value, spec.status_tag);
    if (!spec.legacy_phrase.empty()) rules += fmt::format(", the text \"{}\"", spec.legacy_phrase);
    if (spec.backlog_rule) rules += ", every checkbox of the specs checked";
    append_field(out, "completion", rules);
    if (!spec.verify_command.empty()) append_field(out, "verify", spec.verify_command);
    if (!spec.judge.empty())
        append_field(out, "judge",
                     fmt::format("{}{}, the loop stalls after {} rejection(s)", spec.judge,
                                 spec.judge_model.empty() ? "" : " (" + spec.judge_model + ")",
                                 spec.judge_max_rejections));
    if (!spec.specs_file.empty()) append_field(out, "specs", spec.specs_file);
    if (spec.commit) append_field(out, "commit", "each iteration's work");
    if (spec.sandbox)
        append_field(out, "sandbox", "bubblewrap: writes only the workspace, git and its own dirs");
    if (!spec.on_done.empty()) append_field(out, "on done", spec.on_done);
    append_field(out, "stall",
                 fmt::format("after {} iterations without progress or {} identical failures",
                             spec.stall_iterations, spec.stall_failures));
    append_field(
        out, "iterations",
        fmt::format("{} of {} (at least {})", loop.iterations,
                    spec.max_iterations == 0 ? "∞" : fmt::format("{}", spec.max_iterations),
                    spec.min_iterations));
    append_field(out, "attempts", fmt::format("{} (retries: {})", loop.attempts, loop.retries));
    append_field(out, "usage", describe_usage(loop.usage));
    std::map<std::string, proto::usage> by_agent;
    for (const auto& attempt : attempts) by_agent[attempt.agent].add(attempt.usage);
    if (by_agent.size() > 1) append_field(out, "by agent", describe_by_agent(by_agent));
    append_field(out, "timeout", format_seconds(spec.timeout_s) + " per attempt");
    append_field(out, "delay", format_seconds(spec.delay_s) + " between iterations");
    append_field(out, "retries",
                 fmt::format("{} per iteration, first after {}", spec.max_retries,
                             format_seconds(spec.retry_backoff_s)));
    append_field(out, "priority", fmt::format("{}", spec.priority));
    std::vector<std::string> budgets;
    if (spec.iterations_per_hour > 0)
        budgets.push_back(fmt::format("{} runs/hour", spec.iterations_per_hour));
    if (spec.iterations_per_day > 0)
        budgets.push_back(fmt::format("{} runs/day", spec.iterations_per_day));
    if (spec.max_tokens > 0) budgets.push_back(fmt::format("at most {} tokens", spec.max_tokens));
    if (spec.max_cost_usd > 0) budgets.push_back(fmt::format("at most ${:.2f}", spec.max_cost_usd));
    if (!budgets.empty()) append_field(out, "budget", text::join_words(budgets, ", "));
    append_time(out, "created", loop.created_at, now);
    append_time(out, "started", loop.started_at, now);
    append_time(out, "finished", loop.finished_at, now);
    append_field(out, "output", fmt::format("{} bytes", loop.output_bytes));
}

void append_attempts(fmt::memory_buffer& out, const std::vector<proto::attempt_info>& attempts,
                     bool use_colour) {
    // "#" is ITERATION.ATTEMPT. What a narrow terminal leaves out first: the bytes of output, the
    // tool calls, the exit status, the start.
    table rows({{"#", true},
                {"AGENT", false, table::fit::cut_end},
                {"START", false, table::fit::optional},
                {"TIME", true},
                {"TERMINATION"},
                {"EXIT", true, table::fit::optional},
                {"FAILURE", false, table::fit::cut_end},
                {"TOKENS", true},
                {"COST", true},
                {"TOOLS", true, table::fit::optional},
                {"CHANGES", true, table::fit::cut_end},
                {"OUTPUT", true, table::fit::optional}});
    const std::int64_t now = text::now_ms();
    for (const auto& attempt : attempts) {
        rows.add_format("{}.{}", attempt.iteration, attempt.attempt);
        rows.add(attempt.kind == proto::attempt_kind::judge ? "judge " + attempt.agent
                                                            : attempt.agent);
        rows.add(format_local_time(attempt.started_at));
        if (attempt.started_at == 0)
            rows.add("-");
        else
            rows.add(text::format_duration((attempt.ended_at != 0 ? attempt.ended_at : now) -
                                           attempt.started_at));
        rows.add(proto::to_string(attempt.how), termination_colour(attempt.how));
        if (attempt.exit_code)
            rows.add_format("{}", *attempt.exit_code);
        else if (attempt.signal)
            rows.add_format("signal {}", *attempt.signal);
        else
            rows.add("-");
        rows.add(attempt.failure == proto::failure_class::none
                     ? std::string("-")
                     : std::string(proto::to_string(attempt.failure)));
        rows.add_format("{}/{}", format_count(attempt.usage.input_tokens),
                        format_count(attempt.usage.output_tokens));
        if (attempt.usage.cost_usd)
            rows.add_format("${:.4f}", *attempt.usage.cost_usd);
        else
            rows.add("-");
        rows.add_format("{}", attempt.usage.tool_calls);
        if (!attempt.progress)
            rows.add("-");
        else
            rows.add_format("{} files +{} -{}", attempt.files_changed, attempt.insertions,
                            attempt.deletions);
        rows.add(format_bytes(attempt.output_end - attempt.output_start));
    }
    rows.render(out, use_colour, output_columns());
    // What each attempt ended with: its summary, or why it failed; the agent's feedback; a
    // failed --verify.
    for (const auto& attempt : attempts) {
        const std::string& said = attempt.error.empty() ? attempt.summary : attempt.error;
        if (!said.empty())
            fmt::format_to(std::back_inserter(out), "  {}.{}: {}\n", attempt.iteration,
                           attempt.attempt, escape_controls(said));
        if (const auto& feedback = attempt.feedback) {
            const std::string score =
                feedback->score ? fmt::format("{}/10 ", *feedback->score) : std::string();
            fmt::format_to(std::back_inserter(out), "       feedback {}{}\n", score,
                           escape_controls(feedback->summary));
            if (const std::string& next = feedback->next_steps; !next.empty())
                fmt::format_to(std::back_inserter(out), "       next steps: {}\n",
                               escape_controls(next.substr(0, next.find('\n'))));
        }
        if (const std::string verdict = describe_verdict(attempt); !verdict.empty())
            fmt::format_to(std::back_inserter(out), "       verdict {}\n",
                           escape_controls(verdict));
        if (attempt.verify_exit && *attempt.verify_exit != 0)
            fmt::format_to(std::back_inserter(out), "       --verify exited {}\n",
                           *attempt.verify_exit);
    }
}

void append_events(fmt::memory_buffer& out, const std::vector<proto::event_info>& events) {
    std::int64_t iteration = 0;
    for (const auto& e : events) {
        if (e.iteration != iteration) {
            iteration = e.iteration;
            fmt::format_to(std::back_inserter(out), "\niteration {}\n", iteration);
        }
        std::string_view text = e.text;
        text = text.substr(0, text.find('\n'));
        fmt::format_to(std::back_inserter(out), "  {:<12} {}{}{}\n", e.kind,
                       escape_controls(e.tool), e.tool.empty() ? "" : " ", escape_controls(text));
    }
}

// Every event of the loop, page by page.
std::vector<proto::event_info> all_events(connection& daemon, std::int64_t id) {
    std::vector<proto::event_info> events;
    proto::events_request request;
    request.id = id;
    request.limit = 10000;
    for (;;) {
        auto page = daemon.call<proto::method::loop_events>(request);
        if (page.events.empty()) return events;
        std::move(page.events.begin(), page.events.end(), std::back_inserter(events));
        request.after = page.next_after;
    }
}

int run_show(const client_context& ctx, std::int64_t id, bool with_events) {
    connection daemon(ctx.socket);
    const auto loop = daemon.call<proto::method::loop_get>({id});
    const auto attempts = daemon.call<proto::method::loop_iterations>({id}).attempts;
    const auto events = with_events ? all_events(daemon, id) : std::vector<proto::event_info>();
    if (ctx.json) {
        nlohmann::json doc{{"loop", loop}, {"attempts", attempts}};
        if (with_events) doc["events"] = events;
        print_json(std::move(doc));
        return exit_code::ok;
    }
    // A queued loop's cause is the queue's: the scheduler and the loops that run.
    std::string why;
    if (loop.loop.state == proto::loop_state::queued) {
        const auto scheduler = daemon.call<proto::method::scheduler_get>({});
        proto::list_request running;
        running.states = {proto::loop_state::running};
        const auto loops = daemon.call<proto::method::loop_list>(running).loops;
        const queue_view queue{scheduler, loops};
        why = describe_wait(loop.loop, &queue, text::now_ms());
    } else {
        why = describe_wait(loop.loop, nullptr, text::now_ms());
    }
    fmt::memory_buffer out;
    append_loop(out, loop.loop, loop.agent, attempts, why, ctx.colour);
    if (!attempts.empty()) {
        out.push_back('\n');
        append_attempts(out, attempts, ctx.colour);
    }
    if (with_events) append_events(out, events);
    write_stdout(out);
    return exit_code::ok;
}

}  // namespace

void register_show_command(CLI::App& app, client_context& ctx) {
    struct show_options {
        std::int64_t id = 0;
        bool events = false;
    };
    auto options = std::make_shared<show_options>();
    auto* cmd = app.add_subcommand("show", "Show a loop and its attempts");
    cmd->add_option("id", options->id, "Loop id (HOST:ID for another host's)")
        ->required()
        ->transform(loop_id(ctx));
    cmd->add_flag("--events", options->events,
                  "Also list what the agent did: text, tool calls, results, errors, usage");
    cmd->callback([&ctx, options] { ctx.exit_code = run_show(ctx, options->id, options->events); });
}

}  // namespace ralph::client
