#include "daemon/loop/attempt_preparation.hpp"

#include "common/paths.hpp"
#include "common/safe_open.hpp"
#include "common/text.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/loop_memory.hpp"
#include "daemon/loop/prompt.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/process.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <system_error>

namespace ralph {
namespace {

// The judge's prompt shows the first 256 KiB of the diff since the loop started.
constexpr std::size_t max_judge_diff_bytes = 256 << 10;

// The workspace is still the directory the loop was submitted with: no part of its path has
// become a symbolic link since (submit stored it canonical; a --worktree loop's lies in ralph's
// own worktrees directory), which ralph's writes, the sandbox's mounts and the agent would follow
// elsewhere. Thrown (the loop fails at once, saying so) rather than followed. A path that is gone
// is left to the agent's start, which says so.
void check_workspace_path(const proto::submit_params& spec) {
    const std::filesystem::path workspace = spec.workspace;
    std::filesystem::path path = spec.worktree_path.empty()
                                     ? workspace.root_path()
                                     : std::filesystem::path(spec.worktree_path).parent_path();
    for (const auto& part : workspace.lexically_relative(path)) {
        path /= part;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) return;
        if (!S_ISLNK(st.st_mode)) continue;
        std::error_code ec;
        throw proto::rpc_error(
            proto::error_kind::invalid_workspace,
            fmt::format("workspace {} is not the directory the loop was submitted with any more: "
                        "{} is now a symbolic link (to {}), which ralph does not follow; put the "
                        "directory back and resubmit the loop",
                        spec.workspace, path.string(),
                        std::filesystem::read_symlink(path, ec).string()));
    }
}

// Writes .ralph/loop.md for the iteration and returns the previous feedback for its prompt.
std::string write_state_file(const proto::loop_info& loop, std::int64_t iteration,
                             const attempt_inputs& inputs, std::vector<std::string>& refusals) {
    const std::optional<proto::agent_feedback>& previous = inputs.previous_feedback;
    loop_state_file state;
    state.loop_id = loop.id;
    state.name = loop.spec.name;
    state.iteration = iteration;
    state.max_iterations = loop.spec.max_iterations;
    state.min_iterations = loop.spec.min_iterations;
    state.completion_signal = "<promise>" + loop.spec.completion_phrase + "</promise>";
    state.started_at = text::format_iso8601(inputs.loop_started_at);
    state.previous_feedback = previous;
    try {
        // In place: the agent is not running yet.
        overwrite_file(loop.spec.workspace, state_file_name, render_loop_state(state));
    } catch (const safe_open::link_refused& e) {
        spdlog::warn("loop {}: {}; skipped", loop.id, e.what());
        refusals.push_back(std::string(e.what()) + "; skipped");
    } catch (const std::exception& e) {
        // The state file is a courtesy to the agent; the loop runs without it.
        spdlog::warn("loop {}: cannot write {}: {}", loop.id, state_file_name, e.what());
    }
    return previous ? describe_for_prompt(*previous) : std::string();
}

// The judge's prompt, with the diff of the workspace since the loop started.
std::string prepare_judge(const proto::loop_info& loop, std::int64_t iteration,
                          const attempt_inputs& inputs) {
    const std::filesystem::path workspace_dir = loop.spec.workspace;
    judge_inputs judged;
    judged.iteration = iteration;
    judged.completion_rule = inputs.claim->rule;
    judged.final_answer = inputs.claim->final_answer;
    judged.base_head = inputs.base_head;
    judged.verify_exit = inputs.verify_exit;
    judged.verify_output = inputs.verify_output;
    const workspace::snapshot now = workspace::take_snapshot(workspace_dir);
    if (inputs.base_tree.empty()) {
        judged.diff_unavailable =
            now.is_git ? "(No diff: the workspace at the loop's first iteration is not known.)"
                       : "(No diff: the workspace is not in a git repository.)";
    } else {
        workspace::snapshot base;
        base.is_git = true;
        base.head = inputs.base_head;
        base.tree = inputs.base_tree;
        const workspace::patch_text patch =
            workspace::diff_snapshots(workspace_dir, base, now, max_judge_diff_bytes);
        judged.diff = text::to_valid_utf8(patch.text);
        judged.diff_cut = patch.cut;
        if (!patch.error.empty())
            judged.diff_unavailable = "(No diff: " + patch.error + ")";
        else if (patch.text.empty())
            judged.diff_unavailable = "(Nothing changed since the loop started.)";
    }
    return build_judge_prompt(loop, judged);
}

}  // namespace

awaitable<attempt_setting> set_up_attempt(runner_context& ctx, const proto::loop_info& loop,
                                          proto::attempt_kind kind, std::int64_t iteration,
                                          std::int64_t attempt_number) {
    const agent& adapter = find_agent(loop.spec.agent);
    attempt_setting setting;
    std::vector<std::pair<std::string, std::string>> overrides(loop.spec.env.begin(),
                                                               loop.spec.env.end());
    overrides.emplace_back("RALPH_LOOP_ID", std::to_string(loop.id));
    overrides.emplace_back("RALPH_ITERATION", std::to_string(iteration));
    overrides.emplace_back("RALPH_ATTEMPT", std::to_string(attempt_number));
    overrides.emplace_back("RALPH_ATTEMPT_KIND", std::string(proto::to_string(kind)));
    if (adapter.needs_private_tmpdir()) {
        setting.tmpdir = ctx.state.scratch_of(loop.id);
        overrides.emplace_back("TMPDIR", setting.tmpdir.string());
    }
    setting.env = agent_environment(ctx.agent_env, agent_variables(adapter, loop.spec), overrides);
    sandbox::layout& view = setting.view;
    if (kind == proto::attempt_kind::judge) {
        // Nothing of the workspace (nor of its worktree, under the hidden state directory) is
        // writable: only the judge's TMPDIR and its own config and cache paths. Never without
        // bubblewrap (checked at submit): ralph's socket and state would be in its reach.
        setting.bwrap = sandbox::find_bwrap(search_path_of(setting.env), "--judge");
        view.writable = sandbox::writable_paths({}, {}, setting.tmpdir, setting.env,
                                                adapter.home_state_paths());
        view.read_only = {loop.spec.workspace, ctx.state.prompt_of(loop.id)};
        if (!loop.spec.worktree_path.empty()) view.read_only.push_back(loop.spec.worktree_path);
        view.hidden = ctx.sandbox_hidden(loop.id);
        view.offline = loop.spec.sandbox_offline;
        co_return setting;
    }
    if (!loop.spec.sandbox) co_return setting;

    // The git directories are writable (commits go there), their config, hooks and info not.
    const std::filesystem::path workspace_dir = loop.spec.workspace;
    std::vector<std::filesystem::path> protected_git = co_await off_thread(ctx.blocking, [&] {
        setting.git = workspace::find_git_directories(workspace_dir);
        return sandbox::protected_git_paths(workspace_dir, setting.git);
    });
    setting.bwrap = sandbox::find_bwrap(search_path_of(setting.env));
    view.writable = sandbox::writable_paths(workspace_dir, setting.git, setting.tmpdir, setting.env,
                                            adapter.home_state_paths());
    view.read_only = std::move(protected_git);
    view.read_only.push_back(ctx.state.prompt_of(loop.id));
    // A workspace below the top of its worktree: the rest of the worktree (its .git pointer
    // among it) is readable, under the hidden state directory. (At the top, it is writable.)
    if (!loop.spec.worktree_path.empty() && loop.spec.worktree_path != loop.spec.workspace)
        view.read_only.push_back(loop.spec.worktree_path);
    view.hidden = ctx.sandbox_hidden(loop.id);
    view.offline = loop.spec.sandbox_offline;
    co_return setting;
}

attempt_inputs read_attempt_inputs(runner_context& ctx, const proto::loop_info& loop,
                                   std::int64_t iteration, const std::vector<std::string>& env,
                                   const std::optional<completion_claim>& claim) {
    attempt_inputs inputs;
    if (claim) {
        inputs.claim = claim;
        inputs.claim->final_answer = ctx.db.attempts().final_answer_of(claim->attempt_id);
        const loop_table::loop_base base = ctx.db.loops().base_of(loop.id);
        inputs.base_head = base.head;
        inputs.base_tree = base.tree;
        const proto::attempt_info worked = ctx.db.attempts().get_attempt(claim->attempt_id);
        inputs.verify_exit = worked.verify_exit;
        inputs.verify_output = worked.verify_output;
    } else {
        inputs.judge_reasons = ctx.db.attempts().rejection_in(loop.id, iteration - 1);
    }
    // Only the previous iteration's: an older iteration's feedback (next steps long done) must
    // not come back when the last iteration gave none.
    inputs.previous_feedback = ctx.db.attempts().feedback_of(loop.id, iteration - 1);
    inputs.steering = ctx.db.attempts().steering_for(loop.id, iteration);
    inputs.loop_started_at = loop.started_at != 0 ? loop.started_at : ctx.clock.now_ms();
    inputs.program =
        find_program(find_agent(loop.spec.agent), loop.spec, ctx.binaries, search_path_of(env));
    inputs.kill_grace = ctx.kill_grace;
    inputs.max_output_bytes = ctx.max_output_bytes;
    return inputs;
}

attempt_plan prepare_attempt(runner_context& ctx, const proto::loop_info& loop,
                             const proto::attempt_info& attempt, const attempt_setting& setting,
                             const attempt_inputs& inputs, std::vector<std::string>& refusals) {
    const agent& adapter = find_agent(loop.spec.agent);
    check_workspace_path(loop.spec);
    attempt_plan plan;
    if (!setting.tmpdir.empty()) {
        std::filesystem::remove_all(setting.tmpdir);
        std::filesystem::create_directories(setting.tmpdir);
    }
    if (attempt.kind == proto::attempt_kind::judge) {
        plan.prompt = prepare_judge(loop, attempt.iteration, inputs);
    } else {
        prompt_extras extras;
        extras.previous_feedback = write_state_file(loop, attempt.iteration, inputs, refusals);
        extras.steering = inputs.steering;
        extras.judge_reasons = inputs.judge_reasons;
        plan.prompt = build_prompt(loop, attempt.iteration, extras);
    }
    const std::string prompt_file = ctx.state.prompt_of(loop.id).string();
    // In place: the agent is not running. A failure is ralph's storage's, not the loop's.
    storage_health::write_state([&] {
        overwrite_file(ctx.state.prompt_dir(), state_dir::prompt_file_name(loop.id), plan.prompt);
    });
    invocation inv = adapter.invoke({loop.spec, inputs.program, plan.prompt, prompt_file});
    const std::string& cwd = loop.spec.workspace;
    if (inv.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty command");
    if (!setting.bwrap.empty()) {
        // The program as the sandbox will find it on the same PATH: shown when its private /tmp
        // would hide it, refused when it lies in what the sandbox hides.
        sandbox::layout view = setting.view;
        for (auto& path : sandbox::program_paths(
                 resolve_program(inv.argv[0], setting.env, loop.spec.workspace), view.hidden))
            view.read_only.push_back(std::move(path));
        inv.argv = sandbox::wrap(setting.bwrap, view, cwd, inv.argv);
    }
    shim::spec& agent = plan.agent;
    agent.program = resolve_program(inv.argv[0], setting.env, loop.spec.workspace);
    agent.argv = std::move(inv.argv);
    agent.env = environment_in(setting.env, cwd);
    agent.cwd = cwd;
    agent.stdin_path = inv.prompt_on_stdin ? prompt_file : std::string();
    agent.output_file = ctx.output.file_of(loop.id).string();
    agent.output_start = attempt.output_start;
    agent.kill_grace_ms = inputs.kill_grace.count();
    agent.max_output_bytes = inputs.max_output_bytes;
    return plan;
}

}  // namespace ralph
