// Every daemon of the hosts file and `local`, asked at once: what `ralphctl hosts` and the
// --all-hosts views (list, top, report, budget, agents) share. A `fleet` keeps each host's
// connection between questions (top asks every interval). A host that did not answer the last
// question is down: its connection is dropped (left to the query that may still run on it, see
// ask_hosts) and made again at the next question. The views print what the hosts that answered
// said, with a HOST column and loop ids qualified as commands take them (`build1:17`), name the
// hosts that are down (stderr, or the frame for top; `"unreachable"` in --json) and exit 3 when
// one is.
#pragma once

#include "client/commands/commands.hpp"
#include "client/connection.hpp"
#include "client/hosts.hpp"
#include "client/output.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::client {

// How long a question waits for the hosts: one that is down or slow delays the others no longer.
inline constexpr std::chrono::seconds fleet_timeout{10};

// The answer of a host that gave one.
template <typename Result>
struct host_result {
    std::string host;  // its name in the hosts file
    Result result;
};

class fleet {
  public:
    // The hosts of the hosts file and `local` (at `local_address`).
    explicit fleet(const std::string& local_address);

    const std::vector<host_entry>& hosts() const { return hosts_; }

    // Runs `query` on every host at once, each on its connection; the answers in the order of
    // hosts(). `query` is copied: it may outlive this call (a host slower than `timeout`).
    template <typename Result>
    std::vector<host_answer<Result>> ask(std::function<Result(connection&)> query,
                                         std::chrono::milliseconds timeout = fleet_timeout) {
        auto answers =
            ask_hosts<Result>(hosts_, timeout, [links = links_, query](const host_entry& host) {
                link& to = *links.at(host.name);
                if (!to.daemon)
                    to.daemon = std::make_unique<connection>(host.address, ssh_messages::kept);
                return query(*to.daemon);
            });
        std::vector<std::string> errors;
        for (const auto& answer : answers) errors.push_back(answer.error);
        keep_errors(std::move(errors));
        return answers;
    }

    // One question for a command that prints once: the answers of the hosts that gave one, in
    // the order of hosts(); the others are named on stderr.
    template <typename Result>
    std::vector<host_result<Result>> ask_once(std::function<Result(connection&)> query) {
        auto answers = ask<Result>(std::move(query));
        std::vector<host_result<Result>> answered;
        for (std::size_t i = 0; i < answers.size(); ++i)
            if (answers[i].result)
                answered.push_back({hosts_[i].name, std::move(*answers[i].result)});
        name_down_hosts();
        return answered;
    }

    // The connection to `host` (a name) if it answered the last question, else nullptr; for
    // what one host is asked besides (top's selected loop, its keys).
    connection* daemon_of(const std::string& host) const;

    // Why each host did not answer the last question ("" = it did), in the order of hosts().
    const std::vector<std::string>& errors() const { return errors_; }
    // exit_code::ok, or exit_code::unreachable when a host did not answer the last question.
    int exit_code() const;
    // [{"host", "address", "error"}] of the hosts that did not answer the last question.
    nlohmann::json unreachable() const;
    // Prints the --json `document` with "unreachable"; returns exit_code().
    int print_json(nlohmann::json document) const;

  private:
    struct link {
        std::unique_ptr<connection> daemon;  // made at the host's first question
    };
    void keep_errors(std::vector<std::string> errors);
    // "ralphctl: NAME (ADDRESS): why" on stderr for each host that did not answer.
    void name_down_hosts() const;

    std::vector<host_entry> hosts_;
    std::map<std::string, std::shared_ptr<link>> links_;  // by host name
    std::vector<std::string> errors_;
};

// --all-hosts on a fleet view (the same as the global `-H '*'`).
void add_all_hosts_flag(CLI::App& command, client_context& ctx);

// A loop id as the fleet views print it and the commands take it: "build1:17".
std::string qualified_id(std::string_view host, std::int64_t id);
// A table's columns, after a HOST column when `with_host`.
std::vector<table::column> with_host_column(bool with_host, std::vector<table::column> columns);
// The ID column of a table of loops: right-aligned numbers, or left-aligned qualified ids.
table::column id_column(bool with_host);
// The cells of a row's HOST (when `host` is not "") and ID columns.
void add_host_and_id(table& rows, std::string_view host, std::int64_t id);

}  // namespace ralph::client
