// Every host at once (see fleet.hpp).
#include "client/fleet.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace ralph::client {

fleet_hosts::fleet_hosts(const std::string& local_address)
    : hosts_(read_hosts(local_address)), errors_(hosts_.size()) {}

int fleet_hosts::exit_code() const {
    for (const auto& error : errors_)
        if (!error.empty()) return exit_code::unreachable;
    return exit_code::ok;
}

nlohmann::json fleet_hosts::unreachable() const {
    nlohmann::json down = nlohmann::json::array();
    for (std::size_t i = 0; i < hosts_.size(); ++i)
        if (!errors_[i].empty())
            down.push_back(
                {{"host", hosts_[i].name}, {"address", hosts_[i].address}, {"error", errors_[i]}});
    return down;
}

int fleet_hosts::print_json(nlohmann::json document) const {
    document["unreachable"] = unreachable();
    client::print_json(std::move(document));
    return exit_code();
}

void fleet_hosts::name_down_hosts() const {
    for (std::size_t i = 0; i < hosts_.size(); ++i)
        if (!errors_[i].empty())
            fmt::print(stderr, "ralphctl: {} ({}): {}\n", hosts_[i].name, hosts_[i].address,
                       escape_controls(errors_[i]));
}

void add_all_hosts_flag(CLI::App& command, client_context& ctx) {
    command.add_flag(
        "--all-hosts", ctx.all_hosts,
        "Every host of the hosts file and local at once (also -H '*'), with a HOST "
        "column; a host that does not answer within 10 s is named (exit 3); the live top "
        "shows a late host's last rows");
}

std::string qualified_id(std::string_view host, std::int64_t id) {
    return fmt::format("{}:{}", host, id);
}

std::vector<table::column> with_host_column(bool with_host, std::vector<table::column> columns) {
    if (with_host) columns.insert(columns.begin(), table::column{"HOST"});
    return columns;
}

table::column id_column(bool with_host) { return {"ID", !with_host}; }

void add_host_and_id(table& rows, std::string_view host, std::int64_t id) {
    if (host.empty()) {
        rows.add_format("{}", id);
        return;
    }
    rows.add(host);
    rows.add(qualified_id(host, id));
}

}  // namespace ralph::client
