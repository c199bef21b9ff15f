#include "daemon/workspace/fifo_open_breaker.hpp"

#include "common/process_info.hpp"

#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ralph {

namespace {

// SIGURG: ignored by default, so one that arrives before the handler is in place (or from
// elsewhere) ends nothing; ralphd has no socket that would be sent it.
constexpr int interrupt_signal = SIGURG;

void interrupted(int) {}

// After an interruption, how long the thread's further FIFO waits are interrupted at once, and
// how often it is looked at meanwhile.
constexpr std::chrono::minutes burst_window{1};
constexpr std::chrono::milliseconds burst_interval{10};

// What /proc/self/task/<tid>/wchan says a thread sleeps in: the kernel function, or "0" for a
// thread that runs. The wait for a FIFO's other end is in fs/pipe.c's wait_for_partner (inlined
// into fifo_open by some compilers).
bool waits_for_fifo_partner(const std::filesystem::path& task) {
    const std::string wchan = read_proc_text((task / "wchan").string());
    return wchan == "wait_for_partner" || wchan == "fifo_open";
}

}  // namespace

fifo_open_breaker::fifo_open_breaker(std::chrono::milliseconds patience) : patience_(patience) {
    struct sigaction action {};
    action.sa_handler = interrupted;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: the interrupted open fails with EINTR
    if (::sigaction(interrupt_signal, &action, nullptr) != 0)
        throw std::runtime_error(std::string("sigaction: ") + std::strerror(errno));
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, interrupt_signal);
    ::pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
    thread_ = std::jthread([this](std::stop_token stop) { watch(stop); });
}

fifo_open_breaker::~fifo_open_breaker() {
    thread_.request_stop();
    thread_.join();
}

void fifo_open_breaker::watch(std::stop_token stop) {
    // Seen often enough to act within about a second after `patience`, and not more often.
    const auto interval =
        std::min<std::chrono::milliseconds>(std::chrono::seconds(1), patience_ / 4);
    bool burst = false;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, stop, burst ? burst_interval : interval,
                           [&stop] { return stop.stop_requested(); }))
        burst = look();
}

bool fifo_open_breaker::look() {
    const auto now = std::chrono::steady_clock::now();
    std::map<pid_t, time_point> waiting;
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
        pid_t tid = 0;
        const std::string name = task.path().filename().string();
        if (std::from_chars(name.data(), name.data() + name.size(), tid).ec != std::errc())
            continue;
        if (!waits_for_fifo_partner(task.path())) continue;
        const auto seen = waiting_since_.find(tid);
        const time_point since = seen == waiting_since_.end() ? now : seen->second;
        waiting[tid] = since;
        const auto last = interrupted_at_.find(tid);
        const bool recently = last != interrupted_at_.end() && now - last->second < burst_window;
        if (!recently && now - since < patience_) continue;
        // Said once per burst: the work's own error names the files.
        if (!recently)
            spdlog::warn(
                "thread {} has waited {} ms to open a FIFO: interrupting it, and at once any FIFO "
                "it waits for in the next minute",
                tid, std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count());
        ::tgkill(::getpid(), tid, interrupt_signal);
        interrupted_at_[tid] = now;
    }
    waiting_since_ = std::move(waiting);
    std::erase_if(interrupted_at_,
                  [now](const auto& entry) { return now - entry.second >= burst_window; });
    return !interrupted_at_.empty();
}

}  // namespace ralph
