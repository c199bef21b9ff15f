// A workspace is the agent's: it can put a FIFO where ralphd reads a file (a .gitignore, the
// repository's .git/config, ...). libgit2 opens such files without O_NONBLOCK, so open(2) would
// wait for a writer that never comes, and with it the pool thread that every loop's snapshots,
// starts and checks need; `daemon stop` would wait too. No ralphd thread ever needs to wait for
// a FIFO's other end, so one that has waited `patience` is interrupted: a signal without
// SA_RESTART makes its open fail with EINTR, and the work reports the file it could not read.
// Every FIFO the same thread waits for in the minute after is interrupted at once.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stop_token>
#include <thread>

namespace ralph {

class fifo_open_breaker {
  public:
    // Installs the signal's handler and starts looking, at most every second, at what the
    // process's threads wait for (/proc/self/task/*/wchan). Threads created later inherit the
    // signal mask of their creator: the signal must not be blocked in the ones to protect.
    explicit fifo_open_breaker(std::chrono::milliseconds patience = std::chrono::seconds(5));
    fifo_open_breaker(const fifo_open_breaker&) = delete;
    fifo_open_breaker& operator=(const fifo_open_breaker&) = delete;
    // Stops looking. Destroy it after the threads it protects are joined.
    ~fifo_open_breaker();

  private:
    using time_point = std::chrono::steady_clock::time_point;
    void watch(std::stop_token stop);
    // One look at every thread: interrupts those seen waiting `patience_`, and at once those it
    // interrupted less than a minute ago (a repository can hold a FIFO in every directory).
    // True while such a recently interrupted thread remains: the next look then comes soon.
    bool look();

    const std::chrono::milliseconds patience_;
    // The watcher's own (no other thread touches them): the threads seen waiting for a FIFO's
    // other end, since when; the threads interrupted, when last.
    std::map<pid_t, time_point> waiting_since_;
    std::map<pid_t, time_point> interrupted_at_;
    std::mutex mutex_;
    std::condition_variable_any wake_;  // only woken by the stop request
    std::jthread thread_;               // last: started once the rest is ready
};

}  // namespace ralph
