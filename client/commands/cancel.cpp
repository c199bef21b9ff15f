// `ralphctl cancel ID`: cancels a queued, waiting, paused or running loop (loop.cancel) and
// prints the state it is in now; with --json {"loop": {...}}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int run_cancel(const client_context& ctx, std::int64_t id) {
    nlohmann::json loop = connection(ctx.socket).call(proto::method::loop_cancel, {{"id", id}});
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

}  // namespace

void register_cancel_command(CLI::App& app, client_context& ctx) {
    auto id = std::make_shared<std::int64_t>(0);
    auto* cmd = app.add_subcommand("cancel", "Cancel a loop (a running agent is stopped)");
    cmd->add_option("id", *id, "Loop id")->required();
    cmd->callback([&ctx, id] { ctx.exit_code = run_cancel(ctx, *id); });
}

}  // namespace ralph::client
