// `ralphctl budget [--loop ID]` (budget.get: each budget's use over its rolling window, its
// limit and when it frees up; agents held by a usage limit; --json {"budget": {...}}) and
// `ralphctl budget set [--iterations-per-hour N] [--iterations-per-day N] [--tokens-per-day N]
// [--cost-per-day USD]` (budget.set; 0 removes a limit; kept across restarts).
// `budget --all-hosts`: every host's at once (client/fleet.hpp), with a HOST column (a host
// without budgets: a row "none"); --json {"budgets": [{"host", ...budget}], "unreachable"}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace ralph::client {
namespace {

// "$1.25", or a count for people ("1.2M" tokens).
std::string format_amount(const proto::budget_use& use, double value) {
    if (use.name.find("cost") != std::string::npos) return fmt::format("${:.2f}", value);
    return format_count(std::int64_t(value));
}

// How much of its limit a budget used: "60%", red when used up, yellow from 80%.
void add_share(table& t, const proto::budget_use& use) {
    const double share = use.limit > 0 ? 100 * use.used / use.limit : 0;
    const colour c = use.frees_at > 0 || share >= 100 ? colour::red
                     : share >= 80                    ? colour::yellow
                                                      : colour::none;
    t.add(fmt::format("{:.0f}%", share), c);
}

// The budgets of the hosts (one, or with --all-hosts every host that answered: `host` "" is
// one host, without a HOST column).
void print_budgets(const client_context& ctx,
                   const std::vector<host_result<proto::budget_state>>& hosts) {
    const bool with_host = ctx.all_hosts;
    fmt::memory_buffer out;
    bool none = true;
    for (const auto& host : hosts) none = none && host.result.use.empty();
    if (none && !with_host) {
        fmt::format_to(std::back_inserter(out),
                       "no budgets set (see `ralphctl budget set --help`)\n");
    } else {
        table t(with_host_column(with_host, {{"BUDGET"},
                                             {"OF"},
                                             {"USED", true},
                                             {"LIMIT", true},
                                             {"USE", true},
                                             {"WINDOW", false, table::fit::optional},
                                             {"FREES UP"}}));
        for (const auto& host : hosts) {
            if (host.result.use.empty()) {
                t.add(host.host);
                t.add("none");
                for (int i = 0; i < 6; ++i) t.add("-");
            }
            for (const auto& use : host.result.use) {
                if (with_host) t.add(host.host);
                std::string name = use.name.substr(0, use.name.rfind("_usd"));  // "cost_per_day"
                std::replace(name.begin(), name.end(), '_', ' ');
                t.add(name);
                t.add(use.loop_id == 0 ? std::string("all loops")
                                       : fmt::format("loop {}", use.loop_id));
                t.add(format_amount(use, use.used));
                t.add(format_amount(use, use.limit));
                add_share(t, use);
                t.add(text::format_duration(use.window_ms));
                t.add(use.frees_at > 0 ? format_local_time(use.frees_at) : std::string("-"));
            }
        }
        t.render(out, ctx.colour, output_columns());
    }
    // A hold learnt from a peer (ralphd --peer) says from which host; all of it is the peer's text.
    for (const auto& host : hosts)
        for (const auto& hold : host.result.holds)
            fmt::format_to(std::back_inserter(out),
                           "{}{}agent {} held until {} (account {}{}{}): {}\n", host.host,
                           with_host ? ": " : "", escape_controls(hold.agent),
                           format_local_time(hold.until), escape_controls(hold.account),
                           hold.origin.empty() ? "" : ", from ", escape_controls(hold.origin),
                           escape_controls(hold.reason));
    write_stdout(out);
}

int print_budget(const client_context& ctx, const proto::budget_state& state) {
    if (ctx.json) {
        print_json({{"budget", state}});
        return exit_code::ok;
    }
    print_budgets(ctx, {{"", state}});
    return exit_code::ok;
}

// `budget --all-hosts`.
int print_fleet_budgets(const client_context& ctx) {
    fleet<proto::budget_state> hosts(ctx.local_socket);
    const auto answers = hosts.ask_once(
        [](connection& daemon) { return daemon.call<proto::method::budget_get>({}); });
    if (ctx.json) {
        nlohmann::json budgets = nlohmann::json::array();
        for (const auto& answer : answers) {
            nlohmann::json budget = answer.result;
            budget["host"] = answer.host;
            budgets.push_back(std::move(budget));
        }
        return hosts.print_json({{"budgets", std::move(budgets)}});
    }
    print_budgets(ctx, answers);
    return hosts.exit_code();
}

struct budget_set_options {
    proto::budget_limits limits;
    CLI::Option* iterations_per_hour = nullptr;
    CLI::Option* iterations_per_day = nullptr;
    CLI::Option* tokens_per_day = nullptr;
    CLI::Option* cost_per_day = nullptr;

    // The limits given on the command line; the others stay as they are.
    proto::budget_changes changes() const {
        proto::budget_changes changes;
        if (iterations_per_hour->count() > 0)
            changes.iterations_per_hour = limits.iterations_per_hour;
        if (iterations_per_day->count() > 0) changes.iterations_per_day = limits.iterations_per_day;
        if (tokens_per_day->count() > 0) changes.tokens_per_day = limits.tokens_per_day;
        if (cost_per_day->count() > 0) changes.cost_per_day_usd = limits.cost_per_day_usd;
        return changes;
    }
};

}  // namespace

void register_budget_command(CLI::App& app, client_context& ctx) {
    auto* cmd =
        app.add_subcommand("budget", "Show the budgets' use and when they free up, or set them");
    auto loop_id = std::make_shared<std::int64_t>(0);
    auto* loop = cmd->add_option("--loop", *loop_id, "Also show this loop's own budgets");
    add_all_hosts_flag(*cmd, ctx);
    cmd->callback([&ctx, cmd, loop, loop_id] {
        if (!cmd->get_subcommands().empty()) return;
        if (ctx.all_hosts && loop->count() > 0)
            throw client_error(exit_code::usage, "budget --loop shows one host's loop",
                               "leave out --all-hosts (and -H '*'), or --loop");
        if (ctx.all_hosts) {
            ctx.exit_code = print_fleet_budgets(ctx);
            return;
        }
        ctx.exit_code =
            print_budget(ctx, connection(ctx.socket).call<proto::method::budget_get>({*loop_id}));
    });
    auto options = std::make_shared<budget_set_options>();
    auto* set =
        cmd->add_subcommand("set", "Set global budgets (0 = no limit; kept across restarts)");
    auto& limits = options->limits;
    options->iterations_per_hour =
        set->add_option("--iterations-per-hour", limits.iterations_per_hour,
                        "Agent runs (retries included) in any rolling hour")
            ->check(non_negative());
    options->iterations_per_day = set->add_option("--iterations-per-day", limits.iterations_per_day,
                                                  "Agent runs in any rolling 24 hours")
                                      ->check(non_negative());
    options->tokens_per_day =
        set->add_option("--tokens-per-day", limits.tokens_per_day,
                        "Input + output tokens (cache included) in any rolling 24 hours")
            ->check(non_negative());
    options->cost_per_day =
        set->add_option("--cost-per-day", limits.cost_per_day_usd,
                        "US dollars the agents reported in any rolling 24 hours")
            ->check(non_negative_number());
    set->callback([&ctx, options] {
        if (ctx.all_hosts)
            throw client_error(exit_code::usage, "budget set changes one host's budgets",
                               "run it once per host, with --host NAME");
        const proto::budget_changes changes = options->changes();
        if (changes == proto::budget_changes{})
            throw client_error(exit_code::usage, "budget set: nothing to change",
                               "Give at least one of --iterations-per-hour, --iterations-per-day, "
                               "--tokens-per-day, --cost-per-day.");
        ctx.exit_code =
            print_budget(ctx, connection(ctx.socket).call<proto::method::budget_set>(changes));
    });
}

}  // namespace ralph::client
