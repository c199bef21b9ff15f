// daemon.info and daemon.shutdown.
#include "common/asio.hpp"
#include "daemon/admission/admission.hpp"
#include "daemon/rpc/methods.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/store/storage_health.hpp"
#include "daemon/store/store.hpp"
#include "proto/methods.hpp"

namespace ralph::rpc {

void register_daemon_methods(method_registry& registry, method_services& services) {
    registry.add<proto::method::daemon_info>([&services](const proto::no_params&, call_context&) {
        proto::daemon_info info = services.identity;
        info.max_concurrent = services.gate.scheduler_settings().max_concurrent;
        info.loops_by_state = services.db.count_by_state();
        info.storage = services.health.status();
        return info;
    });
    registry.add<proto::method::daemon_shutdown>(
        [&services](const proto::shutdown_request& request, call_context&) {
            services.request_shutdown(request.leave_running);
            return proto::done{};
        });
}

}  // namespace ralph::rpc
