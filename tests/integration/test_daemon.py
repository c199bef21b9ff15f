"""The ralphd process: default paths and their permissions, daemon.info, refusing a second
daemon on a live socket, replacing a stale socket file, refusing other uids, and the config file
with its reload at SIGHUP."""

import json
import os
import signal
import socket
import stat
import subprocess
import sys

from harness import (RALPHD, DaemonTestCase, agent_command, main, parse_time, require_root,
                     scaled, skip_test, wait_until)

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
        # README, "The daemon": $XDG_RUNTIME_DIR/ralph/ralphd.sock, $XDG_STATE_HOME/ralph/ralph.db
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
        require_root("to connect as another uid (as another user, the socket's permissions "
                     "already refuse us before the peer-uid check)")
        d = self.daemon()
        proc = subprocess.run([sys.executable, "-c", PEER_SCRIPT, d.socket],
                              capture_output=True, text=True, timeout=scaled(30),
                              stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        if not out.get("dropped") or out.get("connect_error", "").startswith("PermissionError"):
            skip_test("cannot connect as uid 65534 with CAP_DAC_OVERRIDE here: %r" % out)
        reply = out.get("reply", "")
        self.assertNotIn('"result"', reply, "a foreign uid got an answer: %r" % out)
        if reply:
            status = reply.split("\r\n", 1)[0].split(" ")
            self.assertGreaterEqual(int(status[1]), 400, reply)
        # Refused and logged, and the daemon goes on serving its owner.
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)
        self.assertIn("65534", d.log_text(), "the refused uid is logged")


class ConfigTest(DaemonTestCase):

    def write_config(self, d, text):
        path = os.path.join(d.config_dir, "ralph", "ralphd.conf")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def max_concurrent(self, d):
        return d.call("scheduler.get")["max_concurrent"]

    def reload(self, d, expected_log):
        """SIGHUP, then waits for the line the reload logs."""
        seen = d.log_text().count(expected_log)
        os.kill(d.pid, signal.SIGHUP)
        wait_until(lambda: d.log_text().count(expected_log) > seen, scaled(10),
                   "ralphd to log %r" % expected_log)

    def test_the_config_file_sets_options_and_sighup_reads_it_again(self):
        d = self.new_daemon_unstarted()
        self.write_config(d, "# ralphd.conf\nmax-concurrent = 3\nlog-level = \"warn\"\n")
        d.start()
        self.assertEqual(self.max_concurrent(d), 3)

        # SIGHUP: a new value, a daemon-wide hook and a log level take effect without a restart.
        records = os.path.join(d.root, "hook-records")
        os.makedirs(records)
        hook = agent_command("hook.py", "record", records)
        self.write_config(d, "max-concurrent = 4\nlog-level = \"info\"\non-done = %s\n"
                          % json.dumps(hook))
        self.reload(d, "SIGHUP: configuration reloaded")
        self.assertEqual(self.max_concurrent(d), 4)
        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", 1), name="hooked")
        d.wait_state(loop["id"], ["completed"])
        wait_until(lambda: os.path.exists(os.path.join(records, "daemon-%d.json" % loop["id"])),
                   scaled(10), "the reloaded on-done hook to run")

        # A file that does not parse changes nothing, and the daemon goes on.
        self.write_config(d, "max-concurent = 5\n")  # misspelt
        self.reload(d, "the configuration was not reloaded")
        self.assertIn("max-concurent", d.log_text())
        self.assertEqual(self.max_concurrent(d), 4)
        self.write_config(d, "max-concurrent = 0\n")  # out of range
        self.reload(d, "the configuration was not reloaded")
        self.assertEqual(self.max_concurrent(d), 4)
        d.stop()

        # At start, the same file is refused with its mistake named.
        self.write_config(d, "max-concurent = 5\n")
        proc = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True,
                              timeout=scaled(10))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("max-concurent", proc.stdout + proc.stderr)

    def test_flags_win_over_the_config_file_and_an_explicit_config_file_must_exist(self):
        d = self.new_daemon_unstarted(extra_args=["--max-concurrent", "2"])
        self.write_config(d, "max-concurrent = 3\nrate-limit-wait = 5\n")
        d.start()
        self.assertEqual(self.max_concurrent(d), 2)
        self.reload(d, "SIGHUP: configuration reloaded")
        self.assertEqual(self.max_concurrent(d), 2, "the flag still wins after a reload")
        d.stop()

        other = self.write_config(d, "max-concurrent = 6\n") + ".other"
        os.rename(other[:-len(".other")], other)
        d.extra_args = ["--config", other]
        d.start()
        self.assertEqual(self.max_concurrent(d), 6)
        d.stop()

        d.extra_args = ["--config", other + ".missing"]
        proc = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True,
                              timeout=scaled(10))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn(".missing", proc.stdout + proc.stderr)


if __name__ == "__main__":
    main()
