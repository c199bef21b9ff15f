#include "daemon/notify/hooks.hpp"

#include "common/paths.hpp"
#include "common/text.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/child_reaper.hpp"
#include "daemon/process/sandbox.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <iterator>

namespace ralph {
namespace {

namespace fs = std::filesystem;

// What of a hook's output reaches the log, per stream: its first lines, each cut to a size.
constexpr std::size_t kept_output_bytes = 4096;
constexpr std::size_t logged_lines = 10;
constexpr std::size_t logged_line_bytes = 300;

std::vector<std::string> notification_argv(const std::string& program,
                                           const proto::loop_info& loop) {
    return {program, "--app-name=ralph",
            fmt::format("ralph: loop {} ({}) {}", loop.id, loop.spec.name,
                        proto::to_string(loop.state)),
            loop.stop_reason};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> hook_environment(const proto::loop_info& loop,
                                                                  std::string_view hook) {
    const auto& spec = loop.spec;
    return {{"RALPH_HOOK", std::string(hook)},
            {"RALPH_LOOP_ID", std::to_string(loop.id)},
            {"RALPH_LOOP_NAME", spec.name},
            {"RALPH_STATE", std::string(proto::to_string(loop.state))},
            {"RALPH_STOP_REASON", loop.stop_reason},
            {"RALPH_ITERATIONS", std::to_string(loop.iterations)},
            {"RALPH_WORKSPACE", spec.workspace},
            {"RALPH_WORKTREE_BRANCH", spec.worktree_branch},
            {"RALPH_LANDING", loop.landing},
            {"RALPH_AGENT", spec.agent},
            {"RALPH_INPUT_TOKENS", std::to_string(loop.usage.input_tokens)},
            {"RALPH_OUTPUT_TOKENS", std::to_string(loop.usage.output_tokens)},
            {"RALPH_COST_USD", loop.usage.cost_usd ? fmt::format("{}", *loop.usage.cost_usd) : ""}};
}

std::vector<std::string> hook_process_environment(const proto::loop_info& loop,
                                                  std::string_view hook, const env_policy& policy) {
    std::vector<std::pair<std::string, std::string>> outcome = hook_environment(loop, hook);
    if (hook == "notify" || (hook == "daemon" && !loop.spec.sandbox))
        return environment_with(outcome);
    std::vector<std::pair<std::string, std::string>> overrides(loop.spec.env.begin(),
                                                               loop.spec.env.end());
    overrides.insert(overrides.end(), outcome.begin(), outcome.end());
    return agent_environment(policy, agent_variables(find_agent(loop.spec.agent), loop.spec),
                             overrides);
}

std::vector<std::string> hook_argv(const std::string& command, const std::filesystem::path& dir) {
    std::vector<std::string> argv = text::split_command_words(command);
    if (argv.empty()) throw std::invalid_argument("empty command");
    if (argv[0].find('/') != std::string::npos && fs::path(argv[0]).is_relative())
        argv[0] = (dir / argv[0]).lexically_normal().string();
    return argv;
}

std::string hook_directory(const proto::submit_params& spec) {
    std::error_code ec;
    if (fs::is_directory(spec.workspace, ec)) return spec.workspace;
    if (!spec.worktree_source.empty() && fs::is_directory(spec.worktree_source, ec))
        return spec.worktree_source;
    return {};
}

std::filesystem::path notify_send_program() {
    return paths::find_executable("notify-send", search_path_with({}));
}

hook_runner::hook_runner(
    net::io_context& io, net::thread_pool& blocking, child_reaper& reaper, hook_settings settings,
    const env_policy& agent_env,
    std::function<std::vector<std::filesystem::path>(std::int64_t loop_id)> sandbox_hidden)
    : io_(io),
      blocking_(blocking),
      reaper_(reaper),
      settings_(std::move(settings)),
      agent_env_(agent_env),
      sandbox_hidden_(std::move(sandbox_hidden)),
      grace_timer_(io) {}

void hook_runner::loop_ended(const proto::loop_info& loop) {
    const std::string dir = hook_directory(loop.spec);
    const std::array<std::pair<std::string_view, const std::string*>, 2> hooks{
        {{"loop", &loop.spec.on_done}, {"daemon", &settings_.on_done}}};
    for (const auto& [which, command] : hooks) {
        if (command->empty()) continue;
        // Named by where it was set: "submit --on-done hook", "ralphd --on-done hook".
        std::string label = fmt::format("loop {}: {} --on-done hook", loop.id,
                                        which == "loop" ? "submit" : "ralphd");
        try {
            start(loop, label, hook_argv(*command, dir), dir, which);
        } catch (const std::invalid_argument& e) {
            spdlog::warn("{} '{}' not run: {}", label, *command, e.what());
        }
    }
    if (settings_.notify) {
        const std::filesystem::path program = notify_send_program();
        if (program.empty())
            spdlog::debug("loop {}: no desktop notification: notify-send is not on PATH", loop.id);
        else
            start(loop, fmt::format("loop {}: desktop notification", loop.id),
                  notification_argv(program.string(), loop), dir, "notify");
    }
}

void hook_runner::start(const proto::loop_info& loop, const std::string& label,
                        std::vector<std::string> argv, const std::string& dir,
                        std::string_view which) {
    if (stopped_) {
        spdlog::warn("{} not run: ralphd has stopped", label);
        return;
    }
    if (dir.empty()) {
        spdlog::warn("{} not run: the loop's workspace {} does not exist", label,
                     loop.spec.workspace);
        return;
    }
    const std::string command = text::join_words(argv);
    running_hook& hook = running_.emplace_back(io_, label);
    auto it = std::prev(running_.end());
    try {
        // notify-send is ralph's own program with the outcome as its arguments: never confined.
        if (loop.spec.sandbox && which != "notify") {
            sandbox::layout view;
            view.hidden = sandbox_hidden_(loop.id);
            view.offline = loop.spec.sandbox_offline;
            argv = sandbox::wrap(sandbox::find_bwrap(search_path_with(loop.spec.env)), view, dir,
                                 argv);
        }
    } catch (const std::exception& e) {
        spdlog::warn("{} '{}' not run: {}", label, command, e.what());
        running_.erase(it);
        return;
    }
    hook.command = command;
    hook.request = spawn_request{std::move(argv), hook_process_environment(loop, which, agent_env_),
                                 dir, std::string()};
    net::co_spawn(io_, supervise(hook), [this, it](std::exception_ptr error) {
        if (error) spdlog::error("{}: lost track of it", it->label);
        // Let the finished coroutine unwind before its hook is erased.
        net::post(io_, [this, it] { finished(it); });
    });
}

awaitable<void> hook_runner::supervise(running_hook& hook) {
    try {
        hook.process = co_await off_thread(blocking_, [&] { return reaper_.spawn(hook.request); });
    } catch (const std::exception& e) {
        spdlog::warn("{} '{}' not run: {}", hook.label, hook.command, e.what());
        co_return;
    }
    hook.started = std::chrono::steady_clock::now();
    hook.output.keep = helper_output::part::head;
    hook.output.limit = kept_output_bytes;
    spdlog::info("{} started: {} (pid {})", hook.label, hook.command, hook.process.pid);
    // The shutdown's grace ended while it was being started.
    if (grace_over_) signal_group(hook.process.pid, SIGKILL);
    hook.limit.expires_after(settings_.time_limit);
    // Runs before finished() erases the hook: the timer's handler, once queued, precedes the
    // completion of supervise() on the one io thread.
    hook.limit.async_wait([this, &hook](boost::system::error_code ec) {
        if (ec) return;
        hook.timed_out = true;
        spdlog::warn("{} still runs after {} s: killing its process group", hook.label,
                     settings_.time_limit.count() / 1000.0);
        signal_group(hook.process.pid, SIGKILL);
    });
    int status = co_await finish_helper(io_, reaper_, hook.process, hook.output);
    hook.limit.cancel();
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - hook.started);
    log_output(hook);
    if (hook.timed_out)
        spdlog::warn("{} was killed after its time limit of {} s", hook.label,
                     settings_.time_limit.count() / 1000.0);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        spdlog::info("{} exited with status 0 after {} ms", hook.label, elapsed.count());
    else if (WIFEXITED(status))
        spdlog::warn("{} exited with status {} after {} ms", hook.label, WEXITSTATUS(status),
                     elapsed.count());
    else
        spdlog::warn("{} was killed by signal {} after {} ms", hook.label, WTERMSIG(status),
                     elapsed.count());
}

void hook_runner::log_output(const running_hook& hook) const {
    const std::array<std::pair<std::string_view, const std::string*>, 2> streams{
        {{"stdout", &hook.output.out}, {"stderr", &hook.output.err}}};
    for (const auto& [name, text] : streams) {
        std::string_view rest = *text;
        for (std::size_t lines = 0; !rest.empty() && lines < logged_lines; ++lines) {
            std::size_t newline = rest.find('\n');
            std::string_view line = rest.substr(0, std::min(newline, logged_line_bytes));
            rest =
                newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
            spdlog::info("{} {}: {}", hook.label, name, text::to_valid_utf8(line));
        }
        if (!rest.empty() || text->size() >= kept_output_bytes)
            spdlog::info("{} {}: (more output not logged)", hook.label, name);
    }
}

void hook_runner::finished(hook_list::iterator hook) {
    running_.erase(hook);
    if (shutting_down_ && running_.empty() && !stopped_) {
        grace_timer_.cancel();
        stopped_ = true;
        std::exchange(on_all_ended_, nullptr)();
    }
}

void hook_runner::shutdown(std::function<void()> done) {
    shutting_down_ = true;
    if (running_.empty()) {
        stopped_ = true;
        done();
        return;
    }
    on_all_ended_ = std::move(done);
    spdlog::info("waiting up to {} s for {} running on-done hook(s)",
                 settings_.shutdown_grace.count() / 1000.0, running_.size());
    grace_timer_.expires_after(settings_.shutdown_grace);
    grace_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        grace_over_ = true;
        for (auto& hook : running_) {
            if (hook.process.pid <= 0) continue;  // being started: killed once it is
            spdlog::warn("{} still runs at shutdown: killing its process group", hook.label);
            signal_group(hook.process.pid, SIGKILL);
        }
    });
}

}  // namespace ralph
