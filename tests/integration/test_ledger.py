"""One usage-limit ledger across machines: `ralphd --peer NAME` links a daemon's holds to a
peer's over ssh (daemon/peers/peer_link.hpp), so that a limit hit on one host holds the agent on
the others of the same account until the same reset.

Three daemons, each behind a real sshd of its own (harness.SshServer) and naming the others in
its hosts file: a (--peer b --peer c), b (--peer a) and c (--account work, no peer). A claude
usage limit replayed on b holds claude on a until b's reset, to the millisecond, and parks a's
claude loop until then while its codex loop runs; c, another account, is not held although a
tells it. A hold b takes while a is down reaches a when it is back (the link's exchange).
"""

import os
import time

from harness import (RALPHCTL, SshServer, fake_agent_bin, main, parse_time, scaled, wait_until,
                     write_text)
from test_agents import AgentTestCase

BUILD_CLIENT = os.path.dirname(os.path.abspath(RALPHCTL)) if RALPHCTL else ""


class LedgerTest(AgentTestCase):

    def setUp(self):
        self.d = {}
        self.servers = {}
        for name, more in (("a", ()), ("b", ()), ("c", ("--account", "work"))):
            d = self.new_daemon_unstarted(
                extra_args=("--host-name", name, "--rate-limit-margin", "0.5") + more)
            d.env["PATH"] = fake_agent_bin(d.root) + ":" + d.env["PATH"]
            server = SshServer(d.root, {"PATH": BUILD_CLIENT + ":/usr/bin:/bin",
                                        "RALPH_SOCKET": d.socket})
            self.addCleanup(server.stop)
            self.d[name], self.servers[name] = d, server
        ssh = SshServer.command_for(list(self.servers.values()),
                                    os.path.join(self.d["a"].root, "ssh_config"))
        hosts = "".join("%s %s\n" % (name, server.address)
                        for name, server in self.servers.items())
        for name, peers in (("a", ("b", "c")), ("b", ("a",)), ("c", ())):
            d = self.d[name]
            write_text(os.path.join(d.config_dir, "ralph", "hosts"), hosts)
            for peer in peers:
                d.extra_args += ["--peer", peer]
            d.env["RALPH_SSH_COMMAND"] = ssh
            d.start()

    def peers_linked(self, d, names):
        peers = {p["name"]: p for p in d.call("daemon.info")["peers"]}
        return all(peers.get(name, {}).get("linked") for name in names) and peers

    def holds(self, d):
        return {h["agent"]: h for h in d.call("budget.get")["holds"]}

    def test_a_limit_on_one_host_holds_the_agent_on_its_peers_until_the_same_reset(self):
        a, b, c = self.d["a"], self.d["b"], self.d["c"]
        wait_until(lambda: self.peers_linked(a, ("b", "c")), 20, "a linked to b and c")
        wait_until(lambda: self.peers_linked(b, ("a",)), 20, "b linked to a")
        info = a.call("daemon.info")
        self.assertEqual((info["host"], info["account"]), ("a", "default"))
        self.assertEqual(c.call("daemon.info")["account"], "work")

        # b's claude hits its usage limit: b holds claude until the reset + its margin.
        resets_at = int(time.time() + scaled(4))
        limited, _ = self.submit_agent(b, "claude", ["rate-limit", "ralph-iter2"],
                                       "--env", "FAKE_RESETS_AT=%d" % resets_at, name="limited")
        b.wait_state(limited["id"], "waiting", timeout=20)
        until = self.holds(b)["claude"]["until"]
        self.assertAlmostEqual(parse_time(until), resets_at + 0.5, delta=0.01)
        self.assertEqual(self.holds(b)["claude"]["origin"], "")

        # a learns it at once, to the millisecond, from b; c (another account) does not hold.
        held = wait_until(lambda: self.holds(a).get("claude"), 10, "a to hold claude")
        self.assertEqual((held["until"], held["origin"], held["account"]),
                         (until, "b", "default"))
        self.assertEqual(self.holds(c), {})
        shown = a.ctl("budget").stdout
        self.assertIn("from b", shown)

        # On a, a claude loop waits for that reset, learnt from b; a codex loop runs meanwhile.
        # On c the claude loop runs at once.
        parked, _ = self.submit_agent(a, "claude", ["ralph-iter2"], name="parked")
        codex, _ = self.submit_agent(a, "codex", ["ralph-iter2"], name="codex")
        other_account, _ = self.submit_agent(c, "claude", ["ralph-iter2"], name="work")
        waiting = a.wait_state(parked["id"], "waiting", timeout=20)
        self.assertEqual(waiting["resume_at"], until)
        self.assertIn("learnt from b", waiting["stop_reason"])
        self.assertEqual(a.wait_state(codex["id"], "completed", timeout=30)["state"], "completed")
        self.assertEqual(c.wait_state(other_account["id"], "completed", timeout=30)["state"],
                         "completed")
        self.assertLess(time.time(), parse_time(until), "the test machine was too slow to check")
        # After the reset a's loop goes on by itself.
        final = a.wait_state(parked["id"], ("completed", "failed"), timeout=30)
        self.assertEqual(final["state"], "completed", final)
        started = [parse_time(at["started_at"]) for at in a.attempts(parked["id"])]
        self.assertGreaterEqual(started[0], parse_time(until) - 0.05)
        b.wait_state(limited["id"], "completed", timeout=30)

        # A hold taken while a peer is down reaches it when it is back; b's loops never wait
        # for a.
        a.stop()
        resets_at = int(time.time() + scaled(8))
        again, _ = self.submit_agent(b, "claude", ["rate-limit", "ralph-iter2"],
                                     "--env", "FAKE_RESETS_AT=%d" % resets_at, name="again")
        b.wait_state(again["id"], "waiting", timeout=20)
        until = self.holds(b)["claude"]["until"]
        a.start()
        held = wait_until(lambda: self.holds(a).get("claude", {}).get("until") == until
                          and self.holds(a)["claude"], 20, "a to learn b's new hold")
        self.assertEqual(held["origin"], "b")
        later, _ = self.submit_agent(a, "claude", ["ralph-iter2"], name="later")
        self.assertEqual(a.wait_state(later["id"], "waiting", timeout=20)["resume_at"], until)
        for d, loop in ((a, later), (b, again)):
            d.call("loop.cancel", {"id": loop["id"]})

    def test_a_peer_that_cannot_be_reached_is_retried_and_says_why(self):
        a = self.d["a"]
        wait_until(lambda: self.peers_linked(a, ("b", "c")), 20, "a linked to b and c")
        self.servers["c"].stop()
        self.d["c"].stop()
        peer = wait_until(lambda: {p["name"]: p for p in a.call("daemon.info")["peers"]}["c"]
                          if not self.peers_linked(a, ("c",)) else None, 20, "a to lose c")
        self.assertFalse(peer["linked"])
        wait_until(lambda: "ssh exited with status 255" in
                   {p["name"]: p for p in a.call("daemon.info")["peers"]}["c"]["error"], 20,
                   "a to say why c is not linked")
        self.assertIn("peer c: not linked", a.log_text())


if __name__ == "__main__":
    main()
