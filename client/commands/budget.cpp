// `ralphctl budget [--loop ID]` (budget.get: each budget's use over its rolling window, its
// limit and when it frees up; agents held by a usage limit; --json {"budget": {...}}) and
// `ralphctl budget set [--iterations-per-hour N] [--iterations-per-day N] [--tokens-per-day N]
// [--cost-per-day USD]` (budget.set; 0 removes a limit; kept across restarts).
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace ralph::client {
namespace {

std::string format_amount(const proto::budget_use& use, double value) {
    if (use.name.find("cost") != std::string::npos) return fmt::format("${:.2f}", value);
    return fmt::format("{}", std::int64_t(value));
}

int print_budget(const client_context& ctx, nlohmann::json state) {
    if (ctx.json) {
        print_json({{"budget", std::move(state)}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    const auto uses = state.value("use", std::vector<proto::budget_use>{});
    if (uses.empty()) {
        fmt::format_to(std::back_inserter(out),
                       "no budgets set (see `ralphctl budget set --help`)\n");
    } else {
        table t({{"BUDGET"}, {"OF"}, {"USED", true}, {"LIMIT", true}, {"WINDOW"}, {"FREES UP"}});
        for (const auto& use : uses) {
            std::string name = use.name.substr(0, use.name.rfind("_usd"));  // "cost_per_day"
            std::replace(name.begin(), name.end(), '_', ' ');
            t.add(name);
            t.add(use.loop_id == 0 ? std::string("all loops") : fmt::format("loop {}", use.loop_id));
            t.add(format_amount(use, use.used), use.frees_at > 0 ? colour::red : colour::none);
            t.add(format_amount(use, use.limit));
            t.add(text::format_duration(use.window_ms));
            t.add(use.frees_at > 0 ? format_local_time(use.frees_at) : std::string("-"));
        }
        t.render(out, ctx.colour);
    }
    for (const auto& hold : state.value("holds", nlohmann::json::array()))
        fmt::format_to(std::back_inserter(out), "agent {} held until {}: {}\n",
                       hold.value("agent", ""),
                       format_local_time(text::parse_iso8601_or_zero(hold.value("until", ""))),
                       hold.value("reason", ""));
    write_stdout(out);
    return exit_code::ok;
}

struct set_options {
    proto::budget_limits limits;
    std::vector<std::pair<CLI::Option*, const char*>> fields;  // sent only when given
};

}  // namespace

void register_budget_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("budget", "Show the budgets' use and when they free up, or set them");
    auto loop_id = std::make_shared<std::int64_t>(0);
    cmd->add_option("--loop", *loop_id, "Also show this loop's own budgets");
    cmd->callback([&ctx, cmd, loop_id] {
        if (!cmd->get_subcommands().empty()) return;
        nlohmann::json params = nlohmann::json::object();
        if (*loop_id != 0) params["id"] = *loop_id;
        ctx.exit_code = print_budget(ctx, connection(ctx.socket).call(proto::method::budget_get, params));
    });
    auto options = std::make_shared<set_options>();
    auto* set = cmd->add_subcommand("set", "Set global budgets (0 = no limit; kept across restarts)");
    auto& limits = options->limits;
    options->fields = {
        {set->add_option("--iterations-per-hour", limits.iterations_per_hour,
                         "Agent runs (retries included) in any rolling hour")
             ->check(non_negative()),
         "iterations_per_hour"},
        {set->add_option("--iterations-per-day", limits.iterations_per_day,
                         "Agent runs in any rolling 24 hours")
             ->check(non_negative()),
         "iterations_per_day"},
        {set->add_option("--tokens-per-day", limits.tokens_per_day,
                         "Input + output tokens (cache included) in any rolling 24 hours")
             ->check(non_negative()),
         "tokens_per_day"},
        {set->add_option("--cost-per-day", limits.cost_per_day_usd,
                         "US dollars the agents reported in any rolling 24 hours")
             ->check(CLI::NonNegativeNumber),
         "cost_per_day_usd"},
    };
    set->callback([&ctx, options] {
        nlohmann::json all = options->limits;
        nlohmann::json params = nlohmann::json::object();
        for (const auto& [option, name] : options->fields)
            if (option->count() > 0) params[name] = all[name];
        if (params.empty())
            throw client_error(exit_code::usage, "budget set: nothing to change",
                               "Give at least one of --iterations-per-hour, --iterations-per-day, "
                               "--tokens-per-day, --cost-per-day.");
        ctx.exit_code = print_budget(ctx, connection(ctx.socket).call(proto::method::budget_set, params));
    });
}

}  // namespace ralph::client
