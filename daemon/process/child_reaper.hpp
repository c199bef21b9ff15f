// Reaps every child of the daemon on SIGCHLD and hands the exit status of the processes it
// started to the coroutine awaiting it. The daemon is a child subreaper (PR_SET_CHILD_SUBREAPER),
// so grandchildren whose parent died are re-parented to it and reaped here too, not left as
// zombies. Starting a process takes milliseconds, so it runs on a pool thread: the reaper keeps
// the status of a child reaped before its start returned, and a mutex guards its state.
#pragma once

#include "common/asio.hpp"
#include "daemon/process/process.hpp"

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace ralph {

class child_reaper {
  public:
    explicit child_reaper(net::io_context& io);

    // spawn_process(request), its exit status kept for wait_exit; on any thread. Throws what
    // spawn_process throws.
    spawned_process spawn(const spawn_request& request);
    // On the io thread: completes with the wait status (as from waitpid) of a process of spawn()
    // once it exited.
    awaitable<int> wait_exit(pid_t pid);

  private:
    struct watched {
        std::optional<int> status;
        std::unique_ptr<net::steady_timer> wake;  // cancelled when the status arrives
    };
    struct reaped {
        pid_t pid;
        int status;
    };
    void start_signal_wait();
    void reap();

    net::io_context& io_;
    net::signal_set sigchld_;
    std::mutex mutex_;  // guards the three below
    std::map<pid_t, watched> watched_;
    // While a spawn() is in progress: the statuses of children that were not watched when reaped
    // (its child may be one of them; pids are not reused that soon). Otherwise empty: such a child
    // is a re-parented grandchild.
    int spawning_ = 0;
    std::vector<reaped> unclaimed_;
};

}  // namespace ralph
