// ralphd: the Ralph loop daemon. Parses flags and the config file, takes the database lock (one
// daemon per database), and runs the daemon on one io_context thread until SIGTERM/SIGINT or
// daemon.shutdown; SIGHUP reloads the configuration.
#include "common/asio.hpp"
#include "common/cli_docs.hpp"
#include "common/hosts_file.hpp"
#include "common/logging.hpp"
#include "common/paths.hpp"
#include "common/secret_file.hpp"
#include "common/shim_protocol.hpp"
#include "common/ssh_command.hpp"
#include "common/text.hpp"
#include "daemon/background.hpp"
#include "daemon/daemon.hpp"
#include "daemon/notify/webhook.hpp"
#include "proto/version.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/file.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>

namespace {

// Holds an exclusive flock on the database's lock file for the life of the process: a second
// daemon on the same database (whatever its socket) is refused before it touches anything. The
// file holds the pid of the ralphd that has it (the pid file of ralphctl daemon start).
int lock_database(const ralph::state_dir& state) {
    const std::filesystem::path lock_path = state.lock_file();
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("cannot open lock file " + lock_path.string());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = {};
        const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
        const std::string holder(pid, std::size_t(std::max<ssize_t>(0, n)));
        ::close(fd);
        throw std::runtime_error(fmt::format(
            "another ralphd{} is already running with database {} (ralphctl daemon status; stop "
            "it with ralphctl daemon stop)",
            ralph::text::trim(holder).empty() ? std::string()
                                              : fmt::format(" (pid {})", ralph::text::trim(holder)),
            state.database().string()));
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
        spdlog::warn("cannot write the pid to {}", lock_path.string());
    return fd;
}

// The manual page's prose; its NAME, SYNOPSIS and OPTIONS come from the options below.
constexpr const char* man_description =
    "ralphd runs Ralph loops: it starts an AI coding agent's CLI (Claude Code, Codex, opencode, "
    "Gemini, aider, Kiro or any command) on the same prompt in a workspace, again and again, until "
    "the agent signals completion or a limit is reached, under per-hour and per-day budgets. Loops "
    "are queued, run and steered with\n.BR ralphctl (1)\nover a Unix socket (JSON-RPC 2.0), and "
    "everything is kept in an SQLite database, so that a restarted ralphd goes on where it "
    "stopped.\n.PP\nIt runs in the foreground, as a systemd user service (ralphd.service, with "
    "socket activation by ralphd.socket), or by hand.";
constexpr const char* man_more_sections =
    ".SH SIGNALS\nSIGTERM and SIGINT end the running agents (SIGTERM to each agent's process "
    "group, SIGKILL after \\-\\-kill\\-grace) and exit 0; their loops run again at the next "
    "start. SIGHUP reads the flags and the config file again and applies them (the log level "
    "and file, \\-\\-max\\-concurrent, agent programs, hooks, grace and rate\\-limit waits; the "
    "socket, the database and \\-\\-test\\-clock need a restart); a file that does not parse "
    "changes nothing.\n"
    ".SH FILES\n.TP\n$XDG_CONFIG_HOME/ralph/ralphd.conf\nThe config file (~/.config/ralph/ "
    "without XDG_CONFIG_HOME): options without their dashes, `max\\-concurrent = "
    "2`.\n.TP\n$XDG_RUNTIME_DIR/ralph/ralphd.sock\nThe socket (its directory 0700, the "
    "socket 0600; /tmp/ralph\\-$UID/ without XDG_RUNTIME_DIR).\n.TP\n"
    "$XDG_STATE_HOME/ralph/ralph.db\nThe database (~/.local/state/ralph/ without "
    "XDG_STATE_HOME), with the agents' output in output/ next to it.\n"
    ".SH SEE ALSO\n.BR ralphctl (1),\n.BR systemctl (1)\n";

// The check of a flag that is a number of seconds: more than 0 (or, `zero_allowed`, at least 0)
// and at most `max`. Not CLI::Range: NaN passes it (every comparison with it is false), and its
// message for a positive number names a range up to 1.8e308.
std::function<std::string(const std::string&)> seconds_up_to(double max, bool zero_allowed) {
    return [max, zero_allowed](const std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && *end == '\0' && std::isfinite(value);
        if (number && (zero_allowed ? value >= 0 : value > 0) && value <= max) return "";
        return fmt::format("expected a number of seconds {} and at most {:g}, got '{}'",
                           zero_allowed ? "from 0" : "above 0", max, text);
    };
}

// --listen's ADDRESS:PORT (`[v6]:PORT` for IPv6; `localhost` is 127.0.0.1): the address and the
// port, or an error message.
struct listen_endpoint {
    std::string address;
    unsigned port = 0;
    std::string error;
};
listen_endpoint parse_listen(const std::string& text) {
    listen_endpoint result;
    const auto colon = text.rfind(':');
    std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
    const std::string port = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    unsigned char address[sizeof(in6_addr)];
    const bool ip = ::inet_pton(AF_INET, host.c_str(), address) == 1 ||
                    ::inet_pton(AF_INET6, host.c_str(), address) == 1;
    char* end = nullptr;
    const unsigned long number = std::strtoul(port.c_str(), &end, 10);
    if (!ip || port.empty() || *end != '\0' || number == 0 || number > 65535)
        result.error =
            "expected ADDRESS:PORT with an IP address (or localhost) and a port from 1 "
            "to 65535, e.g. 127.0.0.1:7177, got '" +
            text + "'";
    result.address = host;
    result.port = unsigned(number);
    return result;
}

// `--notify desktop`; `notify = true` in a config file written for the flag it was before.
bool is_desktop(const std::string& target) { return target == "desktop" || target == "true"; }

// The check of a name given to ralphd (--host-name, --account): 1 to 64 letters, digits and
// `._-`, so that it reads well in a log line and cannot be taken for anything else.
std::function<std::string(const std::string&)> name_check(const char* option) {
    return [option](const std::string& text) -> std::string {
        const bool fits = !text.empty() && text.size() <= 64 &&
                          text.find_first_not_of(
                              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789._-") == std::string::npos;
        return fits ? ""
                    : fmt::format(
                          "{}: expected 1 to 64 letters, digits, '.', '_' or '-', "
                          "got '{}'",
                          option, text);
    };
}

// --peer's names, with their addresses from the hosts file.
std::vector<ralph::host_entry> resolve_peers(const std::vector<std::string>& names) {
    if (names.empty()) return {};
    const std::filesystem::path file = ralph::paths::default_hosts_file();
    const std::vector<ralph::host_entry> hosts = ralph::read_hosts_file(file);
    std::vector<ralph::host_entry> peers;
    for (const auto& name : names) {
        const auto host = std::find_if(hosts.begin(), hosts.end(),
                                       [&](const auto& entry) { return entry.name == name; });
        if (host == hosts.end())
            throw std::invalid_argument(
                fmt::format("--peer {}: {} names no such host", name, file.string()));
        try {
            ralph::parse_ssh_address(host->address);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(
                fmt::format("--peer {}: a peer is reached over ssh (ssh://[USER@]HOST[:PORT]): {}",
                            name, e.what()));
        }
        if (std::any_of(peers.begin(), peers.end(),
                        [&](const auto& peer) { return peer.name == name; }))
            throw std::invalid_argument(fmt::format("--peer {}: given twice", name));
        peers.push_back(*host);
    }
    return peers;
}

// ralphd's settings as given: the command-line flags over the config file (CLI11 reads both).
// Parsed at start and again at each SIGHUP, from the same argv, so the flags keep winning.
struct command_line {
    std::string socket_path = ralph::paths::default_socket().string();
    std::string db_path;
    std::string log_level = "info";
    std::string log_file;
    double kill_grace_s = 10;
    std::int64_t max_output_bytes = std::int64_t(1) << 30;
    std::int64_t max_concurrent = 0;  // 0: not given
    std::int64_t test_clock_start_ms = -1;
    std::vector<std::string> agent_binaries;
    std::vector<std::string> env_policy;
    double rate_limit_margin_s = 60;
    double rate_limit_wait_s = 60;
    std::string on_done;
    double hook_timeout_s = 60;
    std::vector<std::string> notify;  // "desktop" (or "true": the older flag's form) and URLs
    std::string notify_file;          // more of them, one a line (no secret on a command line)
    std::string listen;               // ADDRESS:PORT, "" = none
    std::string cgroups = "auto";
    std::string host_name;  // "" = the machine's name
    std::string account = "default";
    std::vector<std::string> peers;  // names of the hosts file
    bool print_man_page = false;
    bool daemonize = false;

    void define(CLI::App& app);
    // The database's path, absolute: --db, else the default.
    std::filesystem::path database() const;
    // The daemon's options (all but listen_fd); throws std::invalid_argument for an unknown agent
    // name in --agent-binary, a --peer that the hosts file does not name with an ssh address and
    // a --notify-file that cannot be read, is not private or holds a bad URL.
    ralph::daemon_options options() const;
};

void command_line::define(CLI::App& app) {
    app.set_config("--config", ralph::paths::default_config().string(),
                   "Read options from this file, one `name = value` per line (e.g. "
                   "`max-concurrent = 2`, `agent-binary = [\"claude=/opt/claude\"]`); flags given "
                   "on the command line win. Read again at SIGHUP")
        ->type_name("FILE");
    // A misspelt name in the file is an error, not a setting silently ignored.
    app.allow_config_extras(CLI::config_extras_mode::error);
    app.add_option("--socket", socket_path, "Unix socket to listen on (env RALPH_SOCKET)")
        ->capture_default_str();
    app.add_option("--db", db_path, "SQLite database (default $XDG_STATE_HOME/ralph/ralph.db)");
    app.add_option("--kill-grace", kill_grace_s,
                   "Seconds between SIGTERM and SIGKILL for agents (at most 3600)")
        ->capture_default_str()
        ->check(seconds_up_to(3600, false));
    app.add_option("--max-output", max_output_bytes,
                   "The most output one attempt may write (e.g. 500M, 2G; 0 = no bound): an "
                   "agent that writes more is ended, its attempt fails with class output_limit "
                   "and its loop stops")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::NonNegativeNumber)
        ->default_str("1G");
    app.add_option("--max-concurrent", max_concurrent,
                   "Loops running at once (stored: replaces what `ralphctl scheduler set` "
                   "chose; default 1)")
        ->check(CLI::Range(std::int64_t(1), std::int64_t(1000)));
    app.add_option("--test-clock", test_clock_start_ms,
                   "For tests: start the wall clock at this epoch ms (0 = now) and let "
                   "debug.clock shift it")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--agent-binary", agent_binaries,
                   "Program of an agent instead of a PATH lookup, as NAME=PATH (repeatable)")
        ->each([](const std::string& value) {
            if (value.find('=') == std::string::npos || value.front() == '=')
                throw CLI::ValidationError("--agent-binary", "expected NAME=PATH, got " + value);
        });
    app.add_option("--env-policy", env_policy,
                   "Which of ralphd's environment variables agents get besides the defaults: "
                   "+PATTERN passes, -PATTERN withholds (`*` is a wildcard; the last rule that "
                   "matches decides; repeatable; +* passes everything)")
        ->type_name("RULE")
        ->check([](const std::string& rule) { return ralph::env_policy::rule_error(rule); });
    app.add_option("--rate-limit-margin", rate_limit_margin_s,
                   "Seconds added to the reset time an agent states for its usage limit (at most "
                   "86400)")
        ->capture_default_str()
        ->check(seconds_up_to(86400, true));
    app.add_option("--rate-limit-wait", rate_limit_wait_s,
                   "Seconds to wait after a usage limit that states no reset (at most 86400; "
                   "doubles each time, up to an hour)")
        ->capture_default_str()
        ->check(seconds_up_to(86400, false));
    app.add_option("--on-done", on_done,
                   "Hook run when any loop ends, with the outcome in its environment (split into "
                   "words, no shell; runs besides each loop's own submit --on-done)")
        ->check(
            [](const std::string& command) { return ralph::text::command_words_error(command); });
    app.add_option("--hook-timeout", hook_timeout_s,
                   "Seconds an on-done hook may run before its process group is killed (at most "
                   "86400)")
        ->capture_default_str()
        ->check(seconds_up_to(86400, false));
    app.add_option("--cgroups", cgroups,
                   "auto: each attempt's processes in a cgroup of their own where ralphd can "
                   "create one (root, or Delegate=yes), so that all of them end with it; off: "
                   "each agent's shim ends its own descendants instead")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "off"}));
    app.add_option("--notify", notify,
                   "Push notifications to this webhook (http(s)://..., or FORMAT+https://... with "
                   "FORMAT ntfy, slack, discord, telegram or generic) when a loop ends, waits for "
                   "a usage limit or a budget, or has its completion rejected, and when ralphd "
                   "took up running loops; `desktop`: a desktop notification (notify-send) when "
                   "a loop ends (repeatable)")
        ->type_name("URL|desktop")
        ->allow_extra_args(false)
        ->each([](const std::string& target) {
            if (is_desktop(target)) return;
            try {
                ralph::parse_webhook_target(target);
            } catch (const std::invalid_argument& e) {
                throw CLI::ValidationError("--notify", e.what());
            }
        });
    app.add_option("--notify-file", notify_file,
                   "Also --notify each URL of this file, one a line (`#` starts a comment): a "
                   "webhook's URL holds its secret, which a command line shows every user of the "
                   "machine. The file must be yours and readable by you only (chmod 600)")
        ->type_name("FILE");
    app.add_option("--listen", listen,
                   "Also serve the API (and the web dashboard) on TCP at ADDRESS:PORT, e.g. "
                   "127.0.0.1:7177, to those with the web token (ralphctl web); an address "
                   "other machines reach is their risk as well: see the README")
        ->type_name("ADDRESS:PORT")
        ->check([](const std::string& text) { return parse_listen(text).error; });
    app.add_option("--host-name", host_name,
                   "This daemon's name for its peers, in daemon.info and on the dashboard "
                   "(default: the machine's host name)")
        ->check(name_check("--host-name"));
    app.add_option("--account", account,
                   "Whose subscriptions this daemon's agents use: a usage limit holds an agent "
                   "for its account, here and on the peers of the same account")
        ->capture_default_str()
        ->check(name_check("--account"));
    app.add_option("--peer", peers,
                   "Share usage-limit holds with the ralphd of this host of the hosts file "
                   "($XDG_CONFIG_HOME/ralph/hosts; an ssh:// address), linked over ssh "
                   "(repeatable; changes at the next start)")
        ->type_name("NAME")
        ->allow_extra_args(false);
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
        ->capture_default_str()
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
    app.add_option("--log-file", log_file,
                   "Also log to this file (opened again at SIGHUP); with --daemonize, by default "
                   "ralphd.log next to the database");
    app.add_flag("--daemonize", daemonize,
                 "Run in the background (without systemd): exit 0 once ralphd listens, or 1 with "
                 "its error; the lock file next to the database (ralph.db.lock) holds its pid");
    app.set_version_flag("--version", std::string("ralphd ") + ralph::proto::daemon_version);
    app.add_flag("--man-page", print_man_page, "Print the manual page (roff) and exit")
        ->group("");  // not in --help: the build writes ralphd.1 with it
}

std::filesystem::path command_line::database() const {
    return std::filesystem::absolute(db_path.empty() ? ralph::paths::default_database()
                                                     : std::filesystem::path(db_path));
}

ralph::daemon_options command_line::options() const {
    ralph::daemon_options options;
    options.socket_path = socket_path;
    options.db_path = database();
    options.kill_grace = std::chrono::milliseconds(std::llround(kill_grace_s * 1000));
    options.max_output_bytes = max_output_bytes;
    if (max_concurrent > 0) options.max_concurrent = max_concurrent;
    options.test_clock = test_clock_start_ms >= 0;
    options.test_clock_start_ms = std::max<std::int64_t>(0, test_clock_start_ms);
    for (const auto& binary : agent_binaries) {
        auto eq = binary.find('=');
        ralph::find_agent(binary.substr(0, eq));  // an unknown agent name is an error
        options.binaries[binary.substr(0, eq)] = binary.substr(eq + 1);
    }
    options.agent_env = ralph::env_policy(env_policy);
    options.rate_limit_margin = std::chrono::milliseconds(std::llround(rate_limit_margin_s * 1000));
    options.rate_limit_wait = std::chrono::milliseconds(std::llround(rate_limit_wait_s * 1000));
    options.hooks.on_done = on_done;
    std::vector<std::string> targets = notify;
    if (!notify_file.empty())
        for (const auto& line : ralph::secret_file::read_lines(notify_file, "--notify-file")) {
            const std::string target(ralph::text::trim(line.text));
            try {
                if (!is_desktop(target)) ralph::parse_webhook_target(target);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(fmt::format("--notify-file {}, line {}: {}",
                                                        notify_file, line.number, e.what()));
            }
            targets.push_back(target);
        }
    for (const auto& target : targets) {
        if (is_desktop(target))
            options.hooks.notify = true;
        else
            options.webhooks.push_back(target);
    }
    options.hooks.time_limit = std::chrono::milliseconds(std::llround(hook_timeout_s * 1000));
    options.hooks.shutdown_grace = options.kill_grace;
    options.cgroups = cgroups == "auto";
    if (!listen.empty()) {
        const listen_endpoint endpoint = parse_listen(listen);
        options.listen_address = endpoint.address;
        options.listen_port = endpoint.port;
    }
    options.host_name = host_name.empty() ? ralph::text::host_name() : host_name;
    options.account = account;
    options.peers = resolve_peers(peers);
    // Installed and built next to ralphd: the one that belongs to this ralphd.
    options.shim_program =
        std::filesystem::read_symlink("/proc/self/exe").parent_path() / ralph::shim::program_name;
    return options;
}

// `socket` with its directory made private. The fallback under /tmp (no XDG_RUNTIME_DIR, no
// --socket) moves to a new private directory when another user made /tmp/ralph-$UID first:
// that user can neither stop ralphd from starting nor receive what clients send.
std::filesystem::path socket_to_listen_on(const std::filesystem::path& socket) {
    namespace fs = std::filesystem;
    const fs::path dir = socket.parent_path();
    std::error_code ec;
    if (socket == ralph::paths::default_socket() && ralph::paths::socket_is_fallback() &&
        fs::exists(fs::symlink_status(dir, ec))) {
        if (std::string problem = ralph::paths::socket_directory_problem(dir); !problem.empty()) {
            const fs::path moved =
                ralph::paths::make_fallback_socket_directory() / socket.filename();
            spdlog::warn("{}: listening on {} instead (recorded in {} for ralphctl)", problem,
                         moved.string(), ralph::paths::fallback_socket_record().string());
            return moved;
        }
    }
    ralph::paths::make_private_directory(dir);
    return socket;
}

void warn_if_notify_send_is_missing(const ralph::daemon_options& options) {
    if (options.hooks.notify && ralph::notify_send_program().empty())
        spdlog::warn("--notify: notify-send is not on PATH; no desktop notification until it is");
}

// SIGHUP: reads the flags and the config file again and applies what can change while loops
// run; the socket, the database and the test clock need a restart. A file that does not parse
// changes nothing.
void reload_config(ralph::ralphd& daemon, command_line& running, int argc, char** argv) {
    command_line fresh;
    CLI::App app;
    fresh.define(app);
    try {
        app.parse(argc, argv);
        ralph::daemon_options options = fresh.options();
        const ralph::daemon_options before = running.options();
        if (options.socket_path != before.socket_path || options.db_path != before.db_path ||
            fresh.test_clock_start_ms != running.test_clock_start_ms ||
            fresh.listen != running.listen || fresh.host_name != running.host_name ||
            fresh.account != running.account || fresh.peers != running.peers)
            spdlog::warn(
                "SIGHUP: the socket, --listen, the database, the test clock, --host-name, "
                "--account and --peer change only at the next start");
        fresh.socket_path = running.socket_path;
        fresh.db_path = running.db_path;
        fresh.test_clock_start_ms = running.test_clock_start_ms;
        fresh.listen = running.listen;
        fresh.host_name = running.host_name;
        fresh.account = running.account;
        fresh.peers = running.peers;
        // --daemonize's log file when no flag names one.
        if (running.daemonize && fresh.log_file.empty()) fresh.log_file = running.log_file;
        ralph::logging::setup("ralphd", fresh.log_level, fresh.log_file);
        daemon.reload(options);
        warn_if_notify_send_is_missing(options);
        running = std::move(fresh);
        const std::string config = app.get_config_ptr()->as<std::string>();
        spdlog::info("SIGHUP: configuration reloaded ({})",
                     std::filesystem::exists(config) ? "flags and " + config : "flags only");
    } catch (const std::exception& e) {
        spdlog::error("SIGHUP: the configuration was not reloaded, nothing changed: {}", e.what());
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"runs queued Ralph loops of AI coding agents", "ralphd"};
    command_line line;
    line.define(app);
    CLI11_PARSE(app, argc, argv);
    if (line.print_man_page) {
        std::cout << ralph::cli_docs::man_page(ralph::cli_docs::describe(app), "1",
                                               ralph::proto::daemon_version, man_description,
                                               man_more_sections);
        return 0;
    }

    std::optional<ralph::background> background;
    try {
        if (line.daemonize && line.log_file.empty()) {
            ralph::paths::make_private_directory(line.database().parent_path());
            line.log_file = ralph::state_dir(line.database()).log_file().string();
        }
        ralph::logging::setup("ralphd", line.log_level, line.log_file);
        // Before any thread: only the forking thread goes on in the daemon.
        if (line.daemonize) {
            background = ralph::background::start();
            // Whoever started it hears its warnings and errors; the log file has everything.
            spdlog::default_logger()->sinks().front()->set_level(spdlog::level::warn);
        }
    } catch (const std::exception& e) {
        std::cerr << "ralphd: " << e.what() << '\n';
        return 1;
    }
    try {
        ralph::daemon_options options = line.options();
        if (::access(options.shim_program.c_str(), X_OK) != 0)
            throw std::runtime_error("cannot run " + options.shim_program.string() +
                                     ", which runs every agent (install it next to ralphd)");
        warn_if_notify_send_is_missing(options);
        // systemd socket activation hands us the listening socket as fd 3.
        if (::sd_listen_fds(1) == 1)
            options.listen_fd = SD_LISTEN_FDS_START;
        else
            options.socket_path = socket_to_listen_on(options.socket_path);
        ralph::paths::make_private_directory(options.db_path.parent_path());
        // Without symbolic links: ralph writes the prompt files and worktree loops' .ralph/
        // through none (common/safe_open), also in the state directory's own path.
        options.db_path =
            std::filesystem::canonical(options.db_path.parent_path()) / options.db_path.filename();
        int lock_fd = lock_database(ralph::state_dir(options.db_path));

        // Agents' output pipes and clients may go away at any time: handle EPIPE, never die of it.
        ::signal(SIGPIPE, SIG_IGN);
        // The heap as glibc leaves it once a daemon has read output back (its 4 MiB buffers
        // raise these thresholds), from the start: a request's working memory (a page of loops
        // as JSON) is not given back at its end and faulted in again at the next, which cost a
        // list call up to a third more in one daemon than in another (bench/README.md,
        // "scale"). gc gives everything back after a large removal (malloc_trim).
        ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
        ::mallopt(M_TRIM_THRESHOLD, 8 << 20);
        {
            ralph::net::io_context io;
            ralph::ralphd daemon(io, options);
            ralph::net::signal_set stop_signals(io, SIGTERM, SIGINT);
            // SIGTERM is what systemd sends to restart or upgrade ralphd: the agents go on and the
            // next ralphd adopts them. SIGINT (Ctrl-C in a terminal) ends them, as `daemon stop`
            // does.
            stop_signals.async_wait([&daemon](boost::system::error_code ec, int signal) {
                if (ec) return;
                spdlog::info("received signal {}", signal);
                daemon.shutdown(signal == SIGTERM);
            });
            ralph::net::signal_set reload_signal(io, SIGHUP);
            std::function<void()> wait_for_reload = [&] {
                reload_signal.async_wait([&](boost::system::error_code ec, int) {
                    if (ec) return;
                    reload_config(daemon, line, argc, argv);
                    wait_for_reload();
                });
            };
            wait_for_reload();
            daemon.start();
            if (background) background->ready();
            // A write the storage refused in some handler does not end ralphd: it goes on,
            // degraded.
            for (bool stopped = false; !stopped;) {
                try {
                    io.run();
                    stopped = true;
                } catch (const std::exception& e) {
                    if (!daemon.storage_failed(e)) throw;
                }
            }
        }
        // Only once the daemon is gone: its thread pool may have been starting an agent.
        ::close(lock_fd);
        return 0;
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
}
