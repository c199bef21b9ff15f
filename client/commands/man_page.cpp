// `ralphctl man-page`, not shown in --help: prints ralphctl(1) in roff, its commands and options
// generated from the definitions that parse them (cli_docs), with the prose below. The build
// runs it to write the installed manual page.
#include "client/cli.hpp"

#include "client/output.hpp"
#include "proto/version.hpp"

#include <cstdio>

namespace ralph::client {
namespace {

constexpr const char* description =
    "ralphctl submits, lists, shows, tails, steers, pauses and cancels the Ralph loops that\n"
    ".BR ralphd (1)\n"
    "runs, and sets its scheduler and budgets. It talks JSON\\-RPC 2.0 to the daemon over a Unix "
    "socket. Output is for people by default (tables, colours on a terminal unless NO_COLOR is "
    "set); with \\-\\-json every command prints one JSON document on stdout (tail \\-\\-json: "
    "one event per line). Diagnostics go to stderr.";

constexpr const char* more_sections =
    ".SH EXIT STATUS\n"
    ".TP\n0\nSuccess; for tail \\-f, submit \\-\\-follow and submit \\-\\-wait: the loop "
    "completed.\n"
    ".TP\n1\nA failure; for those three: the loop ended exhausted, failed or stalled.\n"
    ".TP\n2\nA usage error.\n"
    ".TP\n3\nralphd is not running (with a hint how to start it), or the connection to it was "
    "lost (tail \\-f over ssh: after 30 s of tries to connect again); with \\-\\-all\\-hosts: "
    "a host did not answer.\n"
    ".TP\n130\nThe loop was cancelled, or Ctrl\\-C.\n"
    ".SH ENVIRONMENT\n"
    ".TP\nRALPH_SOCKET\nThe daemon's socket (else $XDG_RUNTIME_DIR/ralph/ralphd.sock, else "
    "/tmp/ralph\\-$UID/ralphd.sock); \\-\\-socket overrides it.\n"
    ".TP\nRALPH_HOST\nThe daemon to talk to, as \\-\\-host (\\-H) takes it: a name of the hosts "
    "file ($XDG_CONFIG_HOME/ralph/hosts), ssh://[USER@]HOST[:PORT] or unix://PATH.\n"
    ".TP\nRALPH_SSH_COMMAND\nThe ssh command of ssh:// addresses (default: ssh).\n"
    ".TP\nNO_COLOR\nNo colours, also on a terminal.\n"
    ".SH SEE ALSO\n.BR ralphd (1)\n";

}  // namespace

void register_man_page_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("man-page", "Print the manual page (roff)");
    cmd->group("");
    cmd->callback([&ctx] {
        const std::string page = cli_docs::man_page(describe_cli(), "1", proto::daemon_version,
                                                    description, more_sections);
        std::fwrite(page.data(), 1, page.size(), stdout);
        ctx.exit_code = exit_code::ok;
    });
}

}  // namespace ralph::client
