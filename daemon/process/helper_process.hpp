// The daemon's short-lived helper processes — a loop's --verify check, the on-done hooks — as
// opposed to agents: their output is not persisted, only a bounded part of it is kept for a
// record or the log. Started with spawn_process (own process group, no shell) and watched by
// the child_reaper like agents, so nothing here blocks the io thread.
#pragma once

#include "common/asio.hpp"
#include "daemon/process/process.hpp"

#include <chrono>
#include <cstddef>
#include <string>

namespace ralph {

class child_reaper;

// What is kept of a helper's stdout and stderr: at most `limit` bytes of each, its first or its
// last ones. The rest is read and dropped, so that a talkative helper never blocks on a full pipe.
struct helper_output {
    enum class part { head, tail };
    part keep = part::tail;
    std::size_t limit = 16 << 10;
    std::string out;
    std::string err;
    bool truncated = false;  // some output was dropped
};

// Waits for a spawned helper, already watched by `reaper`, to end: reads its two pipes at once,
// takes its wait status from the reaper, then kills (SIGKILL) whatever it left running in its
// process group, so that its pipes close; a process that left the group (setsid) and holds them
// is given up on after a second. Returns the wait status. Time limits are the caller's: signal
// the process group meanwhile.
awaitable<int> finish_helper(net::io_context& io, child_reaper& reaper,
                             const spawned_process& process, helper_output& output);

// Starts `request` as a helper (on the pool `blocking`: a spawn blocks) and finishes it as
// finish_helper does; once `limit` has passed, its process group is killed (SIGKILL). Returns its
// wait status; when it could not be started, -1 with the reason in output.err.
struct helper_run {
    int status = -1;
    bool timed_out = false;
};
awaitable<helper_run> run_helper(net::io_context& io, net::thread_pool& blocking,
                                 child_reaper& reaper, const spawn_request& request,
                                 std::chrono::milliseconds limit, helper_output& output);

}  // namespace ralph
