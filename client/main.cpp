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
#include <string_view>

namespace {

// Ctrl-C ends ralphctl at once with 130, also while it blocks reading from the daemon;
// only async-signal-safe calls here.
void on_interrupt(int) { ::_exit(ralph::client::exit_code::interrupted); }

using register_function = void (*)(CLI::App&, ralph::client::client_context&);

// The commands in the order of the help text, each with the function that adds it (cancel,
// pause and resume share one).
struct command_entry {
    std::string_view name;
    register_function add;
};
constexpr command_entry commands[] = {
    {"submit", ralph::client::register_submit_command},
    {"list", ralph::client::register_list_command},
    {"show", ralph::client::register_show_command},
    {"tail", ralph::client::register_tail_command},
    {"cancel", ralph::client::register_control_commands},
    {"pause", ralph::client::register_control_commands},
    {"resume", ralph::client::register_control_commands},
    {"daemon", ralph::client::register_daemon_command},
    {"agents", ralph::client::register_agents_command},
    {"steer", ralph::client::register_steer_command},
    {"init", ralph::client::register_init_command},
    {"scheduler", ralph::client::register_scheduler_command},
    {"budget", ralph::client::register_budget_command},
    {"report", ralph::client::register_report_command},
    {"gc", ralph::client::register_gc_command},
    {"doctor", ralph::client::register_doctor_command},
};

// The command word of the arguments: the first that is neither an option nor --socket's value.
std::string_view command_word(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--socket") {
            ++i;
        } else if (!arg.starts_with('-')) {
            return arg;
        }
    }
    return {};
}

// Adds the command the arguments name, or every command when they name none (help, errors).
// Building every command's options is a third of ralphctl's start-up, and scripts run it often.
void register_commands(CLI::App& app, ralph::client::client_context& ctx, int argc, char** argv) {
    const std::string_view word = command_word(argc, argv);
    for (const auto& command : commands) {
        if (command.name == word) {
            command.add(app, ctx);
            return;
        }
    }
    register_function added = nullptr;
    for (const auto& command : commands) {
        if (command.add != added) command.add(app, ctx);
        added = command.add;
    }
}

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

    register_commands(app, ctx, argc, argv);

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
