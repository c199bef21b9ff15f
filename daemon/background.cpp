#include "daemon/background.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace ralph {
namespace {

// After the daemon said it is ready, what it wrote before is read for this long at most: a
// process it started meanwhile may hold its stderr open.
constexpr int drain_ms = 1000;

// Copies what can be read of `fd` to stderr; false at its end (or an error).
bool copy_to_stderr(int fd) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return false;
    return ::write(STDERR_FILENO, buffer, size_t(n)) == n;
}

// The first process: forwards the daemon's stderr until the daemon is ready (a byte on
// `ready_fd`) or gone (end of file), then exits with that outcome.
[[noreturn]] void wait_for_daemon(int stderr_fd, int ready_fd, pid_t middle) {
    int code = EXIT_FAILURE;
    // A negative fd is one poll skips: the daemon's stderr once it ended.
    pollfd fds[2] = {{stderr_fd, POLLIN, 0}, {ready_fd, POLLIN, 0}};
    for (bool waiting = true; waiting;) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if ((fds[0].revents & (POLLIN | POLLHUP)) != 0 && !copy_to_stderr(stderr_fd))
            fds[0].fd = -1;
        if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) {
            char byte = 0;
            code = ::read(ready_fd, &byte, 1) == 1 ? EXIT_SUCCESS : EXIT_FAILURE;
            waiting = false;
        }
    }
    // What it wrote before its ready byte or its exit.
    while (fds[0].fd >= 0 && ::poll(fds, 1, drain_ms) > 0)
        if (!copy_to_stderr(stderr_fd)) fds[0].fd = -1;
    ::waitpid(middle, nullptr, 0);
    ::_exit(code);
}

void redirect(int fd, int to) {
    if (::dup2(to, fd) < 0) throw std::system_error(errno, std::generic_category(), "dup2");
}

}  // namespace

background background::start() {
    int stderr_pipe[2];
    int ready_pipe[2];
    if (::pipe2(stderr_pipe, O_CLOEXEC) != 0 || ::pipe2(ready_pipe, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "--daemonize: pipe");
    std::fflush(nullptr);
    const pid_t middle = ::fork();
    if (middle < 0) throw std::system_error(errno, std::generic_category(), "--daemonize: fork");
    if (middle > 0) {
        ::close(stderr_pipe[1]);
        ::close(ready_pipe[1]);
        wait_for_daemon(stderr_pipe[0], ready_pipe[0], middle);
    }
    ::close(stderr_pipe[0]);
    ::close(ready_pipe[0]);
    // A session of its own, and a second fork so that the daemon, which leads no session, never
    // gets a controlling terminal back.
    ::setsid();
    const pid_t daemon = ::fork();
    if (daemon < 0) ::_exit(EXIT_FAILURE);
    if (daemon > 0) ::_exit(EXIT_SUCCESS);
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) throw std::system_error(errno, std::generic_category(), "open /dev/null");
    redirect(STDIN_FILENO, null);
    redirect(STDOUT_FILENO, null);
    // Its errors until it is ready go to whoever started it.
    redirect(STDERR_FILENO, stderr_pipe[1]);
    ::close(stderr_pipe[1]);
    ::close(null);
    return background(ready_pipe[1]);
}

void background::ready() {
    if (ready_fd_ < 0) return;
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        ::dup2(null, STDERR_FILENO);
        ::close(null);
    }
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = ::write(ready_fd_, &byte, 1);
    ::close(ready_fd_);
    ready_fd_ = -1;
}

}  // namespace ralph
