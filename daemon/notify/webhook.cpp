#include "daemon/notify/webhook.hpp"

#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <stdexcept>

namespace ralph {
namespace {

// A format: its name, the host (and path) that names it in a plain http(s) URL, what its URL
// must have, and its request.
struct webhook_format {
    const char* name;
    const char* host;         // "" = none: only named with NAME+https://
    const char* path_prefix;  // of the URLs of `host` that are this format
    // "" when the URL suits the format, else what it lacks.
    std::function<std::string(const webhook_target&)> url_error;
    std::function<webhook_request(const webhook_target&, const nlohmann::json& event)> request;
};

std::string string_field(const nlohmann::json& event, const char* name) {
    auto it = event.find(name);
    return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The query parameter `name` of the target's path, or "".
std::string query_parameter(const webhook_target& target, std::string_view name) {
    const auto question = target.path.find('?');
    if (question == std::string::npos) return {};
    return std::string(
        text::parameter_value(std::string_view(target.path).substr(question + 1), name, '&'));
}

// The path of the target without its query: ntfy's topic is its last segment.
std::string_view path_only(const webhook_target& target) {
    return std::string_view(target.path).substr(0, target.path.find('?'));
}

std::string_view ntfy_topic(const webhook_target& target) {
    const std::string_view path = path_only(target);
    return path.substr(path.rfind('/') + 1);
}

// A chat line: the title on the first line, the text after it, cut to the service's limit.
std::string chat_text(const nlohmann::json& event, const char* bold, std::size_t limit) {
    std::string text = fmt::format("{0}{1}{0}\n{2}", bold, string_field(event, "title"),
                                   string_field(event, "text"));
    return std::string(text::utf8_head(text, limit));
}

webhook_request json_request(const std::string& path, const nlohmann::json& body) {
    return {path,
            "application/json",
            body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
            {}};
}

// ntfy's tags (emoji shortcodes) and priority by event.
std::pair<const char*, int> ntfy_look(const std::string& event) {
    if (event == "loop.completed") return {"white_check_mark", 3};
    if (event == "loop.failed" || event == "loop.stalled") return {"x", 4};
    if (event == "loop.exhausted") return {"hourglass_flowing_sand", 3};
    if (event == "loop.waiting") return {"hourglass", 3};
    if (event == "loop.rejected") return {"leftwards_arrow_with_hook", 3};
    if (event == "daemon.recovered") return {"recycle", 4};
    return {"information_source", 3};
}

const std::vector<webhook_format>& formats() {
    static const std::vector<webhook_format> table{
        {"generic", "", "", [](const webhook_target&) { return std::string(); },
         [](const webhook_target& target, const nlohmann::json& event) {
             return json_request(target.path, event);
         }},
        {"ntfy", "ntfy.sh", "",
         [](const webhook_target& target) {
             return ntfy_topic(target).empty() ? std::string("no topic: https://HOST/TOPIC")
                                               : std::string();
         },
         [](const webhook_target& target, const nlohmann::json& event) {
             // JSON publishing: to the server's root (the path without the topic).
             const std::string_view path = path_only(target);
             const auto [tag, priority] = ntfy_look(string_field(event, "event"));
             nlohmann::json body{{"topic", ntfy_topic(target)},
                                 {"title", string_field(event, "title")},
                                 {"message", string_field(event, "text")},
                                 {"tags", {tag}},
                                 {"priority", priority}};
             if (event.contains("link") && event["link"].is_string()) body["click"] = event["link"];
             return json_request(std::string(path.substr(0, path.rfind('/') + 1)), body);
         }},
        {"slack", "hooks.slack.com", "", [](const webhook_target&) { return std::string(); },
         [](const webhook_target& target, const nlohmann::json& event) {
             return json_request(target.path, {{"text", chat_text(event, "*", 3000)}});
         }},
        {"discord", "discord.com", "/api/webhooks/",
         [](const webhook_target&) { return std::string(); },
         [](const webhook_target& target, const nlohmann::json& event) {
             return json_request(target.path, {{"content", chat_text(event, "**", 2000)}});
         }},
        {"telegram", "api.telegram.org", "",
         [](const webhook_target& target) {
             return query_parameter(target, "chat_id").empty()
                        ? std::string(
                              "no chat: https://api.telegram.org/botTOKEN/sendMessage"
                              "?chat_id=CHAT")
                        : std::string();
         },
         [](const webhook_target& target, const nlohmann::json& event) {
             return json_request(target.path, {{"chat_id", query_parameter(target, "chat_id")},
                                               {"text", chat_text(event, "", 4096)}});
         }},
    };
    return table;
}

const webhook_format& format_named(const std::string& name) {
    for (const auto& format : formats())
        if (name == format.name) return format;
    throw std::logic_error("no webhook format " + name);
}

[[noreturn]] void invalid(const std::string& why) { throw std::invalid_argument(why); }

}  // namespace

std::vector<std::string> webhook_formats() {
    std::vector<std::string> names;
    for (const auto& format : formats()) names.emplace_back(format.name);
    return names;
}

webhook_target parse_webhook_target(const std::string& url) {
    webhook_target target;
    target.url = url;
    for (unsigned char c : url)
        if (c <= 0x20 || c == 0x7f)
            invalid("a notification URL has no spaces or control characters");
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos)
        invalid("a notification URL is http(s)://HOST/PATH or FORMAT+https://HOST/PATH");
    std::string scheme = text::ascii_lower(url.substr(0, scheme_end));
    std::string format;
    if (const auto plus = scheme.find('+'); plus != std::string::npos) {
        format = scheme.substr(0, plus);
        scheme = scheme.substr(plus + 1);
        const auto names = webhook_formats();
        if (std::find(names.begin(), names.end(), format) == names.end())
            invalid(fmt::format("no notification format {} (one of {})", format,
                                text::join_words(names, ", ")));
    }
    if (scheme != "http" && scheme != "https")
        invalid("a notification URL is http:// or https://, not " + scheme + "://");
    target.tls = scheme == "https";
    std::string rest = url.substr(scheme_end + 3);
    rest = rest.substr(0, rest.find('#'));
    const auto authority_end = rest.find_first_of("/?");
    const std::string authority = rest.substr(0, authority_end);
    target.path = authority_end == std::string::npos ? "/" : rest.substr(authority_end);
    if (target.path.front() == '?') target.path.insert(0, "/");
    if (authority.find('@') != std::string::npos)
        invalid("a notification URL has no user or password (put a token in its path or query)");
    std::string port;
    if (!authority.empty() && authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string::npos) invalid("a notification URL's IPv6 address lacks its ]");
        target.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') invalid("a notification URL's host is [IPv6]:PORT");
            port = authority.substr(close + 2);
        }
    } else {
        const auto colon = authority.find(':');
        target.host = authority.substr(0, colon);
        if (colon != std::string::npos) port = authority.substr(colon + 1);
    }
    if (target.host.empty()) invalid("a notification URL names no host");
    target.host = text::ascii_lower(target.host);
    if (port.empty()) {
        target.port = target.tls ? "443" : "80";
    } else {
        unsigned number = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
        if (ec != std::errc() || end != port.data() + port.size() || number == 0 || number > 65535)
            invalid("a notification URL's port is a number from 1 to 65535");
        target.port = port;
    }
    if (format.empty()) {
        format = "generic";
        for (const auto& candidate : formats())
            if (*candidate.host && target.host == candidate.host &&
                target.path.starts_with(candidate.path_prefix))
                format = candidate.name;
    }
    target.format = format;
    if (const std::string lacks = format_named(format).url_error(target); !lacks.empty())
        invalid(fmt::format("{} notification URL: {}", format, lacks));
    return target;
}

webhook_request webhook_request_for(const webhook_target& target, const nlohmann::json& event) {
    webhook_request request = format_named(target.format).request(target, event);
    // Every format: what lets a receiver drop a notification it has had already.
    request.headers.emplace_back("X-Ralph-Event", string_field(event, "event"));
    if (event.contains("id"))
        request.headers.emplace_back("X-Ralph-Notification-Id", event["id"].dump());
    return request;
}

}  // namespace ralph
