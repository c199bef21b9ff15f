#include "daemon/daemon.hpp"

#include "daemon/notify/notification.hpp"

#include "common/paths.hpp"
#include "common/process_info.hpp"
#include "common/text.hpp"
#include "daemon/peers/peer_holds.hpp"
#include "daemon/process/attempt_process.hpp"
#include "daemon/process/cgroups.hpp"
#include "daemon/process/process.hpp"
#include "proto/version.hpp"

#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <set>
#include <system_error>

namespace ralph {
namespace {

// How the last ralphd stopped (the settings table): "planned" once it stopped as asked,
// "unplanned" while one runs, which is what a crash leaves.
constexpr const char* last_stop_key = "last_stop";
constexpr const char* planned_stop = "planned";

// "http://ADDRESS:PORT" of ralphd --listen (the machine's name for a wildcard address); "" without.
std::string web_base_url(const std::string& address, unsigned port) {
    if (address.empty()) return {};
    std::string host = address;
    if (address == "0.0.0.0" || address == "::") {
        host = text::host_name();
    } else if (address.find(':') != std::string::npos) {
        host = "[" + address + "]";
    }
    return "http://" + host + ":" + std::to_string(port);
}

}  // namespace

ralphd::ralphd(net::io_context& io, daemon_options options)
    : io_(io),
      options_(std::move(options)),
      clock_(options_.test_clock, options_.test_clock_start_ms),
      db_(options_.db_path),
      checkpointer_(db_, options_.db_path),
      gate_(db_, options_.account),
      health_(io, db_, state_dir(options_.db_path),
              [this] {
                  output_.flush();
                  take_up_loops();
                  notices_.writable_again();
              }),
      output_(
          io, db_, health_, state_dir(options_.db_path).output_dir(),
          [this](std::int64_t loop_id, std::int64_t end) { hub_.output_committed(loop_id, end); }),
      reaper_(io),
      hooks_(io, blocking_, reaper_, options_.hooks, options_.agent_env,
             [this](std::int64_t loop_id) { return sandbox_hidden(loop_id); }),
      notices_(io, db_, clock_, options_.webhooks,
               web_base_url(options_.listen_address, options_.listen_port)),
      web_(state_dir(options_.db_path).web_token_file(), options_.listen_port),
      runner_ctx_{
          io,
          blocking_,
          db_,
          clock_,
          gate_,
          output_,
          health_,
          reaper_,
          state_dir(options_.db_path),
          options_.shim_program,
          {},
          options_.kill_grace,
          options_.max_output_bytes,
          options_.binaries,
          options_.agent_env,
          options_.rate_limit_margin,
          options_.rate_limit_wait,
          [this](std::int64_t loop_id, proto::loop_state state) { state_changed(loop_id, state); },
          [this](std::int64_t loop_id) {
              if (hub_.has_event_watchers()) hub_.counters_changed(db_.get_loop(loop_id));
          },
          [this](std::int64_t loop_id, const state_change& change) {
              return change_state(loop_id, change);
          },
          notices_,
          [this](std::int64_t loop_id) { return sandbox_hidden(loop_id); },
          [this](const proto::agent_hold& hold) { record_hold(hold); }},
      scheduler_(runner_ctx_),
      services_{db_,
                scheduler_,
                gate_,
                clock_,
                output_,
                health_,
                api_blocking_,
                runner_ctx_.binaries,
                runner_ctx_.agent_env,
                state_dir(options_.db_path),
                proto::daemon_info{proto::daemon_version,
                                   proto::protocol_version,
                                   ::getpid(),
                                   options_.socket_path.string(),
                                   options_.db_path.string(),
                                   clock_.now_ms(),
                                   1,
                                   {},
                                   {},
                                   options_.host_name,
                                   options_.account,
                                   {},
                                   {}},
                io,
                reaper_,
                notices_,
                [this](bool rotate) { return web_login(rotate); },
                [this] { return web_login_code(); },
                [this](bool leave_running) {
                    // Stopping closes every session: give the reply to daemon.shutdown a moment
                    // to reach its client first (a WebSocket reply is written asynchronously).
                    shutdown_delay_.expires_after(std::chrono::milliseconds(100));
                    shutdown_delay_.async_wait([this, leave_running](boost::system::error_code ec) {
                        if (!ec) shutdown(leave_running);
                    });
                },
                [this](std::int64_t loop_id) { return forget_loop(loop_id); },
                [this](const proto::agent_hold& hold, const std::string& from) {
                    return learn_hold(hold, from);
                },
                [this] { return holds_in_force(); },
                [this] {
                    std::vector<proto::peer_status> peers;
                    for (const auto& peer : peers_) peers.push_back(peer->status());
                    return peers;
                }},
      peer_ctx_{io,
                blocking_,
                reaper_,
                options_.host_name,
                [this] { return holds_in_force(); },
                [this](const proto::agent_hold& hold, const std::string& from) {
                    try {
                        return learn_hold(hold, from);
                    } catch (const std::exception& e) {
                        storage_failed(e);  // degraded when the storage refused the hold
                        throw;
                    }
                },
                [this] { return clock_.now_ms(); }},
      shutdown_delay_(io),
      watchdog_timer_(io) {
    paths::make_private_directory(runner_ctx_.state.prompt_dir());
    paths::make_private_directory(runner_ctx_.state.scratch_dir());
    paths::make_private_directory(runner_ctx_.state.worktree_dir());
    paths::make_private_directory(runner_ctx_.state.attempts_dir());
    if (options_.cgroups) {
        std::string why_not;
        runner_ctx_.cgroup_prefix = attempt_cgroup_prefix(runner_ctx_.state.root(), why_not);
        if (runner_ctx_.cgroup_prefix.empty())
            spdlog::info("no cgroup per attempt ({}): each agent's shim ends its descendants",
                         why_not);
    }
    registry_.set_storage_errors([this](const std::exception& e) { return storage_failed(e); });
    rpc::register_daemon_methods(registry_, services_);
    rpc::register_loop_methods(registry_, services_);
    rpc::register_agent_methods(registry_, services_);
    rpc::register_history_methods(registry_, services_);
    rpc::register_scheduler_methods(registry_, services_);
    rpc::register_peer_methods(registry_, services_);
    for (const auto& peer : options_.peers)
        peers_.push_back(std::make_unique<peer_link>(peer_ctx_, peer.name, peer.address));
    if (options_.max_concurrent) apply_configured_max_concurrent(*options_.max_concurrent);
    if (clock_.adjustable())
        spdlog::warn("test clock: debug.clock may shift this daemon's time (now {})",
                     text::format_iso8601(clock_.now_ms()));
}

proto::web_info ralphd::web_login(bool rotate) {
    if (rotate) {
        web_.rotate();
        spdlog::info("web: the token was replaced (web.rotate_token)");
    }
    const std::string base = web_base_url(options_.listen_address, options_.listen_port);
    return {web_.token(), base.empty() ? "" : base + "/login?token=" + web_.token()};
}

proto::web_login_code ralphd::web_login_code() {
    const std::string base = web_base_url(options_.listen_address, options_.listen_port);
    if (base.empty()) return {};  // no TCP listener, no URL (as web.info)
    const std::string code = web_.login_code(std::chrono::steady_clock::now());
    return {base + "/login?code=" + code,
            clock_.now_ms() + std::chrono::milliseconds(web_gate::login_code_lifetime).count()};
}

ralphd::~ralphd() {
    blocking_.stop();
    api_blocking_.stop();
    blocking_.join();
    api_blocking_.join();
}

loop_files ralphd::forget_loop(std::int64_t loop_id) {
    hub_.loop_removed(loop_id);
    output_.forget(loop_id);
    // With the runner's files (loop_runner::run_attempt).
    return loop_files{output_.file_of(loop_id), runner_ctx_.state.prompt_of(loop_id),
                      runner_ctx_.state.scratch_of(loop_id)};
}

proto::loop_state ralphd::change_state(std::int64_t loop_id, const state_change& change) {
    const std::int64_t now = clock_.now_ms();
    proto::loop_state state{};
    // The notification is in the outbox if and only if the change is committed.
    db_.in_transaction([&] {
        if (change.iterations) db_.set_iterations(loop_id, *change.iterations, now);
        state = db_.set_state(loop_id, change.event, change.reason, change.resume_at, now);
        if (!is_news(loop_id, state, change) || !is_notified(state, change.notable_wait)) return;
        const proto::loop_info loop = db_.get_loop(loop_id);
        notices_.add(state_notification(loop, change.notable_wait, now), loop.spec.notify);
    });
    state_changed(loop_id, state);
    return state;
}

bool ralphd::is_news(std::int64_t loop_id, proto::loop_state state, const state_change& change) {
    if (state == proto::loop_state::queued) return true;  // between two parks: nothing changes
    if (state != proto::loop_state::waiting || !change.notable_wait) {
        db_.set_ran_since_announced(loop_id);
        return true;
    }
    // The cause without its figures: "waiting for the global budget iterations per hour used up".
    const std::string cause = change.reason.substr(0, change.reason.find(" ("));
    const store::announced_wait last = db_.announced_wait_of(loop_id);
    const bool parked_again = last.cause == cause && !last.ran_since;
    const bool first_time = db_.announce_wait(loop_id, {cause, false}, change.resume_at);
    return first_time && !parked_again;
}

void ralphd::state_changed(std::int64_t loop_id, proto::loop_state state) {
    // Reading the loop (and parsing its spec) only for watchers and hooks.
    const bool ended = proto::is_terminal(state);
    if (!ended && !hub_.watched(loop_id)) return;
    proto::loop_info loop = db_.get_loop(loop_id);
    hub_.state_changed(loop);
    // Every end state passes here once, whoever set it (runner or scheduler).
    if (ended) hooks_.loop_ended(loop);
}

std::vector<std::filesystem::path> ralphd::sandbox_hidden(std::int64_t loop_id) {
    std::vector<std::filesystem::path> hidden{options_.socket_path.parent_path(),
                                              runner_ctx_.state.root()};
    using proto::loop_state;
    for (const auto& loop : db_.list_loops(
             {loop_state::queued, loop_state::running, loop_state::waiting, loop_state::paused}, 0))
        if (loop.id != loop_id) hidden.push_back(loop.spec.workspace);
    return hidden;
}

void ralphd::reload(const daemon_options& options) {
    options_.kill_grace = runner_ctx_.kill_grace = options.kill_grace;
    options_.max_output_bytes = runner_ctx_.max_output_bytes = options.max_output_bytes;
    options_.binaries = runner_ctx_.binaries = options.binaries;
    options_.agent_env = runner_ctx_.agent_env = options.agent_env;
    options_.rate_limit_margin = runner_ctx_.rate_limit_margin = options.rate_limit_margin;
    options_.rate_limit_wait = runner_ctx_.rate_limit_wait = options.rate_limit_wait;
    options_.hooks = options.hooks;
    hooks_.set_settings(options.hooks);
    options_.webhooks = options.webhooks;
    notices_.set_targets(options.webhooks);
    if (options.max_concurrent) {
        apply_configured_max_concurrent(*options.max_concurrent);
        scheduler_.schedule();  // more slots may start queued loops now
    }
}

bool ralphd::storage_failed(const std::exception& e) { return health_.failed(e); }

void ralphd::apply_configured_max_concurrent(std::int64_t configured) {
    // A `scheduler set --max-concurrent` at run time stands across restarts and reloads until
    // the configuration (flag or file) gives another value than it did.
    constexpr const char* configured_key = "configured_max_concurrent";
    try {
        if (db_.setting(configured_key) == configured) return;
        proto::scheduler_settings settings = gate_.scheduler_settings();
        settings.max_concurrent = configured;
        gate_.set_scheduler_settings(settings);
        db_.set_setting(configured_key, configured);
    } catch (const std::exception& e) {
        // It applies until ralphd stops all the same (admission keeps it in memory first).
        if (!storage_failed(e)) throw;
    }
}

std::vector<ralphd::adoption> ralphd::recover() {
    const std::int64_t now = clock_.now_ms();
    // A planned stop (ralphctl daemon stop, systemd's stop or restart) is no news: the user
    // knows. Only what a crash left is announced.
    const bool after_planned_stop = db_.setting(last_stop_key) == planned_stop;
    db_.set_setting(last_stop_key, "unplanned");
    std::vector<adoption> adopted;
    std::set<std::int64_t> running_loops;
    for (const auto& loop : db_.list_loops({proto::loop_state::running}, 0))
        running_loops.insert(loop.id);
    std::set<std::filesystem::path> attempt_dirs;
    for (const auto& attempt : db_.unfinished_attempts()) {
        const std::filesystem::path dir = runner_ctx_.state.attempt_dir(attempt.id);
        attempt_dirs.insert(dir);
        if (scheduler_.is_running(attempt.loop_id)) continue;
        const auto started = attempt_process::find(dir);
        if (started && running_loops.contains(attempt.loop_id)) {
            adopted.push_back({attempt.loop_id, attempt.id, *started});
            continue;
        }
        std::error_code ignored;
        if (!started && attempt.pgid == 0) {
            // Its agent never started: nothing ran, and the iteration is not spent.
            db_.discard_attempt(attempt.id);
            std::filesystem::remove_all(dir, ignored);
            continue;
        }
        // No shim to follow: the agent is ended if it still runs, the attempt interrupted.
        if (started && process_start_time(started->shim_pid) == started->shim_start_time)
            ::kill(started->shim_pid, SIGTERM);
        if (kill_leftover_group(pid_t(attempt.pgid), attempt.process_start_time))
            spdlog::warn("loop {}: killed the agent process group {} left by the previous ralphd",
                         attempt.loop_id, attempt.pgid);
        output_.recover(attempt.loop_id, attempt.id);
        db_.interrupt_attempt(attempt.id, output_.committed_end(attempt.loop_id), now);
        // The interrupted iteration counts as spent: the loop continues with the next one.
        db_.set_iterations(attempt.loop_id, attempt.iteration, now);
        std::filesystem::remove_all(dir, ignored);
    }
    // What is left of attempts that were recorded (the daemon died before it removed them).
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(runner_ctx_.state.attempts_dir(), ec))
        if (!attempt_dirs.contains(entry.path())) std::filesystem::remove_all(entry.path(), ec);
    std::set<std::int64_t> adopted_loops;
    for (const auto& a : adopted) adopted_loops.insert(a.loop_id);
    std::int64_t requeued = 0;
    for (const auto& loop :
         db_.list_loops({proto::loop_state::running, proto::loop_state::waiting}, 0)) {
        if (adopted_loops.contains(loop.id) || scheduler_.is_running(loop.id)) continue;
        db_.set_state(loop.id, proto::loop_event::requeue,
                      "ralphd stopped unexpectedly; continues with its next iteration", 0, now);
        spdlog::info("loop {}: re-queued after an unexpected stop of ralphd", loop.id);
        // A loop parked in `waiting` by the scheduler is left so by every stop: not news.
        if (loop.state == proto::loop_state::running) ++requeued;
    }
    if ((!adopted.empty() || requeued > 0) && !after_planned_stop)
        notices_.add(recovery_notification(std::int64_t(adopted.size()), requeued, now));
    return adopted;
}

void ralphd::take_up_loops() {
    try {
        for (const auto& a : recover()) scheduler_.adopt(a.loop_id, a.attempt_id, a.started);
    } catch (const std::exception& e) {
        // Nothing of it can be recorded now: the agents go on, and this runs again once ralphd
        // can write (storage_health).
        if (!storage_failed(e)) throw;
        return;
    }
    scheduler_.schedule();
}

void ralphd::start() {
    server_context context{registry_, hub_, output_, options_.limits, &web_};
    server_ = options_.listen_fd >= 0
                  ? std::make_unique<server>(io_, context, options_.listen_fd)
                  : std::make_unique<server>(io_, context, options_.socket_path);
    if (!options_.listen_address.empty())
        server_->listen_tcp(options_.listen_address, options_.listen_port);
    server_->start();
    health_.check();
    take_up_loops();
    for (auto& peer : peers_) peer->start();
    notices_.deliver();
    spdlog::info("ralphd {} ready on {} (database {})", proto::daemon_version,
                 options_.socket_path.string(), options_.db_path.string());
    ::sd_notify(0, "READY=1");
    // Pinged from the io thread at half systemd's limit: if it hangs, systemd restarts ralphd,
    // which re-queues the loops that were running.
    std::uint64_t watchdog_usec = 0;
    if (::sd_watchdog_enabled(0, &watchdog_usec) > 0)
        ping_watchdog(std::chrono::microseconds(watchdog_usec / 2));
}

bool ralphd::record_hold(const proto::agent_hold& hold) {
    if (!db_.hold_agent(hold)) return false;
    spdlog::info("{} is held for account {} until {}{}", hold.agent, hold.account,
                 text::format_iso8601(hold.until),
                 hold.origin.empty() ? "" : " (learnt from " + hold.origin + ")");
    const proto::agent_hold told = hold_as_told(hold, options_.host_name);
    hub_.hold_taken(told);
    for (auto& peer : peers_) peer->tell(told);
    return true;
}

bool ralphd::learn_hold(const proto::agent_hold& hold, const std::string& from) {
    const std::int64_t now = clock_.now_ms();
    const proto::agent_hold accepted = accepted_peer_hold(hold, from, now);
    return accepted.until > now && record_hold(accepted);  // a hold that has ended is no news
}

std::vector<proto::agent_hold> ralphd::holds_in_force() {
    std::vector<proto::agent_hold> holds = db_.agent_holds(clock_.now_ms());
    for (auto& hold : holds) hold = hold_as_told(std::move(hold), options_.host_name);
    return holds;
}

void ralphd::ping_watchdog(std::chrono::microseconds interval) {
    ::sd_notify(0, "WATCHDOG=1");
    watchdog_timer_.expires_after(interval);
    watchdog_timer_.async_wait([this, interval](boost::system::error_code ec) {
        if (!ec) ping_watchdog(interval);
    });
}

void ralphd::shutdown(bool leave_running) {
    if (shutting_down_) return;
    shutting_down_ = true;
    ::sd_notify(0, "STOPPING=1");
    if (server_) server_->stop();
    for (auto& peer : peers_) peer->stop();
    const auto finish = [this] {
        hooks_.shutdown([this] {
            notices_.shutdown();
            output_.flush();
            try {
                db_.set_setting(last_stop_key, planned_stop);
            } catch (const std::exception& e) {
                // The next start announces its recovery as after a crash: said, not lost.
                spdlog::warn("cannot record the planned stop: {}", e.what());
            }
            spdlog::info("ralphd stopped");
            io_.stop();
        });
    };
    if (leave_running) {
        // The shims go on without ralphd; the next one adopts their attempts. The runners are
        // left where they are: nothing of theirs is recorded as ended.
        spdlog::info("ralphd stopping; running agents go on and are adopted at the next start");
        scheduler_.detach();
        finish();
        return;
    }
    spdlog::info("ralphd stopping: ending running agents");
    // Loops may end (and start hooks) until the scheduler has stopped; then the hooks get
    // their grace.
    scheduler_.shutdown(finish);
}

}  // namespace ralph
