#include "daemon/agents/agent_config.hpp"

#include "daemon/agents/config_text.hpp"
#include "daemon/process/environment.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace ralph {
namespace {

constexpr std::uintmax_t max_config_bytes = 1 << 20;

// Whether `path` is `dir` or below it, by their names (a link is where it is: the agent can
// replace the link).
bool is_within(const fs::path& path, const fs::path& dir) {
    if (dir.empty()) return false;
    const fs::path p = path.lexically_normal();
    const fs::path d = dir.lexically_normal();
    const auto dir_end = std::mismatch(d.begin(), d.end(), p.begin(), p.end()).first;
    // "/ws/" normalizes with an empty last element.
    return dir_end == d.end() || (std::next(dir_end) == d.end() && dir_end->empty());
}

// Whether the agent can rewrite `file` in its --sandbox: its workspace (and worktree) and its
// home state paths are writable there (process/sandbox.hpp).
bool may_rewrite(const agent& adapter, const proto::submit_params& spec, const config_place& place,
                 const std::string& file) {
    if (!spec.sandbox || file.empty()) return false;
    if (is_within(file, spec.workspace) || is_within(file, spec.worktree_path)) return true;
    const fs::path home = agent_config::home(place);
    if (home.empty()) return false;
    for (const auto& state : adapter.home_state_paths())
        if (is_within(file, home / state)) return true;
    return false;
}

bool matches(const std::string& pattern, const std::string& name) {
    return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& pattern) { return matches(pattern, name); });
}

}  // namespace

config_place place_of(const proto::submit_params& spec) {
    return {spec.workspace, spec.model, [&spec](std::string_view name) -> std::string {
                if (auto it = spec.env.find(std::string(name)); it != spec.env.end())
                    return it->second;
                const char* value = std::getenv(std::string(name).c_str());
                return value ? value : "";
            }};
}

std::vector<std::string> agent_variables(const agent& adapter, const proto::submit_params& spec) {
    std::vector<std::string> variables = adapter.environment_variables();
    const config_place place = place_of(spec);
    for (const auto& configured : adapter.configured_variables(place))
        if (!may_rewrite(adapter, spec, place, configured.file))
            variables.push_back(configured.name);
    return variables;
}

proto::agent_environment describe_environment(const agent& adapter,
                                              const proto::submit_params& spec,
                                              const env_policy& policy) {
    const config_place place = place_of(spec);
    const std::vector<configured_variable> configured = adapter.configured_variables(place);
    std::vector<std::string> passed = adapter.environment_variables();
    std::vector<std::string> own = passed;
    for (const auto& variable : configured) {
        own.push_back(variable.name);
        if (!may_rewrite(adapter, spec, place, variable.file)) passed.push_back(variable.name);
    }
    proto::agent_environment described;
    const std::vector<std::string> present = environment_names();
    for (const auto& name : present) {
        if (spec.env.contains(name)) continue;  // the loop's own --env gives it
        const bool gets = policy.passes(name, passed);
        if (gets && !policy.passes(name, {}))
            described.passed.push_back(name);
        else if (!gets && matches_any(own, name))
            described.withheld.push_back(name);
    }
    std::set<std::string> unset;
    for (const auto& variable : configured)
        if (variable.name.find('*') == std::string::npos && !spec.env.contains(variable.name) &&
            !std::binary_search(present.begin(), present.end(), variable.name))
            unset.insert(variable.name);
    described.unset.assign(unset.begin(), unset.end());
    return described;
}

namespace agent_config {

std::string read_file(const fs::path& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > max_config_bytes || ec)
        return {};
    std::ifstream in(path, std::ios::binary);
    std::string text(max_config_bytes, '\0');
    in.read(text.data(), std::streamsize(text.size()));
    text.resize(std::size_t(in.gcount()));
    return text;
}

fs::path home(const config_place& place) { return place.variable("HOME"); }

fs::path config_home(const config_place& place) {
    const std::string xdg = place.variable("XDG_CONFIG_HOME");
    if (!xdg.empty()) return xdg;
    const fs::path dir = home(place);
    return dir.empty() ? fs::path() : dir / ".config";
}

std::vector<fs::path> project_directories(const config_place& place) {
    if (place.workspace.empty()) return {};
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (fs::path dir = place.workspace.lexically_normal(); !dir.empty(); dir = dir.parent_path()) {
        dirs.push_back(dir);
        if (fs::exists(dir / ".git", ec)) {
            std::reverse(dirs.begin(), dirs.end());
            return dirs;
        }
        if (dir == dir.root_path()) break;
    }
    return {place.workspace};
}

nlohmann::json read_json(const fs::path& path) {
    const std::string text = read_file(path);
    if (text.empty()) return nullptr;
    nlohmann::json json = nlohmann::json::parse(text, nullptr, false, true);
    return json.is_discarded() ? nlohmann::json() : json;
}

void add(std::vector<configured_variable>& out, const std::vector<std::string>& names,
         const fs::path& file) {
    for (const auto& name : names)
        if (config_text::is_variable_name(name)) out.push_back({name, file.string()});
}

}  // namespace agent_config
}  // namespace ralph
