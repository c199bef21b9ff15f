// Where ralphd puts each attempt's cgroup (cgroup v2), so that every process an attempt creates
// ends with it (cgroup.kill), also those that leave its process group and session. ralphd can
// create cgroups below its own when it runs as root or in a subtree systemd delegated to it
// (Delegate=yes in ralphd.service); otherwise each attempt's shim ends its own descendants, as a
// child subreaper (daemon/shim/ralph-shim.cpp).
#pragma once

#include <filesystem>
#include <string>

namespace ralph {

// "<ralphd's own cgroup directory>/ralph-<tag>-attempt-", to which an attempt's id is appended;
// `tag` tells the daemons of different state directories apart. Empty when ralphd cannot create
// a cgroup there (no cgroup v2 hierarchy, no permission): `why_not` then says why.
std::string attempt_cgroup_prefix(const std::filesystem::path& state_root, std::string& why_not);

}  // namespace ralph
