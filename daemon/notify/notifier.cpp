#include "daemon/notify/notifier.hpp"

#include "daemon/store/outbox.hpp"
#include "proto/types.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ralph {

notifier::notifier(net::io_context& io, outbox_table& outbox, const wall_clock& clock,
                   std::vector<std::string> targets, std::string dashboard)
    : io_(io),
      outbox_(outbox),
      clock_(clock),
      targets_(std::move(targets)),
      dashboard_(std::move(dashboard)),
      tls_(verifying_tls_context()) {}

void notifier::add(const nlohmann::json& event, const std::vector<std::string>& loop_targets) {
    std::set<std::string> targets(targets_.begin(), targets_.end());
    targets.insert(loop_targets.begin(), loop_targets.end());
    if (targets.empty()) return;
    nlohmann::json linked = event;
    if (!dashboard_.empty())
        linked["link"] =
            event.value("loop", nlohmann::json()).is_object()
                ? dashboard_ + "/#/loop/" + std::to_string(event["loop"]["id"].get<std::int64_t>())
                : dashboard_ + "/";
    const std::string body = linked.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const auto& target : targets) outbox_.add_notification(target, body, clock_.now_ms());
    deliver();
}

void notifier::deliver() {
    // Posted: the caller's transaction is committed by the time it runs.
    if (wake_posted_ || stopped_) return;
    wake_posted_ = true;
    net::post(io_, [this] {
        wake_posted_ = false;
        if (stopped_) return;
        std::vector<std::string> waiting;
        try {
            waiting = outbox_.notification_targets();
        } catch (const std::exception& e) {
            spdlog::warn("notifications: cannot read the outbox: {}", e.what());
            return;
        }
        for (const auto& target : waiting) {
            const auto [delivery, added] =
                deliveries_.try_emplace(target, std::make_unique<target_delivery>(io_));
            if (added) net::co_spawn(io_, deliver_to(delivery->first), net::detached);
        }
    });
}

void notifier::writable_again() {
    for (auto& [target, waiting] : deliveries_)
        if (waiting->held_by_storage) waiting->backoff.cancel();
    deliver();
}

void notifier::shutdown() {
    stopped_ = true;
    for (auto& [target, waiting] : deliveries_) waiting->backoff.cancel();
}

awaitable<post_result> notifier::send_now(const webhook_target& target,
                                          const nlohmann::json& event) {
    nlohmann::json numbered = event;
    numbered["id"] = 0;
    const webhook_request request = webhook_request_for(target, numbered);
    co_return co_await post_webhook(target, request, tls_, post_timeout);
}

awaitable<void> notifier::deliver_to(const std::string& url) {
    std::optional<webhook_target> target;
    try {
        target = parse_webhook_target(url);
    } catch (const std::exception& e) {
        // Each URL is checked before it is stored: only a hand-edited database gets here.
        spdlog::error("notifications: giving up those to an invalid URL: {}", e.what());
    }
    target_delivery& state = *deliveries_.at(url);
    std::chrono::milliseconds backoff = first_backoff;
    bool more = true;
    while (more && !stopped_) {
        std::optional<std::chrono::milliseconds> wait;
        state.held_by_storage = false;
        try {
            if (target) {
                wait = co_await try_next(*target, state, backoff);
            } else if (auto entry = outbox_.next_notification(url)) {
                outbox_.remove_notification(entry->id);
                wait = std::chrono::milliseconds(0);
            }
        } catch (const std::exception& e) {
            // The outbox cannot be read or written (a full disk): again after the backoff, or as
            // soon as ralph's state can be written again.
            spdlog::warn("notifications: {}", e.what());
            state.held_by_storage = true;
            wait = backoff;
        }
        more = wait.has_value();
        if (!more || stopped_) break;
        if (wait->count() == 0) {
            backoff = first_backoff;
            continue;
        }
        backoff = std::min(max_backoff, backoff * 2);
        state.backoff.expires_after(*wait);
        boost::system::error_code ec;
        co_await state.backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    if (stopped_) co_return;                   // the timers stay until ralphd goes
    deliveries_.erase(deliveries_.find(url));  // `url` with it
    // What was added for this target after its outbox was found empty.
    deliver();
}

awaitable<std::optional<std::chrono::milliseconds>> notifier::try_next(
    const webhook_target& target, target_delivery& state, std::chrono::milliseconds backoff) {
    const std::optional<outbox_table::outbox_entry> entry = outbox_.next_notification(target.url);
    if (!entry) co_return std::nullopt;
    if (entry->id == state.delivered_id) {
        outbox_.remove_notification(entry->id);
        co_return std::chrono::milliseconds(0);
    }
    nlohmann::json event = nlohmann::json::parse(entry->body, nullptr, false);
    if (event.is_discarded()) event = nlohmann::json::object();
    event["id"] = entry->id;
    const webhook_request request = webhook_request_for(target, event);
    const post_result result = co_await post_webhook(target, request, tls_, post_timeout);
    if (result.delivered()) {
        state.delivered_id = entry->id;
        outbox_.remove_notification(entry->id);
        spdlog::debug("notification {} ({}) delivered to {}", entry->id, event.value("event", ""),
                      proto::redacted_url(target.url));
        co_return std::chrono::milliseconds(0);
    }
    if (clock_.now_ms() - entry->created_at > give_up_after_ms) {
        outbox_.remove_notification(entry->id);
        spdlog::error("notification {} ({}) to {}: given up after {} tries over 24 hours, last: {}",
                      entry->id, event.value("event", ""), proto::redacted_url(target.url),
                      entry->tries + 1, result.error);
        co_return std::chrono::milliseconds(0);
    }
    outbox_.notification_failed(entry->id, result.error);
    const auto wait = std::max<std::chrono::milliseconds>(backoff, result.retry_after);
    spdlog::warn("notification {} ({}) to {} not delivered ({}): next try in {} s", entry->id,
                 event.value("event", ""), proto::redacted_url(target.url), result.error,
                 std::chrono::duration_cast<std::chrono::seconds>(wait).count());
    co_return wait;
}

}  // namespace ralph
