// `ralphctl rm ID...` (loop.remove): removes loops that ended, with their attempts, events,
// steering hints, output and files, as `gc` removes them, whenever they ended. Each loop in turn:
// "removed loop 4: 12 attempts, 340 events, 52.0 KiB of output"; one that cannot go (it has not
// ended: cancel it first; no such loop; its worktree holds work) is said on stderr and the others
// still go; exit 1 when any did not. With --json {"removed": [{...}], "errors": [{"id", "error"}]}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/history.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int run_rm(const client_context& ctx, const std::vector<std::int64_t>& ids) {
    connection daemon(ctx.socket);
    nlohmann::json removed = nlohmann::json::array();
    nlohmann::json errors = nlohmann::json::array();
    for (std::int64_t id : ids) {
        try {
            const proto::removal_result result = daemon.call<proto::method::loop_remove>({id});
            removed.push_back(result);
            if (ctx.json) continue;
            fmt::print(
                "removed loop {}: {} attempt{}, {} event{}, {} of output{}\n", id, result.attempts,
                result.attempts == 1 ? "" : "s", result.events, result.events == 1 ? "" : "s",
                format_bytes(result.output_bytes),
                result.worktree_removed ? ", and its worktree (merged, nothing uncommitted)" : "");
        } catch (const daemon_error& e) {
            errors.push_back({{"id", id}, {"error", e.what()}});
            if (!ctx.json) {
                std::fflush(stdout);
                fmt::print(stderr, "ralphctl: {}\n", escape_controls(e.what()));
            }
        }
    }
    if (ctx.json) print_json({{"removed", removed}, {"errors", errors}});
    return errors.empty() ? exit_code::ok : exit_code::failure;
}

}  // namespace

void register_rm_command(CLI::App& app, client_context& ctx) {
    auto ids = std::make_shared<std::vector<std::int64_t>>();
    auto* cmd = app.add_subcommand(
        "rm", "Remove loops that ended, with their history and output (as gc does)");
    cmd->add_option("ids", *ids, "Loop ids (HOST:ID for another host's)")
        ->required()
        ->transform(loop_id(ctx));
    cmd->callback([&ctx, ids] { ctx.exit_code = run_rm(ctx, *ids); });
}

}  // namespace ralph::client
