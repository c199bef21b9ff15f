"""Cancelling a running loop ends the agent's whole process group, even an agent that ignores
SIGTERM and has a grandchild: no orphan survives (checked through /proc)."""

import os

from harness import (DaemonTestCase, agent_command, is_alive, main, proc_stat, wait_group_gone,
                     wait_until)


def read_pid(path):
    with open(path) as f:
        return int(f.read().strip())


class CancelTest(DaemonTestCase):

    def test_cancelling_a_loop_whose_agent_ignores_sigterm_leaves_no_process_of_its_group(self):
        d = self.daemon()  # --kill-grace 1
        ws = d.workspace()
        loop = d.submit(ws, agent_command("ignore-term-with-grandchild.sh"), max_iterations=1)
        attempt = d.running_attempt(loop["id"])
        grandchild_file = os.path.join(ws, ".grandchild.pid")
        wait_until(lambda: os.path.exists(grandchild_file), 10, "the agent's grandchild")

        pgid = attempt["pid"]
        agent, child, grandchild = (read_pid(os.path.join(ws, name))
                                    for name in (".agent.pid", ".child.pid", ".grandchild.pid"))
        self.assertEqual(agent, attempt["pid"])
        self.assertEqual(proc_stat(agent)[2], pgid, "the agent leads its own process group")
        self.assertNotEqual(pgid, proc_stat(d.pid)[2], "not the daemon's process group")
        for pid in (agent, child, grandchild):
            self.assertTrue(is_alive(pid), pid)
            self.assertEqual(proc_stat(pid)[2], pgid, "pid %d in the agent's group" % pid)

        d.ctl("cancel", loop["id"])
        final = d.wait_state(loop["id"], "cancelled", timeout=15)
        self.assertIsNotNone(final["finished_at"])
        wait_group_gone(pgid, timeout=10)
        for pid in (agent, child, grandchild):
            self.assertFalse(is_alive(pid), "pid %d survived the cancel" % pid)

        attempts = d.attempts(loop["id"])
        self.assertEqual(len(attempts), 1)
        self.assertEqual(attempts[0]["termination"], "cancelled")
        self.assertIsNotNone(attempts[0]["ended_at"])
        self.assertTrue(d.running(), "ralphd survives the cancel")

    def test_cancelling_a_loop_waiting_to_retry_starts_no_further_attempt(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("fail.sh", 3), max_retries=5, retry_backoff_s=30)
        waiting = d.wait_state(loop["id"], "waiting", timeout=10)
        self.assertIn("retry 1 of 5", waiting["stop_reason"])
        self.assertIsNotNone(waiting["resume_at"])

        d.ctl("cancel", loop["id"])
        d.wait_state(loop["id"], "cancelled", timeout=5)
        attempts = d.attempts(loop["id"])
        self.assertEqual([a["termination"] for a in attempts], ["failed"],
                         "no attempt after the cancel")


if __name__ == "__main__":
    main()
