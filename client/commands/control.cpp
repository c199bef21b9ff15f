// `ralphctl cancel ID`, `pause ID`, `resume ID` (loop.cancel, loop.pause, loop.resume): each
// prints the state the loop is in now; with --json {"loop": {...}}. A running loop stays
// `running` until its agent has ended, then becomes cancelled or paused. And `ralphctl merge ID`
// (loop.merge): prints what came of merging the loop's branch, exit 1 unless it is merged; with
// --json {"loop": {...}, "merged": BOOL}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

template <typename Method>
int run_control(const client_context& ctx, std::int64_t id) {
    const proto::loop_info loop = connection(ctx.socket).call<Method>({id});
    if (ctx.json) {
        print_json({{"loop", loop}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "loop {} ", id);
    append_coloured(out, proto::to_string(loop.state), state_colour(loop.state), ctx.colour);
    out.push_back('\n');
    write_stdout(out);
    return exit_code::ok;
}

int run_merge(const client_context& ctx, std::int64_t id) {
    const proto::merge_result result = connection(ctx.socket).call<proto::method::loop_merge>({id});
    if (ctx.json)
        print_json(result);
    else
        fmt::print("loop {}: {}\n", id, result.loop.landing);
    return result.merged ? exit_code::ok : exit_code::failure;
}

// Method: loop_cancel, loop_pause or loop_resume.
template <typename Method>
void add_control_command(CLI::App& app, client_context& ctx, const char* name,
                         const char* description) {
    auto id = std::make_shared<std::int64_t>(0);
    auto* cmd = app.add_subcommand(name, description);
    cmd->add_option("id", *id, "Loop id")->required();
    cmd->callback([&ctx, id] { ctx.exit_code = run_control<Method>(ctx, *id); });
}

}  // namespace

void register_control_commands(CLI::App& app, client_context& ctx) {
    using namespace proto::method;
    add_control_command<loop_cancel>(app, ctx, "cancel",
                                     "Cancel a loop (a running agent is stopped)");
    add_control_command<loop_pause>(
        app, ctx, "pause",
        "Pause a loop (a running agent is stopped; its iteration counts as done)");
    add_control_command<loop_resume>(app, ctx, "resume", "Put a paused loop back in the queue");
    auto id = std::make_shared<std::int64_t>(0);
    auto* merge = app.add_subcommand(
        "merge",
        "Merge the branch of a --worktree loop that ended into the branch it started from");
    merge->add_option("id", *id, "Loop id")->required();
    merge->callback([&ctx, id] { ctx.exit_code = run_merge(ctx, *id); });
}

}  // namespace ralph::client
