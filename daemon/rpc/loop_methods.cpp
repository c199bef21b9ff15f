// loop.submit, loop.list, loop.get, loop.cancel, loop.pause, loop.resume, loop.steer,
// loop.iterations, loop.events, loop.output, loop.tail, events.subscribe.
#include "common/paths.hpp"
#include "common/text.hpp"
#include "daemon/agents/agent.hpp"
#include "daemon/clock.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/runner/process.hpp"
#include "daemon/runner/sandbox.hpp"
#include "daemon/runner/workspace.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/store.hpp"
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

struct id_params {
    std::int64_t id = 0;
};
void from_json(const nlohmann::json& j, id_params& p) {
    proto::read_loop_id(proto::params_object(j), "id", p.id);
}

struct events_params {
    std::int64_t id = 0;
    std::int64_t iteration = 0;  // 0 = every iteration
    std::int64_t after = 0;      // event id to continue after
    std::int64_t limit = 1000;
};
void from_json(const nlohmann::json& j, events_params& p) {
    const auto& obj = proto::params_object(j);
    proto::read_loop_id(obj, "id", p.id);
    proto::read_field(obj, "iteration", p.iteration);
    proto::read_field(obj, "after", p.after);
    proto::read_field(obj, "limit", p.limit);
    proto::check_range("iteration", p.iteration, 0, std::numeric_limits<std::int64_t>::max());
    proto::check_range("after", p.after, 0, std::numeric_limits<std::int64_t>::max());
    proto::check_range("limit", p.limit, 1, 10000);
}

struct steer_params {
    std::int64_t id = 0;
    std::string text;
};
void from_json(const nlohmann::json& j, steer_params& p) {
    const auto& obj = proto::params_object(j);
    proto::read_loop_id(obj, "id", p.id);
    proto::read_required(obj, "text", p.text);
    if (p.text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw rpc_error(error_kind::invalid_params, "params.text: must not be empty");
    if (p.text.size() > (64 << 10))
        throw rpc_error(error_kind::invalid_params, "params.text: at most 64 KiB");
}

struct list_params {
    std::vector<proto::loop_state> states;
    std::int64_t limit = 0;
    std::vector<std::string> fields;  // empty = every summary field
};
void from_json(const nlohmann::json& j, list_params& p) {
    const auto& obj = proto::params_object(j);
    std::vector<std::string> names;
    proto::read_field(obj, "states", names);
    for (const auto& name : names) {
        try {
            p.states.push_back(proto::loop_state_from_string(name));
        } catch (const std::invalid_argument& e) {
            throw rpc_error(error_kind::invalid_params, std::string("params.states: ") + e.what());
        }
    }
    proto::read_field(obj, "limit", p.limit);
    proto::check_range("limit", p.limit, 0, std::numeric_limits<std::int64_t>::max());
    proto::read_field(obj, "fields", p.fields);
    for (const auto& field : p.fields)
        if (!proto::is_summary_field(field))
            throw rpc_error(error_kind::invalid_params,
                            "params.fields: unknown field '" + field + "'");
}

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
    const std::string id = std::to_string(services.db.next_loop_id());
    const fs::path path = services.worktree_dir / ("loop-" + id);
    const std::string branch = "ralph/loop-" + id;
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
                            nlohmann::json{{"changes", dirty.changes}});
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
    registry.add_typed<proto::submit_params>(
        proto::method::loop_submit, [&services](const proto::submit_params& spec, call_context&) {
            // A submit retried with its key gets the loop it made, unchecked (its workspace may
            // have changed since), and nothing new. Check and insert run without a pause on the
            // io thread, so no other submit comes between them.
            if (!spec.idempotency_key.empty()) {
                if (auto id = services.db.loop_with_idempotency_key(spec.idempotency_key)) {
                    nlohmann::json result = services.db.get_loop(*id);
                    result["created"] = false;
                    result["warnings"] = {fmt::format(
                        "loop {} was submitted with idempotency key '{}' already: nothing new "
                        "was created",
                        *id, spec.idempotency_key)};
                    return result;
                }
            }
            submission checked = validated(spec, services);
            nlohmann::json result = services.loops.submit(checked.spec);
            result["created"] = true;
            result["warnings"] = std::move(checked.warnings);
            return result;
        });

    registry.add_typed<list_params>(
        proto::method::loop_list, [&services](const list_params& params, call_context&) {
            nlohmann::json loops = nlohmann::json::array();
            for (const auto& loop : services.db.list_loops(params.states, params.limit))
                loops.push_back(proto::summary_json(loop, params.fields));
            return nlohmann::json{{"loops", std::move(loops)}};
        });

    registry.add_typed<id_params>(proto::method::loop_get, [&services](const id_params& params,
                                                                       call_context&) {
        proto::loop_info loop = services.db.get_loop(params.id);
        nlohmann::json result = loop;
        result["agent_info"] = describe_agent(find_agent(loop.spec.agent), loop.spec,
                                              services.binaries, search_path_with(loop.spec.env));
        return result;
    });

    registry.add_typed<id_params>(proto::method::loop_cancel,
                                  [&services](const id_params& params, call_context&) {
                                      return nlohmann::json(services.loops.cancel(params.id));
                                  });

    registry.add_typed<id_params>(proto::method::loop_pause,
                                  [&services](const id_params& params, call_context&) {
                                      return nlohmann::json(services.loops.pause(params.id));
                                  });

    registry.add_typed<id_params>(proto::method::loop_resume,
                                  [&services](const id_params& params, call_context&) {
                                      return nlohmann::json(services.loops.resume(params.id));
                                  });

    registry.add_typed<id_params>(
        proto::method::loop_iterations, [&services](const id_params& params, call_context&) {
            services.db.get_loop(params.id);  // loop_not_found for an unknown id
            return nlohmann::json{{"attempts", services.db.attempts_of(params.id)}};
        });

    registry.add_typed<steer_params>(proto::method::loop_steer, [&services](
                                                                    const steer_params& params,
                                                                    call_context&) {
        proto::loop_info loop = services.db.get_loop(params.id);
        if (proto::is_terminal(loop.state))
            throw rpc_error(error_kind::invalid_state,
                            "loop " + std::to_string(params.id) + " has already ended (" +
                                std::string(proto::to_string(loop.state)) + ")");
        std::int64_t hint =
            services.db.add_steering(params.id, params.text, services.clock.now_ms());
        // `iterations` counts finished ones: an attempt of the next one that is already
        // running has its prompt, so the hint goes to the iteration after it.
        std::int64_t next = loop.iterations + 1;
        for (const auto& attempt : services.db.attempts_of(params.id))
            if (attempt.iteration == next && attempt.how == proto::termination::running) {
                ++next;
                break;
            }
        return nlohmann::json{{"id", params.id}, {"steering_id", hint}, {"next_iteration", next}};
    });

    registry.add_typed<events_params>(
        proto::method::loop_events, [&services](const events_params& params, call_context&) {
            services.db.get_loop(params.id);  // loop_not_found for an unknown id
            auto events =
                services.db.events_of(params.id, params.iteration, params.after, params.limit);
            std::int64_t next = events.empty() ? params.after : events.back().id;
            return nlohmann::json{{"events", events}, {"next_after", next}};
        });

    registry.add_typed<proto::output_request>(
        proto::method::loop_output,
        [&services](const proto::output_request& request, call_context&) {
            proto::loop_info loop = services.db.get_loop(request.id);
            std::int64_t offset = start_offset(request, services.output);
            std::string bytes = services.output.read(request.id, offset, request.max_bytes);
            bytes.resize(proto::sendable_length(bytes, request.encoding));
            std::int64_t next = offset + std::int64_t(bytes.size());
            std::int64_t end = services.output.committed_end(request.id);
            return nlohmann::json{{"id", request.id},
                                  {"offset", offset},
                                  {"next_offset", next},
                                  {"end_offset", end},
                                  {"data", proto::encode_output(bytes, request.encoding)},
                                  {"encoding", request.encoding},
                                  {"state", proto::to_string(loop.state)},
                                  {"final", proto::is_terminal(loop.state) && next >= end}};
        });

    registry.add_typed<proto::output_request>(
        proto::method::loop_tail,
        [&services](const proto::output_request& request, call_context& ctx) {
            if (ctx.session == nullptr)
                throw rpc_error(error_kind::invalid_params,
                                "loop.tail sends notifications and needs a WebSocket session "
                                "(GET /rpc with Upgrade: websocket)");
            tail_request tail;
            tail.loop = services.db.get_loop(request.id);
            tail.loop_id = request.id;
            tail.offset = start_offset(request, services.output);
            tail.output = request.output;
            tail.encoding = request.encoding;
            ctx.session->add_tail(tail);
            return nlohmann::json{{"id", request.id},
                                  {"offset", tail.offset},
                                  {"state", proto::to_string(tail.loop.state)}};
        });

    // No params. From now on the session gets a loop.changed notification (the loop's summary)
    // at every state change of every loop, submits included.
    registry.add(proto::method::events_subscribe, [](const nlohmann::json&, call_context& ctx) {
        if (ctx.session == nullptr)
            throw rpc_error(error_kind::invalid_params,
                            "events.subscribe sends notifications and needs a WebSocket session "
                            "(GET /rpc with Upgrade: websocket)");
        ctx.session->subscribe_events();
        return nlohmann::json{{"subscribed", true}};
    });
}

}  // namespace ralph::rpc
