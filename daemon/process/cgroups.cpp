#include "daemon/process/cgroups.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

namespace ralph {
namespace {

// The mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo ("… - cgroup2 …").
std::string cgroup2_mount() {
    std::ifstream mounts("/proc/self/mountinfo");
    for (std::string line; std::getline(mounts, line);) {
        const auto separator = line.find(" - ");
        if (separator == std::string::npos || line.compare(separator + 3, 8, "cgroup2 ") != 0)
            continue;
        std::istringstream fields(line);
        std::string id, parent, device, root, mount_point;
        fields >> id >> parent >> device >> root >> mount_point;
        return mount_point;
    }
    return {};
}

// This process's cgroup in the v2 hierarchy, from /proc/self/cgroup ("0::/path").
std::string own_cgroup() {
    std::ifstream cgroups("/proc/self/cgroup");
    for (std::string line; std::getline(cgroups, line);)
        if (line.starts_with("0::")) return line.substr(3);
    return {};
}

}  // namespace

std::string attempt_cgroup_prefix(const std::filesystem::path& state_root, std::string& why_not) {
    const std::string mount = cgroup2_mount();
    if (mount.empty()) {
        why_not = "no cgroup v2 hierarchy is mounted";
        return {};
    }
    std::string own = own_cgroup();
    if (own.empty()) {
        why_not = "ralphd is in no cgroup of the v2 hierarchy";
        return {};
    }
    if (own == "/") own.clear();
    const std::string prefix =
        fmt::format("{}{}/ralph-{:08x}-attempt-", mount, own,
                    std::hash<std::string>{}(state_root.string()) & 0xffffffffu);
    // Tried for real: write permission on the directory is not all it takes.
    const std::string probe = prefix + "probe";
    if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) {
        why_not =
            fmt::format("cannot create a cgroup in {}{}: {}", mount, own, std::strerror(errno));
        return {};
    }
    ::rmdir(probe.c_str());
    return prefix;
}

}  // namespace ralph
