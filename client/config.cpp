// ralphctl.conf (see config.hpp).
#include "client/config.hpp"

#include "client/output.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace ralph::client {
namespace {

const std::vector<std::string> setting_names{"agent",   "model",    "host",      "max-iterations",
                                             "timeout", "max-cost", "max-tokens"};

std::int64_t whole_number(const std::string& value) {
    std::int64_t number = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || end != value.data() + value.size() || number < 0)
        throw std::invalid_argument(fmt::format("'{}' is not a whole number >= 0", value));
    return number;
}

double number(const std::string& value) {
    double parsed = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(parsed) ||
        parsed < 0)
        throw std::invalid_argument(fmt::format("'{}' is not a number >= 0", value));
    return parsed;
}

void set(client_config& config, const std::string& name, const std::string& value) {
    if (name == "agent")
        config.agent = value;
    else if (name == "model")
        config.model = value;
    else if (name == "host")
        config.host = value;
    else if (name == "max-iterations")
        config.max_iterations = whole_number(value);
    else if (name == "timeout")
        config.timeout_s = text::parse_duration_seconds(value);
    else if (name == "max-cost")
        config.max_cost_usd = number(value);
    else if (name == "max-tokens")
        config.max_tokens = whole_number(value);
}

}  // namespace

client_config read_client_config(const std::filesystem::path& path) {
    client_config config;
    std::ifstream file(path);
    if (path.empty() || !file) return config;
    config.path = path;
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
        auto refuse = [&](const std::string& why, const std::string& fix) {
            throw client_error(
                exit_code::usage,
                fmt::format("{}:{}: {}", shorten_home(path.string()), number, escape_controls(why)),
                fix);
        };
        std::string_view text = line;
        text = text::trim(text.substr(0, text.find('#')));
        if (text.empty()) continue;
        const auto equals = text.find('=');
        if (equals == std::string_view::npos)
            refuse(fmt::format("'{}' is not a setting", text), "write it as: name = value");
        const std::string name(text::trim(text.substr(0, equals)));
        std::string_view value = text::trim(text.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        if (std::find(setting_names.begin(), setting_names.end(), name) == setting_names.end()) {
            const std::string meant = closest_word(name, setting_names);
            refuse(fmt::format("'{}' is not a setting of ralphctl", name),
                   (meant.empty() ? std::string() : fmt::format("did you mean '{}'? ", meant)) +
                       "The settings: " + text::join_words(setting_names, ", "));
        }
        try {
            set(config, name, std::string(value));
        } catch (const std::invalid_argument& e) {
            refuse(fmt::format("{}: {}", name, e.what()),
                   fmt::format("give {} as its option of ralphctl submit takes it", name));
        }
    }
    return config;
}

}  // namespace ralph::client
