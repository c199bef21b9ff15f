// The hosts file ($XDG_CONFIG_HOME/ralph/hosts, paths::default_hosts_file) names the daemons
// ralphctl may reach (--host NAME, --all-hosts) and ralphd's peers (--peer NAME), one per line,
// `NAME ADDRESS` (ADDRESS: ssh://[USER@]HOST[:PORT], unix://PATH or a socket path; `#` starts
// a comment). `local`, this machine's daemon, is implicit: the file cannot name it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

inline constexpr std::string_view local_host_name = "local";
// `ralphctl --host auto`: not a host but `submit`'s placement on the host with the most room
// (client/placement.hpp); the file cannot name a host so either.
inline constexpr std::string_view placement_host = "auto";

struct host_entry {
    std::string name;
    std::string address;
};

// Whether `value` is an address (it has "://" or a "/") rather than a name.
bool is_host_address(std::string_view value);

// The hosts of `file` in its order; none when it does not exist. std::invalid_argument names
// the line of a malformed file ("FILE:LINE: why").
std::vector<host_entry> read_hosts_file(const std::filesystem::path& file);

}  // namespace ralph
