// `ralphctl hosts`: every daemon of the hosts file (client/hosts.hpp) and `local`, asked at once
// (daemon.info, scheduler.get, agents.list; client/fleet.hpp), each within 10 s: reachable (or,
// last, why not), versions, the scheduler's state, loops running of the most that may, the agents
// found.
// Exit 3 when a host could not be reached. With --json {"hosts": [...]}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

namespace ralph::client {
namespace {

struct host_status {
    proto::daemon_info info;
    proto::scheduler_state scheduler;
    std::vector<std::string> agents;  // found on the host
};

host_status ask_host(connection& daemon) {
    host_status status;
    status.info = daemon.call<proto::method::daemon_info>({});
    status.scheduler = daemon.call<proto::method::scheduler_get>({});
    for (const auto& agent : daemon.call<proto::method::agents_list>({}).agents)
        if (!agent.path.empty()) status.agents.push_back(agent.name);
    return status;
}

std::string scheduler_text(const proto::scheduler_state& scheduler) {
    if (scheduler.settings.paused) return "paused";
    if (!scheduler.window_open) return "window " + scheduler.settings.window + " closed";
    return "running";
}

int run_hosts(const client_context& ctx) {
    fleet<host_status> all(ctx.local_socket);
    const std::vector<host_entry>& hosts = all.hosts();
    const auto answers = all.ask(ask_host);
    if (ctx.json) {
        nlohmann::json list = nlohmann::json::array();
        for (std::size_t i = 0; i < hosts.size(); ++i) {
            nlohmann::json entry{{"name", hosts[i].name},
                                 {"address", hosts[i].address},
                                 {"reachable", answers[i].result.has_value()},
                                 {"error", answers[i].error}};
            if (const auto& status = answers[i].result) {
                entry["daemon"] = status->info;
                entry["scheduler"] = status->scheduler;
                entry["agents"] = status->agents;
            }
            list.push_back(std::move(entry));
        }
        print_json({{"hosts", std::move(list)}});
        return all.exit_code();
    }
    table rows({{"HOST"},
                {"ADDRESS", false, table::fit::cut_end},
                {"STATE"},
                {"VERSION", false, table::fit::optional},
                {"SCHEDULER"},
                {"RUNNING", true},
                {"AGENTS", false, table::fit::cut_end}});
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        rows.add(hosts[i].name);
        rows.add(hosts[i].address);
        const auto& status = answers[i].result;
        if (!status) {
            rows.add("down", colour::red);
            rows.add("-");
            rows.add("-");
            rows.add("-");
            rows.add(answers[i].error);
        } else {
            rows.add("up", colour::green);
            rows.add(status->info.version);
            rows.add(scheduler_text(status->scheduler));
            rows.add_format("{}/{}", status->scheduler.running, status->info.max_concurrent);
            rows.add(status->agents.empty() ? "none" : text::join_words(status->agents, ","));
        }
    }
    fmt::memory_buffer out;
    rows.render(out, ctx.colour, output_columns());
    write_stdout(out);
    return all.exit_code();
}

}  // namespace

void register_hosts_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand(
        "hosts", "Every daemon of the hosts file and local: reachable, version, scheduler, agents");
    cmd->callback([&ctx] { ctx.exit_code = run_hosts(ctx); });
}

}  // namespace ralph::client
