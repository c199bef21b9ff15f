// daemon.info, daemon.shutdown, notify.test, web.info, web.rotate_token and web.login_code.
#include "common/asio.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/notify/notification.hpp"
#include "daemon/notify/notifier.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"

namespace ralph::rpc {
namespace {

// A bad URL is an error; a receiver that does not take the notification is an answer.
awaitable<proto::notify_test_result> send_test(const proto::notify_test_request& request,
                                               method_services& services) {
    std::vector<webhook_target> targets;
    if (request.url.empty()) {
        // The daemon's own were checked when ralphd read them.
        for (const auto& url : services.notices.targets())
            targets.push_back(parse_webhook_target(url));
        if (targets.empty())
            throw proto::rpc_error(proto::error_kind::invalid_params,
                                   "ralphd has no --notify target to test: give a URL "
                                   "(ralphctl notify test URL), or give ralphd --notify URL (in "
                                   "its configuration file: notify = [\"URL\"]; SIGHUP reloads "
                                   "it)");
    } else {
        try {
            targets.push_back(parse_webhook_target(request.url));
        } catch (const std::invalid_argument& e) {
            throw proto::rpc_error(proto::error_kind::invalid_params,
                                   std::string("params.url: ") + e.what());
        }
    }
    const nlohmann::json event = test_notification(services.clock.now_ms());
    proto::notify_test_result result;
    for (const auto& target : targets) {
        const post_result sent = co_await services.notices.send_now(target, event);
        result.sent.push_back({proto::redacted_url(target.url), target.format, sent.delivered(),
                               sent.status, sent.error});
    }
    co_return result;
}

}  // namespace

void register_daemon_methods(method_registry& registry, method_services& services) {
    registry.add<proto::method::daemon_info>([&services](const proto::no_params&, call_context&) {
        proto::daemon_info info = services.identity;
        info.max_concurrent = services.gate.scheduler_settings().max_concurrent;
        info.loops_by_state = services.db.count_by_state();
        info.storage = services.health.status();
        info.peers = services.peers();
        for (const auto& url : services.notices.targets())
            info.notify_targets.push_back(proto::redacted_url(url));
        return info;
    });
    registry.add<proto::method::daemon_shutdown>(
        [&services](const proto::shutdown_request& request, call_context&) {
            services.request_shutdown(request.leave_running);
            return proto::done{};
        });
    registry.add<proto::method::notify_test>(
        [&services](const proto::notify_test_request& request, call_context&) {
            return send_test(request, services);
        });
    registry.add<proto::method::web_info>(
        [&services](const proto::no_params&, call_context&) { return services.web_login(false); });
    registry.add<proto::method::web_rotate_token>(
        [&services](const proto::no_params&, call_context&) { return services.web_login(true); });
    registry.add<proto::method::web_login_code>(
        [&services](const proto::no_params&, call_context&) { return services.web_login_code(); });
}

}  // namespace ralph::rpc
