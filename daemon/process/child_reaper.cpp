#include "daemon/process/child_reaper.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

namespace ralph {

child_reaper::child_reaper(net::io_context& io) : io_(io), sigchld_(io, SIGCHLD) {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        spdlog::warn(
            "cannot become a child subreaper: orphaned agent processes will not be reaped");
    start_signal_wait();
}

void child_reaper::start_signal_wait() {
    sigchld_.async_wait([this](boost::system::error_code ec, int) {
        if (ec) return;
        reap();
        start_signal_wait();
    });
}

void child_reaper::reap() {
    while (true) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        auto it = watched_.find(pid);
        if (it == watched_.end()) continue;  // a re-parented grandchild
        it->second.status = status;
        it->second.wake->cancel();
    }
}

void child_reaper::watch(pid_t pid) {
    watched_[pid].wake =
        std::make_unique<net::steady_timer>(io_, net::steady_timer::time_point::max());
}

awaitable<int> child_reaper::wait_exit(pid_t pid) {
    auto it = watched_.find(pid);
    if (it == watched_.end()) throw std::logic_error("wait_exit on a pid that is not watched");
    // A SIGCHLD may have been coalesced with another; look once before sleeping.
    reap();
    while (!it->second.status) {
        boost::system::error_code ec;
        co_await it->second.wake->async_wait(net::redirect_error(use_awaitable, ec));
    }
    int status = *it->second.status;
    watched_.erase(it);
    co_return status;
}

}  // namespace ralph
