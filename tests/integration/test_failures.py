"""Agents that fail: the per-iteration timeout, retries with backoff, and the `failed` state."""

from harness import (DaemonTestCase, agent_command, main, parse_time, processes_in_group, scaled,
                     wait_group_gone)


class FailureTest(DaemonTestCase):

    def test_an_agent_running_past_its_timeout_is_killed_retried_and_the_loop_fails(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.ctl_submit(ws, "Hang", "--command", agent_command("sleep.sh", 30),
                            "--timeout", "1s", "--backoff", "1s", "-m", "1", retries="1")
        final = d.wait_state(loop["id"], "failed", timeout=30)
        self.assertEqual(final["retries"], 1)

        attempts = d.attempts(loop["id"])
        self.assertEqual([(a["iteration"], a["attempt"]) for a in attempts], [(1, 1), (1, 2)])
        self.assertEqual([a["termination"] for a in attempts], ["timeout", "timeout"])
        for a in attempts:
            ran = parse_time(a["ended_at"]) - parse_time(a["started_at"])
            self.assertGreaterEqual(ran, 0.9, a)
            # SIGTERM ends sleep.sh at once; a kill grace of 1 s leaves ample margin.
            self.assertLess(ran, scaled(10), a)
            wait_group_gone(a["pid"], timeout=5)
        self.assertEqual(d.output(loop["id"]), b"sleep.sh: sleeping 30 s\n" * 2)

    def test_an_agent_flooding_past_the_output_bound_is_ended_and_its_loop_stops(self):
        # 1 GiB by default; 1 MiB here. The shim ends the agent and keeps nothing past the bound,
        # ralphd running or not: one agent cannot fill ralph's disk (issue 37).
        d = self.daemon(extra_args=["--max-output", "1M"])
        ws = d.workspace()
        loop = d.submit(ws, agent_command("flood.sh", 200 << 20), max_retries=3)
        final = d.wait_state(loop["id"], ("failed", "completed"), timeout=scaled(30))
        self.assertEqual(final["state"], "failed", final["stop_reason"])
        self.assertIn("more than 1048576 bytes of output in one attempt", final["stop_reason"])
        self.assertIn("--max-output", final["stop_reason"])
        [attempt] = d.attempts(loop["id"])
        self.assertEqual((attempt["termination"], attempt["failure"]), ("failed", "output_limit"))
        self.assertEqual(attempt["output_end"], 1 << 20)
        self.assertEqual(len(d.output(loop["id"])), 1 << 20)
        wait_group_gone(attempt["pid"], timeout=5)

    def test_a_failing_agent_is_retried_with_doubling_backoff_and_then_the_loop_fails(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("fail.sh", 7), max_retries=2, retry_backoff_s=0.5)
        final = d.wait_state(loop["id"], "failed", timeout=30)
        self.assertEqual(final["retries"], 2)
        self.assertEqual(final["attempts"], 3)
        self.assertTrue(final["stop_reason"], "a failed loop says why")

        attempts = d.attempts(loop["id"])
        self.assertEqual([(a["iteration"], a["attempt"]) for a in attempts],
                         [(1, 1), (1, 2), (1, 3)])
        self.assertEqual([a["termination"] for a in attempts], ["failed"] * 3)
        self.assertEqual([a["exit_code"] for a in attempts], [7, 7, 7])
        # Backoff 0.5 s before the first retry, doubled before the second.
        gaps = [parse_time(attempts[i + 1]["started_at"]) - parse_time(attempts[i]["ended_at"])
                for i in range(2)]
        self.assertGreaterEqual(gaps[0], 0.45, gaps)
        self.assertGreaterEqual(gaps[1], 0.95, gaps)
        # The agent's stderr is part of the loop's output.
        self.assertEqual(d.output(loop["id"]),
                         b"".join(b"fail.sh: run %d failing with 7\n" % k for k in (1, 2, 3)))

    def test_a_retry_that_succeeds_continues_the_same_iteration(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("fail.sh", 3, 1), max_retries=2, retry_backoff_s=0.1)
        final = d.wait_state(loop["id"], "completed", timeout=30)
        self.assertEqual(final["iterations"], 1)
        self.assertEqual(final["retries"], 1)
        attempts = d.attempts(loop["id"])
        self.assertEqual([(a["iteration"], a["attempt"], a["termination"], a["exit_code"])
                          for a in attempts],
                         [(1, 1, "failed", 3), (1, 2, "exited", 0)])
        self.assertFalse(processes_in_group(attempts[0]["pid"]))


if __name__ == "__main__":
    main()
