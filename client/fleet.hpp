// Every daemon of the hosts file and `local`, asked at once: what `ralphctl hosts` and the
// --all-hosts views (list, top, report, budget, agents) share. A `fleet` keeps each host's
// connection between questions (top asks every interval), each question on a thread of its own.
// At most one question runs per host: a host still answering an earlier question (a host that
// hangs) is not asked again, and its answer is taken by the first question after it came. A
// question that fails drops its host's connection, made again at the next. The views print what
// the hosts that answered said, with a HOST column and loop ids qualified as commands take them
// (`build1:17`), name the hosts that did not answer (stderr, or the frame for top;
// `"unreachable"` in --json) and exit 3 when one did not.
#pragma once

#include "client/commands/commands.hpp"
#include "client/connection.hpp"
#include "client/hosts.hpp"
#include "client/output.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <any>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
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

    // Runs `query` on every host at once, each on its connection, and waits at most `wait` for
    // the answers; the answers in the order of hosts(). A host still answering an earlier
    // question is not asked again: its answer, when it comes within `wait`, is that question's.
    // A host without an answer has the error "no answer for N s", N since its question was
    // asked, and answering(). `query` is copied: it may outlive this call.
    template <typename Result>
    std::vector<host_answer<Result>> ask(std::function<Result(connection&)> query,
                                         std::chrono::milliseconds wait = fleet_timeout) {
        const auto deadline = std::chrono::steady_clock::now() + wait;
        std::unique_lock lock(sync_->mutex);
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            if (links_[i]->asking) continue;
            links_[i]->asking = true;
            links_[i]->asked = std::chrono::steady_clock::now();
            std::thread([sync = sync_, to = links_[i], address = hosts_[i].address, query] {
                host_answer<Result> answer;
                try {
                    if (!to->daemon)
                        to->daemon = std::make_unique<connection>(address, ssh_messages::kept);
                    answer.result = query(*to->daemon);
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
            return std::none_of(links_.begin(), links_.end(),
                                [](const auto& to) { return to->asking; });
        });
        std::vector<host_answer<Result>> answers(hosts_.size());
        const auto now = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            link& to = *links_[i];
            if (auto* answer = std::any_cast<host_answer<Result>>(&to.answer))
                answers[i] = std::move(*answer);
            to.answer.reset();
            if (!answers[i].result && answers[i].error.empty())
                answers[i].error = fmt::format(
                    "no answer for {} s",
                    std::chrono::duration_cast<std::chrono::seconds>(now - to.asked).count());
            errors_[i] = answers[i].error;
        }
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

    // The connection to `host` (a name) if it answered the last question and is not answering
    // another, else nullptr; for what one host is asked besides (top's selected loop, its keys).
    connection* daemon_of(const std::string& host) const;
    // Whether hosts()[host] is still answering a question: its answer is late, not refused.
    bool answering(std::size_t host) const;

    // Why each host did not answer the last question ("" = it did), in the order of hosts().
    const std::vector<std::string>& errors() const { return errors_; }
    // exit_code::ok, or exit_code::unreachable when a host did not answer the last question.
    int exit_code() const;
    // [{"host", "address", "error"}] of the hosts that did not answer the last question.
    nlohmann::json unreachable() const;
    // Prints the --json `document` with "unreachable"; returns exit_code().
    int print_json(nlohmann::json document) const;

  private:
    // A host's connection and its question, shared with the thread that asks it.
    struct link {
        // Made at the host's first question, dropped when one fails; used by the question's
        // thread while `asking`, by daemon_of()'s caller in between.
        std::unique_ptr<connection> daemon;
        // Under sync_'s mutex:
        bool asking = false;                          // a question runs on `daemon`
        std::chrono::steady_clock::time_point asked;  // since then
        std::any answer;  // the last question's host_answer<Result>, until ask() takes it
    };
    struct sync {
        std::mutex mutex;
        std::condition_variable answered;
    };
    // "ralphctl: NAME (ADDRESS): why" on stderr for each host that did not answer.
    void name_down_hosts() const;

    std::vector<host_entry> hosts_;
    std::vector<std::shared_ptr<link>> links_;  // in the order of hosts_
    std::shared_ptr<sync> sync_ = std::make_shared<sync>();
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
