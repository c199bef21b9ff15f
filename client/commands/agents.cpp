// `ralphctl agents`: every agent adapter (agents.list), whether the daemon finds its program,
// the program's version, what ralph reads from its output, and what of the daemon's environment
// it gets (names only): its own variables, those its configuration names that the env policy
// withholds or the daemon lacks; then what every agent gets. The version is asked here, by
// running `PROGRAM --version` with a short timeout, so the daemon never blocks on an agent; for
// a daemon on this machine only (the program of a remote daemon is not this machine's).
// With --json {"agents": [{...agent_info, "version": "..." | null}], "environment": [...]}.
// --all-hosts: every host's at once (client/fleet.hpp), with a HOST column; in --json each agent
// has "host", and "unreachable" names the hosts that did not answer.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "client/spawn.hpp"
#include "common/text.hpp"
#include "common/unique_fd.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <system_error>

namespace ralph::client {
namespace {

constexpr auto version_timeout = std::chrono::seconds(5);

}  // namespace

std::string program_version(const std::string& program) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    unique_fd output_end(fds[0]);
    pid_t pid = -1;
    {
        const unique_fd input_end(fds[1]);
        const unique_fd nothing(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        try {
            pid = spawn_process({program, "--version"},
                                {nothing.get(), input_end.get(), input_end.get()});
        } catch (const std::system_error&) {
            return {};
        }
    }
    std::string output;
    const auto deadline = std::chrono::steady_clock::now() + version_timeout;
    char buffer[4096];
    while (output.size() < 64 * 1024) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{output_end.get(), POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) break;
        ssize_t n = ::read(output_end.get(), buffer, sizeof buffer);
        if (n <= 0) break;
        output.append(buffer, std::size_t(n));
    }
    ::kill(pid, SIGKILL);
    wait_process(pid);
    return std::string(text::first_line(output));
}

namespace {

std::string_view yes_no(bool value) { return value ? "yes" : "-"; }

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

}  // namespace

std::string environment_summary(const proto::agent_environment& environment) {
    std::string out = joined(environment.passed);
    if (!environment.withheld.empty())
        out += (out.empty() ? "" : "; ") + std::string("withheld: ") + joined(environment.withheld);
    if (!environment.unset.empty())
        out += (out.empty() ? "" : "; ") + std::string("unset: ") + joined(environment.unset);
    return out.empty() ? "-" : out;
}

namespace {

// A daemon's agents, with their programs' versions ("" = unknown), and the variables every
// agent gets.
struct agents_found {
    std::vector<proto::agent_info> agents;
    std::vector<std::string> versions;
    std::vector<std::string> environment;
};

agents_found find_agents(connection& daemon) {
    proto::agent_list list = daemon.call<proto::method::agents_list>({});
    agents_found found{std::move(list.agents), {}, std::move(list.environment)};
    for (const auto& agent : found.agents)
        found.versions.push_back(
            agent.path.empty() || daemon.remote() ? std::string() : program_version(agent.path));
    return found;
}

// The agents of the hosts (one, `host` "", or with --all-hosts every host that answered).
// "LABEL a, b, c" on lines of at most `width` columns (0: one line), the next ones indented.
void append_wrapped(fmt::memory_buffer& out, const std::string& label,
                    const std::vector<std::string>& names, std::size_t width) {
    std::string line = label;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string word =
            escape_controls(names[i]) + (i + 1 < names.size() ? "," : std::string());
        if (width != 0 && line != label && line.size() + 1 + word.size() > width) {
            fmt::format_to(std::back_inserter(out), "{}\n", line);
            line = "  " + word;
        } else {
            line += " " + word;
        }
    }
    fmt::format_to(std::back_inserter(out), "{}\n", line);
}

void print_agents(const client_context& ctx, const std::vector<host_result<agents_found>>& hosts) {
    table rows(with_host_column(ctx.all_hosts, {{"AGENT"},
                                                {"FOUND"},
                                                {"VERSION", false, table::fit::cut_end},
                                                {"OUTPUT"},
                                                {"TOKENS", false, table::fit::optional},
                                                {"COST", false, table::fit::optional},
                                                {"RATE LIMITS", false, table::fit::optional},
                                                {"PROGRAM", false, table::fit::cut_start},
                                                {"ENVIRONMENT", false, table::fit::cut_end}}));
    for (const auto& [host, found] : hosts) {
        for (std::size_t i = 0; i < found.agents.size(); ++i) {
            const auto& agent = found.agents[i];
            if (ctx.all_hosts) rows.add(host);
            rows.add(agent.name);
            rows.add(agent.path.empty() ? "no" : "yes",
                     agent.path.empty() ? colour::red : colour::green);
            rows.add(found.versions[i].empty() ? "-" : found.versions[i]);
            rows.add(agent.structured_output ? agent.output_format : "text");
            rows.add(yes_no(agent.tokens));
            rows.add(yes_no(agent.cost));
            rows.add(agent.rate_limit_detection ? "detected" : "guessed");
            rows.add(!agent.path.empty()     ? agent.path
                     : agent.program.empty() ? "(--command)"
                                             : agent.program + " (not on PATH)");
            const bool lacking =
                !agent.environment.withheld.empty() || !agent.environment.unset.empty();
            rows.add(environment_summary(agent.environment),
                     lacking ? colour::yellow : colour::none);
        }
    }
    fmt::memory_buffer out;
    rows.render(out, ctx.colour, output_columns());
    for (const auto& [host, found] : hosts)
        append_wrapped(
            out,
            (ctx.all_hosts ? escape_controls(host) + ": " : std::string()) + "every agent gets:",
            found.environment, output_columns());
    write_stdout(out);
}

// The --json list of the hosts' agents; with --all-hosts each has "host".
nlohmann::json agents_json(const client_context& ctx,
                           const std::vector<host_result<agents_found>>& hosts) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [host, found] : hosts) {
        for (std::size_t i = 0; i < found.agents.size(); ++i) {
            nlohmann::json entry = found.agents[i];
            entry["version"] =
                found.versions[i].empty() ? nlohmann::json() : nlohmann::json(found.versions[i]);
            if (ctx.all_hosts) entry["host"] = host;
            list.push_back(std::move(entry));
        }
    }
    return list;
}

int run_agents(const client_context& ctx) {
    std::optional<fleet<agents_found>> hosts;
    std::vector<host_result<agents_found>> answers;
    if (ctx.all_hosts) {
        hosts.emplace(ctx.local_socket);
        answers = hosts->ask_once(find_agents);
    } else {
        connection daemon(ctx.socket);
        answers.push_back({"", find_agents(daemon)});
    }
    if (ctx.json) {
        nlohmann::json document{{"agents", agents_json(ctx, answers)}};
        // One host's: with --all-hosts the hosts' differ, and each agent's own are in its entry.
        if (!ctx.all_hosts) document["environment"] = answers.front().result.environment;
        if (hosts) return hosts->print_json(std::move(document));
        print_json(std::move(document));
        return exit_code::ok;
    }
    print_agents(ctx, answers);
    return hosts ? hosts->exit_code() : exit_code::ok;
}

}  // namespace

void register_agents_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand(
        "agents", "List the agents: found or not, version, what ralph reads from their output");
    add_all_hosts_flag(*cmd, ctx);
    cmd->callback([&ctx] { ctx.exit_code = run_agents(ctx); });
}

}  // namespace ralph::client
