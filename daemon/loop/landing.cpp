#include "daemon/loop/landing.hpp"

#include "common/text.hpp"
#include "daemon/loop/prompt.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/process/helper_process.hpp"
#include "daemon/workspace/workspace.hpp"

#include <fmt/format.h>

#include <sys/wait.h>

#include <mutex>

namespace ralph {
namespace {

// Commits what the loop's worktree holds uncommitted on its branch; "" or what failed.
std::string commit_worktree(const proto::loop_info& loop) {
    std::error_code ec;
    if (!std::filesystem::exists(loop.spec.worktree_path, ec)) return "";
    std::string error;
    workspace::commit_all(
        loop.spec.workspace,
        fmt::format("ralph loop {}: the uncommitted work at its end\n\nLoop: {}\n", loop.id,
                    loop.spec.name),
        error);
    return error;
}

// Why a helper failed, in one line: its last line of stderr (else stdout), or how it ended.
std::string helper_failure(const helper_run& run, const helper_output& output,
                           std::chrono::milliseconds limit) {
    if (run.status == -1) return output.err;
    if (run.timed_out) return fmt::format("no answer within {} s", limit.count() / 1000);
    for (const std::string* text : {&output.err, &output.out}) {
        std::string_view trimmed = text::trim(*text);
        if (!trimmed.empty()) return std::string(trimmed.substr(trimmed.rfind('\n') + 1));
    }
    return WIFEXITED(run.status) ? fmt::format("exit status {}", WEXITSTATUS(run.status))
                                 : fmt::format("signal {}", WTERMSIG(run.status));
}

bool succeeded(const helper_run& run) {
    return run.status != -1 && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0;
}

// The merge of the loop's branch into its worktree_target, its worktree's work committed first.
// Blocks (libgit2); one at a time.
landing merge_branch(const proto::loop_info& loop) {
    static std::mutex one_at_a_time;
    const std::lock_guard<std::mutex> lock(one_at_a_time);
    const proto::submit_params& spec = loop.spec;
    if (std::string error = commit_worktree(loop); !error.empty())
        return {false, "not merged: " + error};
    const workspace::merge_outcome outcome = workspace::merge_branch(
        spec.worktree_source, spec.worktree_branch, spec.worktree_target,
        fmt::format("Merge branch '{}' into {}\n\nralph loop {}: {}\n", spec.worktree_branch,
                    spec.worktree_target, loop.id, spec.name));
    return {outcome.merged(), workspace::describe_merge(outcome, spec.worktree_target)};
}

// The worktree's work committed, the branch pushed, the pull request opened with `body`.
awaitable<landing> open_pull_request(const landing_tools& tools, const proto::loop_info& loop,
                                     const std::string& body) {
    const proto::submit_params& spec = loop.spec;
    const std::string remote = spec.pr_remote.empty() ? proto::default_pr_remote : spec.pr_remote;
    if (std::string error =
            co_await off_thread(tools.blocking, [&loop] { return commit_worktree(loop); });
        !error.empty())
        co_return landing{false, "no pull request: " + error};

    spawn_request push{
        {"git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c",
         "protocol.ext.allow=never", "push", "--no-verify", remote,
         "refs/heads/" + spec.worktree_branch + ":refs/heads/" + spec.worktree_branch},
        environment_with({{"GIT_TERMINAL_PROMPT", "0"}, {"GCM_INTERACTIVE", "never"}}),
        spec.worktree_source,
        std::string()};
    helper_output pushed;
    const helper_run push_run =
        co_await run_helper(tools.io, tools.blocking, tools.reaper, push, tools.time_limit, pushed);
    if (!succeeded(push_run))
        co_return landing{false, fmt::format("no pull request: git push to {} failed: {}", remote,
                                             helper_failure(push_run, pushed, tools.time_limit))};

    // NAME=VALUE: a title or body that starts with '-' is never taken for an option.
    spawn_request create{
        {"gh", "pr", "create", "--head=" + spec.worktree_branch, "--base=" + spec.worktree_target,
         "--title=" + spec.name, "--body=" + body},
        environment_with({{"GH_PROMPT_DISABLED", "1"}, {"NO_COLOR", "1"}}),
        spec.worktree_source,
        std::string()};
    helper_output created;
    const helper_run create_run = co_await run_helper(tools.io, tools.blocking, tools.reaper,
                                                      create, tools.time_limit, created);
    if (!succeeded(create_run))
        co_return landing{
            false, fmt::format("no pull request: {} pushed to {}, but gh pr create failed: {}",
                               spec.worktree_branch, remote,
                               helper_failure(create_run, created, tools.time_limit))};
    // gh prints the pull request's URL last.
    std::string_view out = text::trim(created.out);
    const std::string url(out.substr(out.rfind('\n') + 1));
    co_return landing{
        true, fmt::format("pull request {} ({} pushed to {})", url, spec.worktree_branch, remote)};
}

}  // namespace

awaitable<landing> land(const landing_tools& tools, const proto::loop_info& loop,
                        const std::vector<proto::attempt_info>& attempts, landing_way way) {
    const bool merging = way == landing_way::merge;
    if (loop.spec.worktree_target.empty())
        co_return landing{false, fmt::format("{}: the workspace was on no branch (a detached "
                                             "HEAD) at submit",
                                             merging ? "not merged" : "no pull request")};
    if (merging)
        co_return co_await off_thread(tools.blocking, [&loop] { return merge_branch(loop); });
    const std::string notes = co_await off_thread(tools.blocking, [&loop] {
        return read_notes_tail(loop.spec.workspace, max_pull_request_quote_bytes);
    });
    const std::string body = pull_request_body(loop, attempts, notes);
    co_return co_await open_pull_request(tools, loop, body);
}

std::string pull_request_body(const proto::loop_info& loop,
                              const std::vector<proto::attempt_info>& attempts,
                              const std::string& notes) {
    std::string body = fmt::format("ralph loop {} ({}): {}.\n\n", loop.id, loop.spec.agent,
                                   loop.stop_reason.empty() ? "completed" : loop.stop_reason);
    body += fmt::format("- {} iteration(s), {} agent run(s), {} input and {} output tokens",
                        loop.iterations, loop.attempts, loop.usage.input_tokens,
                        loop.usage.output_tokens);
    if (loop.usage.cost_usd) body += fmt::format(", ${:.2f}", *loop.usage.cost_usd);
    body += "\n";
    int accepted = 0, rejected = 0;
    std::string last_reasons;
    for (const proto::attempt_info& attempt : attempts) {
        if (attempt.verdict == "accept") ++accepted;
        if (attempt.verdict == "reject") {
            ++rejected;
            last_reasons = attempt.verdict_reasons;
        }
    }
    if (!loop.spec.judge.empty())
        body += fmt::format("- judge {}: {} accepted, {} rejected\n", loop.spec.judge, accepted,
                            rejected);
    if (!last_reasons.empty())
        body += "\nThe judge's last reasons to reject:\n\n" +
                std::string(text::utf8_head(last_reasons, max_pull_request_quote_bytes)) + "\n";
    if (!notes.empty()) body += "\n## The loop's last notes\n\n" + notes + "\n";
    return body;
}

}  // namespace ralph
