// `ralphctl cancel ID`, `pause ID`, `resume ID` (loop.cancel, loop.pause, loop.resume): each
// prints the state the loop is in now; with --json {"loop": {...}}. A running loop stays
// `running` until its agent has ended, then becomes cancelled or paused. And `ralphctl merge ID`
// and `pr ID` (loop.merge, loop.pr): print what came of landing the loop's branch, exit 1 unless
// it landed; with --json {"loop": {...}, "landed": BOOL}.
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

// Method: loop_merge or loop_pr. Exit 1 unless it landed.
template <typename Method>
int run_landing(const client_context& ctx, std::int64_t id) {
    const proto::landing_result result = connection(ctx.socket).call<Method>({id});
    if (ctx.json)
        print_json(result);
    else
        fmt::print("loop {}: {}\n", id, escape_controls(result.loop.landing));
    return result.landed ? exit_code::ok : exit_code::failure;
}

// A command of one loop id, which `run` runs.
void add_id_command(CLI::App& app, client_context& ctx, const char* name, const char* description,
                    int (*run)(const client_context&, std::int64_t)) {
    auto id = std::make_shared<std::int64_t>(0);
    auto* cmd = app.add_subcommand(name, description);
    cmd->add_option("id", *id, "Loop id (HOST:ID for another host's)")
        ->required()
        ->transform(loop_id(ctx));
    cmd->callback([&ctx, id, run] { ctx.exit_code = run(ctx, *id); });
}

}  // namespace

void register_control_commands(CLI::App& app, client_context& ctx) {
    using namespace proto::method;
    add_id_command(app, ctx, "cancel", "Cancel a loop (a running agent is stopped)",
                   run_control<loop_cancel>);
    add_id_command(app, ctx, "pause",
                   "Pause a loop (a running agent is stopped; its iteration counts as done)",
                   run_control<loop_pause>);
    add_id_command(app, ctx, "resume", "Put a paused loop back in the queue",
                   run_control<loop_resume>);
    add_id_command(app, ctx, "merge",
                   "Merge the branch of a --worktree loop that ended into the branch it started "
                   "from",
                   run_landing<loop_merge>);
    add_id_command(app, ctx, "pr",
                   "Push the branch of a --worktree loop that ended and open a pull request with "
                   "gh (remote: its --pr, else origin)",
                   run_landing<loop_pr>);
}

}  // namespace ralph::client
