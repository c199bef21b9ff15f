// ralphctl: the command-line client of ralphd. Parses the global options and the command
// (CLI11), runs it and turns every failure into a message on stderr and an exit code (SPEC §7):
// 0 ok, 1 failure, 2 usage error, 3 daemon unreachable, 130 Ctrl-C.
#include "client/commands/commands.hpp"
#include "client/output.hpp"
#include "common/paths.hpp"
#include "proto/version.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace {

// Ctrl-C ends ralphctl at once with 130, also while it blocks reading from the daemon;
// only async-signal-safe calls here.
void on_interrupt(int) { ::_exit(ralph::client::exit_code::interrupted); }

}  // namespace

int main(int argc, char** argv) {
    using namespace ralph::client;
    std::signal(SIGINT, on_interrupt);

    client_context ctx;
    ctx.socket = ralph::paths::default_socket().string();
    ctx.colour = stdout_wants_colour();

    CLI::App app("Submit, watch and manage the Ralph loops run by ralphd.", "ralphctl");
    app.set_version_flag("--version", std::string(ralph::proto::daemon_version));
    // Usage errors look like every other error of ralphctl.
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return fmt::format("ralphctl: {}\nRun with --help for more information.\n", e.what());
    });
    // Global options may also come after the command: `ralphctl list --json`.
    app.fallthrough();
    app.require_subcommand(1);
    app.add_option("--socket", ctx.socket, "ralphd's socket ($RALPH_SOCKET overrides the default)")
        ->capture_default_str();
    app.add_flag("--json", ctx.json, "Print JSON documents instead of human output");

    register_submit_command(app, ctx);
    register_list_command(app, ctx);
    register_show_command(app, ctx);
    register_tail_command(app, ctx);
    register_control_commands(app, ctx);
    register_daemon_command(app, ctx);
    register_agents_command(app, ctx);
    register_steer_command(app, ctx);
    register_init_command(app, ctx);
    register_scheduler_command(app, ctx);
    register_budget_command(app, ctx);
    register_report_command(app, ctx);
    register_gc_command(app, ctx);

    try {
        // The chosen command runs inside parse(), from its callback, once all options are read.
        app.parse(argc, argv);
        return ctx.exit_code;
    } catch (const CLI::ParseError& e) {
        // --help and --version come this way too, with exit code 0.
        return app.exit(e) == 0 ? exit_code::ok : exit_code::usage;
    } catch (const client_error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "ralphctl: {}\n", e.what());
        if (!e.hint().empty()) fmt::print(stderr, "{}\n", e.hint());
        return e.code();
    } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "ralphctl: {}\n", e.what());
        return exit_code::failure;
    }
}
