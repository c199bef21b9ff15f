// loop.submit, loop.list, loop.get, loop.cancel, loop.pause, loop.resume, loop.retry,
// loop.extend, loop.merge, loop.pr, loop.steer, loop.iterations, loop.diff, loop.events,
// loop.output, loop.tail, events.subscribe.
#include "daemon/agents/agent.hpp"
#include "daemon/clock.hpp"
#include "daemon/loop/landing.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/process.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/store/output_log.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "daemon/submission/capacity.hpp"
#include "daemon/submission/submission.hpp"
#include "daemon/workspace/workspace.hpp"
#include "proto/methods.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ralph::rpc {
namespace {

using proto::error_kind;
using proto::rpc_error;

std::int64_t start_offset(const proto::output_request& request, const output_log& output) {
    if (request.last_lines) return output.offset_of_last_lines(request.id, *request.last_lines);
    return request.offset.value_or(0);
}

// A queued loop of a ralphd that cannot write its state waits for that (no attempt starts), and
// says so; nothing of it is stored.
proto::loop_info with_storage_reason(proto::loop_info loop, const storage_health& health) {
    if (health.degraded() && loop.state == proto::loop_state::queued)
        loop.stop_reason = "waits until ralph can write its state again: " + health.status().cause +
                           " (ralphctl daemon status)";
    return loop;
}

// The loop an earlier submit with the idempotency key of `spec` made, as the answer to this one;
// nullopt when there is none (or no key).
std::optional<proto::submit_result> submitted_before(const proto::submit_params& spec, store& db) {
    if (spec.idempotency_key.empty()) return std::nullopt;
    const std::optional<std::int64_t> id =
        db.loops().loop_with_idempotency_key(spec.idempotency_key);
    if (!id) return std::nullopt;
    return proto::submit_result{
        db.loops().get_loop(*id),
        false,
        {fmt::format("loop {} was submitted with idempotency key '{}' already: nothing new was "
                     "created",
                     *id, spec.idempotency_key)},
        std::nullopt};
}

// What this daemon has room for a loop on `spec` (capacity_for), at the scheduler's load now.
proto::host_capacity capacity_now(const proto::submit_params& spec, method_services& services) {
    const runner_load load{
        .running = std::int64_t(services.loops.running_count()),
        .workspace_busy = services.loops.workspace_busy(spec.workspace),
    };
    return capacity_for(spec, services.clock.now_ms(), load, services.gate, services.health,
                        services.db);
}

// A dry run's answer: the loop as the submit would have inserted it (id 0: none was taken; the
// spec keeps dry_run, so that the answer says what it is), and the daemon's capacity.
proto::submit_result would_submit(submission checked, method_services& services) {
    proto::submit_result result;
    result.loop.spec = std::move(checked.spec);
    result.loop.created_at = result.loop.updated_at = services.clock.now_ms();
    result.created = false;
    result.warnings = std::move(checked.warnings);
    result.capacity = capacity_now(result.loop.spec, services);
    return result;
}

// loop.submit. A submit retried with its key gets the loop it made, unchecked (its workspace may
// have changed since), and nothing new. The checks (check_submission) that read a repository run
// on the pool, and other submits may come meanwhile: one with the same key, answered as a retry,
// or one that took the id a --worktree loop's worktree was to be named after, which has the
// checks run again with the next id. What follows the checks runs on the io thread without a
// pause up to the insert. A dry run stops before it: nothing is inserted, created or written.
awaitable<proto::submit_result> submit(const proto::submit_params& spec,
                                       method_services& services) {
    // The database would take the loop, and lose it at the next start (storage_health).
    if (services.health.lost() && !spec.dry_run)
        throw rpc_error(error_kind::storage_unavailable,
                        "ralph cannot write its state: " + services.health.status().cause +
                            " (see ralphctl daemon status)");
    for (;;) {
        if (auto earlier = submitted_before(spec, services.db)) {
            if (spec.dry_run) earlier->capacity = capacity_now(spec, services);
            co_return std::move(*earlier);
        }
        const std::int64_t loop_id = services.db.loops().next_loop_id();
        // Copies: SIGHUP may change the daemon's binaries meanwhile.
        const agent_binaries binaries = services.binaries;
        const state_dir state = services.state;
        const submission_context context{loop_id, binaries, state};
        // Off the io thread only when it takes long: a trip to the pool costs two thread wake-ups
        // (0.4 ms on a small VM), more than checking a plain directory.
        submission checked;
        if (!check_reads_repository(spec)) {
            checked = check_submission(spec, context);  // nothing came in between
        } else {
            checked = co_await off_thread(services.blocking,
                                          [&] { return check_submission(spec, context); });
            if (submitted_before(spec, services.db)) continue;
            if (spec.worktree && services.db.loops().next_loop_id() != loop_id) continue;
        }
        if (spec.dry_run) co_return would_submit(std::move(checked), services);
        co_return proto::submit_result{services.loops.submit(checked.spec), true,
                                       std::move(checked.warnings), std::nullopt};
    }
}

// The --worktree loop `id`, which has ended: what loop.merge and loop.pr land.
proto::loop_info ended_worktree_loop(std::int64_t id, method_services& services) {
    proto::loop_info loop = services.db.loops().get_loop(id);
    if (loop.spec.worktree_branch.empty())
        throw rpc_error(error_kind::invalid_state,
                        fmt::format("loop {} did not run in a worktree (submit --worktree): it has "
                                    "no branch to land",
                                    loop.id));
    if (!proto::is_terminal(loop.state) || services.loops.is_running(loop.id))
        throw rpc_error(error_kind::invalid_state,
                        fmt::format("loop {} is {}: its branch lands once it ended (cancel it "
                                    "first to land it now)",
                                    loop.id, proto::to_string(loop.state)));
    return loop;
}

// loop.merge (the loop's branch merged into the branch it started from) and loop.pr (pushed to
// its --pr remote, else origin, and a pull request opened). A conflict, a target with
// uncommitted changes or a failed push is an answer (landed false, the loop's landing says why),
// not an error.
awaitable<proto::landing_result> land_ended(const proto::loop_id_request& request,
                                            method_services& services, landing_way way) {
    const proto::loop_info loop = ended_worktree_loop(request.id, services);
    const landing_tools tools{services.io, services.blocking, services.reaper};
    const std::vector<proto::attempt_info> attempts = services.db.attempts().attempts_of(loop.id);
    const landing landed = co_await land(tools, loop, attempts, way);
    services.db.loops().set_landing(loop.id, landed.text, services.clock.now_ms());
    co_return proto::landing_result{services.db.loops().get_loop(loop.id), landed.landed};
}

// Why `attempt` has no diff: "" when it has the trees of its git snapshots before and after.
// Only a work attempt that succeeded (exited) has a snapshot after it (loop_runner::assess).
std::string missing_snapshots(const proto::attempt_info& attempt) {
    if (attempt.kind == proto::attempt_kind::judge)
        return "it is a judge's, which changes nothing in the workspace";
    if (attempt.how == proto::termination::running) return "it is still running";
    if (attempt.tree_before.empty())
        return "ralph kept no git snapshot of the workspace before it (the workspace is not in a "
               "git work tree that ralph uses, or the attempt was recorded by a ralphd older than "
               "loop.diff)";
    if (attempt.how != proto::termination::exited)
        return "it ended " + std::string(proto::to_string(attempt.how)) +
               ": ralph snapshots the workspace after an attempt that succeeded only";
    if (attempt.tree_after.empty()) return "ralph kept no git snapshot of the workspace after it";
    return {};
}

// The git snapshot an attempt row keeps: its HEAD and tree id.
workspace::snapshot git_snapshot(const std::string& head, const std::string& tree) {
    workspace::snapshot snap;
    snap.is_git = !tree.empty();
    snap.head = head;
    snap.tree = tree;
    return snap;
}

// loop.diff: the diff between the trees of the attempt's snapshots, in the loop's workspace (a
// --worktree loop's is its worktree), on the pool. An attempt without them, or whose trees the
// repository no longer has (`git gc` prunes them after a while), is an answer with `error`.
awaitable<proto::attempt_diff> diff_attempt(const proto::diff_request& request,
                                            method_services& services) {
    const proto::loop_info loop = services.db.loops().get_loop(request.id);
    const std::optional<proto::attempt_info> attempt =
        services.db.attempts().find_attempt(request.attempt);
    if (!attempt)
        throw rpc_error(error_kind::loop_not_found,
                        fmt::format("loop {} has no attempt {}", loop.id, request.attempt));
    if (attempt->loop_id != loop.id)
        throw rpc_error(error_kind::loop_not_found,
                        fmt::format("loop {} has no attempt {} (it is loop {}'s)", loop.id,
                                    request.attempt, attempt->loop_id));
    proto::attempt_diff result;
    result.id = loop.id;
    result.attempt = attempt->id;
    result.iteration = attempt->iteration;
    if (const std::string missing = missing_snapshots(*attempt); !missing.empty()) {
        result.error = fmt::format("attempt {} has no diff: {}", attempt->id, missing);
        co_return result;
    }
    const std::filesystem::path dir = loop.spec.workspace;
    const workspace::snapshot before = git_snapshot(attempt->head_before, attempt->tree_before);
    const workspace::snapshot after = git_snapshot(attempt->head_after, attempt->tree_after);
    const auto limit = static_cast<std::size_t>(request.max_bytes);
    workspace::patch_text patch = co_await off_thread(
        services.blocking, [&] { return workspace::diff_snapshots(dir, before, after, limit); });
    result.diff = std::move(patch.text);
    result.cut = patch.cut;
    result.error = std::move(patch.error);
    co_return result;
}

}  // namespace

void register_loop_methods(method_registry& registry, method_services& services) {
    using namespace proto::method;
    registry.add<loop_submit>([&services](const proto::submit_params& spec, call_context&) {
        return submit(spec, services);
    });

    registry.add<loop_list>([&services](const proto::list_request& request, call_context&) {
        std::vector<proto::loop_info> loops;
        for (auto& loop :
             services.db.loops().list_loops(request.states, request.limit, request.before))
            loops.push_back(with_storage_reason(std::move(loop), services.health));
        return proto::loop_list{std::move(loops), request.fields,
                                services.db.loops().count_loops(request.states)};
    });

    registry.add<loop_get>([&services](const proto::loop_id_request& request, call_context&) {
        proto::loop_info loop =
            with_storage_reason(services.db.loops().get_loop(request.id), services.health);
        proto::agent_info agent =
            describe_agent(find_agent(loop.spec.agent), loop.spec, services.binaries,
                           search_path_with(loop.spec.env), services.agent_env);
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

    registry.add<loop_retry>([&services](const proto::loop_id_request& request, call_context&) {
        return services.loops.retry(request.id);
    });

    registry.add<loop_extend>([&services](const proto::extend_request& request, call_context&) {
        return services.loops.extend(request.id, request.by);
    });

    registry.add<loop_merge>([&services](const proto::loop_id_request& request, call_context&) {
        return land_ended(request, services, landing_way::merge);
    });

    registry.add<loop_pr>([&services](const proto::loop_id_request& request, call_context&) {
        return land_ended(request, services, landing_way::pull_request);
    });

    registry.add<loop_iterations>(
        [&services](const proto::loop_id_request& request, call_context&) {
            services.db.loops().get_loop(request.id);  // loop_not_found for an unknown id
            return proto::attempt_list{services.db.attempts().attempts_of(request.id)};
        });

    registry.add<loop_diff>([&services](const proto::diff_request& request, call_context&) {
        return diff_attempt(request, services);
    });

    registry.add<loop_steer>([&services](const proto::steer_request& request, call_context&) {
        const attempt_table::steering_hint hint =
            services.db.attempts().add_steering(request.id, request.text, services.clock.now_ms());
        return proto::steer_result{request.id, hint.id, hint.iteration};
    });

    registry.add<loop_events>([&services](const proto::events_request& request, call_context&) {
        services.db.loops().get_loop(request.id);  // loop_not_found for an unknown id
        auto events = services.db.attempts().events_of(request.id, request.iteration, request.after,
                                                       request.limit);
        const std::int64_t next = events.empty() ? request.after : events.back().id;
        return proto::event_list{std::move(events), next};
    });

    registry.add<loop_output>([&services](const proto::output_request& request, call_context&) {
        if (request.encoding == proto::encoding::binary)
            throw rpc_error(error_kind::invalid_params,
                            "params.encoding: \"binary\" is for loop.tail (binary WebSocket "
                            "messages); loop.output takes \"utf8\" or \"base64\"");
        proto::loop_info loop = services.db.loops().get_loop(request.id);
        const std::int64_t offset = start_offset(request, services.output);
        // One attempt's bytes per page, with their format.
        const output_log::output_span span = services.output.span_at(request.id, offset);
        std::string bytes = services.output.read(request.id, offset,
                                                 std::min(request.max_bytes, span.end - offset));
        bytes.resize(proto::sendable_length(bytes, request.encoding));
        proto::output_page page;
        page.id = request.id;
        page.offset = offset;
        page.next_offset = offset + std::int64_t(bytes.size());
        page.end_offset = services.output.committed_end(request.id);
        page.data = proto::encode_output(bytes, request.encoding);
        page.encoding = request.encoding;
        page.format = agent_stream::to_string(span.format);
        page.origin = {span.iteration, span.attempt, span.kind};
        page.state = loop.state;
        page.final = proto::is_terminal(loop.state) && page.next_offset >= page.end_offset;
        return page;
    });

    // loop.tail and events.subscribe come on a WebSocket session only (their policy, which the
    // registry enforces): ctx.session is there.
    registry.add<loop_tail>([&services](const proto::output_request& request, call_context& ctx) {
        tail_request tail;
        tail.loop = services.db.loops().get_loop(request.id);
        tail.loop_id = request.id;
        tail.offset = start_offset(request, services.output);
        tail.output = request.output;
        tail.encoding = request.encoding;
        tail.render = request.render;
        ctx.session->add_tail(tail);
        const proto::loop_info shown = with_storage_reason(tail.loop, services.health);
        return proto::tail_started{request.id, tail.offset, shown.state, shown.stop_reason,
                                   shown.resume_at};
    });

    // From now on the session gets a loop.changed notification (the loop's summary) at every
    // state change of every loop, submits included.
    registry.add<events_subscribe>([](const proto::no_params&, call_context& ctx) {
        ctx.session->subscribe_events();
        return proto::subscription{true};
    });
}

}  // namespace ralph::rpc
