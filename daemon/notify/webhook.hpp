// Where a push notification goes (ralphd --notify URL, submit --notify URL) and what it sends
// there: the target's URL parsed, and the request of each format. The formats are data, one
// entry each in webhook.cpp: the generic JSON body (schema_version 1, documented in the README),
// ntfy, Slack, Discord and Telegram's bot API.
//
// A target is `http(s)://host[:port]/path`, in the format its host names (hooks.slack.com:
// Slack; discord.com/api/webhooks: Discord; api.telegram.org: Telegram; ntfy.sh: ntfy; any
// other: generic), or `FORMAT+http(s)://...` to name the format (a self-hosted ntfy:
// `ntfy+https://ntfy.example.org/topic`). Its path may hold a secret (Slack's hook, a bot's
// token): logs and errors show it redacted (proto::redacted_url: `scheme://host[:port]/…`).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace ralph {

struct webhook_target {
    std::string format;  // generic, ntfy, slack, discord, telegram
    bool tls = false;    // https
    std::string host;    // without the brackets of an IPv6 address
    std::string port;    // "443" / "80" when the URL names none
    std::string path;    // the request target: path and query, "/" at least
    std::string url;     // as given: the outbox's key
};

// Throws std::invalid_argument saying what is wrong (no secret in the message).
webhook_target parse_webhook_target(const std::string& url);

struct webhook_request {
    std::string path;  // the request target
    std::string content_type;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // besides Host and the type
};

// The request that delivers `event` (the generic body, with its "id") to `target`.
webhook_request webhook_request_for(const webhook_target& target, const nlohmann::json& event);

// The formats' names, for the error of an unknown one.
std::vector<std::string> webhook_formats();

}  // namespace ralph
