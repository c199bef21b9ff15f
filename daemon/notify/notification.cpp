#include "daemon/notify/notification.hpp"

#include "common/text.hpp"
#include "proto/state_machine.hpp"
#include "proto/version.hpp"

#include <fmt/format.h>

namespace ralph {
namespace {

nlohmann::json event_body(const std::string& event, std::string title, std::string text,
                          std::int64_t now_ms) {
    nlohmann::json body = nlohmann::json::object();
    body["schema_version"] = notification_schema_version;
    body["event"] = event;
    body["time"] = text::format_iso8601(now_ms);
    body["host"] = text::host_name();
    body["daemon_version"] = proto::daemon_version;
    body["title"] = std::move(title);
    body["text"] = std::move(text);
    body["loop"] = nullptr;
    body["link"] = nullptr;  // the dashboard's page of the loop: set by the notifier
    return body;
}

std::string loop_title(const proto::loop_info& loop, std::string_view what) {
    return fmt::format("loop {} \"{}\" {}", loop.id, loop.spec.name, what);
}

// "3/30 iterations · 12345 tokens · $0.42"
std::string loop_figures(const proto::loop_info& loop) {
    std::string figures =
        fmt::format("{}/{} iterations · {} tokens", loop.iterations, loop.spec.max_iterations,
                    loop.usage.input_tokens + loop.usage.output_tokens);
    if (loop.usage.cost_usd) figures += fmt::format(" · ${:.2f}", *loop.usage.cost_usd);
    return figures;
}

nlohmann::json loop_body(const std::string& event, const proto::loop_info& loop, std::string title,
                         std::string text, std::int64_t now_ms) {
    nlohmann::json body = event_body(event, std::move(title), std::move(text), now_ms);
    body["loop"] = proto::summary_json(loop);
    return body;
}

}  // namespace

bool is_notified(proto::loop_state state, bool notable_wait) {
    return proto::is_terminal(state) || (state == proto::loop_state::waiting && notable_wait);
}

nlohmann::json state_notification(const proto::loop_info& loop, bool notable_wait,
                                  std::int64_t now_ms) {
    if (!is_notified(loop.state, notable_wait))
        throw std::logic_error("no notification for a loop's change to " +
                               std::string(proto::to_string(loop.state)));
    if (loop.state == proto::loop_state::waiting)
        return loop_body("loop.waiting", loop, loop_title(loop, "is waiting"),
                         fmt::format("{} until {}\n{}", loop.stop_reason,
                                     text::format_iso8601(loop.resume_at), loop_figures(loop)),
                         now_ms);
    const std::string state(proto::to_string(loop.state));
    return loop_body("loop." + state, loop, loop_title(loop, state),
                     fmt::format("{}\n{}", loop.stop_reason, loop_figures(loop)), now_ms);
}

nlohmann::json rejection_notification(const proto::loop_info& loop, std::int64_t iteration,
                                      const std::string& why, std::int64_t now_ms) {
    nlohmann::json body =
        loop_body("loop.rejected", loop, loop_title(loop, "goes on: completion rejected"),
                  fmt::format("iteration {}: {}\n{}", iteration, why, loop_figures(loop)), now_ms);
    body["iteration"] = iteration;
    return body;
}

nlohmann::json recovery_notification(std::int64_t adopted, std::int64_t requeued,
                                     std::int64_t now_ms) {
    nlohmann::json body = event_body(
        "daemon.recovered",
        fmt::format("ralphd on {} took up {} running loop(s)", text::host_name(),
                    adopted + requeued),
        fmt::format("left by an earlier ralphd (or a storage fault): {} agent(s) still running "
                    "were adopted, {} loop(s) go on with their next iteration",
                    adopted, requeued),
        now_ms);
    body["adopted"] = adopted;
    body["requeued"] = requeued;
    return body;
}

nlohmann::json test_notification(std::int64_t now_ms) {
    return event_body("test", "ralph: a test notification",
                      fmt::format("ralphctl notify test, sent by ralphd on {}", text::host_name()),
                      now_ms);
}

}  // namespace ralph
