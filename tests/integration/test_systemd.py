"""ralphd under systemd, tested without one (these machines have no systemd as PID 1): the user
units pass `systemd-analyze verify`; Type=notify's READY=1 and STOPPING=1 and the watchdog's
WATCHDOG=1 reach a NOTIFY_SOCKET of the test's own; `systemd-socket-activate` starts ralphd at
the first connection to the socket it made and hands it over."""

import os
import shutil
import signal
import socket
import subprocess
import time

from harness import (RALPHD, Daemon, DaemonTestCase, agent_command, main, scaled, skip_test,
                     wait_until)

UNITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "systemd")


def tool(name):
    path = shutil.which(name)
    if not path:
        skip_test(name + " is not installed (Debian package systemd)")
    return path


class NotifyTest(DaemonTestCase):

    def notify_socket(self, d):
        """A datagram socket standing in for systemd's; its path goes in NOTIFY_SOCKET."""
        path = os.path.join(d.root, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        self.addCleanup(sock.close)
        d.env["NOTIFY_SOCKET"] = path
        return sock

    def messages(self, sock, seconds):
        """Every notification (its lines) received within `seconds`."""
        received = []
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return received
            sock.settimeout(left)
            try:
                received.append(sock.recv(4096).decode().splitlines())
            except socket.timeout:
                return received

    def next_message(self, sock, timeout=10):
        sock.settimeout(scaled(timeout))
        return sock.recv(4096).decode().splitlines()

    def test_ready_comes_when_the_socket_answers_and_stopping_at_sigterm(self):
        d = self.new_daemon_unstarted()
        sock = self.notify_socket(d)
        d.start(wait=False)
        self.assertIn("READY=1", self.next_message(sock))
        # Ready means ready: the first request right after it is answered.
        self.assertEqual(d.call("daemon.info", timeout=5)["pid"], d.pid)
        d.proc.send_signal(signal.SIGTERM)
        self.assertIn("STOPPING=1", self.next_message(sock))
        self.assertEqual(d.proc.wait(timeout=scaled(20)), 0)

    def test_the_watchdog_hears_from_the_io_thread_at_half_its_interval(self):
        d = self.new_daemon_unstarted()
        sock = self.notify_socket(d)
        d.env["WATCHDOG_USEC"] = "200000"  # as systemd sets it for WatchdogSec=0.2
        d.start(wait=False)
        self.assertIn("READY=1", self.next_message(sock))
        pings = [m for m in self.messages(sock, scaled(1.0)) if "WATCHDOG=1" in m]
        self.assertGreaterEqual(len(pings), 4, "one every 100 ms expected")

        # A daemon that stops running sends nothing: what lets systemd restart a hung one.
        os.kill(d.pid, signal.SIGSTOP)
        try:
            self.messages(sock, 0.2)  # what was sent before it stopped
            self.assertEqual(self.messages(sock, 0.5), [])
        finally:
            os.kill(d.pid, signal.SIGCONT)
        self.assertIn("WATCHDOG=1", self.next_message(sock))

    def test_a_watchdog_meant_for_another_process_is_not_pinged(self):
        d = self.new_daemon_unstarted()
        sock = self.notify_socket(d)
        # WATCHDOG_PID names the process systemd watches; ralphd is not it (a child it started).
        d.env.update({"WATCHDOG_USEC": "100000", "WATCHDOG_PID": str(os.getpid())})
        d.start(wait=False)
        self.assertIn("READY=1", self.next_message(sock))
        self.assertEqual([m for m in self.messages(sock, 0.5) if "WATCHDOG=1" in m], [])


class UnitsTest(DaemonTestCase):

    def units(self, d, service_text=None):
        """The units as installed, ExecStart naming the ralphd under test: (service, socket)."""
        folder = os.path.join(d.root, "units")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(UNITS, "ralphd.service")) as f:
            text = f.read().replace("@BINDIR@", os.path.dirname(RALPHD))
        service = os.path.join(folder, "ralphd.service")
        with open(service, "w") as f:
            f.write(service_text(text) if service_text else text)
        socket_unit = os.path.join(folder, "ralphd.socket")
        shutil.copy(os.path.join(UNITS, "ralphd.socket"), socket_unit)
        return service, socket_unit

    def verify(self, d, *units):
        proc = subprocess.run([tool("systemd-analyze"), "verify", "--user", *units],
                              env=dict(os.environ, XDG_RUNTIME_DIR=d.runtime_dir),
                              capture_output=True, text=True, timeout=scaled(60))
        return proc.returncode, (proc.stdout + proc.stderr).strip()

    def test_the_user_units_pass_systemd_analyze_verify(self):
        d = self.new_daemon_unstarted()
        service, socket_unit = self.units(d)
        self.assertEqual(self.verify(d, service, socket_unit), (0, ""))
        with open(service) as f:
            text = f.read()
        for line in ("Type=notify", "WatchdogSec=60", "Restart=on-failure"):
            self.assertIn(line + "\n", text)
        # The check would notice: a wrong value is reported (systemd only warns about it).
        bad, _ = self.units(d, lambda text: text.replace("WatchdogSec=60", "WatchdogSec=soon"))
        self.assertIn("Failed to parse sec value", self.verify(d, bad, socket_unit)[1])

    def test_socket_activation_starts_ralphd_at_the_first_connection(self):
        activate = tool("systemd-socket-activate")
        d = self.new_daemon_unstarted()
        plain_argv = Daemon.argv(d)
        d.argv = lambda: [activate, "-l", d.socket] + plain_argv
        d.start(wait=False)
        wait_until(lambda: os.path.exists(d.socket), timeout=10, what="the activation socket")
        with open("/proc/%d/comm" % d.pid) as f:
            self.assertNotEqual(f.read().strip(), "ralphd", "nothing connected yet")

        # The first client starts it (in the same process), and is answered.
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)
        with open("/proc/%d/comm" % d.pid) as f:
            self.assertEqual(f.read().strip(), "ralphd")
        ok = d.ctl("submit", "--workspace", d.workspace(), "--command",
                   agent_command("count-to-complete.sh", 1), "--delay", "0s", "--wait", "Once",
                   check=False)
        self.assertEqual(ok.returncode, 0, ok)
        # finish() checks that it stops on SIGTERM with exit status 0.


if __name__ == "__main__":
    main()
