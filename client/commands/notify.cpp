// `ralphctl notify test [URL]` (notify.test): the daemon sends a sample push notification at
// once to URL, or to each of its own webhooks (ralphd --notify) without one, as it would send a
// loop's, and says per target whether the receiver took it; exit 0 when every one did, else 1
// (with the receiver's status or the error). With --json {"notify": [{...}, ...]}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int run_notify_test(const client_context& ctx, const proto::notify_test_request& request) {
    const proto::notify_test_result result =
        connection(ctx.socket).call<proto::method::notify_test>(request);
    bool all_delivered = true;
    fmt::memory_buffer out;
    for (const auto& sent : result.sent) {
        all_delivered = all_delivered && sent.delivered;
        append_field(out, "target", fmt::format("{} ({} format)", sent.target, sent.format));
        append_field(out, "sent",
                     sent.delivered ? fmt::format("delivered (HTTP {})", sent.status)
                                    : "not delivered: " + sent.error,
                     sent.delivered ? colour::green : colour::red, ctx.colour);
    }
    if (ctx.json)
        print_json({{"notify", result.sent}});
    else
        write_stdout(out);
    return all_delivered ? exit_code::ok : exit_code::failure;
}

}  // namespace

void register_notify_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("notify", "Push notifications (webhooks)");
    cmd->require_subcommand(1);
    auto request = std::make_shared<proto::notify_test_request>();
    auto* test = cmd->add_subcommand(
        "test",
        "Have ralphd send a sample notification now to URL, or to each of its --notify webhooks "
        "(exit 1 if one was not delivered)");
    test->add_option("url", request->url,
                     "http(s)://..., or FORMAT+https://... with FORMAT ntfy, slack, discord, "
                     "telegram or generic; none: ralphd's own");
    test->callback([&ctx, request] { ctx.exit_code = run_notify_test(ctx, *request); });
}

}  // namespace ralph::client
