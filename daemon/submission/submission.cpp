#include "daemon/submission/submission.hpp"

#include "common/paths.hpp"
#include "common/text.hpp"
#include "daemon/notify/webhook.hpp"
#include "daemon/process/process.hpp"
#include "daemon/process/sandbox.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/errors.hpp"
#include "proto/fields.hpp"
#include "proto/loop_api.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

namespace ralph {
namespace {

namespace fs = std::filesystem;
using proto::error_kind;
using proto::rpc_error;

constexpr std::size_t max_idempotency_key_bytes = 256;
constexpr std::size_t max_loop_webhooks = 8;  // submit --notify

[[noreturn]] void invalid(const std::string& message) {
    throw rpc_error(error_kind::invalid_params, message);
}

// The workspace: an absolute path to an existing directory of the daemon's user, made canonical.
void check_workspace(proto::submit_params& spec) {
    if (spec.workspace.empty())
        throw rpc_error(error_kind::invalid_workspace, "a workspace is required");
    fs::path workspace(spec.workspace);
    if (!workspace.is_absolute())
        throw rpc_error(error_kind::invalid_workspace,
                        "workspace " + spec.workspace + " is not an absolute path");
    std::error_code ec;
    if (!fs::is_directory(workspace, ec))
        throw rpc_error(error_kind::invalid_workspace,
                        "cannot use workspace " + spec.workspace + ": no such directory");
    if (auto canonical = fs::canonical(workspace, ec); !ec) spec.workspace = canonical.string();
    // Another user's workspace: its links, git config and hooks are theirs, and ralph (root,
    // say) would act on them with its own rights.
    struct stat st {};
    if (::stat(spec.workspace.c_str(), &st) == 0 && st.st_uid != ::geteuid() &&
        !spec.allow_foreign_workspace)
        throw rpc_error(error_kind::invalid_workspace,
                        fmt::format("workspace {} belongs to {}, not to {} running ralphd; submit "
                                    "with --allow-foreign-workspace to run there anyway",
                                    spec.workspace, paths::describe_uid(st.st_uid),
                                    paths::describe_uid(::geteuid())));
}

void check_bounds(const proto::submit_params& spec) {
    using proto::check_range;
    check_range("max_iterations", spec.max_iterations, 0, proto::max_iterations);
    check_range("min_iterations", spec.min_iterations, 1, proto::max_iterations);
    if (spec.max_iterations > 0 && spec.min_iterations > spec.max_iterations)
        invalid("params.min_iterations: must not exceed max_iterations");
    if (!(spec.timeout_s > 0)) invalid("params.timeout_s: must be positive");
    if (spec.notify.size() > max_loop_webhooks)
        invalid(fmt::format("params.notify: at most {} URLs", max_loop_webhooks));
    for (const auto& url : spec.notify) try {
            parse_webhook_target(url);
        } catch (const std::invalid_argument& e) {
            invalid(std::string("params.notify: ") + e.what());
        }
    check_range("timeout_s", spec.timeout_s, 0, proto::max_duration_s);
    check_range("delay_s", spec.delay_s, 0, proto::max_duration_s);
    check_range("max_retries", spec.max_retries, 0, proto::max_count);
    check_range("judge_max_rejections", spec.judge_max_rejections, 1, proto::max_count);
    check_range("retry_backoff_s", spec.retry_backoff_s, 0, proto::max_duration_s);
    check_range("inactivity_timeout_s", spec.inactivity_timeout_s, 0, proto::max_duration_s);
    check_range("priority", spec.priority, -proto::max_count, proto::max_count);
    check_range("stall_iterations", spec.stall_iterations, 0, proto::max_count);
    check_range("stall_failures", spec.stall_failures, 0, proto::max_count);
    check_range("iterations_per_hour", spec.iterations_per_hour, 0, proto::max_count);
    check_range("iterations_per_day", spec.iterations_per_day, 0, proto::max_count);
    check_range("max_tokens", spec.max_tokens, 0, proto::max_tokens);
    check_range("max_cost_usd", spec.max_cost_usd, 0, proto::max_cost_usd);
    if (spec.completion_phrase.find_first_not_of(" \t\r\n") == std::string::npos)
        invalid("params.completion_phrase: must not be empty");
    for (const auto& [key, value] : spec.env)
        if (key.empty() || key.find('=') != std::string::npos)
            invalid("params.env: invalid variable name '" + key + "'");
    if (spec.idempotency_key.size() > max_idempotency_key_bytes)
        invalid(fmt::format("params.idempotency_key: at most {} bytes", max_idempotency_key_bytes));
}

// --worktree: the loop is to run in a new worktree of the workspace's repository, named after the
// id the loop is about to get, on a new branch from the workspace's HEAD; `workspace` becomes
// the matching directory in it. The runner creates the worktree (every file checked out: it
// can take long). Uncommitted changes stay behind: a warning, not a refusal.
void plan_worktree(proto::submit_params& spec, const submission_context& ctx,
                   std::vector<std::string>& warnings) {
    auto refuse = [&spec](const std::string& why) {
        throw rpc_error(error_kind::invalid_workspace,
                        "cannot run in a worktree of " + spec.workspace + ": " + why);
    };
    workspace::repository_info repo = workspace::inspect_repository(spec.workspace);
    if (!repo.error.empty()) refuse(repo.error);
    if (!repo.is_git) refuse("it is not in a git repository (--worktree needs one)");
    if (repo.head.empty()) refuse("its repository has no commit yet to start a worktree from");
    if ((spec.merge || !spec.pr_remote.empty()) && repo.branch.empty())
        refuse(fmt::format("its HEAD is detached: {} needs the branch to land the loop's work on",
                           spec.merge ? "--merge" : "--pr"));
    const fs::path path = ctx.state.worktree_of(ctx.loop_id);
    const std::string branch = "ralph/loop-" + std::to_string(ctx.loop_id);
    std::error_code ec;
    if (fs::exists(path, ec))
        refuse(path.string() + " exists already (left by an earlier ralph database?): remove it");
    std::string error;
    if (workspace::has_branch(spec.workspace, branch, error))
        refuse(
            fmt::format("branch {} exists already (left by an earlier ralph database?): "
                        "delete it with git -C {} branch -D {}",
                        branch, repo.top.string(), branch));
    if (!error.empty()) refuse(error);
    workspace::dirty_state dirty = workspace::check_dirty(spec.workspace);
    if (dirty.dirty)
        warnings.push_back(fmt::format(
            "workspace {} has {} uncommitted change(s): they are not in the worktree, which starts "
            "from HEAD ({})",
            spec.workspace, dirty.total_changes, repo.head.substr(0, 12)));
    spec.worktree_source = spec.workspace;
    spec.worktree_path = path.string();
    spec.worktree_branch = branch;
    spec.worktree_base = repo.head;
    spec.worktree_target = repo.branch;
    spec.workspace = repo.prefix.empty() ? path.string() : (path / repo.prefix).string();
}

// `command` (verify_command or on_done, named `field`) with its program made absolute: the
// program that runs when the loop needs it is the one found now. A relative path with a slash
// is the workspace's, where the command runs (`runs_in`); it is checked in `found_in`, the
// submitted workspace, which a --worktree loop's worktree is checked out from. A bare name is
// the first executable of that name on `search_path`. Refused when it is not executable now.
std::string with_resolved_program(std::string_view field, const std::string& command,
                                  const std::string& search_path, const fs::path& found_in,
                                  const fs::path& runs_in) {
    std::vector<std::string> words = text::split_command_words(command);
    const std::string& program = words.front();
    const bool bare = program.find('/') == std::string::npos;
    const fs::path found = paths::find_executable(program, search_path, found_in);
    if (found.empty() && bare)
        invalid(fmt::format("params.{}: program '{}' not found on the loop's PATH ({})", field,
                            program, search_path));
    if (found.empty())
        invalid(fmt::format("params.{}: {} is not an executable file", field,
                            (found_in / program).lexically_normal().string()));
    const fs::path resolved =
        !bare && fs::path(program).is_relative() ? (runs_in / program).lexically_normal() : found;
    // absolute(): a relative entry of PATH is the daemon's directory's, where it was found.
    words.front() = fs::absolute(resolved).string();
    for (std::string& word : words) word = text::shell_quote(word);
    return text::join_words(words);
}

}  // namespace

submission check_submission(proto::submit_params spec, const submission_context& ctx) {
    check_workspace(spec);
    if (spec.name.empty()) spec.name = fs::path(spec.workspace).filename().string();
    if (!spec.prompt_file.empty()) {
        if (!fs::path(spec.prompt_file).is_absolute())
            throw rpc_error(error_kind::invalid_prompt,
                            "prompt file " + spec.prompt_file + " is not an absolute path");
        if (::access(spec.prompt_file.c_str(), R_OK) != 0)
            throw rpc_error(error_kind::invalid_prompt,
                            "cannot read prompt file " + spec.prompt_file);
    }
    check_bounds(spec);
    // The PATH of the loop's processes: its --env PATH, else the daemon's.
    const std::string search_path = search_path_with(spec.env);
    find_program(find_agent(spec.agent), spec, ctx.binaries, search_path);
    // Each fallback is a known agent whose program is there; usage limits hold an agent with
    // all its models, so an agent comes once.
    std::set<std::string> agents{spec.agent};
    for (const auto& fallback : spec.fallback) {
        const proto::agent_choice choice = proto::parse_agent_choice(fallback);
        if (!agents.insert(choice.agent).second)
            invalid(
                fmt::format("params.fallback: agent {} comes twice (a usage limit holds an "
                            "agent with all its models)",
                            choice.agent));
        find_program(find_agent(choice.agent), proto::on_agent(spec, choice), ctx.binaries,
                     search_path);
    }
    if (!spec.judge.empty()) {
        find_program(find_agent(spec.judge), proto::as_judge(spec), ctx.binaries, search_path);
        // The judge must not change the workspace: read-only under bubblewrap, else in a
        // throw-away checkout of the workspace's files, which needs git.
        if (paths::find_executable("bwrap", search_path).empty() && !spec.worktree &&
            !workspace::has_git_entry(spec.workspace))
            invalid(
                "params.judge: the judge runs read-only under bubblewrap (bwrap is not on the "
                "loop's PATH: apt install bubblewrap) or in a throw-away checkout (the workspace "
                "is not in a git repository)");
    } else if (!spec.judge_model.empty() || !spec.judge_command.empty()) {
        invalid("params.judge_model, judge_command: need a judge (--judge AGENT)");
    }
    if ((spec.merge || spec.delete_branch || !spec.pr_remote.empty()) && !spec.worktree)
        invalid(
            "params.merge, delete_branch, pr: need worktree (--worktree): the loop's work "
            "lands from its branch");
    if (!spec.pr_remote.empty()) {
        if (spec.merge)
            invalid("params.pr: a loop's work lands by merge or by pull request, not both");
        if (spec.pr_remote.starts_with('-') ||
            spec.pr_remote.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789._/-") != std::string::npos)
            invalid("params.pr: '" + spec.pr_remote + "' is not a git remote's name");
        // The user's tools, found on ralphd's PATH (they run with its environment).
        const char* found = std::getenv("PATH");
        const std::string daemon_path = found != nullptr ? found : "";
        for (const std::string tool : {"git", "gh"})
            if (paths::find_executable(tool, daemon_path).empty())
                throw rpc_error(error_kind::agent_unavailable,
                                fmt::format("params.pr: {} is not on ralphd's PATH ({}): the pull "
                                            "request is pushed with git and opened with gh (apt "
                                            "install {})",
                                            tool, daemon_path, tool));
    }
    if (spec.sandbox_offline && !spec.sandbox)
        invalid("params.sandbox_offline: needs sandbox (--sandbox=offline)");
    if (spec.sandbox) sandbox::find_bwrap(search_path);
    const std::array<std::pair<std::string_view, std::string*>, 2> helpers{
        {{"verify_command", &spec.verify_command}, {"on_done", &spec.on_done}}};
    for (const auto& [field, command] : helpers)
        if (!command->empty())
            if (std::string error = text::command_words_error(*command); !error.empty())
                invalid(fmt::format("params.{}: {}", field, error));
    submission result;
    // Set by the daemon only.
    spec.worktree_source.clear();
    spec.worktree_path.clear();
    spec.worktree_branch.clear();
    spec.worktree_base.clear();
    spec.worktree_target.clear();
    if (spec.worktree) plan_worktree(spec, ctx, result.warnings);
    for (const auto& [field, command] : helpers)
        if (!command->empty())
            *command = with_resolved_program(field, *command, search_path,
                                             spec.worktree ? spec.worktree_source : spec.workspace,
                                             spec.workspace);
    if (!spec.worktree && !spec.allow_dirty) {
        workspace::dirty_state dirty = workspace::check_dirty(spec.workspace);
        if (dirty.dirty)
            throw rpc_error(error_kind::workspace_dirty,
                            fmt::format("workspace {} has {} uncommitted change(s)", spec.workspace,
                                        dirty.total_changes),
                            nlohmann::json(proto::dirty_workspace{dirty.changes}));
        // e.g. a repository that libgit2 cannot (or must not) open: said, not refused.
        if (!dirty.error.empty())
            result.warnings.push_back(
                fmt::format("workspace {} was not checked for uncommitted changes: {}",
                            spec.workspace, dirty.error));
    }
    result.spec = std::move(spec);
    return result;
}

bool check_reads_repository(const proto::submit_params& spec) {
    return spec.worktree || (!spec.allow_dirty && workspace::has_git_entry(spec.workspace));
}

}  // namespace ralph
