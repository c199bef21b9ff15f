// The commands of ralphctl: one register_*_command per file in client/commands/, called
// explicitly by main. A command's CLI11 callback runs it after parsing and stores its exit code
// in the context; failures are thrown as client_error and reported by main.
#pragma once

#include "client/config.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph::proto {
struct agent_environment;
}

namespace ralph::client {

// What every command gets from the global options.
struct client_context {
    std::string socket;  // --socket or --host: a socket path, unix://PATH or ssh://[USER@]HOST
    std::string local_socket;  // this machine's daemon (the default socket): host `local`
    std::string id_host;       // the host a qualified loop id named ("" = none)
    bool all_hosts = false;    // --all-hosts or -H '*': every host of the hosts file (fleet.hpp)
    bool json = false;         // --json: one JSON document on stdout instead of human output
    bool colour = false;       // human output may use colours
    int exit_code = 0;         // set by the command that ran
    // --host auto: submit places its loop on the host with the most room (client/placement.hpp)
    bool place_anywhere = false;
    client_config config;  // ralphctl.conf (client/config.hpp)
};

void register_submit_command(CLI::App& app, client_context& ctx);
void register_list_command(CLI::App& app, client_context& ctx);
void register_show_command(CLI::App& app, client_context& ctx);
void register_tail_command(CLI::App& app, client_context& ctx);
// cancel, pause, resume, retry, extend, merge, pr.
void register_control_commands(CLI::App& app, client_context& ctx);
void register_rm_command(CLI::App& app, client_context& ctx);
void register_wait_command(CLI::App& app, client_context& ctx);
void register_daemon_command(CLI::App& app, client_context& ctx);
void register_agents_command(CLI::App& app, client_context& ctx);
void register_steer_command(CLI::App& app, client_context& ctx);
void register_dial_stdio_command(CLI::App& app, client_context& ctx);
void register_hosts_command(CLI::App& app, client_context& ctx);
void register_init_command(CLI::App& app, client_context& ctx);
void register_scheduler_command(CLI::App& app, client_context& ctx);
void register_budget_command(CLI::App& app, client_context& ctx);
void register_report_command(CLI::App& app, client_context& ctx);
void register_gc_command(CLI::App& app, client_context& ctx);
void register_doctor_command(CLI::App& app, client_context& ctx);
void register_completion_command(CLI::App& app, client_context& ctx);
void register_mcp_command(CLI::App& app, client_context& ctx);
void register_notify_command(CLI::App& app, client_context& ctx);
void register_web_command(CLI::App& app, client_context& ctx);
void register_top_command(CLI::App& app, client_context& ctx);
// Bare `ralphctl`: ralphd's header line, the loops as `list` shows them (with why they wait) and
// where to go from there; when ralphd cannot be reached, `help` and how to start it (list.cpp).
int run_summary(const client_context& ctx, const std::string& help);
// Not in --help: the build writes ralphctl.1 with `ralphctl man-page`.
void register_man_page_command(CLI::App& app, client_context& ctx);

// The first non-empty line `program --version` prints (stdout or stderr) within 5 s; empty when
// it cannot run, hangs or prints nothing (agents.cpp; also used by doctor).
std::string program_version(const std::string& program);

// An agent's environment on one line, names only: "ANTHROPIC_API_KEY; withheld: X; unset: Y"
// ("-" when it gets nothing of its own) (agents.cpp; also used by doctor).
std::string environment_summary(const proto::agent_environment& environment);

// Where tailing starts (the daemon's default: at offset 0) and what is followed.
struct tail_selection {
    std::optional<std::int64_t> offset;      // byte offset in the loop's output
    std::optional<std::int64_t> last_lines;  // start at the last N lines instead
    bool output = true;                      // false: follow only the state (submit --wait)
    bool raw = false;                        // print structured agent streams as stored
};

// Follows the loops over a WebSocket session until each has ended; prints their output as it
// comes and a one-line summary per loop to stderr. Returns the exit code of the README's "Using it"
// (tail.cpp).
int follow_loops(const client_context& ctx, const std::vector<std::int64_t>& ids,
                 const tail_selection& selection);

// Validators shared by the commands (options.cpp); a failure is a usage error (exit 2).
// A whole number >= 0.
CLI::Validator non_negative();
// A number >= 0 ("0.5", "12"), and one within [min, max]: the error names the value and the
// range as a person writes them (CLI11's own would print the largest double, 309 digits).
CLI::Validator non_negative_number();
CLI::Validator number_between(double min, double max);
// A loop id: "17", or "HOST:17", loop 17 of a host of the hosts file (as `list --all-hosts`
// prints it), whose address then replaces ctx.socket; the ids of one command name one host.
CLI::Validator loop_id(client_context& ctx);
// "90", "90s", "15m", "2h", "1d": replaced by the number of seconds (give the option
// type_name("DURATION")).
CLI::Validator duration_seconds();
// An age before now ("30m", "8h", "2d") or an ISO 8601 time ("2026-11-22T08:00", local time
// unless it has a zone): replaced by that time in ISO 8601 UTC, as the API takes it.
CLI::Validator time_or_age();

}  // namespace ralph::client
