// The hosts file (see hosts_file.hpp).
#include "common/hosts_file.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ralph {

bool is_host_address(std::string_view value) {
    return value.find("://") != std::string_view::npos || value.find('/') != std::string_view::npos;
}

std::vector<host_entry> read_hosts_file(const std::filesystem::path& file) {
    std::vector<host_entry> hosts;
    std::ifstream in(file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        host_entry host;
        std::string extra;
        if (!(words >> host.name)) continue;
        const auto bad = [&](const std::string& why) {
            throw std::invalid_argument(file.string() + ":" + std::to_string(number) + ": " + why);
        };
        if (!(words >> host.address) || (words >> extra)) bad("expected NAME ADDRESS");
        if (is_host_address(host.name) || host.name.find(':') != std::string::npos)
            bad("'" + host.name + "' is not a name (no '/' or ':' in it)");
        if (!is_host_address(host.address))
            bad("'" + host.address + "' is not an address (ssh://…, unix://… or a path)");
        if (host.name == local_host_name) bad("'local' is this machine's daemon, always there");
        if (host.name == placement_host)
            bad("'auto' is not a host's name: --host auto places a submit on the host with the "
                "most room");
        for (const auto& known : hosts)
            if (known.name == host.name) bad("'" + host.name + "' is named twice");
        hosts.push_back(std::move(host));
    }
    return hosts;
}

}  // namespace ralph
