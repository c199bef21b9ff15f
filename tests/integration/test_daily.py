"""ralphctl as a person meets it every morning: bare `ralphctl` (the loops, or the help when no
daemon runs), a typo of a command or an agent ("did you mean"), what cancel, pause and resume
say they did, range errors that read well and exit 2, tables that fit an 80-column terminal
(names and paths cut with "…", optional columns left out), numbers humanised (k/M) with a
budget's share of its limit."""

import re

from harness import DaemonTestCase, agent_command, main

LONG_NAME = "a-loop-whose-name-is-far-too-long-for-any-table-of-eighty-columns"


def too_wide(text, columns):
    """The lines of `text` wider than `columns` (code points)."""
    return [line for line in text.splitlines() if len(line) > columns]


class DailyTest(DaemonTestCase):

    def test_bare_ralphctl_prints_the_loops_or_without_a_daemon_the_help(self):
        d = self.new_daemon_unstarted()
        alone = d.ctl(check=False)
        self.assertEqual(alone.returncode, 0, alone)
        self.assertIn("submit", alone.stdout, "the help lists the commands")
        self.assertIn("Subcommands:", alone.stdout)
        self.assertIn("not running", alone.stderr, "and says how to start ralphd")
        self.assertNotIn("A subcommand is required", alone.stdout + alone.stderr)
        self.assertEqual(d.ctl("--json", check=False).returncode, 3, "--json: the error, no help")

        d.start()
        empty = d.ctl().stdout
        self.assertIn("scheduler 0 of 1 running", empty)
        self.assertIn("No loop yet", empty)
        loop = d.submit(d.workspace(), agent_command("sleep.sh", 60), name="morning-loop")
        d.wait_state(loop["id"], "running")
        summary = d.ctl().stdout
        self.assertRegex(summary, r"%d\s+morning-loop\s+running" % loop["id"])
        self.assertIn("--help: every command", summary)
        self.assertEqual([l["id"] for l in d.ctl_json()["loops"]], [loop["id"]])
        d.call("loop.cancel", {"id": loop["id"]})

    def test_a_typo_of_a_command_or_an_agent_gets_did_you_mean(self):
        d = self.daemon()
        for typo, meant in (("lst", "list"), ("sbumit", "submit"), ("canel", "cancel"),
                            ("budge", "budget")):
            proc = d.ctl(typo, check=False)
            self.assertEqual(proc.returncode, 2, proc)
            self.assertIn("'%s' is not a ralphctl command" % typo, proc.stderr)
            self.assertIn("did you mean '%s'?" % meant, proc.stderr)
        nothing_like = d.ctl("xyzzy", check=False)
        self.assertEqual(nothing_like.returncode, 2)
        self.assertNotIn("did you mean", nothing_like.stderr)
        self.assertIn("ralphctl --help", nothing_like.stderr)

        for option, typo, meant in (("--agent", "claud", "claude"), ("--agent", "gemeni", "gemini"),
                                    ("--judge", "codx", "codex")):
            proc = d.ctl("submit", "--workspace", d.workspace(), "--command", "/bin/true",
                         option, typo, "x", check=False)
            self.assertEqual(proc.returncode, 2, proc)
            self.assertIn("unknown agent '%s'" % typo, proc.stderr)
            self.assertIn("did you mean '%s'?" % meant, proc.stderr)
        self.assertEqual(d.call("loop.list", {})["loops"], [], "nothing was submitted")

    def test_cancel_pause_and_resume_say_what_they_did_and_what_the_loop_was(self):
        d = self.daemon()
        ws = d.workspace()
        running = d.submit(ws, agent_command("sleep.sh", 60), name="runs")
        d.wait_state(running["id"], "running")
        queued = d.submit(ws, agent_command("sleep.sh", 60), name="waits-its-turn")
        self.assertEqual(d.ctl("cancel", queued["id"]).stdout,
                         "cancelled loop %d (was queued)\n" % queued["id"])
        self.assertEqual(d.ctl("pause", running["id"]).stdout,
                         "paused loop %d (was running; its agent is being stopped)\n"
                         % running["id"])
        d.wait_state(running["id"], "paused")
        self.assertEqual(d.ctl("resume", running["id"]).stdout,
                         "resumed loop %d (was paused; now queued)\n" % running["id"])
        d.wait_state(running["id"], "running")
        self.assertEqual(d.ctl("cancel", running["id"]).stdout,
                         "cancelled loop %d (was running; its agent is being stopped)\n"
                         % running["id"])

    def test_range_errors_are_readable_and_exit_2(self):
        d = self.daemon()
        for args, said in ((["budget", "set", "--cost-per-day", "-1"], "'-1' is not a number >= 0"),
                           (["budget", "set", "--cost-per-day", "lots"],
                            "'lots' is not a number >= 0"),
                           (["submit", "--max-cost", "-5", "x"], "'-5' is not a number >= 0"),
                           (["top", "--interval", "0"], "'0' is not a number from 0.1 to 3600"),
                           (["scheduler", "set", "--max-concurrent", "0"],
                            "'0' is not a number from 1 to 1000"),
                           (["submit", "-m", "-3", "x"], "'-3' is not a whole number >= 0")):
            proc = d.ctl(*args, check=False)
            self.assertEqual(proc.returncode, 2, (args, proc))
            self.assertIn(said, proc.stderr, args)
            self.assertLess(len(proc.stderr), 300, "no 309-digit number: %r" % proc.stderr)

    def test_tables_fit_80_columns_and_numbers_are_humanised(self):
        d = self.daemon()
        ws = d.workspace("a-workspace-with-a-long-name-too-" + "x" * 40)
        loop = d.submit(ws, agent_command("count-to-complete.sh", 1), name=LONG_NAME)
        d.wait_state(loop["id"], "completed")
        d.ctl("budget", "set", "--tokens-per-day", "1500000", "--iterations-per-hour", "4")
        narrow = {"COLUMNS": "80"}
        for args in (["list"], [], ["show", loop["id"]], ["report"], ["budget"], ["agents"],
                     ["top", "--once"], ["hosts"], ["doctor"]):
            proc = d.ctl(*args, env=narrow, check=False)
            table = proc.stdout
            # The tables, not the free text around them (the key/value block of show, the
            # details of report, doctor's fixes, top's output).
            if args[:1] in (["show"], ["report"]):
                table = table.split("\n\n")[1]
            if args[:1] == ["top"]:
                table = table[:table.index("── loop")]
            if args[:1] == ["doctor"]:
                table = table.split("\nfix ")[0]
            self.assertEqual(too_wide(table, 80), [], (args, proc.stdout, proc.stderr))
        listed = d.ctl("list", env=narrow).stdout
        self.assertIn(LONG_NAME[:10], listed)
        self.assertNotIn(LONG_NAME, listed)
        self.assertRegex(listed, re.compile(r"  …x+-\w+$", re.M),
                         "a path is cut at its start, its end kept")
        self.assertIn(LONG_NAME, d.ctl("list").stdout, "to a pipe, nothing is cut")

        budget = d.ctl("budget").stdout
        self.assertRegex(budget, r"tokens per day\s+all loops\s+0\s+1\.5M\s+0%")
        self.assertRegex(budget, r"iterations per hour\s+all loops\s+1\s+4\s+25%")


if __name__ == "__main__":
    main()
