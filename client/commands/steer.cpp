// `ralphctl steer ID TEXT`: queues a hint (loop.steer) that the loop's next iteration gets in
// its prompt, once; with --json {"steering": {...}}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

struct steer_options {
    std::int64_t id = 0;
    std::string text;
};

int run_steer(const client_context& ctx, const steer_options& options) {
    const auto steered =
        connection(ctx.socket).call<proto::method::loop_steer>({options.id, options.text});
    if (ctx.json) {
        print_json({{"steering", steered}});
        return exit_code::ok;
    }
    fmt::print("loop {}: iteration {} will get the hint\n", options.id, steered.next_iteration);
    return exit_code::ok;
}

}  // namespace

void register_steer_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<steer_options>();
    auto* cmd = app.add_subcommand("steer", "Give a running loop a hint for its next iteration");
    cmd->add_option("id", options->id, "Loop id (HOST:ID for another host's)")
        ->required()
        ->transform(loop_id(ctx));
    cmd->add_option("text", options->text, "The hint, added once to the next iteration's prompt")
        ->required();
    cmd->callback([&ctx, options] { ctx.exit_code = run_steer(ctx, *options); });
}

}  // namespace ralph::client
