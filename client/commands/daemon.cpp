// `ralphctl daemon status` (daemon.info: version, protocol, pid, paths, uptime, its name, account
// and peers' links, loops by state, whether ralphd can write its state and what to do when it
// cannot; --json {"daemon": {...}}) and
// `ralphctl daemon stop [--leave-running]` (daemon.shutdown: the daemon stops its agents, or leaves
// them to the next ralphd, and exits; this command does not wait for that). Both exit 3 with a hint
// when the daemon is not running.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int run_status(const client_context& ctx) {
    const auto info = connection(ctx.socket).call<proto::method::daemon_info>({});
    if (ctx.json) {
        print_json({{"daemon", info}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    append_field(out, "version", info.version);
    append_field(out, "protocol", fmt::format("{}", info.protocol_version));
    append_field(out, "pid", fmt::format("{}", info.pid));
    append_field(out, "socket", info.socket);
    append_field(out, "database", info.database);
    append_field(out, "uptime",
                 info.started_at == 0 ? std::string("-")
                                      : text::format_duration(text::now_ms() - info.started_at));
    append_field(out, "host", info.host);
    append_field(out, "account", info.account);
    // Each --peer's link: linked since when, or why not.
    for (const auto& peer : info.peers) {
        const std::string since =
            peer.since == 0 ? "" : " for " + text::format_duration(text::now_ms() - peer.since);
        append_field(out, "peer " + peer.name,
                     peer.linked ? "linked" + since
                                 : fmt::format("not linked{}: {}", since,
                                               peer.error.empty() ? "trying" : peer.error),
                     peer.linked ? colour::none : colour::red, stdout_wants_colour());
    }
    append_field(out, "concurrency", fmt::format("{}", info.max_concurrent));
    append_field(out, "loops", describe_loop_counts(info.loops_by_state));
    const bool degraded = info.storage.state != "ok";
    append_field(out, "storage", describe_storage(info.storage),
                 degraded ? colour::red : colour::none, stdout_wants_colour());
    if (degraded) append_field(out, "fix", info.storage.fix);
    write_stdout(out);
    return exit_code::ok;
}

int run_stop(const client_context& ctx, const proto::shutdown_request& request) {
    connection(ctx.socket).call<proto::method::daemon_shutdown>(request);
    if (ctx.json)
        print_json({{"stopping", true}});
    else
        fmt::print("ralphd is stopping\n");
    return exit_code::ok;
}

}  // namespace

void register_daemon_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("daemon", "Status of ralphd, or stop it");
    cmd->require_subcommand(1);
    cmd->add_subcommand("status", "Version, paths, uptime and loop counts of ralphd")
        ->callback([&ctx] { ctx.exit_code = run_status(ctx); });
    auto request = std::make_shared<proto::shutdown_request>();
    auto* stop = cmd->add_subcommand("stop", "Ask ralphd to stop (running agents are ended)");
    stop->add_flag("--leave-running", request->leave_running,
                   "Leave the running agents running: the next ralphd adopts them");
    stop->callback([&ctx, request] { ctx.exit_code = run_stop(ctx, *request); });
}

}  // namespace ralph::client
