"""Loop lifecycle through the real binaries: completion, max/min iterations, unlimited loops,
the demo agent, and the FIFO queue with max_concurrent."""

import os
import time

from harness import (DaemonTestCase, agent_command, count_to_complete_output, main, read_text,
                     scaled)


class LoopLifecycleTest(DaemonTestCase):

    def test_a_loop_whose_agent_signals_completion_on_its_third_run_completes_after_three_iterations(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.ctl_submit(ws, "Count to three", "--command",
                            agent_command("count-to-complete.sh", 3), "-m", "10", name="three")
        self.assertEqual(loop["name"], "three")
        self.assertEqual(os.path.realpath(loop["workspace"]), os.path.realpath(ws))
        self.assertEqual(loop["max_iterations"], 10)
        self.assertIsNotNone(loop["created_at"])

        d.wait_state(loop["id"], "completed", timeout=30)
        shown = d.ctl_json("show", loop["id"])
        self.assertEqual(shown["loop"]["id"], loop["id"])
        self.assertEqual(shown["loop"]["state"], "completed")
        self.assertEqual(shown["loop"]["iterations"], 3)
        self.assertEqual(shown["loop"]["min_iterations"], 1)
        for field in ("created_at", "started_at", "finished_at"):
            self.assertIsNotNone(shown["loop"][field], field)
        self.assertIsInstance(shown["loop"]["stop_reason"], str)

        attempts = shown["attempts"]
        self.assertEqual([a["iteration"] for a in attempts], [1, 2, 3])
        self.assertEqual([a["termination"] for a in attempts], ["exited"] * 3)
        self.assertEqual([a["exit_code"] for a in attempts], [0, 0, 0])
        self.assertEqual([a["completion_signal"] for a in attempts], [False, False, True])
        self.assertEqual(read_text(os.path.join(ws, ".count-to-complete")).strip(), "3",
                         "the agent must have run exactly three times")
        self.assertEqual(d.output(loop["id"]), count_to_complete_output(3, 3))

        human = d.ctl("show", loop["id"]).stdout
        self.assertIn("completed", human)

    def test_a_loop_that_never_signals_completion_ends_exhausted_at_max_iterations(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.ctl_submit(ws, "Never done", "--command", agent_command("never-complete.sh"),
                            "-m", "2")
        final = d.wait_state(loop["id"], "exhausted", timeout=30)
        self.assertEqual(final["iterations"], 2)
        self.assertIsNotNone(final["finished_at"])
        self.assertEqual(read_text(os.path.join(ws, ".never-complete")).strip(), "2")
        self.assertEqual(len(d.attempts(loop["id"])), 2)
        self.assertEqual(d.output(loop["id"]), b"never-complete: run 1\nnever-complete: run 2\n")

    def test_a_completion_signal_before_min_iterations_is_ignored(self):
        d = self.daemon()
        ws = d.workspace()
        # The agent signals completion on every run, from the first one.
        loop = d.ctl_submit(ws, "Done at once", "--command",
                            agent_command("count-to-complete.sh", 1), "-m", "10", "-n", "3")
        self.assertEqual(loop["min_iterations"], 3)
        final = d.wait_state(loop["id"], "completed", timeout=30)
        self.assertEqual(final["iterations"], 3)
        self.assertEqual(read_text(os.path.join(ws, ".count-to-complete")).strip(), "3")

    def test_max_iterations_zero_means_unlimited(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("count-to-complete.sh", 4), max_iterations=0)
        final = d.wait_state(loop["id"], "completed", timeout=30)
        self.assertEqual(final["iterations"], 4)
        self.assertEqual(final["max_iterations"], 0)

    def test_the_demo_agent_completes_after_its_three_iterations_with_submit_wait(self):
        d = self.daemon()
        ws = d.workspace()
        proc = d.ctl("submit", "--agent", "demo", "--workspace", ws, "--name", "demo",
                     "--delay", "0s", "--wait", "Demo: make progress, one step per iteration",
                     check=False, timeout=60)
        self.assertEqual(proc.returncode, 0, "submit --wait of the demo: %r" % (proc,))
        loop = d.find_loop("demo")
        self.assertIsNotNone(loop)
        shown = d.ctl_json("show", loop["id"])
        self.assertEqual(shown["loop"]["state"], "completed")
        self.assertEqual(shown["loop"]["agent"], "demo")
        self.assertEqual(shown["loop"]["iterations"], 3)
        progress = read_text(os.path.join(ws, "demo-progress.md"))
        self.assertEqual(len(progress.splitlines()), 3, progress)
        self.assertIn(b"<promise>complete</promise>", d.output(loop["id"]).lower())

    def test_the_demo_agent_takes_its_iteration_count_from_ralph_demo_iterations(self):
        d = self.daemon()
        ws = d.workspace()
        proc = d.ctl("submit", "--agent", "demo", "--workspace", ws, "--name", "demo2",
                     "--delay", "0s", "--env", "RALPH_DEMO_ITERATIONS=2", "--wait", "Demo",
                     check=False, timeout=60)
        self.assertEqual(proc.returncode, 0, "submit --wait of the demo: %r" % (proc,))
        loop = d.get(d.find_loop("demo2")["id"])
        self.assertEqual((loop["state"], loop["iterations"]), ("completed", 2))
        self.assertEqual(len(read_text(os.path.join(ws, "demo-progress.md")).splitlines()), 2)

    def test_a_loop_beyond_max_concurrent_stays_queued_until_the_running_one_ends(self):
        d = self.daemon()
        first = d.submit(d.workspace("first"), agent_command("sleep.sh", 60), max_iterations=1,
                         name="first")
        d.wait_state(first["id"], "running", timeout=20)
        second = d.submit(d.workspace("second"), agent_command("count-to-complete.sh", 1),
                          name="second")
        third = d.submit(d.workspace("third"), agent_command("count-to-complete.sh", 1),
                         name="third")
        # For a while (max_concurrent is 1), the later loops must stay queued.
        deadline = time.monotonic() + scaled(1.0)
        while time.monotonic() < deadline:
            self.assertEqual(d.get(second["id"])["state"], "queued")
            self.assertEqual(d.get(third["id"])["state"], "queued")
            time.sleep(0.1)
        info = d.call("daemon.info")
        self.assertEqual(info["max_concurrent"], 1)
        self.assertEqual(info["loops_by_state"].get("running"), 1)
        self.assertEqual(info["loops_by_state"].get("queued"), 2)

        # Cancelling a queued loop ends it without running anything.
        d.call("loop.cancel", {"id": third["id"]})
        self.assertEqual(d.wait_state(third["id"], "cancelled", timeout=10)["iterations"], 0)
        self.assertEqual(d.attempts(third["id"]), [])

        d.call("loop.cancel", {"id": first["id"]})
        d.wait_state(first["id"], "cancelled", timeout=20)
        d.wait_state(second["id"], "completed", timeout=20)


if __name__ == "__main__":
    main()
