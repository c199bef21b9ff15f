"""No client can starve the others: with 200 idle connections and 200 open WebSocket sessions
(more than the daemon's bounds of 256 connections and 128 sessions), ralphctl keeps getting an
answer at once; the connection idle the longest gives way to each new one. Strangers (TCP
connections without the web token) have a pool of their own: 300 of them close none of the
owner's sessions (a tail -f, an events subscription). And no call holds up
the others while it waits for blocking work: a submit whose git checks cannot go on (its
repository's config is a FIFO that nobody writes yet) leaves every other call answered."""

import os
import socket
import threading
import time

from harness import (DaemonTestCase, WebSocket, agent_command, free_tcp_port, main, read_text,
                     scaled, wait_until, write_text)


def call(ws, method):
    """The reply to a request on the session, or None when the daemon has closed it."""
    try:
        ws.send_json({"jsonrpc": "2.0", "id": 1, "method": method})
        return ws.recv_json()
    except (ConnectionError, OSError):
        return None


class BlockingWorkTest(DaemonTestCase):

    def test_a_submit_waiting_on_its_git_checks_holds_up_no_other_call(self):
        d = self.daemon()
        ws = d.workspace()
        config = os.path.join(ws, ".git", "config")
        text = read_text(config)
        os.remove(config)
        os.mkfifo(config)  # libgit2 opens it, and waits for a writer
        answer = {}

        def submit():
            answer["reply"] = d.rpc("loop.submit", {"workspace": ws, "agent": "command",
                                                   "command": "/bin/true", "max_iterations": 1},
                                    timeout=scaled(60))

        submitter = threading.Thread(target=submit)
        submitter.start()
        try:
            time.sleep(0.3)
            for _ in range(5):
                started = time.monotonic()
                self.assertIn("version", d.call("daemon.info", timeout=scaled(5)))
                self.assertEqual(d.call("loop.list")["loops"], [])
                d.ctl("list", timeout=10)
                self.assertLess(time.monotonic() - started, scaled(2))
            self.assertTrue(submitter.is_alive(), "the submit is still waiting for the FIFO")
            # No writer comes: after a few seconds ralphd interrupts the wait (the FIFO may be a
            # hostile agent's), and the submit says what it could not check, as for any
            # repository it cannot read.
            submitter.join(scaled(30))
            self.assertFalse(submitter.is_alive())
        finally:
            if submitter.is_alive():
                os.close(os.open(config, os.O_WRONLY | os.O_NONBLOCK))
                submitter.join(scaled(60))
        loop = answer["reply"]["result"]
        self.assertTrue(loop["created"])
        self.assertIn("was not checked for uncommitted changes: cannot open the git repository",
                      loop["warnings"][0])
        self.assertIn(".git/config': Interrupted system call", loop["warnings"][0])
        write_text(config + ".new", text)
        os.rename(config + ".new", config)
        d.wait_state(loop["id"], ["exhausted"])


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

    def test_strangers_on_tcp_never_close_the_owners_sessions(self):
        port = free_tcp_port()
        d = self.daemon(extra_args=["--listen", "127.0.0.1:%d" % port])
        loop = d.submit(d.workspace(), agent_command("sleep.sh", "60"), max_iterations=1)
        d.running_attempt(loop["id"])
        # The owner's sessions on the Unix socket: events, and a tail -f.
        events = self.open_sessions(d, 1)[0]
        events.send_json({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe"})
        self.assertIn("result", events.recv_json())
        tail = d.ctl_popen("tail", "-f", loop["id"])
        self.addCleanup(lambda: (tail.kill(), tail.communicate()))
        self.assertIn(b"iteration 1", tail.stdout.readline(), "the iteration's line first")
        self.assertIn(b"sleep.sh: sleeping", tail.stdout.readline())
        # 300 connections without the token: strangers make room among strangers only.
        strangers = []
        self.addCleanup(lambda: [s.close() for s in strangers])
        for _ in range(300):
            strangers.append(socket.create_connection(("127.0.0.1", port), timeout=scaled(10)))
        wait_until(lambda: "are taken" in d.log_text(), 10, "connections to be closed for new ones")
        self.assertIsNone(tail.poll(), "tail -f was cut off")
        self.assert_ralphctl_answers(d, times=3)
        d.call("loop.cancel", {"id": loop["id"]})
        changes = []
        while not changes or changes[-1]["state"] != "cancelled":
            message = events.recv_json()
            self.assertIsNotNone(message, "the events session was closed")
            changes.append(message["params"])
        self.assertEqual(tail.wait(timeout=scaled(10)), 130)
        # Strangers' lines in the log are bounded: 300 evictions, a few lines.
        self.assertLessEqual(d.log_text().count("without the token are taken"), 10)

if __name__ == "__main__":
    main()
