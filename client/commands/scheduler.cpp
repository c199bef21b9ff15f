// `ralphctl scheduler` (scheduler.get: concurrency, pause, time window, loops by state; --json
// {"scheduler": {...}}), `scheduler set [--max-concurrent N] [--window HH:MM-HH:MM]`, and
// `scheduler pause` / `scheduler resume` (scheduler.set): settings the daemon keeps in its
// database. Pausing lets running iterations finish; nothing new starts until resume.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

int print_scheduler(const client_context& ctx, nlohmann::json state) {
    if (ctx.json) {
        print_json({{"scheduler", std::move(state)}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    const bool paused = state.value("paused", false);
    append_field(out, "scheduler", paused ? "paused (no loop starts; resume with `ralphctl scheduler resume`)"
                                          : "running",
                 paused ? colour::yellow : colour::green, ctx.colour);
    append_field(out, "concurrency",
                 fmt::format("{} at once ({} running)", state.value("max_concurrent", 1),
                             state.value("running", 0)));
    std::string window = state.value("window", "");
    if (window.empty()) {
        append_field(out, "window", "any time");
    } else if (state.value("window_open", true)) {
        append_field(out, "window", window + " (open)");
    } else {
        std::string opens = state["window_opens_at"].is_string()
                                ? format_local_time(text::parse_iso8601_or_zero(state["window_opens_at"].get<std::string>()))
                                : "-";
        append_field(out, "window", fmt::format("{} (closed; opens {})", window, opens));
    }
    append_field(out, "loops",
                 describe_loop_counts(state.value("loops_by_state", std::map<std::string, std::int64_t>{})));
    write_stdout(out);
    return exit_code::ok;
}

int run_scheduler_call(const client_context& ctx, const char* method, const nlohmann::json& params) {
    return print_scheduler(ctx, connection(ctx.socket).call(method, params));
}

struct set_options {
    std::int64_t max_concurrent = 0;
    std::string window;
    CLI::Option* max_concurrent_option = nullptr;
    CLI::Option* window_option = nullptr;
};

}  // namespace

void register_scheduler_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("scheduler", "Show or change the scheduler: concurrency, pause, "
                                                "time window");
    cmd->callback([&ctx, cmd] {
        if (cmd->get_subcommands().empty())
            ctx.exit_code = run_scheduler_call(ctx, proto::method::scheduler_get, nlohmann::json::object());
    });
    auto options = std::make_shared<set_options>();
    auto* set = cmd->add_subcommand("set", "Change the scheduler's settings (kept across restarts)");
    options->max_concurrent_option =
        set->add_option("--max-concurrent", options->max_concurrent, "Loops running at once")
            ->check(CLI::Range(std::int64_t(1), std::int64_t(1000)));
    options->window_option =
        set->add_option("--window", options->window,
                        "Daily time window when loops may run, local time HH:MM-HH:MM (e.g. "
                        "01:00-07:00; \"\" = any time)");
    set->callback([&ctx, options] {
        nlohmann::json params = nlohmann::json::object();
        if (options->max_concurrent_option->count() > 0) params["max_concurrent"] = options->max_concurrent;
        if (options->window_option->count() > 0) params["window"] = options->window;
        if (params.empty())
            throw client_error(exit_code::usage, "scheduler set: nothing to change",
                               "Give --max-concurrent N and/or --window HH:MM-HH:MM.");
        ctx.exit_code = run_scheduler_call(ctx, proto::method::scheduler_set, params);
    });
    cmd->add_subcommand("pause", "Start no loop and no further iteration until resumed")
        ->callback([&ctx] {
            ctx.exit_code = run_scheduler_call(ctx, proto::method::scheduler_set, {{"paused", true}});
        });
    cmd->add_subcommand("resume", "Let the scheduler start loops again")->callback([&ctx] {
        ctx.exit_code = run_scheduler_call(ctx, proto::method::scheduler_set, {{"paused", false}});
    });
}

}  // namespace ralph::client
