// ralphctl: the command-line client of ralphd. Parses the global options and the command
// (CLI11), runs it and turns every failure into a message on stderr and an exit code (README,
// "Using it"): 0 ok, 1 failure, 2 usage error, 3 daemon unreachable, 130 Ctrl-C.
#include "client/cli.hpp"
#include "client/hosts.hpp"
#include "client/output.hpp"
#include "common/paths.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace {

// Ctrl-C ends ralphctl at once with 130, also while it blocks reading from the daemon;
// only async-signal-safe calls here.
void on_interrupt(int) { ::_exit(ralph::client::exit_code::interrupted); }

}  // namespace

int main(int argc, char** argv) {
    using namespace ralph::client;
    std::signal(SIGINT, on_interrupt);

    client_context ctx;
    ctx.local_socket = ctx.socket = ralph::paths::default_socket().string();
    ctx.colour = stdout_wants_colour();

    CLI::App app;
    try {
        const std::string_view command = command_word(argc, argv);
        // Not for what runs on behalf of another machine (dial-stdio) or at build time.
        if (command != "dial-stdio" && command != "completion" && command != "man-page")
            ctx.config = read_client_config(ralph::paths::default_client_config());
        define_cli(app, ctx, command);
        // $RALPH_HOST, else $RALPH_SOCKET, else ralphctl.conf's host is the default; --socket or
        // --host on the command line replaces it. The configured `auto` is submit's only.
        const std::string& configured = ctx.config.host;
        if (const char* host = std::getenv("RALPH_HOST"); host && *host)
            ctx.socket = host_address(ctx, host, command);
        else if (!configured.empty() && std::getenv("RALPH_SOCKET") == nullptr &&
                 (configured != ralph::placement_host || command == "submit"))
            ctx.socket = host_address(ctx, configured, command);
        // The chosen command runs inside parse(), from its callback, once all options are read.
        app.parse(argc, argv);
        return ctx.exit_code;
    } catch (const CLI::ParseError& e) {
        // --help and --version come this way too, with exit code 0.
        return app.exit(e) == 0 ? exit_code::ok : exit_code::usage;
    } catch (const client_error& e) {
        std::fflush(stdout);
        // A message may quote what a daemon, a repository or an agent said.
        fmt::print(stderr, "ralphctl: {}\n", escape_controls(e.what(), line_breaks::kept));
        if (!e.hint().empty())
            fmt::print(stderr, "{}\n", escape_controls(e.hint(), line_breaks::kept));
        return e.code();
    } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "ralphctl: {}\n", escape_controls(e.what(), line_breaks::kept));
        return exit_code::failure;
    }
}
