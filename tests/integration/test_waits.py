"""Why a loop waits, and until when, wherever it is shown: `list` (a line under the table),
`show` ("waits"), `top` (the selected loop's title) and `tail -f` (its waiting line, on stderr)
give the cause — which budget, the scheduler paused, a loop running in the same workspace, no
free slot — and the local time with "in N min". And where output is shown (`tail`, `top`,
`submit --follow`), a line marks where each iteration (and each retry) begins; `tail --raw`
stays the bytes."""

import re
import time

from harness import DaemonTestCase, agent_command, main, scripted

UNTIL = r"until (\w{3} )?\d\d:\d\d \(in (59 min|60 min|1 h 00 min)\)"


class WaitsTest(DaemonTestCase):

    def test_a_loop_waiting_for_its_budget_says_which_and_until_when_everywhere(self):
        d = self.daemon()
        loop = d.submit(d.workspace(), scripted("say=step {i}"), name="budgeted",
                        iterations_per_hour=1, max_iterations=3)
        waiting = d.wait_state(loop["id"], "waiting", timeout=20)
        self.assertGreater(waiting["resume_at"], waiting["started_at"])
        cause = (r"waiting for the loop %d's budget iterations per hour used up \(1 of 1\)"
                 % loop["id"])

        self.assertRegex(d.ctl("list").stdout,
                         re.compile(r"^ *%d  %s: %s$" % (loop["id"], UNTIL, cause), re.M))
        self.assertRegex(d.ctl().stdout, cause, "bare ralphctl lists it too")
        self.assertRegex(d.ctl("show", loop["id"]).stdout,
                         r"\nwaits +%s: %s\n" % (UNTIL, cause))
        self.assertRegex(d.ctl("top", "--once", loop["id"]).stdout,
                         r"── loop %d budgeted · %s: %s ──" % (loop["id"], UNTIL, cause))
        line = d.ctl_first_stderr_line("tail", "-f", loop["id"])
        self.assertRegex(line, r"^ralphctl: loop %d is waiting %s: %s; its output follows when "
                               r"it runs$" % (loop["id"], UNTIL, cause))
        d.call("loop.cancel", {"id": loop["id"]})

    def test_a_queued_loop_says_what_it_waits_for(self):
        d = self.daemon()
        ws = d.workspace()
        running = d.submit(ws, agent_command("sleep.sh", 60), name="runs")
        d.wait_state(running["id"], "running")
        # Another workspace, one slot: it waits for a free slot.
        slot = d.submit(d.workspace(), agent_command("sleep.sh", 60), name="no-slot")
        self.assertRegex(d.ctl("list").stdout, re.compile(
            r"^ *%d  waiting for a free slot \(1 of 1 running\)$" % slot["id"], re.M))
        # Two slots: the one in the running loop's workspace waits for that loop.
        d.call("scheduler.set", {"max_concurrent": 3})
        d.wait_state(slot["id"], "running")
        same = d.submit(ws, agent_command("sleep.sh", 60), name="same-ws")
        time.sleep(0.3)
        self.assertEqual(d.get(same["id"])["state"], "queued")
        expected = "waiting for loop %d, which runs in the same workspace" % running["id"]
        self.assertRegex(d.ctl("list").stdout,
                         re.compile(r"^ *%d  %s$" % (same["id"], re.escape(expected)), re.M))
        self.assertRegex(d.ctl("show", same["id"]).stdout, r"\nwaits +%s\n" % re.escape(expected))
        # The scheduler paused: every queued loop says so.
        d.ctl("scheduler", "pause")
        paused = d.submit(d.workspace(), agent_command("sleep.sh", 60), name="paused-sched")
        self.assertRegex(d.ctl("list").stdout, re.compile(
            r"^ *%d  the scheduler is paused \(ralphctl scheduler resume\)$" % paused["id"], re.M))
        self.assertIn("the scheduler is paused", d.ctl("top", "--once", paused["id"]).stdout)
        for loop in (running, slot, same, paused):
            d.call("loop.cancel", {"id": loop["id"]})

    def test_a_line_marks_where_each_iteration_and_each_retry_begins(self):
        d = self.daemon()
        # Its first attempt fails, the retry does the work; the third iteration completes.
        loop = d.submit(d.workspace(),
                        "/bin/sh -c 'if [ ! -f failed-once ]; then touch failed-once; "
                        "echo failing; exit 3; "
                        "fi; echo \"work of $RALPH_ITERATION\"; [ $RALPH_ITERATION = 3 ] && "
                        "echo \"<promise>COMPLETE</promise>\"; true'",
                        name="three", max_retries=1)
        d.wait_state(loop["id"], "completed", timeout=30)
        shown = d.ctl("tail", loop["id"]).stdout
        self.assertEqual(re.findall(r"── .* ──", shown),
                         ["── iteration 1 ──", "── iteration 1 · attempt 2 ──",
                          "── iteration 2 ──", "── iteration 3 ──"], shown)
        self.assertIn("── iteration 2 ──\nwork of 2\n", shown)
        self.assertNotIn("──", d.ctl("tail", "--raw", loop["id"]).stdout)
        self.assertIn("── iteration 3 ──", d.ctl("top", "--once", loop["id"]).stdout)
        self.assertIn("── iteration 3 ──", d.ctl("tail", "-f", loop["id"]).stdout)

        followed = d.ctl("submit", "--workspace", d.workspace(), "--command",
                         scripted("say=followed {i}", "2:promise"), "--delay", "0s",
                         "--allow-dirty", "--follow", "x")
        self.assertIn("── iteration 1 ──\nfollowed 1\n── iteration 2 ──\nfollowed 2\n",
                      followed.stdout)


if __name__ == "__main__":
    main()
