// `ralphctl web [--open] [--rotate-token]` (web.info, web.rotate_token): the login URL of
// ralphd's TCP listener (ralphd --listen), which carries the web token: opening it gives the
// browser a cookie instead, and the token leaves the address bar. Without a TCP listener, how to
// reach the Unix socket from another machine (ssh -L), where no token is needed; with --host
// ssh://…, the ssh -L command to run here for that host's socket (or, when that host listens on
// its loopback, for its port). --open starts xdg-open on a login URL of its own, which holds a
// one-time code good for a minute instead of the token (web.login_code): a command line is
// readable by every user of the machine. --rotate-token replaces the token first (browsers must
// log in again). With --json {"web": {"token": ..., "url": ...}}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "client/spawn.hpp"
#include "client/ssh_dial.hpp"
#include "common/paths.hpp"
#include "common/ssh_command.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <system_error>

namespace ralph::client {
namespace {

struct web_options {
    bool open = false;
    bool rotate = false;
};

void open_in_browser(const std::string& url) {
    const char* path = std::getenv("PATH");
    const std::string program = paths::find_executable("xdg-open", path ? path : "").string();
    if (program.empty())
        throw client_error(exit_code::failure, "--open: xdg-open is not on PATH",
                           "Open the URL above in your browser.");
    try {
        wait_process(spawn_process({program, url}));
    } catch (const std::system_error&) {
        throw client_error(exit_code::failure, "--open: cannot start " + program);
    }
}

// The port of a URL's loopback host ("http://127.0.0.1:7177/login…" → "7177"); "" for any other
// host, which is reached as it is.
std::string loopback_port(std::string_view url) {
    const auto start = url.find("://");
    if (start == std::string_view::npos) return {};
    const std::string_view rest = url.substr(start + 3);
    for (const std::string_view host : {"127.0.0.1:", "localhost:", "[::1]:"}) {
        if (!rest.starts_with(host)) continue;
        const std::string_view port = rest.substr(host.size());
        return std::string(port.substr(0, port.find('/')));
    }
    return {};
}

int run_web(const client_context& ctx, const web_options& options) {
    connection daemon(ctx.socket);
    const proto::web_info web = options.rotate ? daemon.call<proto::method::web_rotate_token>({})
                                               : daemon.call<proto::method::web_info>({});
    const bool remote = ctx.socket.starts_with(ssh_scheme);
    if (ctx.json) {
        print_json({{"web", web}});
    } else if (!web.url.empty()) {
        fmt::print("{}\n", web.url);
        // That host's loopback is not this machine's: its port must be forwarded here first.
        if (const std::string port = loopback_port(web.url); remote && !port.empty())
            fmt::print(stderr,
                       "ralphctl: that address is {}'s own; forward it to this machine first "
                       "(and keep this running):\n  {}\n",
                       ctx.socket,
                       ssh_command_line(ctx.socket, {"-N", "-L", port + ":localhost:" + port}));
    } else {
        // The socket as ralphd names it: on another host, its path there.
        const std::string socket = daemon.call<proto::method::daemon_info>({}).socket;
        if (remote)
            fmt::print(
                "ralphd on {} serves no TCP (start it there with --listen 127.0.0.1:7177). "
                "Forward its socket to this machine with the command below (keep it running), "
                "then open http://localhost:7177/ here (no token needed):\n  {}\n",
                ctx.socket, ssh_command_line(ctx.socket, {"-N", "-L", "7177:" + socket}));
        else
            fmt::print(
                "ralphd serves no TCP (start it with --listen 127.0.0.1:7177). From another "
                "machine, forward its socket and open http://localhost:7177/ (no token "
                "needed):\n  ssh -L 7177:{} HOST\n",
                socket);
    }
    if (options.open && !web.url.empty())
        open_in_browser(daemon.call<proto::method::web_login_code>({}).url);
    return exit_code::ok;
}

}  // namespace

void register_web_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<web_options>();
    auto* cmd = app.add_subcommand(
        "web", "Print the web dashboard's login URL (ralphd --listen), with its token");
    cmd->add_flag("--open", options->open,
                  "Open the dashboard in the browser (xdg-open), logged in by a one-time code");
    cmd->add_flag("--rotate-token", options->rotate,
                  "Replace the token first: logged-in browsers must log in again");
    cmd->callback([&ctx, options] { ctx.exit_code = run_web(ctx, *options); });
}

}  // namespace ralph::client
