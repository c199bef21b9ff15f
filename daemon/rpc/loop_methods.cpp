// loop.submit, loop.list, loop.get, loop.cancel, loop.pause, loop.resume, loop.steer,
// loop.iterations, loop.events, loop.output, loop.tail, events.subscribe.
#include "common/paths.hpp"
#include "common/text.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/clock.hpp"
#include "daemon/process/process.hpp"
#include "daemon/process/sandbox.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/store.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/fields.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <limits>

namespace ralph::rpc {
namespace {

using proto::error_kind;
using proto::rpc_error;

constexpr std::size_t max_idempotency_key_bytes = 256;

// A submit that passed the checks: the spec to insert and what the user should know.
struct submission {
    proto::submit_params spec;
    std::vector<std::string> warnings;
};

// --worktree: the loop is to run in a new worktree of the workspace's repository, named after the
// id the loop is about to get, on a new branch from the workspace's HEAD; `workspace` becomes
// the matching directory in it. The runner creates the worktree (every file checked out: it
// can take long). Uncommitted changes stay behind: a warning, not a refusal.
void plan_worktree(proto::submit_params& spec, method_services& services,
                   std::vector<std::string>& warnings) {
    namespace fs = std::filesystem;
    auto refuse = [&spec](const std::string& why) {
        throw rpc_error(error_kind::invalid_workspace,
                        "cannot run in a worktree of " + spec.workspace + ": " + why);
    };
    // libgit2 on the io thread, like the dirty check: a few quick reads per submit.
    workspace::repository_info repo = workspace::inspect_repository(spec.workspace);
    if (!repo.error.empty()) refuse(repo.error);
    if (!repo.is_git) refuse("it is not in a git repository (--worktree needs one)");
    if (repo.head.empty()) refuse("its repository has no commit yet to start a worktree from");
    const std::int64_t id = services.db.next_loop_id();
    const fs::path path = services.state.worktree_of(id);
    const std::string branch = "ralph/loop-" + std::to_string(id);
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
    spec.workspace = repo.prefix.empty() ? path.string() : (path / repo.prefix).string();
}

// Checks everything that can be known at submit and normalizes the spec.
submission validated(proto::submit_params spec, method_services& services) {
    namespace fs = std::filesystem;
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
    if (spec.name.empty()) spec.name = fs::path(spec.workspace).filename().string();
    if (!spec.prompt_file.empty()) {
        if (!fs::path(spec.prompt_file).is_absolute())
            throw rpc_error(error_kind::invalid_prompt,
                            "prompt file " + spec.prompt_file + " is not an absolute path");
        if (::access(spec.prompt_file.c_str(), R_OK) != 0)
            throw rpc_error(error_kind::invalid_prompt,
                            "cannot read prompt file " + spec.prompt_file);
    }
    auto invalid = [](const std::string& message) {
        throw rpc_error(error_kind::invalid_params, message);
    };
    using proto::check_range;
    check_range("max_iterations", spec.max_iterations, 0, proto::max_iterations);
    check_range("min_iterations", spec.min_iterations, 1, proto::max_iterations);
    if (spec.max_iterations > 0 && spec.min_iterations > spec.max_iterations)
        invalid("params.min_iterations: must not exceed max_iterations");
    if (!(spec.timeout_s > 0)) invalid("params.timeout_s: must be positive");
    check_range("timeout_s", spec.timeout_s, 0, proto::max_duration_s);
    check_range("delay_s", spec.delay_s, 0, proto::max_duration_s);
    check_range("max_retries", spec.max_retries, 0, proto::max_count);
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
    find_program(find_agent(spec.agent), spec, services.binaries, search_path_with(spec.env));
    if (spec.sandbox_offline && !spec.sandbox)
        invalid("params.sandbox_offline: needs sandbox (--sandbox=offline)");
    if (spec.sandbox) sandbox::find_bwrap(search_path_with(spec.env));
    for (const auto& [field, command] :
         {std::pair{"verify_command", &spec.verify_command}, std::pair{"on_done", &spec.on_done}})
        if (!command->empty())
            if (std::string error = text::command_words_error(*command); !error.empty())
                invalid(fmt::format("params.{}: {}", field, error));
    submission result;
    // Set by the daemon only.
    spec.worktree_source.clear();
    spec.worktree_path.clear();
    spec.worktree_branch.clear();
    spec.worktree_base.clear();
    if (spec.worktree) {
        plan_worktree(spec, services, result.warnings);
    } else if (!spec.allow_dirty) {
        // The repository's status on the io thread (libgit2, no process): quick for a submit.
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

std::int64_t start_offset(const proto::output_request& request, const output_log& output) {
    if (request.last_lines) return output.offset_of_last_lines(request.id, *request.last_lines);
    return request.offset.value_or(0);
}

}  // namespace

void register_loop_methods(method_registry& registry, method_services& services) {
    using namespace proto::method;
    registry.add<loop_submit>([&services](const proto::submit_params& spec, call_context&) {
        // A submit retried with its key gets the loop it made, unchecked (its workspace may have
        // changed since), and nothing new. Check and insert run without a pause on the io
        // thread, so no other submit comes between them.
        if (!spec.idempotency_key.empty()) {
            if (auto id = services.db.loop_with_idempotency_key(spec.idempotency_key)) {
                return proto::submit_result{
                    services.db.get_loop(*id),
                    false,
                    {fmt::format("loop {} was submitted with idempotency key '{}' already: "
                                 "nothing new was created",
                                 *id, spec.idempotency_key)}};
            }
        }
        submission checked = validated(spec, services);
        return proto::submit_result{services.loops.submit(checked.spec), true,
                                    std::move(checked.warnings)};
    });

    registry.add<loop_list>([&services](const proto::list_request& request, call_context&) {
        return proto::loop_list{services.db.list_loops(request.states, request.limit),
                                request.fields};
    });

    registry.add<loop_get>([&services](const proto::loop_id_request& request, call_context&) {
        proto::loop_info loop = services.db.get_loop(request.id);
        proto::agent_info agent =
            describe_agent(find_agent(loop.spec.agent), loop.spec, services.binaries,
                           search_path_with(loop.spec.env));
        return proto::loop_detail{std::move(loop), std::move(agent)};
    });

    registry.add<loop_cancel>([&services](const proto::loop_id_request& request, call_context&) {
        return services.loops.cancel(request.id);
    });

    registry.add<loop_pause>([&services](const proto::loop_id_request& request, call_context&) {
        return services.loops.pause(request.id);
    });

    registry.add<loop_resume>([&services](const proto::loop_id_request& request, call_context&) {
        return services.loops.resume(request.id);
    });

    registry.add<loop_iterations>(
        [&services](const proto::loop_id_request& request, call_context&) {
            services.db.get_loop(request.id);  // loop_not_found for an unknown id
            return proto::attempt_list{services.db.attempts_of(request.id)};
        });

    registry.add<loop_steer>([&services](const proto::steer_request& request, call_context&) {
        proto::loop_info loop = services.db.get_loop(request.id);
        if (proto::is_terminal(loop.state))
            throw rpc_error(error_kind::invalid_state,
                            "loop " + std::to_string(request.id) + " has already ended (" +
                                std::string(proto::to_string(loop.state)) + ")");
        std::int64_t hint =
            services.db.add_steering(request.id, request.text, services.clock.now_ms());
        // `iterations` counts finished ones: an attempt of the next one that is already running
        // has its prompt, so the hint goes to the iteration after it.
        std::int64_t next = loop.iterations + 1;
        for (const auto& attempt : services.db.attempts_of(request.id))
            if (attempt.iteration == next && attempt.how == proto::termination::running) {
                ++next;
                break;
            }
        return proto::steer_result{request.id, hint, next};
    });

    registry.add<loop_events>([&services](const proto::events_request& request, call_context&) {
        services.db.get_loop(request.id);  // loop_not_found for an unknown id
        auto events =
            services.db.events_of(request.id, request.iteration, request.after, request.limit);
        const std::int64_t next = events.empty() ? request.after : events.back().id;
        return proto::event_list{std::move(events), next};
    });

    registry.add<loop_output>([&services](const proto::output_request& request, call_context&) {
        proto::loop_info loop = services.db.get_loop(request.id);
        const std::int64_t offset = start_offset(request, services.output);
        std::string bytes = services.output.read(request.id, offset, request.max_bytes);
        bytes.resize(proto::sendable_length(bytes, request.encoding));
        proto::output_page page;
        page.id = request.id;
        page.offset = offset;
        page.next_offset = offset + std::int64_t(bytes.size());
        page.end_offset = services.output.committed_end(request.id);
        page.data = proto::encode_output(bytes, request.encoding);
        page.encoding = request.encoding;
        page.state = loop.state;
        page.final = proto::is_terminal(loop.state) && page.next_offset >= page.end_offset;
        return page;
    });

    registry.add<loop_tail>([&services](const proto::output_request& request, call_context& ctx) {
        if (ctx.session == nullptr)
            throw rpc_error(error_kind::invalid_params,
                            "loop.tail sends notifications and needs a WebSocket session (GET "
                            "/rpc with Upgrade: websocket)");
        tail_request tail;
        tail.loop = services.db.get_loop(request.id);
        tail.loop_id = request.id;
        tail.offset = start_offset(request, services.output);
        tail.output = request.output;
        tail.encoding = request.encoding;
        ctx.session->add_tail(tail);
        return proto::tail_started{request.id, tail.offset, tail.loop.state};
    });

    // From now on the session gets a loop.changed notification (the loop's summary) at every
    // state change of every loop, submits included.
    registry.add<events_subscribe>([](const proto::no_params&, call_context& ctx) {
        if (ctx.session == nullptr)
            throw rpc_error(error_kind::invalid_params,
                            "events.subscribe sends notifications and needs a WebSocket session "
                            "(GET /rpc with Upgrade: websocket)");
        ctx.session->subscribe_events();
        return proto::subscription{true};
    });
}

}  // namespace ralph::rpc
