// Reaps every child of the daemon on SIGCHLD and hands the exit status of watched pids to the
// coroutine awaiting it. The daemon is a child subreaper (PR_SET_CHILD_SUBREAPER), so agent
// grandchildren whose parent died are re-parented to it and reaped here too, not left as zombies.
#pragma once

#include "common/asio.hpp"

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>

namespace ralph {

class child_reaper {
  public:
    explicit child_reaper(net::io_context& io);

    // Must be called right after spawning, before control returns to the io_context.
    void watch(pid_t pid);
    // Completes with the wait status (as from waitpid) once the process exited.
    awaitable<int> wait_exit(pid_t pid);

  private:
    struct watched {
        std::optional<int> status;
        std::unique_ptr<net::steady_timer> wake;  // cancelled when the status arrives
    };
    void start_signal_wait();
    void reap();

    net::io_context& io_;
    net::signal_set sigchld_;
    std::map<pid_t, watched> watched_;
};

}  // namespace ralph
