#!/usr/bin/env python3
"""An OpenSSH server for the ssh benchmarks of bench/run.sh: the integration tests' own
(tests/integration/harness.py's SshServer: Debian's sshd on 127.0.0.1 and a free port, keys made
here, a client configuration that trusts that host key alone), so that the benchmarks measure
the set-up the tests check.

    sshd.py DIR NAME PATH SOCKET PID

Starts the server under DIR, its sessions with PATH, RALPH_SOCKET=SOCKET and as HOME an empty
directory; prints its `Host NAME` block for an ssh_config (ssh NAME, or ralphctl --host
ssh://NAME, then reaches it); writes the pid of sshd's listener to DIR/sshd.pid; and runs until
SIGTERM or until process PID (the benchmark's shell) is gone, then stops the server. The
processes of sshd that their parent leaves behind come to this one (a child subreaper), so that
their CPU counts in its own. Needs root, as the tests do (sshd's privilege separation)."""

import ctypes
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import harness  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


def main():
    directory, name, path, socket_path, owner = sys.argv[1:6]
    # sshd's processes of a connection that their parent left unreaped (when the client went
    # away) come to this process, which reaps them: the CPU of every one of them then counts in
    # this process's (what bench/run.sh reads as the server's).
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("bench: prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno()))
    try:
        # The sessions' HOME: an empty directory. The shell that runs a session's command
        # reads ~/.bashrc when it is bash, and root's here sets up pyenv (a hundred processes
        # per session, several times the cost of ssh itself): not what is measured.
        home = os.path.join(directory, "home")
        os.makedirs(home, exist_ok=True)
        server = harness.SshServer(directory, {"PATH": path, "RALPH_SOCKET": socket_path,
                                               "HOME": home})
    except unittest.SkipTest as e:
        sys.exit("bench: cannot run sshd: %s" % e)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    try:
        print(server.host_block(name), flush=True)
        with open(os.path.join(directory, "sshd.pid"), "w") as f:
            f.write("%d\n" % server.proc.pid)
        while not stopping and os.path.exists("/proc/" + owner):
            time.sleep(0.01)
            try:
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            except ChildProcessError:
                pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
