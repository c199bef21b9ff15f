// Push-notification targets (daemon/notify/webhook): which URLs are taken, in which format, and
// the request each format makes of an event; and the events of daemon/notify/notification.
#include "daemon/notify/webhook.hpp"
#include "daemon/notify/notification.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using ralph::parse_webhook_target;
using ralph::webhook_request_for;

namespace {

std::string refusal(const std::string& url) {
    try {
        parse_webhook_target(url);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

nlohmann::json event() {
    return {{"schema_version", 1},
            {"id", 17},
            {"event", "loop.failed"},
            {"title", "loop 3 \"api\" failed"},
            {"text", "iteration 2 failed 1 time(s)"},
            {"loop", nullptr},
            {"link", nullptr}};
}

}  // namespace

TEST_CASE("webhook: a URL's scheme, host, port and request target") {
    auto t = parse_webhook_target("https://Example.org/a/b?x=1#frag");
    CHECK(t.format == "generic");
    CHECK(t.tls);
    CHECK(t.host == "example.org");
    CHECK(t.port == "443");
    CHECK(t.path == "/a/b?x=1");
    CHECK(t.url == "https://Example.org/a/b?x=1#frag");
    t = parse_webhook_target("http://127.0.0.1:8080");
    CHECK_FALSE(t.tls);
    CHECK(t.port == "8080");
    CHECK(t.path == "/");
    t = parse_webhook_target("http://[::1]:9/?q");
    CHECK(t.host == "::1");
    CHECK(t.port == "9");
    CHECK(t.path == "/?q");
}

TEST_CASE("webhook: the format from the host, or named before the scheme") {
    CHECK(parse_webhook_target("https://hooks.slack.com/services/T/B/X").format == "slack");
    CHECK(parse_webhook_target("https://discord.com/api/webhooks/1/abc").format == "discord");
    CHECK(parse_webhook_target("https://discord.com/other").format == "generic");
    CHECK(parse_webhook_target("https://api.telegram.org/botT/sendMessage?chat_id=5").format ==
          "telegram");
    CHECK(parse_webhook_target("https://ntfy.sh/topic").format == "ntfy");
    CHECK(parse_webhook_target("ntfy+http://10.0.0.2:81/ntfy/night").format == "ntfy");
    CHECK(parse_webhook_target("SLACK+https://chat.example/hook").format == "slack");
    CHECK(parse_webhook_target("generic+https://hooks.slack.com/x").format == "generic");
}

TEST_CASE("webhook: what is refused, and why") {
    CHECK(refusal("hooks.slack.com/x").find("http(s)://HOST/PATH") != std::string::npos);
    CHECK(refusal("ftp://x/y") == "a notification URL is http:// or https://, not ftp://");
    CHECK(refusal("email+https://x/y").starts_with("no notification format email (one of "));
    CHECK(refusal("https:///path") == "a notification URL names no host");
    CHECK(refusal("https://h:0/") == "a notification URL's port is a number from 1 to 65535");
    CHECK(refusal("https://h:65536/").find("port") != std::string::npos);
    CHECK(refusal("https://h:8x/").find("port") != std::string::npos);
    CHECK(refusal("https://[::1/").find("]") != std::string::npos);
    CHECK(refusal("https://u:secret@h/").find("no user or password") != std::string::npos);
    CHECK(refusal("https://h/a b").find("no spaces or control characters") != std::string::npos);
    CHECK(refusal("https://h/a\r\nX-Injected: 1").find("control") != std::string::npos);
    CHECK(refusal("https://api.telegram.org/botT/sendMessage").starts_with("telegram"));
    CHECK(refusal("ntfy+https://n.example/").starts_with("ntfy notification URL: no topic"));
    // No secret in a message: the path is never quoted.
    CHECK(refusal("https://api.telegram.org/botSECRET/x").find("SECRET") == std::string::npos);
}

TEST_CASE("webhook: each format's request") {
    auto generic = webhook_request_for(parse_webhook_target("https://h/in"), event());
    CHECK(generic.path == "/in");
    CHECK(generic.content_type == "application/json");
    CHECK(nlohmann::json::parse(generic.body) == event());
    const std::vector<std::pair<std::string, std::string>> headers{
        {"X-Ralph-Event", "loop.failed"}, {"X-Ralph-Notification-Id", "17"}};
    CHECK(generic.headers == headers);

    auto slack = webhook_request_for(parse_webhook_target("slack+https://h/s"), event());
    CHECK(nlohmann::json::parse(slack.body) ==
          nlohmann::json{{"text", "*loop 3 \"api\" failed*\niteration 2 failed 1 time(s)"}});
    auto discord = webhook_request_for(parse_webhook_target("discord+https://h/d"), event());
    CHECK(nlohmann::json::parse(discord.body)["content"] ==
          "**loop 3 \"api\" failed**\niteration 2 failed 1 time(s)");
    auto telegram = webhook_request_for(
        parse_webhook_target("https://api.telegram.org/botT/sendMessage?a=b&chat_id=-100"),
        event());
    CHECK(telegram.path == "/botT/sendMessage?a=b&chat_id=-100");
    CHECK(nlohmann::json::parse(telegram.body) ==
          nlohmann::json{{"chat_id", "-100"},
                         {"text", "loop 3 \"api\" failed\niteration 2 failed 1 time(s)"}});
    auto ntfy = webhook_request_for(parse_webhook_target("ntfy+https://h/base/night"), event());
    CHECK(ntfy.path == "/base/");
    const auto body = nlohmann::json::parse(ntfy.body);
    CHECK(body["topic"] == "night");
    CHECK(body["title"] == "loop 3 \"api\" failed");
    CHECK(body["priority"] == 4);
    CHECK(body["tags"] == nlohmann::json{"x"});
    CHECK_FALSE(body.contains("click"));
}

TEST_CASE("webhook: a chat message is cut to the service's limit on a character boundary") {
    nlohmann::json long_event = event();
    std::string text;
    while (text.size() < 5000) text += "é";
    long_event["text"] = text;
    auto discord = webhook_request_for(parse_webhook_target("discord+https://h/d"), long_event);
    const std::string content = nlohmann::json::parse(discord.body)["content"];
    CHECK(content.size() <= 2000);
    CHECK(content.size() >= 1998);
    CHECK(content.back() == "é"[1]);  // the last character whole
}

TEST_CASE("notification: which state changes are notified, and their events") {
    using ralph::proto::loop_state;
    CHECK(ralph::is_notified(loop_state::completed, false));
    CHECK(ralph::is_notified(loop_state::cancelled, false));
    CHECK(ralph::is_notified(loop_state::waiting, true));
    CHECK_FALSE(ralph::is_notified(loop_state::waiting, false));  // a retry's backoff, a delay
    CHECK_FALSE(ralph::is_notified(loop_state::running, true));
    CHECK_FALSE(ralph::is_notified(loop_state::queued, false));

    ralph::proto::loop_info loop;
    loop.id = 4;
    loop.spec.name = "api";
    loop.spec.max_iterations = 30;
    loop.state = loop_state::stalled;
    loop.stop_reason = "no progress in 3 iterations in a row";
    loop.iterations = 7;
    loop.usage.input_tokens = 1000;
    loop.usage.output_tokens = 234;
    loop.usage.cost_usd = 0.5;
    const auto stalled = ralph::state_notification(loop, false, 0);
    CHECK(stalled["event"] == "loop.stalled");
    CHECK(stalled["schema_version"] == 1);
    CHECK(stalled["title"] == "loop 4 \"api\" stalled");
    CHECK(stalled["text"] ==
          "no progress in 3 iterations in a row\n7/30 iterations · 1234 tokens · $0.50");
    CHECK(stalled["loop"]["id"] == 4);
    CHECK(stalled["loop"]["state"] == "stalled");
    CHECK_FALSE(stalled.contains("id"));  // the outbox gives it
    loop.state = loop_state::running;
    CHECK_THROWS_AS(ralph::state_notification(loop, true, 0), std::logic_error);
}

TEST_CASE("redacted_url: scheme and authority only") {
    using ralph::proto::redacted_url;
    CHECK(redacted_url("https://hooks.slack.com/services/T/B/SECRET") ==
          "https://hooks.slack.com/…");
    CHECK(redacted_url("ntfy+http://127.0.0.1:81/topic?auth=tok") == "ntfy+http://127.0.0.1:81/…");
    CHECK(redacted_url("https://h?token=x") == "https://h/…");
    CHECK(redacted_url("https://h") == "https://h");
    CHECK(redacted_url("not a url") == "…");
}
