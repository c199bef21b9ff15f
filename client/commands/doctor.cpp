// `ralphctl doctor` (README, "The daemon"): checks what an unattended night needs and says what to
// fix — the daemon answers and speaks our protocol; its socket's directory is private; its database
// can be written, with room for the agents' output; the systemd user units are installed and
// lingering is on (a user service otherwise stops with the last session); its webhooks (redacted);
// the agents' programs are found on the daemon's PATH, with their versions. Exit 0 when nothing
// failed (warnings allowed), 1 otherwise. --json {"checks": [{"check", "status":
// "ok"|"warn"|"fail", "detail", "fix"}], "ok": bool}. With --host ssh://…, most of these are files
// of that host: its own ralphctl doctor makes them there, over ssh (exit 3 when ssh cannot run it).
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "client/ssh_dial.hpp"
#include "common/paths.hpp"
#include "common/ssh_command.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"
#include "proto/version.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

namespace ralph::client {
namespace {

namespace fs = std::filesystem;

// Less free space than this where the database and the agents' output are kept is a warning.
constexpr std::uint64_t low_disk_bytes = std::uint64_t(1) << 30;

struct check_result {
    std::string check;
    std::string status;  // ok, warn or fail
    std::string detail;
    std::string fix;  // what to do; empty when ok
};

std::string mode_text(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

// daemon.info, or the failure to get it.
std::optional<proto::daemon_info> check_daemon(const client_context& ctx,
                                               std::vector<check_result>& results) {
    try {
        auto info = connection(ctx.socket).call<proto::method::daemon_info>({});
        if (info.version != proto::daemon_version)
            results.push_back(
                {"daemon", "warn",
                 fmt::format("ralphd {} (pid {}) answers on {}; this ralphctl is {}", info.version,
                             info.pid, ctx.socket, proto::daemon_version),
                 "restart ralphd so that the installed version runs"});
        else
            results.push_back({"daemon", "ok",
                               fmt::format("ralphd {} (pid {}) answers on {}", info.version,
                                           info.pid, ctx.socket),
                               ""});
        return info;
    } catch (const client_error& e) {
        results.push_back({"daemon", "fail", e.what(), e.hint()});
        return std::nullopt;
    }
}

// SECURITY.md: the socket's directory is the user's own, mode 0700 (the socket itself 0600).
void check_socket(const client_context& ctx, bool daemon_up, std::vector<check_result>& results) {
    const fs::path socket(ctx.socket);
    const fs::path dir = socket.parent_path();
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        if (!daemon_up)
            results.push_back(
                {"socket", "ok",
                 fmt::format("{} does not exist yet; ralphd makes it at start", dir.string()), ""});
        return;
    }
    if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        results.push_back(
            {"socket", "fail",
             fmt::format("{} is {} and owned by uid {}: others could reach or replace the socket",
                         dir.string(), mode_text(st.st_mode), st.st_uid),
             st.st_uid != ::geteuid()
                 ? fmt::format("use a socket in a directory of your own (--socket, $RALPH_SOCKET)")
                 : fmt::format("chmod 700 {}", dir.string())});
        return;
    }
    std::string detail = fmt::format("{} is yours, {}", dir.string(), mode_text(st.st_mode));
    if (::stat(socket.c_str(), &st) == 0)
        detail += fmt::format("; the socket {}", mode_text(st.st_mode));
    results.push_back({"socket", "ok", detail, ""});
}

// The database (where ralphd says it is, else where it would be) can be written, and its file
// system has room: the agents' output is kept next to it. A ralphd that cannot write its state
// says so itself (daemon.info's storage), with the cause and the fix.
void check_database(const std::optional<proto::daemon_info>& info,
                    std::vector<check_result>& results) {
    if (info && info->storage.state != "ok") {
        results.push_back({"database", "fail", describe_storage(info->storage), info->storage.fix});
        return;
    }
    const fs::path database = info ? fs::path(info->database) : paths::default_database();
    fs::path dir = database.parent_path();
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
        results.push_back({"database", info ? "fail" : "ok",
                           fmt::format("{} does not exist{}", dir.string(),
                                       info ? "" : " yet; ralphd makes it at start"),
                           info ? "restart ralphd" : ""});
        return;
    }
    if (::access(dir.c_str(), W_OK) != 0) {
        results.push_back({"database", "fail", fmt::format("{} cannot be written", dir.string()),
                           fmt::format("make it yours: chown -R \"$USER\" {}", dir.string())});
        return;
    }
    struct statvfs fs_info {};
    if (::statvfs(dir.c_str(), &fs_info) != 0) {
        results.push_back({"database", "warn",
                           fmt::format("cannot tell the free space of {}", dir.string()), ""});
        return;
    }
    const std::uint64_t free_bytes = std::uint64_t(fs_info.f_bavail) * fs_info.f_frsize;
    const std::string size = fs::exists(database, ec)
                                 ? format_bytes(std::int64_t(fs::file_size(database, ec)))
                                 : "not created yet";
    const std::string detail = fmt::format("{} ({}); {} free", database.string(), size,
                                           format_bytes(std::int64_t(free_bytes)));
    if (free_bytes < low_disk_bytes)
        results.push_back({"database", "warn", detail,
                           "free some space: the agents' output is stored there, and loops fail "
                           "when the disk is full (ralphctl gc removes old loops)"});
    else
        results.push_back({"database", "ok", detail, ""});
}

// The directories systemd looks for user units in, the user's own first.
std::vector<fs::path> user_unit_dirs() {
    std::vector<fs::path> dirs;
    if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config)
        dirs.emplace_back(fs::path(config) / "systemd" / "user");
    else if (const char* home = std::getenv("HOME"); home && *home)
        dirs.emplace_back(fs::path(home) / ".config" / "systemd" / "user");
    for (const char* dir :
         {"/etc/systemd/user", "/usr/local/lib/systemd/user", "/usr/lib/systemd/user"})
        dirs.emplace_back(dir);
    return dirs;
}

// A systemd user service: its unit is installed, and lingering keeps the user's service
// manager (and so ralphd) running while the user is logged out.
void check_service(std::vector<check_result>& results) {
    std::error_code ec;
    std::string installed;
    for (const auto& dir : user_unit_dirs())
        if (fs::exists(dir / "ralphd.service", ec)) {
            installed = (dir / "ralphd.service").string();
            break;
        }
    if (installed.empty())
        results.push_back(
            {"service", "warn",
             "ralphd.service is not installed: ralphd runs only while started by hand",
             "meson install -C build, then: systemctl --user enable --now ralphd.socket"});
    else
        results.push_back({"service", "ok", installed, ""});

    const char* user = std::getenv("USER");
    if (!user || !*user) user = std::getenv("LOGNAME");
    if (!user || !*user) {
        results.push_back({"linger", "warn",
                           "$USER is not set: cannot tell whether lingering is on",
                           "loginctl enable-linger YOUR-NAME"});
        return;
    }
    if (fs::exists(fs::path("/var/lib/systemd/linger") / user, ec))
        results.push_back({"linger", "ok", fmt::format("on for {}", user), ""});
    else
        results.push_back({"linger", "warn",
                           fmt::format("off for {}: a systemd user service stops when your last "
                                       "session ends, and the loops with it",
                                       user),
                           fmt::format("loginctl enable-linger {}", user)});
}

// The daemon's webhooks (redacted): where a night's news goes, if anywhere.
void check_notify(const proto::daemon_info& info, std::vector<check_result>& results) {
    if (info.notify_targets.empty()) {
        results.push_back({"notify", "ok", "no webhook: loops' ends are not pushed anywhere",
                           "to be told on your phone: ralphd --notify URL (README, Push "
                           "notifications)"});
        return;
    }
    results.push_back({"notify", "ok",
                       fmt::format("{} (ralphctl notify test sends each a sample)",
                                   text::join_words(info.notify_targets, ", ")),
                       ""});
}

// Every agent with a program of its own, as the daemon finds it.
void check_agents(const client_context& ctx, std::vector<check_result>& results) {
    const auto agents = connection(ctx.socket).call<proto::method::agents_list>({}).agents;
    for (const auto& agent : agents) {
        if (agent.program.empty()) continue;  // `command`: the loop names its program
        const std::string check = "agent " + agent.name;
        if (agent.path.empty()) {
            results.push_back(
                {check, "warn", fmt::format("{} is not on the daemon's PATH", agent.program),
                 fmt::format("install it, or start ralphd with --agent-binary {}=PATH",
                             agent.name)});
            continue;
        }
        const std::string version = program_version(agent.path);
        const std::string found = fmt::format("{} ({}); gets {}", agent.path,
                                              version.empty() ? "no version printed" : version,
                                              environment_summary(agent.environment));
        // Its configuration names variables it will not get: its first attempt would fail.
        if (!agent.environment.withheld.empty() || !agent.environment.unset.empty()) {
            std::string fix;
            for (const auto& name : agent.environment.withheld)
                fix += (fix.empty() ? "" : " ") + std::string("--env-policy +") + name;
            if (!fix.empty()) fix = "start ralphd with " + fix;
            if (!agent.environment.unset.empty())
                fix += (fix.empty() ? "" : "; ") +
                       std::string(
                           "set the unset ones in ralphd's environment, or give them to "
                           "the loop with submit --env NAME=…");
            results.push_back({check, "warn", found, fix});
            continue;
        }
        results.push_back({check, "ok", found, ""});
    }
}

int run_doctor(const client_context& ctx) {
    if (ctx.socket.starts_with(ssh_scheme)) {
        if (!ctx.json) {
            fmt::print("{}, checked there by its ralphctl:\n", ctx.socket);
            std::fflush(stdout);
        }
        return run_remote_ralphctl(ctx.socket, ctx.json
                                                   ? std::vector<std::string>{"--json", "doctor"}
                                                   : std::vector<std::string>{"doctor"});
    }
    std::vector<check_result> results;
    const auto info = check_daemon(ctx, results);
    check_socket(ctx, info.has_value(), results);
    check_database(info, results);
    check_service(results);
    if (info) check_notify(*info, results);
    if (info) check_agents(ctx, results);

    bool failed = false;
    for (const auto& result : results) failed = failed || result.status == "fail";
    if (ctx.json) {
        nlohmann::json checks = nlohmann::json::array();
        for (const auto& result : results)
            checks.push_back({{"check", result.check},
                              {"status", result.status},
                              {"detail", result.detail},
                              {"fix", result.fix}});
        print_json({{"checks", std::move(checks)}, {"ok", !failed}});
        return failed ? exit_code::failure : exit_code::ok;
    }
    table rows({{"STATUS"}, {"CHECK"}, {"DETAIL", false, table::fit::cut_end}});
    for (const auto& result : results) {
        const colour c = result.status == "ok"     ? colour::green
                         : result.status == "warn" ? colour::yellow
                                                   : colour::red;
        rows.add(result.status, c);
        rows.add(result.check);
        rows.add(result.detail);
    }
    fmt::memory_buffer out;
    rows.render(out, ctx.colour, output_columns());
    // The fixes whole, below the table, however narrow the terminal.
    for (const auto& result : results)
        if (!result.fix.empty())
            fmt::format_to(std::back_inserter(out), "fix {}: {}\n", result.check,
                           escape_controls(result.fix));
    write_stdout(out);
    return failed ? exit_code::failure : exit_code::ok;
}

}  // namespace

void register_doctor_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand(
        "doctor",
        "Check the daemon, its socket and database, the systemd service and lingering, "
        "and the agents' programs, and say what to fix (--host ssh://…: on that host, by its "
        "ralphctl)");
    cmd->callback([&ctx] { ctx.exit_code = run_doctor(ctx); });
}

}  // namespace ralph::client
