#include "client/cli.hpp"

#include "client/hosts.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/version.hpp"

#include <fmt/format.h>

namespace ralph::client {
namespace {

using register_function = void (*)(CLI::App&, client_context&);

// The commands in the order of the help text, each with the function that adds it (cancel,
// pause, resume, retry, extend, merge and pr share one, so they come one after the other).
struct command_entry {
    std::string_view name;
    register_function add;
    bool fleet_view = false;  // takes --all-hosts (client/fleet.hpp), which -H '*' also means
};
constexpr command_entry commands[] = {
    {"submit", register_submit_command},
    {"list", register_list_command, true},
    {"show", register_show_command},
    {"tail", register_tail_command},
    {"cancel", register_control_commands},
    {"pause", register_control_commands},
    {"resume", register_control_commands},
    {"retry", register_control_commands},
    {"extend", register_control_commands},
    {"merge", register_control_commands},
    {"pr", register_control_commands},
    {"rm", register_rm_command},
    {"wait", register_wait_command},
    {"daemon", register_daemon_command},
    {"agents", register_agents_command, true},
    {"steer", register_steer_command},
    {"init", register_init_command},
    {"scheduler", register_scheduler_command},
    {"budget", register_budget_command, true},
    {"report", register_report_command, true},
    {"gc", register_gc_command},
    {"top", register_top_command, true},
    {"doctor", register_doctor_command},
    {"notify", register_notify_command},
    {"web", register_web_command},
    {"hosts", register_hosts_command},
    {"mcp", register_mcp_command},
    {"dial-stdio", register_dial_stdio_command},
    {"completion", register_completion_command},
    {"man-page", register_man_page_command},
};

void register_commands(CLI::App& app, client_context& ctx, std::string_view word) {
    std::vector<std::string> names;
    for (const auto& command : commands) {
        if (command.name == word) {
            command.add(app, ctx);
            return;
        }
        names.emplace_back(command.name);
    }
    // A word that is no command: a typo, said at once with the command it was meant to be.
    if (!word.empty()) {
        const std::string meant = closest_word(word, names);
        throw client_error(
            exit_code::usage, fmt::format("'{}' is not a ralphctl command", word),
            (meant.empty() ? std::string() : fmt::format("did you mean '{}'? ", meant)) +
                "ralphctl --help lists the commands");
    }
    register_function added = nullptr;
    for (const auto& command : commands) {
        if (command.add != added) command.add(app, ctx);
        added = command.add;
    }
}

// `-H '*'`: every host, for the fleet views.
constexpr std::string_view every_host = "*";

// What --host (-H) names: a daemon, which becomes ctx.socket, or every host.
void choose_host(client_context& ctx, std::string_view command, const std::string& value) {
    if (value != every_host) {
        ctx.socket = host_address(ctx, value, command);
        return;
    }
    std::vector<std::string> views;
    for (const auto& entry : commands) {
        if (entry.fleet_view && entry.name == command) {
            ctx.all_hosts = true;
            return;
        }
        if (entry.fleet_view) views.emplace_back(entry.name);
    }
    throw client_error(
        exit_code::usage,
        fmt::format("-H '*' (every host) is for {} only", text::join_words(views, ", ")),
        "name one host: -H NAME");
}

}  // namespace

std::string_view command_word(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--socket" || arg == "--host" || arg == "-H") {
            ++i;
        } else if (!arg.starts_with('-')) {
            return arg;
        }
    }
    return {};
}

std::string host_address(client_context& ctx, const std::string& value, std::string_view command) {
    ctx.place_anywhere = value == placement_host;
    if (!ctx.place_anywhere) return resolve_host(value, ctx.local_socket);
    if (command != "submit")
        throw client_error(
            exit_code::usage,
            fmt::format("--host auto is for submit only (it places the new loop on the host with "
                        "the most room): {} needs the daemon it acts on",
                        command.empty() ? "this command" : fmt::format("'{}'", command)),
            "name it: --host NAME (ralphctl hosts lists them), or no --host for this machine's");
    return ctx.local_socket;
}

void define_cli(CLI::App& app, client_context& ctx, std::string_view command) {
    app.name("ralphctl");
    app.description("Submit, watch and manage the Ralph loops run by ralphd.");
    app.set_version_flag("--version", std::string(proto::daemon_version));
    // Usage errors look like every other error of ralphctl.
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return fmt::format("ralphctl: {}\nRun with --help for more information.\n", e.what());
    });
    // Global options may also come after the command: `ralphctl list --json`.
    app.fallthrough();
    // Without a command: the loops, or the help when ralphd cannot be reached (list.cpp).
    app.require_subcommand(0, 1);
    app.callback([&app, &ctx] {
        if (app.get_subcommands().empty()) ctx.exit_code = run_summary(ctx, app.help());
    });
    auto* socket = app.add_option("--socket", ctx.socket,
                                  "ralphd's socket ($RALPH_SOCKET overrides the default)")
                       ->capture_default_str();
    app.add_option_function<std::string>(
           "-H,--host",
           [&ctx, command](const std::string& value) { choose_host(ctx, command, value); },
           "The ralphd to talk to: a name of the hosts file, ssh://[USER@]HOST[:PORT] (over "
           "ssh) or unix://PATH ($RALPH_HOST); '*' (quoted): every host, as --all-hosts; for "
           "submit also auto: the host with the most room")
        ->type_name("HOST")
        ->excludes(socket);
    app.add_flag("--json", ctx.json, "Print JSON documents instead of human output");
    register_commands(app, ctx, command);
}

std::vector<cli_docs::command_doc> describe_cli() {
    client_context unused;
    CLI::App app;
    define_cli(app, unused, {});
    return cli_docs::describe(app);
}

}  // namespace ralph::client
