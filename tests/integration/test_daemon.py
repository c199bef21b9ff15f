"""The ralphd process: default paths and their permissions, daemon.info, refusing a second
daemon on a live socket, replacing a stale socket file, and refusing other uids."""

import json
import os
import socket
import stat
import subprocess
import sys

from harness import (RALPHD, DaemonTestCase, agent_command, main, parse_time, scaled)

# Run by a child process: drops to uid/gid 65534 but keeps CAP_DAC_OVERRIDE, so file permissions
# (dir 0700, socket 0600) do not stop it and only the daemon's SO_PEERCRED check can refuse it.
PEER_SCRIPT = r"""
import ctypes, json, socket, sys
out = {"dropped": False}
try:
    libc = ctypes.CDLL(None, use_errno=True)
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]
    import os
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    if libc.prctl(8, 1, 0, 0, 0) != 0:  # PR_SET_KEEPCAPS
        raise OSError("prctl")
    os.setresuid(65534, 65534, 65534)
    data = (Data * 2)()
    data[0].effective = data[0].permitted = 1 << 1  # CAP_DAC_OVERRIDE
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
        raise OSError("capset")
    out["dropped"] = os.getuid() == 65534
except Exception as e:
    out["error"] = repr(e)
    print(json.dumps(out)); sys.exit(0)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
    out["connected"] = True
    body = b'{"jsonrpc":"2.0","id":1,"method":"daemon.info"}'
    s.sendall(b"POST /rpc HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
        if b"\r\n\r\n" in reply and b'"jsonrpc"' in reply:
            break
    out["reply"] = reply.decode(errors="replace")
except Exception as e:
    out["connect_error"] = repr(e)
print(json.dumps(out))
"""


class DaemonProcessTest(DaemonTestCase):

    def test_with_default_paths_the_socket_is_0600_in_a_0700_directory_and_the_db_is_in_xdg_state_home(self):
        d = self.daemon(default_paths=True)
        # SPEC §2: $XDG_RUNTIME_DIR/ralph/ralphd.sock; SPEC §6: $XDG_STATE_HOME/ralph/ralph.db
        sock_dir = os.path.dirname(d.socket)
        self.assertEqual(stat.S_IMODE(os.stat(sock_dir).st_mode), 0o700)
        st = os.stat(d.socket)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        info = d.call("daemon.info")
        self.assertEqual(os.path.realpath(info["socket"]), os.path.realpath(d.socket))
        self.assertEqual(os.path.realpath(info["database"]), os.path.realpath(d.db))
        self.assertTrue(os.path.isfile(d.db))

        # The client finds the daemon through the same XDG variables (no RALPH_SOCKET).
        proc = d.ctl("daemon", "status", env={"RALPH_SOCKET": None})
        self.assertEqual(proc.returncode, 0)

        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", 1))
        d.wait_state(loop["id"], "completed", timeout=20)
        self.assertTrue(os.path.isdir(os.path.join(os.path.dirname(d.db), "output")),
                        "output files live next to the database")

    def test_daemon_info_reports_versions_pid_paths_and_settings(self):
        d = self.daemon(extra_args=["--max-concurrent", "2"])
        info = d.call("daemon.info")
        self.assertIsInstance(info["version"], str)
        self.assertTrue(info["version"])
        self.assertEqual(info["protocol_version"], 1)
        self.assertEqual(info["pid"], d.pid)
        self.assertEqual(info["socket"], d.socket)
        self.assertEqual(os.path.realpath(info["database"]), os.path.realpath(d.db))
        self.assertIsNotNone(parse_time(info["started_at"]))
        self.assertEqual(info["max_concurrent"], 2)
        self.assertIsInstance(info["loops_by_state"], dict)

    def test_a_second_ralphd_on_the_same_socket_is_refused_and_the_first_keeps_working(self):
        d = self.daemon()
        inode = os.stat(d.socket).st_ino
        other_state = os.path.join(d.root, "state2")
        os.makedirs(other_state, mode=0o700)
        proc = subprocess.run([RALPHD, "--socket", d.socket, "--db",
                               os.path.join(other_state, "ralph.db"), "--kill-grace", "1"],
                              env=d.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=scaled(20))
        self.assertEqual(proc.returncode, 1, proc)
        message = proc.stderr + proc.stdout
        self.assertIn("another ralphd is listening", message)
        self.assertIn(d.socket, message)

        self.assertTrue(d.running())
        self.assertEqual(os.stat(d.socket).st_ino, inode, "the live socket file was not touched")
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)
        self.assertEqual(d.ctl("daemon", "status").returncode, 0)

    def test_a_stale_socket_file_is_replaced(self):
        d = self.new_daemon_unstarted()
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(d.socket)  # bound, never listening, then closed: the file stays behind
        stale.close()
        self.assertTrue(stat.S_ISSOCK(os.stat(d.socket).st_mode))
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with self.assertRaises(ConnectionRefusedError):
            probe.connect(d.socket)
        probe.close()

        d.start()
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)
        self.assertEqual(stat.S_IMODE(os.stat(d.socket).st_mode), 0o600)

    def test_a_connection_from_another_uid_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to connect as another uid (as another user, the socket's "
                          "permissions already refuse us before the peer-uid check)")
        d = self.daemon()
        proc = subprocess.run([sys.executable, "-c", PEER_SCRIPT, d.socket],
                              capture_output=True, text=True, timeout=scaled(30),
                              stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        if not out.get("dropped") or out.get("connect_error", "").startswith("PermissionError"):
            self.skipTest("cannot connect as uid 65534 with CAP_DAC_OVERRIDE here: %r" % out)
        reply = out.get("reply", "")
        self.assertNotIn('"result"', reply, "a foreign uid got an answer: %r" % out)
        if reply:
            status = reply.split("\r\n", 1)[0].split(" ")
            self.assertGreaterEqual(int(status[1]), 400, reply)
        # Refused and logged, and the daemon goes on serving its owner.
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)
        self.assertIn("65534", d.log_text(), "the refused uid is logged")


if __name__ == "__main__":
    main()
