// The hosts file (see hosts.hpp).
#include "client/hosts.hpp"

#include "client/output.hpp"
#include "common/paths.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ralph::client {

std::vector<host_entry> read_hosts(const std::string& local_address) {
    std::vector<host_entry> hosts{{std::string(local_host_name), local_address}};
    try {
        for (auto& host : read_hosts_file(paths::default_hosts_file()))
            hosts.push_back(std::move(host));
    } catch (const std::invalid_argument& e) {
        throw client_error(exit_code::usage, e.what(),
                           "each line is NAME ADDRESS, e.g. build1 ssh://me@build1.lan");
    }
    return hosts;
}

std::string resolve_host(const std::string& value, const std::string& local_address) {
    if (is_host_address(value)) return value;
    const std::vector<host_entry> hosts = read_hosts(local_address);
    std::vector<std::string> names;
    for (const auto& host : hosts) {
        if (host.name == value) return host.address;
        names.push_back(host.name);
    }
    throw client_error(
        exit_code::usage,
        fmt::format("no host named '{}' (known: {})", value, text::join_words(names, ", ")),
        fmt::format("name it in {}, or give an address: ssh://[USER@]HOST[:PORT]",
                    paths::default_hosts_file().string()));
}

}  // namespace ralph::client
