// ralphctl's named hosts: the hosts file ($XDG_CONFIG_HOME/ralph/hosts, paths.hpp) names the
// daemons ralphctl may reach, one per line, `NAME ADDRESS` (ADDRESS: ssh://[USER@]HOST[:PORT],
// unix://PATH or a socket path; `#` starts a comment). `local` is always there: this machine's
// daemon at the default socket. `--host NAME` takes a name; `ralphctl hosts` asks
// every host at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ralph::client {

struct host_entry {
    std::string name;
    std::string address;
};

// `local` (at `local_address`), then the hosts file's hosts in its order. A client_error (usage)
// names the line of a malformed file; a missing file is no error.
std::vector<host_entry> read_hosts(const std::string& local_address);

// What --host (or $RALPH_HOST) names: an address as it is (with "://" or a "/"), else a host of
// the hosts file by name; a client_error (usage) lists the names for an unknown one.
std::string resolve_host(const std::string& value, const std::string& local_address);

// `--host auto`: not a host but `submit`'s placement on the host with the most room
// (client/placement.hpp); no host of the hosts file may have this name.
inline constexpr std::string_view placement_host = "auto";

// One host's answer to ask_hosts: its result, or why there is none.
template <typename Result>
struct host_answer {
    std::optional<Result> result;
    std::string error;
};

// Runs `query` for every host at once, each on a thread of its own, and waits for all of them
// at most `timeout`: a host that is down or slow delays the others no longer than that. A query
// still running then is left to finish or die with ralphctl, and answers "no answer within …".
// A query reports a failure by throwing; its message is the answer's error.
template <typename Result>
std::vector<host_answer<Result>> ask_hosts(const std::vector<host_entry>& hosts,
                                           std::chrono::milliseconds timeout,
                                           std::function<Result(const host_entry&)> query) {
    struct shared {
        std::mutex mutex;
        std::condition_variable done;
        std::vector<host_answer<Result>> answers;
        std::size_t left = 0;
    };
    auto state = std::make_shared<shared>();
    state->answers.resize(hosts.size());
    state->left = hosts.size();
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        std::thread([state, i, host = hosts[i], query] {
            host_answer<Result> answer;
            try {
                answer.result = query(host);
            } catch (const std::exception& e) {
                answer.error = e.what();
            }
            std::lock_guard lock(state->mutex);
            state->answers[i] = std::move(answer);
            --state->left;
            state->done.notify_all();
        }).detach();
    }
    std::unique_lock lock(state->mutex);
    state->done.wait_for(lock, timeout, [&] { return state->left == 0; });
    std::vector<host_answer<Result>> answers = state->answers;
    for (auto& answer : answers)
        if (!answer.result && answer.error.empty())
            answer.error = "no answer within " + std::to_string(timeout.count() / 1000) + " s";
    return answers;
}

}  // namespace ralph::client
