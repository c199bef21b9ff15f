// `ralphctl report [--since WHEN]`: the morning summary (history.report). Every loop that was
// submitted, ran an attempt or ended since WHEN (default 24h ago): a table of its outcome,
// iterations, commits, diff stats, tokens, cost and duration, then per loop its stop reason,
// the `git log` range of its commits, retries and failures, and a totals line. With --json the
// report as the daemon gives it: {"since", "until", "loops": [...], "totals": {...}}.
// --all-hosts: every host's report in one (client/fleet.hpp): a HOST column, qualified ids, the
// totals over all of them; in --json each loop has "host", and "unreachable" names the hosts
// that did not answer.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/history.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>

namespace ralph::client {
namespace {

// Enough of a commit id to name it.
std::string_view short_head(std::string_view head) { return head.substr(0, 10); }

std::string describe_changes(const proto::activity& a) {
    return fmt::format("{} file{} +{} -{}", a.files_changed, a.files_changed == 1 ? "" : "s",
                       a.insertions, a.deletions);
}

std::string describe_cost(const proto::usage& usage) {
    return usage.cost_usd ? fmt::format("${:.4f}", *usage.cost_usd) : std::string("-");
}

// "crash 2, timeout 1", or "" when nothing failed.
std::string describe_failures(const std::map<std::string, std::int64_t>& failures) {
    std::string text;
    for (const auto& [failure, count] : failures) {
        if (!text.empty()) text += ", ";
        text += fmt::format("{} {}", failure, count);
    }
    return text;
}

// "1 accepted, 2 rejected": a judge's verdicts.
std::string describe_verdicts(const std::map<std::string, std::int64_t>& verdicts) {
    std::string text;
    for (const auto& [verdict, count] : verdicts) {
        if (!text.empty()) text += ", ";
        text += fmt::format("{} {}ed", count, verdict);
    }
    return text;
}

// A report's loops, with the host of each (by index; empty: one host).
struct report_rows {
    const std::vector<proto::report_loop>& loops;
    const std::vector<std::string>& hosts;
    std::string_view host(std::size_t i) const {
        return hosts.empty() ? std::string_view() : hosts[i];
    }
};

void append_table(fmt::memory_buffer& out, const report_rows& report, bool use_colour) {
    table rows(with_host_column(!report.hosts.empty(), {id_column(!report.hosts.empty()),
                                                        {"NAME", false, table::fit::cut_end},
                                                        {"STATE"},
                                                        {"ITER", true},
                                                        {"TOTAL", true, table::fit::optional},
                                                        {"COMMITS", true, table::fit::optional},
                                                        {"CHANGES", true},
                                                        {"TOKENS IN/OUT", true},
                                                        {"COST", true},
                                                        {"TIME", true}}));
    for (std::size_t i = 0; i < report.loops.size(); ++i) {
        const proto::report_loop& loop = report.loops[i];
        const proto::activity& a = loop.activity;
        add_host_and_id(rows, report.host(i), loop.id);
        rows.add(loop.name.empty() ? "-" : loop.name);
        rows.add(proto::to_string(loop.state), state_colour(loop.state));
        rows.add_format("{}", a.iterations);
        if (loop.max_iterations == 0)
            rows.add_format("{}/∞", loop.iterations_total);
        else
            rows.add_format("{}/{}", loop.iterations_total, loop.max_iterations);
        rows.add_format("{}", a.commits);
        rows.add(describe_changes(a));
        rows.add_format("{}/{}", format_count(a.usage.input_tokens),
                        format_count(a.usage.output_tokens));
        rows.add(describe_cost(a.usage));
        rows.add(loop.started_at == 0 ? std::string("-") : text::format_duration(loop.duration_ms));
    }
    rows.render(out, use_colour, output_columns());
}

// Under the table, what a row cannot say: why the loop stopped, where its commits are, what
// went wrong on the way.
void append_details(fmt::memory_buffer& out, const report_rows& report) {
    for (std::size_t i = 0; i < report.loops.size(); ++i) {
        const proto::report_loop& loop = report.loops[i];
        const proto::activity& a = loop.activity;
        const std::string_view host = report.host(i);
        fmt::format_to(std::back_inserter(out), "\n{} {}: {}\n",
                       host.empty() ? fmt::format("{}", loop.id) : qualified_id(host, loop.id),
                       escape_controls(loop.name),
                       loop.stop_reason.empty() ? std::string(proto::to_string(loop.state))
                                                : escape_controls(loop.stop_reason));
        const std::string workspace = escape_controls(shorten_home(loop.workspace));
        if (a.commits > 0 && !loop.head_before.empty() && !loop.head_after.empty())
            fmt::format_to(std::back_inserter(out), "    git -C {} log {}..{}\n", workspace,
                           escape_controls(short_head(loop.head_before)),
                           escape_controls(short_head(loop.head_after)));
        else
            fmt::format_to(std::back_inserter(out), "    in {}\n", workspace);
        if (a.by_agent.size() > 1)
            fmt::format_to(std::back_inserter(out), "    by agent: {}\n",
                           describe_by_agent(a.by_agent));
        if (!a.verdicts.empty())
            fmt::format_to(std::back_inserter(out), "    judge: {}\n",
                           describe_verdicts(a.verdicts));
        if (a.retries > 0 || !a.failures.empty()) {
            std::string failures = describe_failures(a.failures);
            fmt::format_to(std::back_inserter(out), "    {} retr{}{}{}\n", a.retries,
                           a.retries == 1 ? "y" : "ies",
                           failures.empty() ? "" : "; failures: ", failures);
        }
    }
}

void append_totals(fmt::memory_buffer& out, const proto::report& report, bool use_colour) {
    const proto::activity& t = report.totals;
    std::string line = fmt::format(
        "{} loop{} ({}) · {} iteration{} · {} commit{} · {} · {} in / {} out tokens · cost {} · "
        "agents ran {}",
        report.loop_count, report.loop_count == 1 ? "" : "s", describe_loop_counts(report.by_state),
        t.iterations, t.iterations == 1 ? "" : "s", t.commits, t.commits == 1 ? "" : "s",
        describe_changes(t), t.usage.input_tokens, t.usage.output_tokens, describe_cost(t.usage),
        text::format_duration(t.agent_ms));
    if (t.retries > 0) line += fmt::format(" · {} retr{}", t.retries, t.retries == 1 ? "y" : "ies");
    if (!t.failures.empty()) line += " · failures: " + describe_failures(t.failures);
    if (t.by_agent.size() > 1) line += " · by agent: " + describe_by_agent(t.by_agent);
    if (!t.verdicts.empty()) line += " · judge: " + describe_verdicts(t.verdicts);
    out.push_back('\n');
    append_coloured(out, "Total: ", colour::bold, use_colour);
    out.append(line);
    out.push_back('\n');
}

// Prints the report; `hosts`: each loop's host (--all-hosts), by index.
void print_report(const client_context& ctx, const proto::report& report,
                  const std::vector<std::string>& hosts = {}) {
    const std::string window = fmt::format("since {} ({} ago)", format_local_time(report.since),
                                           format_age(report.until - report.since));
    fmt::memory_buffer out;
    if (report.loops.empty()) {
        fmt::format_to(std::back_inserter(out), "No loop was active {}.\n", window);
        write_stdout(out);
        return;
    }
    fmt::format_to(std::back_inserter(out), "Loops active {}:\n\n", window);
    const report_rows rows{report.loops, hosts};
    append_table(out, rows, ctx.colour);
    append_details(out, rows);
    append_totals(out, report, ctx.colour);
    write_stdout(out);
}

// `report --all-hosts`: one report of every host's loops, in the order of the hosts file.
int run_report_all_hosts(const client_context& ctx, const std::string& since) {
    fleet<proto::report> hosts(ctx.local_socket);
    const auto answers = hosts.ask_once([since](connection& daemon) {
        return daemon.call<proto::method::history_report>({text::parse_iso8601(since)});
    });
    proto::report all;
    all.since = text::parse_iso8601(since);
    all.until = all.since;
    std::vector<std::string> names;
    for (const auto& answer : answers) {
        all.until = std::max(all.until, answer.result.until);
        for (const auto& loop : answer.result.loops) {
            all.loops.push_back(loop);
            names.push_back(answer.host);
        }
    }
    proto::add_totals(all);
    if (ctx.json) {
        nlohmann::json document = all;
        for (std::size_t i = 0; i < names.size(); ++i) document["loops"][i]["host"] = names[i];
        return hosts.print_json(std::move(document));
    }
    print_report(ctx, all, names);
    return hosts.exit_code();
}

int run_report(const client_context& ctx, const std::string& since) {
    if (ctx.all_hosts) return run_report_all_hosts(ctx, since);
    const auto report =
        connection(ctx.socket).call<proto::method::history_report>({text::parse_iso8601(since)});
    if (ctx.json) {
        print_json(report);
        return exit_code::ok;
    }
    print_report(ctx, report);
    return exit_code::ok;
}

}  // namespace

void register_report_command(CLI::App& app, client_context& ctx) {
    auto since = std::make_shared<std::string>("24h");
    auto* cmd = app.add_subcommand(
        "report",
        "What the loops did since a time: outcomes, iterations, commits, changes, "
        "tokens, cost, stop reasons");
    auto* option = cmd->add_option("--since", *since,
                                   "Start of the report: an age (30m, 8h, 2d) or an ISO 8601 time "
                                   "(2026-11-22T08:00, local time unless it ends with Z or an "
                                   "offset)")
                       ->type_name("WHEN")
                       ->transform(time_or_age())
                       ->capture_default_str();
    add_all_hosts_flag(*cmd, ctx);
    cmd->callback([&ctx, since, option] {
        // A given --since was made a time by its validator; the default is an age still.
        if (option->count() == 0)
            *since = text::format_iso8601(text::parse_time_or_age(*since, text::now_ms()));
        ctx.exit_code = run_report(ctx, *since);
    });
}

}  // namespace ralph::client
