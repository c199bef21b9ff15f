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

std::vector<fs::path> writable_paths(const fs::path& workspace,
                                     const workspace::git_directories& git, const fs::path& tmpdir,
                                     const std::vector<std::string>& env,
                                     const std::vector<std::string>& home_paths) {
    std::vector<fs::path> candidates{workspace, tmpdir};
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
    // A git directory inside the workspace is bound again on itself: a mount point cannot be
    // renamed or removed, so `mv .git .git-old; mkdir .git` (a configuration and hooks of the
    // agent's own in the place of the protected ones) fails with EBUSY.
    for (const auto& dir : {git.common_dir, git.git_dir})
        if (!dir.empty() && fs::is_directory(dir, ec))
            outermost.push_back(fs::weakly_canonical(dir, ec));
    std::sort(outermost.begin(), outermost.end());
    outermost.erase(std::unique(outermost.begin(), outermost.end()), outermost.end());
    return outermost;
}

std::vector<fs::path> protected_git_paths(const fs::path& workspace,
                                          const workspace::git_directories& git) {
    std::vector<fs::path> paths;
    std::error_code ec;
    if (!git.common_dir.empty()) {
        // info/attributes could name filter and diff drivers (defined in your global
        // configuration) for the repository's files.
        for (const char* name : {"hooks", "info"}) fs::create_directory(git.common_dir / name, ec);
        for (const char* name : {"config", "hooks", "info"})
            if (fs::exists(git.common_dir / name, ec)) paths.push_back(git.common_dir / name);
    }
    // A linked worktree: its git directory names the common directory, and is named by the
    // pointer file `.git` at the top of the work tree.
    if (git.git_dir != git.common_dir)
        for (const char* name : {"commondir", "gitdir"})
            if (fs::exists(git.git_dir / name, ec)) paths.push_back(git.git_dir / name);
    if (fs::is_regular_file(fs::symlink_status(workspace / ".git", ec)))
        paths.push_back(workspace / ".git");
    return paths;
}

std::vector<std::string> remove_git_redirects(const fs::path& workspace,
                                              const workspace::git_directories& git,
                                              const std::vector<fs::path>& protected_paths) {
    std::vector<std::string> removed;
    std::error_code ec;
    auto remove = [&](const fs::path& path, const std::string& why) {
        if (fs::exists(fs::symlink_status(path, ec)) && fs::remove(path, ec))
            removed.push_back("removed " + path.string() + ", which the agent left: " + why);
    };
    const fs::path dot_git = workspace / ".git";
    const fs::file_type top = fs::symlink_status(dot_git, ec).type();
    const bool was_protected =
        std::find(protected_paths.begin(), protected_paths.end(), dot_git) != protected_paths.end();
    if ((top == fs::file_type::symlink || top == fs::file_type::regular) && !was_protected)
        remove(dot_git, "git would use the repository it names");
    const std::string why = "git would take the configuration and hooks of the directory it names";
    if (!git.git_dir.empty() && git.git_dir == git.common_dir)
        remove(git.git_dir / "commondir", why);
    if (top == fs::file_type::directory && fs::weakly_canonical(dot_git, ec) != git.git_dir)
        remove(dot_git / "commondir", why);
    return removed;
}

namespace {

// Whether `path` is `dir` or below it (both absolute and normal).
bool is_within(const fs::path& path, const fs::path& dir) {
    auto [end, _] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
    return end == dir.end();
}

}  // namespace

std::vector<fs::path> program_paths(const fs::path& program, const std::vector<fs::path>& hidden) {
    std::error_code ec;
    std::vector<fs::path> shown;
    for (const fs::path& dir : {program.parent_path(), fs::canonical(program, ec).parent_path()}) {
        if (dir.empty()) continue;
        const fs::path normal = dir.lexically_normal();
        for (const auto& secret : hidden)
            if (is_within(normal, secret.lexically_normal()))
                throw proto::rpc_error(
                    proto::error_kind::agent_unavailable,
                    "the program " + program.string() + " is in " + secret.string() +
                        ", which the sandbox hides (ralph's own directories and the workspaces of "
                        "the other loops): put it elsewhere, for example in ~/bin");
        if (is_within(normal, "/tmp")) shown.push_back(normal);
    }
    return shown;
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
