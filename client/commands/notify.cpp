// `ralphctl notify test URL` (notify.test): the daemon sends a sample push notification to URL
// at once, as it would send a loop's, and says whether the receiver took it (exit 0) or not
// (exit 1, with the receiver's status or the error). With --json {"notify": {...}}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int run_notify_test(const client_context& ctx, const proto::notify_test_request& request) {
    const proto::notify_test_result sent =
        connection(ctx.socket).call<proto::method::notify_test>(request);
    if (ctx.json) {
        print_json({{"notify", sent}});
    } else {
        fmt::memory_buffer out;
        append_field(out, "target", fmt::format("{} ({} format)", sent.target, sent.format));
        append_field(out, "sent",
                     sent.delivered ? fmt::format("delivered (HTTP {})", sent.status)
                                    : "not delivered: " + sent.error,
                     sent.delivered ? colour::green : colour::red, ctx.colour);
        write_stdout(out);
    }
    return sent.delivered ? exit_code::ok : exit_code::failure;
}

}  // namespace

void register_notify_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("notify", "Push notifications (webhooks)");
    cmd->require_subcommand(1);
    auto request = std::make_shared<proto::notify_test_request>();
    auto* test = cmd->add_subcommand(
        "test", "Have ralphd send a sample notification to URL now (exit 1 if not delivered)");
    test->add_option("url", request->url,
                     "http(s)://..., or FORMAT+https://... with FORMAT ntfy, slack, discord, "
                     "telegram or generic")
        ->required();
    test->callback([&ctx, request] { ctx.exit_code = run_notify_test(ctx, *request); });
}

}  // namespace ralph::client
