// `ralphctl agents`: every agent adapter (agents.list), whether the daemon finds its program,
// the program's version, and what ralph reads from its output. The version is asked here, by
// running `PROGRAM --version` with a short timeout, so the daemon never blocks on an agent.
// With --json {"agents": [{...agent_info, "version": "..." | null}]}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

extern char** environ;

namespace ralph::client {
namespace {

constexpr auto version_timeout = std::chrono::seconds(5);

}  // namespace

std::string program_version(const std::string& program) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    const char* argv[] = {program.c_str(), "--version", nullptr};
    pid_t pid = 0;
    int rc =
        ::posix_spawn(&pid, program.c_str(), &actions, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    std::string output;
    if (rc == 0) {
        const auto deadline = std::chrono::steady_clock::now() + version_timeout;
        char buffer[4096];
        while (output.size() < 64 * 1024) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd p{fds[0], POLLIN, 0};
            if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) break;
            ssize_t n = ::read(fds[0], buffer, sizeof buffer);
            if (n <= 0) break;
            output.append(buffer, std::size_t(n));
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    ::close(fds[0]);
    return std::string(text::first_line(output));
}

namespace {

std::string_view yes_no(bool value) { return value ? "yes" : "-"; }

int run_agents(const client_context& ctx) {
    const auto agents = connection(ctx.socket).call<proto::method::agents_list>({}).agents;
    std::vector<std::string> versions;
    for (const auto& agent : agents)
        versions.push_back(agent.path.empty() ? std::string() : program_version(agent.path));
    if (ctx.json) {
        nlohmann::json list = nlohmann::json::array();
        for (std::size_t i = 0; i < agents.size(); ++i) {
            nlohmann::json entry = agents[i];
            entry["version"] = versions[i].empty() ? nlohmann::json() : nlohmann::json(versions[i]);
            list.push_back(std::move(entry));
        }
        print_json({{"agents", std::move(list)}});
        return exit_code::ok;
    }
    table rows({{"AGENT"},
                {"FOUND"},
                {"VERSION"},
                {"OUTPUT"},
                {"TOKENS"},
                {"COST"},
                {"RATE LIMITS"},
                {"PROGRAM"}});
    for (std::size_t i = 0; i < agents.size(); ++i) {
        const auto& agent = agents[i];
        rows.add(agent.name);
        rows.add(agent.path.empty() ? "no" : "yes",
                 agent.path.empty() ? colour::red : colour::green);
        rows.add(versions[i].empty() ? "-" : versions[i]);
        rows.add(agent.structured_output ? agent.output_format : "text");
        rows.add(yes_no(agent.tokens));
        rows.add(yes_no(agent.cost));
        rows.add(agent.rate_limit_detection ? "detected" : "guessed");
        rows.add(!agent.path.empty()     ? agent.path
                 : agent.program.empty() ? "(--command)"
                                         : agent.program + " (not on PATH)");
    }
    fmt::memory_buffer out;
    rows.render(out, ctx.colour);
    write_stdout(out);
    return exit_code::ok;
}

}  // namespace

void register_agents_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand(
        "agents", "List the agents: found or not, version, what ralph reads from their output");
    cmd->callback([&ctx] { ctx.exit_code = run_agents(ctx); });
}

}  // namespace ralph::client
