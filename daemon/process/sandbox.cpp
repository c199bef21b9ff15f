#include "daemon/process/sandbox.hpp"

#include "common/paths.hpp"
#include "proto/errors.hpp"

#include <algorithm>
#include <tuple>

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

std::vector<fs::path> protected_git_paths(const fs::path& workspace, const fs::path& git_dir) {
    std::vector<fs::path> paths;
    std::error_code ec;
    if (!git_dir.empty()) {
        fs::create_directory(git_dir / "hooks", ec);
        for (const char* name : {"config", "hooks"})
            if (fs::exists(git_dir / name, ec)) paths.push_back(git_dir / name);
    }
    if (fs::is_regular_file(fs::symlink_status(workspace / ".git", ec)))
        paths.push_back(workspace / ".git");
    return paths;
}

std::vector<std::string> wrap(const std::string& bwrap, const layout& view, const std::string& cwd,
                              const std::vector<std::string>& argv) {
    // A new PID namespace: the agent sees and signals only its own processes, and everything
    // left inside dies with bwrap. No new session: bwrap stays in the agent's process group.
    std::vector<std::string> wrapped{bwrap,   "--unshare-pid", "--ro-bind", "/",    "/",
                                     "--dev", "/dev",          "--proc",    "/proc"};
    if (view.offline) wrapped.push_back("--unshare-net");

    enum class kind { hidden, writable, read_only };
    std::vector<std::tuple<fs::path, kind>> mounts{{"/tmp", kind::hidden}};
    // bwrap cannot mount over what does not exist (it would have to create it in the read-only
    // root); a hidden path must be a directory.
    std::error_code ec;
    for (const auto& path : view.hidden)
        if (fs::is_directory(fs::symlink_status(path, ec))) mounts.emplace_back(path, kind::hidden);
    for (const auto& path : view.writable)
        if (fs::exists(path, ec)) mounts.emplace_back(path, kind::writable);
    for (const auto& path : view.read_only)
        if (fs::exists(path, ec)) mounts.emplace_back(path, kind::read_only);
    std::sort(mounts.begin(), mounts.end());
    mounts.erase(std::unique(mounts.begin(), mounts.end()), mounts.end());
    for (const auto& [path, how] : mounts) {
        switch (how) {
            case kind::hidden:
                wrapped.insert(wrapped.end(), {"--tmpfs", path.string()});
                break;
            case kind::writable:
                wrapped.insert(wrapped.end(), {"--bind", path.string(), path.string()});
                break;
            case kind::read_only:
                wrapped.insert(wrapped.end(), {"--ro-bind", path.string(), path.string()});
                break;
        }
    }
    wrapped.insert(wrapped.end(), {"--chdir", cwd, "--"});
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

}  // namespace ralph::sandbox
