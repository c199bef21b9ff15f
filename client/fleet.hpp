// Every daemon of the hosts file and `local`, asked at once: what `ralphctl hosts`, placement
// (`submit --host auto`) and the --all-hosts views (list, top, report, budget, agents) share. A
// `fleet` keeps each host's connection between questions (top asks every interval), each question
// on a thread of its own. At most one question runs per host: a host still answering an earlier
// question (a host that hangs) is not asked again, and its answer is taken by the first question
// after it came; every question of a fleet has the one answer type, `Result`. A question that
// fails drops its host's connection, made again at the next. The views print what the hosts that
// answered said, with a HOST column and loop ids qualified as commands take them (`build1:17`),
// name the hosts that did not answer (stderr, or the frame for top; `"unreachable"` in --json)
// and exit 3 when one did not.
#pragma once

#include "client/commands/commands.hpp"
#include "client/connection.hpp"
#include "client/hosts.hpp"
#include "client/output.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ralph::client {

// How long a question waits for the hosts: one that is down or slow delays the others no longer.
inline constexpr std::chrono::seconds fleet_timeout{10};

// One host's answer to a question: its result, or why there is none.
template <typename Result>
struct host_answer {
    std::optional<Result> result;
    std::string error;
};

// The answer of a host that gave one.
template <typename Result>
struct host_result {
    std::string host;  // its name in the hosts file
    Result result;
};

// The hosts of a fleet and why each did not answer its last question: what every fleet view
// prints besides the answers.
class fleet_hosts {
  public:
    const std::vector<host_entry>& hosts() const { return hosts_; }
    // Why each host did not answer its last question ("" = it did), in the order of hosts().
    const std::vector<std::string>& errors() const { return errors_; }
    // exit_code::ok, or exit_code::unreachable when a host did not answer its last question.
    int exit_code() const;
    // [{"host", "address", "error"}] of the hosts that did not answer their last question.
    nlohmann::json unreachable() const;
    // Prints the --json `document` with "unreachable"; returns exit_code().
    int print_json(nlohmann::json document) const;

  protected:
    // "ralphctl: NAME (ADDRESS): why" on stderr for each host that did not answer.
    void name_down_hosts() const;

    // The hosts of the hosts file and `local` (at `local_address`).
    explicit fleet_hosts(const std::string& local_address);

    std::vector<host_entry> hosts_;
    std::vector<std::string> errors_;  // in the order of hosts_
};

template <typename Result>
class fleet : public fleet_hosts {
  public:
    explicit fleet(const std::string& local_address) : fleet_hosts(local_address) {
        for (std::size_t i = 0; i < hosts_.size(); ++i) links_.push_back(std::make_shared<link>());
    }

    // Runs `query` on every host at once, each on its connection, and waits at most `wait` for
    // the answers; the answers in the order of hosts() (see ask_each).
    std::vector<host_answer<Result>> ask(std::function<Result(connection&)> query,
                                         std::chrono::milliseconds wait = fleet_timeout) {
        return ask_each([query](connection& daemon, std::size_t) { return query(daemon); },
                        std::vector<bool>(hosts_.size(), true), wait);
    }

    // Runs `query(daemon, i)` on each host i that `asked[i]` names, at once, and waits at most
    // `wait` for them; the answers in the order of hosts(). A host still answering an earlier
    // question is not asked again: its answer, when it comes within `wait`, is this question's.
    // A host asked, or still answering, that has not answered has the error "no answer for N s",
    // N since its question was asked, and answering(). A host not asked has the answer of an
    // earlier question if it came since, else neither a result nor an error (and keeps its
    // error). `query` is copied: it may outlive this call.
    std::vector<host_answer<Result>> ask_each(
        std::function<Result(connection&, std::size_t host)> query, const std::vector<bool>& asked,
        std::chrono::milliseconds wait = fleet_timeout) {
        const auto deadline = std::chrono::steady_clock::now() + wait;
        std::unique_lock lock(sync_->mutex);
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            if (!asked[i] || links_[i]->asking) continue;
            links_[i]->asking = true;
            links_[i]->asked = std::chrono::steady_clock::now();
            std::thread([sync = sync_, to = links_[i], address = hosts_[i].address, query, i] {
                host_answer<Result> answer;
                try {
                    if (!to->daemon)
                        to->daemon = std::make_unique<connection>(address, ssh_messages::kept);
                    answer.result = query(*to->daemon, i);
                } catch (const std::exception& e) {
                    answer.error = e.what();
                    to->daemon.reset();
                }
                std::lock_guard answered(sync->mutex);
                to->answer = std::move(answer);
                to->asking = false;
                sync->answered.notify_all();
            }).detach();
        }
        sync_->answered.wait_until(lock, deadline, [&] {
            for (std::size_t i = 0; i < hosts_.size(); ++i)
                if (asked[i] && links_[i]->asking) return false;
            return true;
        });
        std::vector<host_answer<Result>> answers(hosts_.size());
        const auto now = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            link& to = *links_[i];
            if (to.answer) {
                answers[i] = std::move(*to.answer);
                to.answer.reset();
            } else if (asked[i] || to.asking) {
                answers[i].error = fmt::format(
                    "no answer for {} s",
                    std::chrono::duration_cast<std::chrono::seconds>(now - to.asked).count());
            } else {
                continue;
            }
            errors_[i] = answers[i].error;
        }
        return answers;
    }

    // One question for a command that prints once: the answers of the hosts that gave one, in
    // the order of hosts(); the others are named on stderr.
    std::vector<host_result<Result>> ask_once(std::function<Result(connection&)> query) {
        auto answers = ask(std::move(query));
        std::vector<host_result<Result>> answered;
        for (std::size_t i = 0; i < answers.size(); ++i)
            if (answers[i].result)
                answered.push_back({hosts_[i].name, std::move(*answers[i].result)});
        name_down_hosts();
        return answered;
    }

    // Whether hosts()[host] is still answering a question: its answer is late, not refused.
    bool answering(std::size_t host) const {
        std::lock_guard lock(sync_->mutex);
        return links_[host]->asking;
    }

  private:
    // A host's connection and its question, shared with the thread that asks it.
    struct link {
        // Made at the host's first question, dropped when one fails; used only by the
        // question's thread.
        std::unique_ptr<connection> daemon;
        // Under sync_'s mutex:
        bool asking = false;                          // a question runs on `daemon`
        std::chrono::steady_clock::time_point asked;  // since then
        std::optional<host_answer<Result>> answer;    // the last question's, until asked for
    };
    struct sync {
        std::mutex mutex;
        std::condition_variable answered;
    };

    std::vector<std::shared_ptr<link>> links_;  // in the order of hosts_
    std::shared_ptr<sync> sync_ = std::make_shared<sync>();
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
