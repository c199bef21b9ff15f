// The one way ralphctl starts another program: ssh (ssh_dial), an agent's `--version` (agents,
// doctor) and the browser (web --open). posix_spawn, never a shell; the child's stdin, stdout and
// stderr on the descriptors given, else ralphctl's own; every other descriptor of ralphctl is
// close-on-exec, so the child gets nothing else.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ralph::client {

// Where a child's standard streams go: a descriptor, or -1 for ralphctl's own.
struct child_stdio {
    int in = -1;
    int out = -1;
    int err = -1;
};

// Starts `argv` (argv[0] is looked up on PATH when it has no '/'); its pid. Throws
// std::system_error with the reason it could not start (ENOENT: no such program).
pid_t spawn_process(const std::vector<std::string>& argv, const child_stdio& stdio = {});

// Waits for the child `pid` to end (through signals that interrupt the wait); its wait status.
int wait_process(pid_t pid);

}  // namespace ralph::client
