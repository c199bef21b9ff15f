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

int print_scheduler(const client_context& ctx, const proto::scheduler_state& state) {
    if (ctx.json) {
        print_json({{"scheduler", state}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    const auto& settings = state.settings;
    append_field(out, "scheduler",
                 settings.paused
                     ? "paused (no loop starts; resume with `ralphctl scheduler resume`)"
                     : "running",
                 settings.paused ? colour::yellow : colour::green, ctx.colour);
    append_field(out, "concurrency",
                 fmt::format("{} at once ({} running)", settings.max_concurrent, state.running));
    if (settings.window.empty()) {
        append_field(out, "window", "any time");
    } else if (state.window_open) {
        append_field(out, "window", settings.window + " (open)");
    } else {
        const std::string opens =
            state.window_opens_at != 0 ? format_local_time(state.window_opens_at) : "-";
        append_field(out, "window", fmt::format("{} (closed; opens {})", settings.window, opens));
    }
    append_field(out, "loops", describe_loop_counts(state.loops_by_state));
    write_stdout(out);
    return exit_code::ok;
}

int run_scheduler_set(const client_context& ctx, const proto::scheduler_changes& changes) {
    return print_scheduler(ctx, connection(ctx.socket).call<proto::method::scheduler_set>(changes));
}

struct scheduler_set_options {
    std::int64_t max_concurrent = 0;
    std::string window;
    CLI::Option* max_concurrent_option = nullptr;
    CLI::Option* window_option = nullptr;
};

}  // namespace

void register_scheduler_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand("scheduler",
                                   "Show or change the scheduler: concurrency, pause, "
                                   "time window");
    cmd->callback([&ctx, cmd] {
        if (cmd->get_subcommands().empty())
            ctx.exit_code =
                print_scheduler(ctx, connection(ctx.socket).call<proto::method::scheduler_get>({}));
    });
    auto options = std::make_shared<scheduler_set_options>();
    auto* set =
        cmd->add_subcommand("set", "Change the scheduler's settings (kept across restarts)");
    options->max_concurrent_option =
        set->add_option("--max-concurrent", options->max_concurrent, "Loops running at once")
            ->check(number_between(1, 1000));
    options->window_option =
        set->add_option("--window", options->window,
                        "Daily time window when loops may run, local time HH:MM-HH:MM (e.g. "
                        "01:00-07:00; \"\" = any time)");
    set->callback([&ctx, options] {
        proto::scheduler_changes changes;
        if (options->max_concurrent_option->count() > 0)
            changes.max_concurrent = options->max_concurrent;
        if (options->window_option->count() > 0) changes.window = options->window;
        if (changes == proto::scheduler_changes{})
            throw client_error(exit_code::usage, "scheduler set: nothing to change",
                               "Give --max-concurrent N and/or --window HH:MM-HH:MM.");
        ctx.exit_code = run_scheduler_set(ctx, changes);
    });
    cmd->add_subcommand("pause", "Start no loop and no further iteration until resumed")
        ->callback([&ctx] {
            proto::scheduler_changes pause;
            pause.paused = true;
            ctx.exit_code = run_scheduler_set(ctx, pause);
        });
    cmd->add_subcommand("resume", "Let the scheduler start loops again")->callback([&ctx] {
        proto::scheduler_changes resume;
        resume.paused = false;
        ctx.exit_code = run_scheduler_set(ctx, resume);
    });
}

}  // namespace ralph::client
