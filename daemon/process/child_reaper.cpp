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
        std::lock_guard lock(mutex_);
        auto it = watched_.find(pid);
        if (it != watched_.end()) {
            it->second.status = status;
            it->second.wake->cancel();
        } else if (spawning_ > 0) {
            unclaimed_.push_back({pid, status});
        }
    }
}

spawned_process child_reaper::spawn(const spawn_request& request) {
    {
        std::lock_guard lock(mutex_);
        ++spawning_;
    }
    spawned_process process;
    try {
        process = spawn_process(request);
    } catch (...) {
        std::lock_guard lock(mutex_);
        if (--spawning_ == 0) unclaimed_.clear();
        throw;
    }
    std::lock_guard lock(mutex_);
    watched& entry = watched_[process.pid];
    entry.wake = std::make_unique<net::steady_timer>(io_, net::steady_timer::time_point::max());
    for (const reaped& child : unclaimed_)
        if (child.pid == process.pid) entry.status = child.status;
    if (--spawning_ == 0) unclaimed_.clear();
    return process;
}

awaitable<int> child_reaper::wait_exit(pid_t pid) {
    // A SIGCHLD may have been coalesced with another; look once before sleeping.
    reap();
    for (;;) {
        net::steady_timer* wake = nullptr;
        {
            std::lock_guard lock(mutex_);
            auto it = watched_.find(pid);
            if (it == watched_.end())
                throw std::logic_error("wait_exit on a pid that spawn() did not start");
            if (it->second.status) {
                const int status = *it->second.status;
                watched_.erase(it);
                co_return status;
            }
            wake = it->second.wake.get();
        }
        // reap() runs on this thread too: no status can come between the look and the wait.
        boost::system::error_code ec;
        co_await wake->async_wait(net::redirect_error(use_awaitable, ec));
    }
}

}  // namespace ralph
