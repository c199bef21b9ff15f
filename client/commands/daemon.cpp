// `ralphctl daemon status` (daemon.info: version, protocol, pid, paths, uptime, its name, account
// and peers' links, its webhooks (redacted), loops by state, whether ralphd can write its state and
// what to do when it cannot; --json {"daemon": {...}}) and `ralphctl daemon stop [--leave-running]`
// (daemon.shutdown: the daemon stops its agents, or leaves them to the next ralphd, and exits; this
// command does not wait for that). Both exit 3 with a hint when the daemon is not running. And
// `ralphctl daemon start [-- RALPHD-OPTION...]`: ralphd in the background without systemd (`ralphd
// --daemonize`, the one next to ralphctl, else on PATH), on ralphctl's socket; it returns once
// ralphd listens (then prints its pid, socket and database), or exits 1 with ralphd's error; a
// ralphd already answering there is refused.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "client/spawn.hpp"
#include "common/ssh_command.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <system_error>

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
    append_field(out, "notify",
                 info.notify_targets.empty() ? std::string("no webhook (ralphd --notify)")
                                             : text::join_words(info.notify_targets, ", "));
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

// The ralphd installed or built with this ralphctl: next to it, else the first on PATH.
std::string ralphd_program() {
    std::error_code ec;
    const std::filesystem::path here = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && ::access((here.parent_path() / "ralphd").c_str(), X_OK) == 0)
        return (here.parent_path() / "ralphd").string();
    return "ralphd";
}

int run_start(const client_context& ctx, const std::vector<std::string>& ralphd_options) {
    if (ctx.socket.starts_with(ssh_scheme))
        throw client_error(exit_code::usage,
                           "daemon start starts this machine's ralphd, not one over ssh",
                           "on that host: ssh HOST ralphctl daemon start");
    try {
        const auto info = connection(ctx.socket).call<proto::method::daemon_info>({});
        throw client_error(
            exit_code::failure,
            fmt::format("ralphd is already running (pid {}, socket {})", info.pid, info.socket),
            "stop it first: ralphctl daemon stop");
    } catch (const client_error& e) {
        if (e.code() != exit_code::unreachable) throw;
    }
    std::vector<std::string> argv{ralphd_program(), "--daemonize"};
    // ralphd's own default is ralphctl's (RALPH_SOCKET, XDG_RUNTIME_DIR): another is named.
    if (ctx.socket != ctx.local_socket) {
        const std::string_view unix_scheme = "unix://";
        std::string_view path = ctx.socket;
        if (path.starts_with(unix_scheme)) path.remove_prefix(unix_scheme.size());
        argv.insert(argv.end(), {"--socket", std::string(path)});
    }
    argv.insert(argv.end(), ralphd_options.begin(), ralphd_options.end());
    int status = 0;
    try {
        // ralphd --daemonize returns once the daemon listens, its errors on our stderr.
        status = wait_process(spawn_process(argv));
    } catch (const std::system_error& e) {
        throw client_error(exit_code::failure, fmt::format("cannot run {}: {}", argv[0], e.what()),
                           "install ralph (README, Install) or put ralphd on PATH");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw client_error(exit_code::failure, "ralphd did not start (its error is above)");
    const auto info = connection(ctx.socket).call<proto::method::daemon_info>({});
    if (ctx.json) {
        print_json({{"daemon", info}});
        return exit_code::ok;
    }
    fmt::print("ralphd started: pid {}, socket {}, database {}\n", info.pid, info.socket,
               info.database);
    return exit_code::ok;
}

}  // namespace

void register_daemon_command(CLI::App& app, client_context& ctx) {
    auto* cmd =
        app.add_subcommand("daemon", "Start ralphd without systemd, its status, or stop it");
    cmd->require_subcommand(1);
    auto ralphd_options = std::make_shared<std::vector<std::string>>();
    auto* start = cmd->add_subcommand(
        "start",
        "Start ralphd in the background, without systemd (WSL, containers); returns once it "
        "listens");
    start->add_option("ralphd-options", *ralphd_options,
                      "ralphd's own options, after --: e.g. -- --max-concurrent 2");
    start->callback([&ctx, ralphd_options] { ctx.exit_code = run_start(ctx, *ralphd_options); });
    cmd->add_subcommand("status", "Version, paths, uptime and loop counts of ralphd")
        ->callback([&ctx] { ctx.exit_code = run_status(ctx); });
    auto request = std::make_shared<proto::shutdown_request>();
    auto* stop = cmd->add_subcommand("stop", "Ask ralphd to stop (running agents are ended)");
    stop->add_flag("--leave-running", request->leave_running,
                   "Leave the running agents running: the next ralphd adopts them");
    stop->callback([&ctx, request] { ctx.exit_code = run_stop(ctx, *request); });
}

}  // namespace ralph::client
