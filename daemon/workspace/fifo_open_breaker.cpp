#include "daemon/workspace/fifo_open_breaker.hpp"

#include <fcntl.h>
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

// What /proc/self/task/<tid>/wchan says a thread sleeps in: the kernel function, or "0" for a
// thread that runs. The wait for a FIFO's other end is in fs/pipe.c's wait_for_partner (inlined
// into fifo_open by some compilers).
bool waits_for_fifo_partner(const std::filesystem::path& task) {
    const std::string path = (task / "wchan").string();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buffer[64];
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (n <= 0) return false;
    const std::string_view wchan(buffer, std::size_t(n));
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
    std::map<pid_t, std::chrono::steady_clock::time_point> waiting_since;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, stop, interval, [&stop] { return stop.stop_requested(); }))
        look(waiting_since);
}

void fifo_open_breaker::look(
    std::map<pid_t, std::chrono::steady_clock::time_point>& waiting_since) {
    const auto now = std::chrono::steady_clock::now();
    std::map<pid_t, std::chrono::steady_clock::time_point> still_waiting;
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
        pid_t tid = 0;
        const std::string name = task.path().filename().string();
        if (std::from_chars(name.data(), name.data() + name.size(), tid).ec != std::errc())
            continue;
        if (!waits_for_fifo_partner(task.path())) continue;
        auto seen = waiting_since.find(tid);
        const auto since = seen == waiting_since.end() ? now : seen->second;
        still_waiting[tid] = since;
        if (now - since < patience_) continue;
        // Again at every look while it still waits (the work may try the open again).
        spdlog::warn("thread {} has waited {} ms to open a FIFO in a workspace: interrupting it",
                     tid,
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count());
        ::tgkill(::getpid(), tid, interrupt_signal);
    }
    waiting_since = std::move(still_waiting);
}

}  // namespace ralph
