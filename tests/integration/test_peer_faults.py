"""Peers that misbehave: `ralphd --peer evil` linked to a peer the test plays by hand
(harness.FakePeer: the real `ralphctl dial-stdio` against a socket the test serves).

A peer that sends garbage (not JSON, JSON that is not JSON-RPC, an agent.held whose params are
not a hold, names too long, a time absurd or ended) does not end the link: each message is
logged and ignored, and only valid holds are recorded, an absurd time cut to 8 days; a flood of
it is logged at 20 lines a minute, and what was left out is counted. A message above 2 MiB ends
the session, which is made again. A peer that accepts the link and then says
nothing delays no loop and is shown as not linked. (A silent link is dropped after 60 s without
an answer to its ping, which is not waited for here.)
"""

import os
import time

from harness import (DaemonTestCase, FakePeer, main, make_workspace, parse_time, wait_until,
                     write_text)

DAY = 24 * 3600


def iso(epoch_s):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))


def held(agent, until, **more):
    """An agent.held notification as a peer sends it."""
    return {"jsonrpc": "2.0", "method": "agent.held",
            "params": dict({"agent": agent, "account": "default", "until": until,
                            "reason": "usage limit"}, **more)}


class PeerFaultTest(DaemonTestCase):

    def setUp(self):
        d = self.new_daemon_unstarted(extra_args=("--host-name", "a", "--peer", "evil"))
        self.peer = FakePeer(d.root)
        self.addCleanup(self.peer.close)
        write_text(os.path.join(d.config_dir, "ralph", "hosts"), "evil ssh://evil\n")
        d.env["RALPH_SSH_COMMAND"] = self.peer.ssh_command
        self.d = d.start()

    def evil(self):
        return {p["name"]: p for p in self.d.call("daemon.info")["peers"]}["evil"]

    def holds(self):
        return {h["agent"]: h for h in self.d.call("budget.get")["holds"]}

    def assert_loops_run(self):
        loop = self.d.submit(make_workspace(self.d.work_dir, "ws%d" % time.monotonic_ns()),
                             "/bin/echo hi", max_iterations=1)
        self.assertEqual(self.d.wait_state(loop["id"], "exhausted", timeout=10)["state"],
                         "exhausted")

    def test_garbage_from_a_peer_is_logged_and_ignored_and_a_huge_message_ends_the_session(self):
        ws, request = self.peer.link()
        self.assertEqual((request["method"], request["params"]["host"]), ("peer.link", "a"))
        wait_until(lambda: self.evil()["linked"], 10, "a linked to evil")
        linked_since = self.evil()["since"]

        now = time.time()
        for garbage in ("not json {", "[1, 2]", '"a string"', '{"jsonrpc": "2.0", "method": 5}',
                        '{"jsonrpc": "2.0", "id": 3, "error": "no"}'):
            ws.send_text(garbage)
        for message in (
                {"jsonrpc": "2.0", "method": "agent.held", "params": {"agent": 7}},
                {"jsonrpc": "2.0", "method": "agent.held", "params": "claude"},
                {"jsonrpc": "2.0", "method": "agent.held"},
                {"jsonrpc": "2.0", "method": "loop.cancel", "params": {"id": 1}},
                held("x" * 65, iso(now + 3600)),
                held("gemini", iso(now - 3600)),
                held("aider", "tomorrow"),
                held("codex", "9999-12-31T23:59:59Z"),
                held("claude", iso(now + 3600), origin="b")):  # the last: all before are read
            ws.send_json(message)
        holds = wait_until(lambda: "claude" in self.holds() and self.holds(), 10,
                           "a to record the valid hold")
        self.assertEqual(sorted(holds), ["claude", "codex"], holds)
        self.assertEqual((holds["claude"]["origin"], parse_time(holds["claude"]["until"])),
                         ("b", int(now) + 3600))
        self.assertEqual(holds["codex"]["origin"], "evil")
        self.assertLessEqual(parse_time(holds["codex"]["until"]), time.time() + 8 * DAY,
                             "an absurd time is cut to 8 days")
        self.assertGreater(parse_time(holds["codex"]["until"]), now + 8 * DAY - 60)
        peer = self.evil()
        self.assertEqual((peer["linked"], peer["since"]), (True, linked_since),
                         "the link went on")
        log = self.d.log_text()
        self.assertEqual(log.count("peer evil: sent a message that is not a JSON object"), 3, log)
        self.assertEqual(log.count("peer evil: sent a message that is neither agent.held"), 2)
        self.assertIn("peer evil: refused a hold: (no message)", log)
        self.assertEqual(log.count("peer evil: sent a hold that is not one"), 3, log)
        self.assertIn("peer evil: a hold it sent was not taken: a hold's agent is longer than 64",
                      log)
        self.assertEqual(log.count("that has ended or has no time (ignored)"), 2, log)

        # A message above 2 MiB ends the session; the link is made again a second later.
        try:
            ws.send_text("x" * (3 << 20))
        except OSError:
            pass  # ralphd ended the session before reading it all
        peer = wait_until(lambda: not self.evil()["linked"] and self.evil(), 10,
                          "the session to end")
        self.assertEqual(peer["error"], "it sent a message above 2 MiB")
        self.assertIn("peer evil: not linked: it sent a message above 2 MiB", self.d.log_text())
        again, _ = self.peer.link()
        wait_until(lambda: self.evil()["linked"], 10, "a linked to evil again")
        self.assertEqual(sorted(self.holds()), ["claude", "codex"])
        self.assert_loops_run()
        again.close()
        ws.close()

    def test_a_flood_of_junk_is_logged_at_a_bounded_rate_and_counted(self):
        ws, _ = self.peer.link()
        wait_until(lambda: self.evil()["linked"], 10, "a linked to evil")
        lines_before = len(self.d.log_text().splitlines())
        for i in range(5000):
            ws.send_text("junk %d" % i)
        ws.send_json(held("claude", iso(time.time() + 3600)))  # read after all the junk
        wait_until(lambda: "claude" in self.holds(), 20, "the hold after the junk")
        ws.close()
        said = wait_until(lambda: [line for line in self.d.log_text().splitlines()
                                   if "were ignored without a line in the log" in line], 10,
                          "the count of what was left out")
        self.assertIn("peer evil: 4980 more message(s) it sent were ignored", said[0])
        lines = self.d.log_text().splitlines()[lines_before:]
        self.assertLess(len(lines), 40, "\n".join(lines[:60]))
        self.assertEqual(sum("not a JSON object" in line for line in lines), 20)

    def test_a_silent_peer_delays_no_loop_and_is_shown_not_linked(self):
        ws = self.peer.accept()  # the WebSocket session is made; peer.link is never answered
        self.assertEqual(ws.recv_json()["method"], "peer.link")
        started = time.monotonic()
        self.assert_loops_run()
        self.assertLess(time.monotonic() - started, 5, "a loop waited for the peer")
        self.assertFalse(self.evil()["linked"])
        status = self.d.ctl("daemon", "status").stdout
        self.assertRegex(status, r"peer evil +not linked: trying")
        ws.close()


if __name__ == "__main__":
    main()
