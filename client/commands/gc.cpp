// `ralphctl gc [--older-than 30d] [--dry-run]`: prunes the history (history.gc). Loops that
// ended (completed, exhausted, failed, cancelled, stalled) before the cutoff are removed with
// their attempts, events, steering hints, output index and output files; loops that have not
// ended are never touched. Prints what was removed (or, with --dry-run, what would be); with
// --json the daemon's result: {"dry_run", "before", "loops", "loop_ids", "attempts", "events",
// "output_bytes"}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/history.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

// "1, 2, 5" — the first ids, then how many more.
std::string describe_ids(const std::vector<std::int64_t>& ids) {
    constexpr std::size_t shown = 20;
    std::string text;
    for (std::size_t i = 0; i < ids.size() && i < shown; ++i)
        text += fmt::format("{}{}", i == 0 ? "" : ", ", ids[i]);
    if (ids.size() > shown) text += fmt::format(" and {} more", ids.size() - shown);
    return text;
}

int run_gc(const client_context& ctx, const proto::gc_request& request) {
    const auto result = connection(ctx.socket).call<proto::method::history_gc>(request);
    if (ctx.json) {
        print_json(result);
        return exit_code::ok;
    }
    const std::string cutoff = format_local_time(result.before);
    const std::size_t n = result.loop_ids.size();
    if (n == 0)
        fmt::print("nothing to remove: no loop ended before {}\n", cutoff);
    else
        fmt::print(
            "{} {} loop{} that ended before {} ({}): {} attempt{}, {} event{}, {} of output\n",
            result.dry_run ? "would remove" : "removed", n, n == 1 ? "" : "s", cutoff,
            describe_ids(result.loop_ids), result.attempts, result.attempts == 1 ? "" : "s",
            result.events, result.events == 1 ? "" : "s", format_bytes(result.output_bytes));
    if (!result.worktrees_removed.empty())
        fmt::print("{} the worktree{} of loop{} {} (merged, nothing uncommitted)\n",
                   result.dry_run ? "would remove" : "removed",
                   result.worktrees_removed.size() == 1 ? "" : "s",
                   result.worktrees_removed.size() == 1 ? "" : "s",
                   describe_ids(result.worktrees_removed));
    if (!result.kept_for_worktrees.empty())
        fmt::print(
            "kept loop{} {}: {} worktree{} still there with work not merged (ralphctl "
            "merge ID, or git worktree remove it, then gc)\n",
            result.kept_for_worktrees.size() == 1 ? "" : "s",
            describe_ids(result.kept_for_worktrees),
            result.kept_for_worktrees.size() == 1 ? "its" : "their",
            result.kept_for_worktrees.size() == 1 ? " is" : "s are");
    if (result.kept_for_budgets)
        fmt::print(
            "loops that ended later are kept while the global budgets count their agent runs\n");
    return exit_code::ok;
}

}  // namespace

void register_gc_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<proto::gc_request>();
    auto* cmd = app.add_subcommand(
        "gc", "Remove loops that ended long ago, with their attempts and output");
    cmd->add_option("--older-than", options->older_than_s,
                    "Remove loops that ended at least this long ago (90s, 15m, 2h, 30d)")
        ->type_name("DURATION")
        ->transform(duration_seconds())
        ->default_str("30d");
    cmd->add_flag("--dry-run", options->dry_run, "Only say what would be removed");
    cmd->callback([&ctx, options] { ctx.exit_code = run_gc(ctx, *options); });
}

}  // namespace ralph::client
