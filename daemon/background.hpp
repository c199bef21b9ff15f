// ralphd --daemonize (ralphctl daemon start): ralphd in the background without systemd (WSL,
// containers). The process forks twice, the daemon in a session of its own without a terminal;
// the first process waits until the daemon listens or has failed, copies to its own stderr what
// the daemon said meanwhile (an error: another ralphd holds the database, the socket is taken),
// and exits 0 or 1 with it, so that whoever started ralphd knows at once. The daemon then logs to
// its --log-file (by default ralphd.log in the state directory: state_dir.hpp).
#pragma once

namespace ralph {

class background {
  public:
    // Forks. Returns in the daemon only: the first process exits with the daemon's outcome.
    static background start();
    // The daemon is ready (its socket listens): its stdin, stdout and stderr go to /dev/null, and
    // the first process exits 0.
    void ready();

  private:
    explicit background(int ready_fd) : ready_fd_(ready_fd) {}
    int ready_fd_;
};

}  // namespace ralph
