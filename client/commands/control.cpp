// `ralphctl cancel ID`, `pause ID`, `resume ID`, `retry ID` (loop.cancel, loop.pause,
// loop.resume, loop.retry): each says what it did and what the loop was ("cancelled loop 4 (was
// running; its agent is being stopped)"); with --json {"loop": {...}}, the loop as it is now.
// `ralphctl extend ID --by N` (loop.extend) says the new limit the same way. A running loop stays
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

// What cancel, pause and resume did: `done` ("cancelled"), and the loop's state before.
template <typename Method>
int run_control(const client_context& ctx, std::int64_t id, std::string_view done) {
    connection daemon(ctx.socket);
    const proto::loop_state before = daemon.call<proto::method::loop_get>({id}).loop.state;
    const proto::loop_info loop = daemon.call<Method>({id});
    if (ctx.json) {
        print_json({{"loop", loop}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "{} loop {} (was ", done, id);
    append_coloured(out, proto::to_string(before), state_colour(before), ctx.colour);
    // A running agent is ended first: the loop is still running until it has.
    if (loop.state == proto::loop_state::running)
        out.append(std::string_view("; its agent is being stopped"));
    else if (loop.state != proto::loop_state::cancelled && loop.state != proto::loop_state::paused)
        fmt::format_to(std::back_inserter(out), "; now {}", proto::to_string(loop.state));
    out.append(std::string_view(")\n"));
    write_stdout(out);
    return exit_code::ok;
}

int run_cancel(const client_context& ctx, std::int64_t id) {
    return run_control<proto::method::loop_cancel>(ctx, id, "cancelled");
}
int run_pause(const client_context& ctx, std::int64_t id) {
    return run_control<proto::method::loop_pause>(ctx, id, "paused");
}
int run_resume(const client_context& ctx, std::int64_t id) {
    return run_control<proto::method::loop_resume>(ctx, id, "resumed");
}

int run_retry(const client_context& ctx, std::int64_t id) {
    return run_control<proto::method::loop_retry>(ctx, id, "retried");
}

// "loop 4 may run 15 iterations (10 run; was exhausted, now queued)".
int run_extend(const client_context& ctx, const proto::extend_request& request) {
    connection daemon(ctx.socket);
    const proto::loop_state before = daemon.call<proto::method::loop_get>({request.id}).loop.state;
    const proto::loop_info loop = daemon.call<proto::method::loop_extend>(request);
    if (ctx.json) {
        print_json({{"loop", loop}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "loop {} may run {} iterations ({} run; ", loop.id,
                   loop.spec.max_iterations, loop.iterations);
    if (before != loop.state) {
        out.append(std::string_view("was "));
        append_coloured(out, proto::to_string(before), state_colour(before), ctx.colour);
        out.append(std::string_view(", now "));
    }
    append_coloured(out, proto::to_string(loop.state), state_colour(loop.state), ctx.colour);
    out.append(std::string_view(")\n"));
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
    add_id_command(app, ctx, "cancel", "Cancel a loop (a running agent is stopped)", run_cancel);
    add_id_command(app, ctx, "pause",
                   "Pause a loop (a running agent is stopped; its iteration counts as done)",
                   run_pause);
    add_id_command(app, ctx, "resume", "Put a paused loop back in the queue", run_resume);
    add_id_command(app, ctx, "retry",
                   "Run a failed, stalled or cancelled loop again from where it was (its "
                   "iterations kept)",
                   run_retry);
    auto extend = std::make_shared<proto::extend_request>();
    auto* cmd = app.add_subcommand(
        "extend",
        "Give a loop more iterations: an exhausted loop runs again, a running one runs longer");
    cmd->add_option("id", extend->id, "Loop id (HOST:ID for another host's)")
        ->required()
        ->transform(loop_id(ctx));
    cmd->add_option("--by", extend->by, "How many more iterations")
        ->required()
        ->type_name("N")
        ->check(number_between(1, double(proto::max_iterations)));
    cmd->callback([&ctx, extend] { ctx.exit_code = run_extend(ctx, *extend); });
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
