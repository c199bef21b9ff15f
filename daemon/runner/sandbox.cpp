#include "daemon/runner/sandbox.hpp"

#include "common/paths.hpp"
#include "proto/errors.hpp"

#include <algorithm>

namespace ralph::sandbox {
namespace fs = std::filesystem;

std::string find_bwrap(const std::string& search_path) {
    fs::path bwrap = paths::find_executable("bwrap", search_path);
    if (bwrap.empty())
        throw proto::rpc_error(proto::error_kind::agent_unavailable,
                               "--sandbox needs bubblewrap, and bwrap is not on the agent's PATH "
                               "(install it: apt install bubblewrap)");
    return bwrap.string();
}

std::vector<fs::path> writable_paths(const fs::path& workspace, const fs::path& git_dir,
                                     const fs::path& tmpdir, const std::vector<std::string>& env,
                                     const std::vector<std::string>& home_paths) {
    std::vector<fs::path> candidates{workspace, git_dir, tmpdir};
    const auto home = std::find_if(env.begin(), env.end(), [](const std::string& entry) {
        return entry.starts_with("HOME=");
    });
    if (home != env.end() && home->size() > 5)
        for (const auto& relative : home_paths)
            candidates.push_back(fs::path(home->substr(5)) / relative);
    std::vector<fs::path> writable;
    std::error_code ec;
    for (const auto& candidate : candidates) {
        if (candidate.empty() || !fs::exists(candidate, ec)) continue;
        writable.push_back(fs::weakly_canonical(candidate, ec));
    }
    // Sorted, a path comes right after the paths it lies in; binding one inside another that is
    // bound already adds nothing.
    std::sort(writable.begin(), writable.end());
    std::vector<fs::path> outermost;
    for (const auto& path : writable) {
        const bool inside = !outermost.empty() && [&] {
            const auto rel = path.lexically_relative(outermost.back());
            return !rel.empty() && *rel.begin() != "..";
        }();
        if (!inside) outermost.push_back(path);
    }
    return outermost;
}

std::vector<std::string> wrap(const std::string& bwrap, const std::vector<fs::path>& writable,
                              const std::string& cwd, const std::vector<std::string>& argv) {
    std::vector<std::string> wrapped{bwrap,  "--ro-bind", "/",     "/",       "--dev",
                                     "/dev", "--proc",    "/proc", "--tmpfs", "/tmp"};
    // After the tmpfs: a writable path under /tmp (a test's workspace) is bound on top of it.
    for (const auto& path : writable) {
        wrapped.insert(wrapped.end(), {"--bind", path.string(), path.string()});
    }
    wrapped.insert(wrapped.end(), {"--chdir", cwd, "--"});
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

}  // namespace ralph::sandbox
