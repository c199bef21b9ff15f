"""The peer-uid check of a remote ralphd applies to the SSH user (client/ssh_dial.hpp).

As root, the test creates a Unix user of its own (harness.UnixUser) and an OpenSSH server whose
only login is that user (harness.SshServer, the user's key in its home). Logged in as the other
user, `ralphctl dial-stdio` towards the socket of a ralphd run by root is refused, exit 3, with
ralphctl's own message naming the owner; a raw connection that gets past ralphctl's checks (the
socket and its directory opened to everyone) is closed by root's ralphd unanswered, its log naming
the SSH user's uid. A ralphd run by that user (its own XDG directories, made by it) is reached
through `ralphctl --host ssh://USER@…`: it answers, and a submitted loop runs as that user and
completes. Skipped when not root.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile

from harness import (RALPHCTL, RALPHD, DaemonTestCase, SshServer, UnixUser, main, require_root,
                     scaled, skip_test, wait_until)

# What the user runs over ssh: a connection to the socket named by argv[1] and one request,
# bypassing ralphctl's checks; prints "closed" when the daemon ends it without answering.
RAW_CLIENT = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
body = b'{"jsonrpc":"2.0","id":1,"method":"daemon.info"}'
try:
    s.sendall(b"POST /rpc HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answer = s.recv(65536)
except OSError:
    answer = b""
print(answer.decode(errors="replace") if answer else "closed")
"""


class SshUserTest(DaemonTestCase):

    def setUp(self):
        require_root("to create a Unix user")
        if not RALPHD or not RALPHCTL:
            skip_test("RALPHD and RALPHCTL are not set (run through meson test)")
        self.user = UnixUser()
        self.addCleanup(self.user.remove)
        # The build's programs, where the user may run them (the build tree may be closed to
        # it): ralphd finds ralph-shim next to itself.
        self.bin = os.path.join(self.user.dir, "bin")
        os.makedirs(self.bin)
        for program in (RALPHD, os.path.join(os.path.dirname(RALPHD), "ralph-shim"), RALPHCTL):
            target = os.path.join(self.bin, os.path.basename(program))
            try:
                os.link(program, target)
            except OSError:
                shutil.copy2(program, target)
        self.user_socket = os.path.join(self.user.home, "run", "ralph", "ralphd.sock")
        self.server = SshServer(self.user.dir, {"PATH": self.bin + ":/usr/bin:/bin",
                                                "RALPH_SOCKET": self.user_socket},
                                user=self.user.name)
        self.addCleanup(self.server.stop)

    def ssh(self, *command, stdin=""):
        """`ssh USER@HOST COMMAND` as ralphctl runs ssh, logged in as the test's user."""
        return subprocess.run(
            self.server.ssh_command.split() +
            ["-o", "BatchMode=yes", "-T", "-p", str(self.server.port), "-l", self.user.name,
             "127.0.0.1"] + list(command),
            input=stdin, capture_output=True, text=True, timeout=scaled(30))

    def remote(self, *args):
        """ralphctl --host ssh://USER@127.0.0.1:PORT ARGS."""
        return self.root_daemon.ctl("--host", self.server.address, *args, check=False,
                                    env={"RALPH_SSH_COMMAND": self.server.ssh_command,
                                         "RALPH_SOCKET": None})

    def start_user_daemon(self):
        """ralphd run as the test's user in XDG directories of its home (which it makes)."""
        env = {name: value for name, value in os.environ.items()
               if not name.startswith(("RALPH", "NOTIFY_", "LISTEN_", "XDG_"))}
        env.update({"HOME": self.user.home, "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
                    "XDG_RUNTIME_DIR": os.path.join(self.user.home, "run"),
                    "XDG_STATE_HOME": os.path.join(self.user.home, "state"),
                    "XDG_CONFIG_HOME": os.path.join(self.user.home, "config")})
        log = open(os.path.join(self.user.dir, "ralphd.log"), "wb")
        self.addCleanup(log.close)
        proc = self.user.popen([os.path.join(self.bin, "ralphd"), "--kill-grace", "1"], env=env,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        status = [os.path.join(self.bin, "ralphctl"), "daemon", "status"]
        wait_until(lambda: proc.poll() is not None or self.user.run(status, env=env).returncode == 0,
                   10, "the user's ralphd to answer")
        self.assertIsNone(proc.poll(), "the user's ralphd exited")
        return proc

    def test_the_ssh_user_reaches_its_own_daemon_and_no_other(self):
        # Root's ralphd, its socket where every user can see its directory's owner.
        socket_dir = tempfile.mkdtemp(prefix="ralph-root-", dir="/tmp")
        self.addCleanup(shutil.rmtree, socket_dir, True)
        self.root_daemon = self.daemon(socket_path=os.path.join(socket_dir, "ralphd.sock"))
        root_socket = self.root_daemon.socket

        refused = self.ssh("ralphctl", "--socket", root_socket, "dial-stdio")
        self.assertEqual(refused.returncode, 3, refused.stderr)
        self.assertIn("refusing to talk to %s: %s belongs to uid 0 (root), not to you (uid %d (%s))"
                      % (root_socket, socket_dir, self.user.uid, self.user.name), refused.stderr)

        # Past ralphctl's checks and the file system's, root's ralphd itself refuses the user.
        os.chmod(socket_dir, 0o711)
        os.chmod(root_socket, 0o666)
        raw = self.ssh("python3", "-", root_socket, stdin=RAW_CLIENT)
        self.assertEqual((raw.returncode, raw.stdout), (0, "closed\n"), raw.stderr)
        self.assertIn("refused a connection from pid", self.root_daemon.log_text())
        self.assertIn("uid %d: only uid 0 may connect" % self.user.uid,
                      self.root_daemon.log_text())

        # The user's own ralphd answers through ssh, and its loops run as the user.
        user_daemon = self.start_user_daemon()
        status = self.remote("--json", "daemon", "status")
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertEqual(json.loads(status.stdout)["daemon"]["pid"], user_daemon.pid)
        workspace = os.path.join(self.user.home, "ws")
        os.mkdir(workspace)
        os.chown(workspace, self.user.uid, self.user.gid)
        submitted = self.remote("--json", "submit", "--workspace", workspace, "--command",
                                "/bin/sh -c 'id -u; echo \"<promise>COMPLETE</promise>\"'",
                                "--max-iterations", "1", "--delay", "0s", "whoami")
        self.assertEqual(submitted.returncode, 0, submitted.stderr)
        loop_id = json.loads(submitted.stdout)["loop"]["id"]
        output = self.remote("tail", "-f", "--raw", str(loop_id))  # until the loop ends
        self.assertEqual(output.stdout, "%d\n<promise>COMPLETE</promise>\n" % self.user.uid,
                         output.stderr)
        listed = self.remote("--json", "list")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual([(l["id"], l["state"]) for l in json.loads(listed.stdout)["loops"]],
                         [(loop_id, "completed")])
        self.assertEqual(self.root_daemon.call("loop.list", {})["loops"], [])

        user_daemon.send_signal(signal.SIGINT)
        self.assertEqual(user_daemon.wait(timeout=scaled(20)), 0)


if __name__ == "__main__":
    main()
