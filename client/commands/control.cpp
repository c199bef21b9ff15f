// `ralphctl cancel ID`, `pause ID`, `resume ID` (loop.cancel, loop.pause, loop.resume): each
// prints the state the loop is in now; with --json {"loop": {...}}. A running loop stays
// `running` until its agent has ended, then becomes cancelled or paused.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int run_control(const client_context& ctx, const char* method, std::int64_t id) {
    nlohmann::json loop = connection(ctx.socket).call(method, {{"id", id}});
    if (ctx.json) {
        print_json({{"loop", std::move(loop)}});
        return exit_code::ok;
    }
    const auto state = proto::loop_state_from_string(loop.at("state").get<std::string>());
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "loop {} ", id);
    append_coloured(out, proto::to_string(state), state_colour(state), ctx.colour);
    out.push_back('\n');
    write_stdout(out);
    return exit_code::ok;
}

void add_control_command(CLI::App& app, client_context& ctx, const char* name,
                         const char* description, const char* method) {
    auto id = std::make_shared<std::int64_t>(0);
    auto* cmd = app.add_subcommand(name, description);
    cmd->add_option("id", *id, "Loop id")->required();
    cmd->callback([&ctx, method, id] { ctx.exit_code = run_control(ctx, method, *id); });
}

}  // namespace

void register_control_commands(CLI::App& app, client_context& ctx) {
    add_control_command(app, ctx, "cancel", "Cancel a loop (a running agent is stopped)",
                        proto::method::loop_cancel);
    add_control_command(app, ctx, "pause",
                        "Pause a loop (a running agent is stopped; its iteration counts as done)",
                        proto::method::loop_pause);
    add_control_command(app, ctx, "resume", "Put a paused loop back in the queue",
                        proto::method::loop_resume);
}

}  // namespace ralph::client
