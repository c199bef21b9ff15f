// Option validators shared by several commands. CLI11 runs them on the text of an option before
// converting it, and turns a non-empty answer into a usage error naming the option.
#include "client/commands/commands.hpp"

#include "client/hosts.hpp"
#include "client/output.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace ralph::client {

CLI::Validator non_negative() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            std::int64_t n = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (ec != std::errc() || end != value.data() + value.size() || n < 0)
                return fmt::format("'{}' is not a whole number >= 0", value);
            return {};
        },
        "N>=0");
}

namespace {

// `value` as a finite number, or nullopt.
std::optional<double> number_of(const std::string& value) {
    double number = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(number))
        return std::nullopt;
    return number;
}

}  // namespace

CLI::Validator non_negative_number() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            const auto number = number_of(value);
            if (!number || *number < 0) return fmt::format("'{}' is not a number >= 0", value);
            return {};
        },
        "NUMBER>=0");
}

CLI::Validator number_between(double min, double max) {
    return CLI::Validator(
        [min, max](std::string& value) -> std::string {
            const auto number = number_of(value);
            if (!number || *number < min || *number > max)
                return fmt::format("'{}' is not a number from {} to {}", value, min, max);
            return {};
        },
        fmt::format("{}..{}", min, max));
}

CLI::Validator loop_id(client_context& ctx) {
    return CLI::Validator(
        [&ctx](std::string& value) -> std::string {
            const auto colon = value.rfind(':');
            if (colon != std::string::npos) {
                const std::string host = value.substr(0, colon);
                if (!ctx.id_host.empty() && ctx.id_host != host)
                    return fmt::format(
                        "loops of two hosts ({}, {}) in one command: run it once "
                        "per host",
                        ctx.id_host, host);
                try {
                    ctx.socket = resolve_host(host, ctx.local_socket);
                } catch (const client_error& e) {
                    return e.what();
                }
                ctx.id_host = host;
                value = value.substr(colon + 1);
            }
            std::int64_t id = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
            if (ec != std::errc() || end != value.data() + value.size())
                return fmt::format("'{}' is not a loop id (17, or HOST:17)", value);
            return {};
        },
        "ID");
}

CLI::Validator duration_seconds() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            try {
                value = fmt::format("{}", text::parse_duration_seconds(value));
                return {};
            } catch (const std::invalid_argument& e) {
                return e.what();
            }
        },
        "");
}

CLI::Validator time_or_age() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            try {
                value = text::format_iso8601(text::parse_time_or_age(value, text::now_ms()));
                return {};
            } catch (const std::invalid_argument& e) {
                return e.what();
            }
        },
        "");
}

}  // namespace ralph::client
