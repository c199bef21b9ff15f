// The hosts file (see hosts.hpp).
#include "client/hosts.hpp"

#include "client/output.hpp"
#include "common/paths.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace ralph::client {
namespace {

bool is_address(std::string_view value) {
    return value.find("://") != std::string_view::npos || value.find('/') != std::string_view::npos;
}

}  // namespace

std::vector<host_entry> read_hosts(const std::string& local_address) {
    std::vector<host_entry> hosts{{"local", local_address}};
    const auto file = paths::default_hosts_file();
    std::ifstream in(file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        host_entry host;
        std::string extra;
        if (!(words >> host.name)) continue;
        const auto bad = [&](std::string_view why) {
            throw client_error(exit_code::usage,
                               fmt::format("{}:{}: {}", file.string(), number, why),
                               "each line is NAME ADDRESS, e.g. build1 ssh://me@build1.lan");
        };
        if (!(words >> host.address) || (words >> extra)) bad("expected NAME ADDRESS");
        if (is_address(host.name) || host.name.find(':') != std::string::npos)
            bad("'" + host.name + "' is not a name (no '/' or ':' in it)");
        if (host.name == placement_host)
            bad("'auto' is not a host's name: --host auto places a submit on the host with the "
                "most room");
        if (!is_address(host.address))
            bad("'" + host.address + "' is not an address (ssh://…, unix://… or a path)");
        for (const auto& known : hosts)
            if (known.name == host.name) bad("'" + host.name + "' is named twice");
        hosts.push_back(std::move(host));
    }
    return hosts;
}

std::string resolve_host(const std::string& value, const std::string& local_address) {
    if (is_address(value)) return value;
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
