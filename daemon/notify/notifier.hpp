// Push notifications (ralphd --notify URL, submit --notify URL; the on-done hooks and desktop
// notifications, what else a loop's end sets off, are in hooks.hpp), delivered at least once, in
// order, from the outbox: the `notifications` table of the store. An event is added to it in the
// transaction of what causes it (a loop's state change, a rejected completion, a recovery), one
// row per target, so that neither a crash nor a receiver that is down loses one. One delivery
// coroutine per target with notifications waiting posts them one at a time, oldest first, each
// with its row id (the generic body's "id", and X-Ralph-Notification-Id): a 2xx answer removes
// it; anything else (no answer in 10 s, a refused TLS certificate, another status) is retried
// after 1 s, doubled each time up to 5 minutes (or what a Retry-After asked, up to an hour),
// and after 24 hours of failures the notification is given up, with an error in the log. An
// outbox a full disk keeps from being written waits the same backoff, or less: it is tried again
// as soon as ralph's state can be written again; a notification its target took but the outbox
// could not let go of is then removed, not posted again. A
// retried notification holds back the later ones of its target only. Nothing waits for a
// delivery: not a loop, not the io thread. At stop, what is not delivered stays in the outbox
// for the next start (a notification posted as ralphd stopped may come twice, with its id).
#pragma once

#include "common/asio.hpp"
#include "daemon/clock.hpp"
#include "daemon/notify/http_post.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ralph {

class store;

class notifier {
  public:
    // `targets`: the daemon's (ralphd --notify URL), already parsed once (main.cpp).
    // `dashboard`: the dashboard's address on TCP ("http://HOST:PORT", ralphd --listen), the
    // events' links lead there; "" = none.
    notifier(net::io_context& io, store& db, const wall_clock& clock,
             std::vector<std::string> targets, std::string dashboard);

    // Adds `event` for the daemon's targets and `loop_targets` (a loop's own), in the caller's
    // transaction if it has one, and has them delivered once it is committed. Its "link" is
    // set to the dashboard's page of its loop (or the dashboard) when there is a dashboard.
    void add(const nlohmann::json& event, const std::vector<std::string>& loop_targets = {});
    // Starts delivering what the outbox holds (at start, and after each add).
    void deliver();
    // Ralph's state can be written again: the deliveries the full disk held try again now, not
    // after their backoff.
    void writable_again();
    // New daemon targets (SIGHUP), for the events from now on.
    void set_targets(std::vector<std::string> targets) { targets_ = std::move(targets); }
    // The daemon's targets (ralphd --notify), as given.
    const std::vector<std::string>& targets() const { return targets_; }
    // Stops the deliveries; what they did not deliver stays in the outbox.
    void shutdown();

    // Sends `event` to `target` at once, outside the outbox (ralphctl notify test).
    awaitable<post_result> send_now(const webhook_target& target, const nlohmann::json& event);

    static constexpr std::chrono::milliseconds post_timeout{10000};
    static constexpr std::chrono::milliseconds first_backoff{1000};
    static constexpr std::chrono::milliseconds max_backoff{300000};
    static constexpr std::int64_t give_up_after_ms = 24 * 3600 * 1000;

  private:
    // `url`: the key of its entry in deliveries_, which lives until it ends.
    awaitable<void> deliver_to(const std::string& url);
    struct target_delivery;
    // One try at the target's oldest notification; returns how long to wait before the next
    // one (0: go on at once), or nullopt when its outbox is empty.
    awaitable<std::optional<std::chrono::milliseconds>> try_next(const webhook_target& target,
                                                                 target_delivery& state,
                                                                 std::chrono::milliseconds backoff);

    net::io_context& io_;
    store& db_;
    const wall_clock& clock_;
    std::vector<std::string> targets_;
    std::string dashboard_;
    net::ssl::context tls_;
    struct target_delivery {
        explicit target_delivery(net::io_context& io) : backoff(io) {}
        net::steady_timer backoff;  // cancelled at shutdown, and by writable_again
        bool held_by_storage = false;
        // The notification the target took that the outbox could not let go of (a full disk):
        // removed, not posted again, at the next try.
        std::int64_t delivered_id = 0;
    };
    // The targets being delivered to.
    std::map<std::string, std::unique_ptr<target_delivery>> deliveries_;
    bool wake_posted_ = false;
    bool stopped_ = false;
};

}  // namespace ralph
