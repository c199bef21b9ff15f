#include "daemon/process/environment.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

extern char** environ;

namespace ralph {
namespace {

bool matches(const std::string& pattern, std::string_view name) {
    return ::fnmatch(pattern.c_str(), std::string(name).c_str(), 0) == 0;
}

bool matches_any(const std::vector<std::string>& patterns, std::string_view name) {
    for (const auto& pattern : patterns)
        if (matches(pattern, name)) return true;
    return false;
}

// ralphd's variables whose name `keep` accepts, then `overrides` (the last of a key wins).
template <typename Keep>
std::vector<std::string> build_environment(
    Keep keep, const std::vector<std::pair<std::string, std::string>>& overrides) {
    std::map<std::string, std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        std::string_view kv(*entry);
        auto eq = kv.find('=');
        if (eq == std::string_view::npos || !keep(kv.substr(0, eq))) continue;
        env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    for (const auto& [key, value] : overrides) env[key] = value;
    std::vector<std::string> result;
    result.reserve(env.size());
    for (const auto& [key, value] : env) result.push_back(key + "=" + value);
    return result;
}

}  // namespace

const std::vector<std::string>& default_passed_variables() {
    static const std::vector<std::string> names{
        // Who and where: the agent's program is found on PATH, its config under HOME.
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
        "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
        // Locale and terminal.
        "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "COLORTERM", "NO_COLOR",
        // Network: proxies and the certificates of a corporate proxy.
        "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
        "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        // The identity of the agent's commits (not GIT_DIR and the like: they would point git
        // at another repository).
        "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"};
    return names;
}

env_policy::env_policy(const std::vector<std::string>& rules) {
    for (const auto& rule : rules) {
        if (std::string error = rule_error(rule); !error.empty())
            throw std::invalid_argument(error);
        rules_.emplace_back(rule.front() == '+', rule.substr(1));
    }
}

std::string env_policy::rule_error(std::string_view rule) {
    auto bad = [&rule](std::string_view why) {
        return "invalid --env-policy rule '" + std::string(rule) + "': " + std::string(why);
    };
    if (rule.size() < 2 || (rule.front() != '+' && rule.front() != '-'))
        return bad(
            "expected +PATTERN (pass) or -PATTERN (withhold), e.g. +AWS_* or -OPENAI_API_KEY");
    for (char c : rule.substr(1))
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '*'))
            return bad("a pattern is made of letters, digits, _ and * only");
    if (rule == "-PATH") return bad("PATH is always passed (the agent's program is found on it)");
    return {};
}

bool env_policy::passes(std::string_view name,
                        const std::vector<std::string>& agent_variables) const {
    if (name == "PATH") return true;
    bool pass = matches_any(default_passed_variables(), name) || matches_any(agent_variables, name);
    for (const auto& [rule_passes, pattern] : rules_)
        if (matches(pattern, name)) pass = rule_passes;
    return pass;
}

std::vector<std::string> agent_environment(
    const env_policy& policy, const std::vector<std::string>& agent_variables,
    const std::vector<std::pair<std::string, std::string>>& overrides) {
    return build_environment(
        [&](std::string_view name) { return policy.passes(name, agent_variables); }, overrides);
}

std::vector<std::string> environment_names() {
    std::vector<std::string> names;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        std::string_view kv(*entry);
        const auto eq = kv.find('=');
        if (eq != std::string_view::npos && eq > 0 && eq + 1 < kv.size())
            names.emplace_back(kv.substr(0, eq));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

std::string missing_variable_fix(std::string_view name) {
    const std::string variable(name);
    const char* value = std::getenv(variable.c_str());
    if (value && *value)
        return "ralphd has " + variable +
               " but does not pass it to the agent: start ralphd with "
               "--env-policy +" +
               variable + " (or submit the loop with --env " + variable + "=…)";
    return variable +
           " is not in ralphd's environment: set it where ralphd starts (its "
           "service's Environment=, then restart ralphd), or submit the loop with --env " +
           variable + "=…";
}

std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
    return build_environment([](std::string_view) { return true; }, overrides);
}

}  // namespace ralph
