// `ralphctl wait ID...` and `wait --all` (every loop that has not ended now): blocks until the
// loops have ended, following their states over one WebSocket session (loop.tail without
// output: the daemon says each change, nothing is polled), and prints a line per loop as it ends
// on stderr. Exit 0 when every loop completed, else as `tail -f` and `submit --wait`: 130 when one
// was cancelled, 1 when one failed, stalled or was exhausted (the worst wins); 3 when ralphd
// stopped meanwhile.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace ralph::client {
namespace {

struct wait_options {
    std::vector<std::int64_t> ids;
    bool all = false;
};

// The loops that have not ended, oldest first.
std::vector<std::int64_t> unended_loops(const client_context& ctx) {
    proto::list_request request;
    for (proto::loop_state state : {proto::loop_state::queued, proto::loop_state::running,
                                    proto::loop_state::waiting, proto::loop_state::paused})
        request.states.push_back(state);
    std::vector<std::int64_t> ids;
    for (const auto& loop : connection(ctx.socket).call<proto::method::loop_list>(request).loops)
        ids.push_back(loop.id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

int run_wait(const client_context& ctx, const wait_options& options) {
    std::vector<std::int64_t> ids;
    for (std::int64_t id : options.all ? unended_loops(ctx) : options.ids)
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    if (ids.empty()) {
        if (!ctx.json) fmt::print(stderr, "ralphctl: no loop has to end: nothing to wait for\n");
        return exit_code::ok;
    }
    tail_selection selection;
    selection.output = false;
    return follow_loops(ctx, ids, selection);
}

}  // namespace

void register_wait_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<wait_options>();
    auto* cmd = app.add_subcommand(
        "wait", "Wait until loops have ended; exit 0 if all completed (as tail -f otherwise)");
    auto* ids = cmd->add_option("ids", options->ids, "Loop ids (HOST:ID for another host's)")
                    ->transform(loop_id(ctx));
    cmd->add_flag("--all", options->all, "Every loop that has not ended yet")->excludes(ids);
    cmd->callback([&ctx, options] {
        if (options->ids.empty() && !options->all)
            throw CLI::RequiredError("name the loops to wait for (IDS), or --all");
        ctx.exit_code = run_wait(ctx, *options);
    });
}

}  // namespace ralph::client
