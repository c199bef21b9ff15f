"""No client can starve the others: with 200 idle connections and 200 open WebSocket sessions
(more than the daemon's bounds of 256 connections and 128 sessions), ralphctl keeps getting an
answer at once; the connection idle the longest gives way to each new one."""

import socket
import time

from harness import DaemonTestCase, WebSocket, main, scaled


def call(ws, method):
    """The reply to a request on the session, or None when the daemon has closed it."""
    try:
        ws.send_json({"jsonrpc": "2.0", "id": 1, "method": method})
        return ws.recv_json()
    except (ConnectionError, OSError):
        return None


class ConnectionFairnessTest(DaemonTestCase):

    def open_idle_connections(self, d, count):
        idle = []
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(d.socket)
            idle.append(s)
        self.addCleanup(lambda: [s.close() for s in idle])
        return idle

    def open_sessions(self, d, count):
        sessions = []
        for _ in range(count):
            sessions.append(WebSocket(d.socket))
        self.addCleanup(lambda: [ws.close() for ws in sessions])
        return sessions

    def assert_ralphctl_answers(self, d, times=10):
        for _ in range(times):
            started = time.monotonic()
            d.ctl("list", timeout=10)
            self.assertLess(time.monotonic() - started, scaled(2), "ralphctl list was slow")

    def test_idle_connections_and_sessions_do_not_lock_clients_out(self):
        d = self.daemon()
        self.open_idle_connections(d, 200)
        self.open_sessions(d, 200)
        self.assert_ralphctl_answers(d)
        # And the other way round: sessions first, then idle connections.
        self.open_sessions(d, 200)
        self.open_idle_connections(d, 200)
        self.assert_ralphctl_answers(d)
        self.assertIn("idle the longest", d.log_text())

    def test_an_idle_http_connection_is_closed_after_a_few_seconds(self):
        d = self.daemon()
        s = self.open_idle_connections(d, 1)[0]
        s.settimeout(scaled(15))
        started = time.monotonic()
        self.assertEqual(s.recv(1), b"", "the daemon closes an idle connection")
        self.assertLess(time.monotonic() - started, scaled(10))

    def test_a_new_session_closes_the_session_idle_the_longest(self):
        d = self.daemon()
        sessions = self.open_sessions(d, 128)
        self.assertIn("result", call(sessions[-1], "daemon.info"))  # the newest is active too
        newcomer = self.open_sessions(d, 1)[0]
        self.assertIn("result", call(newcomer, "daemon.info"))
        # The first session, idle the longest, was closed for it; the active ones were not.
        self.assertIsNone(call(sessions[0], "daemon.info"))
        self.assertIn("result", call(sessions[-1], "daemon.info"))

if __name__ == "__main__":
    main()
