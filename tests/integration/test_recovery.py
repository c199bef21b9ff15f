"""Crash recovery and shutdown: after kill -9 of ralphd and a restart, the old agent's process
group is gone, the loop resumes with its next iteration and completes, and its earlier output is
all still there; SIGTERM ends the agents and exits 0."""

import os

from harness import (DaemonTestCase, agent_command, main, proc_stat, slow_counter_output,
                     wait_group_gone, wait_until)


class RecoveryTest(DaemonTestCase):

    def test_after_kill_9_and_a_restart_the_loop_resumes_and_completes_with_all_its_output(self):
        d = self.daemon()
        ws = d.workspace()
        # Run 1 sleeps 60 s (it is interrupted by the crash); later runs take 0.2 s; run 3 completes.
        loop = d.submit(ws, agent_command("slow-counter.sh", 3, "0.2", 0, 60), max_iterations=10)
        attempt = d.running_attempt(loop["id"])
        started = slow_counter_output(1, 3, finished=False)
        d.wait_output_contains(loop["id"], started)
        pgid = proc_stat(attempt["pid"])[2]
        self.assertEqual(pgid, attempt["pid"])

        d.kill9()
        d.restart()  # same socket (a stale file now) and database

        wait_group_gone(pgid, timeout=10)
        final = d.wait_state(loop["id"], "completed", timeout=40)

        attempts = d.attempts(loop["id"])
        self.assertEqual(attempts[0]["id"], attempt["id"])
        self.assertEqual(attempts[0]["termination"], "interrupted")
        self.assertIsNotNone(attempts[0]["ended_at"])
        self.assertEqual(attempts[1]["iteration"], attempts[0]["iteration"] + 1,
                         "the loop resumes with its next iteration")
        self.assertEqual([a["termination"] for a in attempts[1:]], ["exited"] * 2)
        self.assertTrue(attempts[-1]["completion_signal"])
        self.assertGreaterEqual(final["iterations"], 2)
        with open(os.path.join(ws, ".slow-counter")) as f:
            self.assertEqual(f.read().strip(), "3")

        expected = started + slow_counter_output(2, 3) + slow_counter_output(3, 3)
        self.assertEqual(d.output(loop["id"]), expected)
        self.assertEqual(d.ctl("tail", loop["id"], text=False).stdout, expected)

    def test_sigterm_ends_the_running_agents_and_ralphd_exits_0(self):
        d = self.daemon()  # --kill-grace 1
        ws = d.workspace()
        loop = d.submit(ws, agent_command("ignore-term-with-grandchild.sh"), max_iterations=1)
        attempt = d.running_attempt(loop["id"])
        wait_until(lambda: os.path.exists(os.path.join(ws, ".grandchild.pid")), 10,
                   "the agent's grandchild")
        d.stop(timeout=20)  # asserts exit status 0
        wait_group_gone(attempt["pid"], timeout=5)


if __name__ == "__main__":
    main()
