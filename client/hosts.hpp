// ralphctl's named hosts: those of the hosts file (common/hosts_file.hpp), and `local`, this
// machine's daemon at the default socket. `--host NAME` takes a name; `ralphctl hosts` and the
// --all-hosts views ask every host at once (fleet.hpp).
#pragma once

#include "common/hosts_file.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ralph::client {

// `local` (at `local_address`), then the hosts file's hosts in its order. A client_error (usage)
// names the line of a malformed file; a missing file is no error.
std::vector<host_entry> read_hosts(const std::string& local_address);

// What --host (or $RALPH_HOST) names: an address as it is (with "://" or a "/"), else a host of
// the hosts file by name; a client_error (usage) lists the names for an unknown one.
std::string resolve_host(const std::string& value, const std::string& local_address);

}  // namespace ralph::client
