// What the kernel says of a process in /proc/<pid>/stat: its parent, its process group and its
// start time, which with the pid identifies one process (a pid may be reused; the pair may not).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ralph {

struct process_stat {
    pid_t ppid = 0;
    pid_t pgrp = 0;
    std::int64_t start_time = 0;  // clock ticks since boot
};

// The text of a small file of /proc (its first 4 KiB), "" when it cannot be read. Plain
// read(2): this runs for every agent started, and iostreams cost more than the read.
std::string read_proc_text(const std::string& path);

// False when there is no such process (or its stat cannot be read).
bool read_process_stat(pid_t pid, process_stat& stat);
// The kernel's start time of `pid`, 0 if there is no such process.
std::int64_t process_start_time(pid_t pid);

}  // namespace ralph
