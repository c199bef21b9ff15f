"""The verbs users of pueue and task-spooler expect: `ralphctl retry` (a failed, stalled or
cancelled loop runs again from where it was), `extend` (more iterations), `rm` (an ended loop
removed as gc removes it), `wait` (blocks until loops end, the exit code by their outcome) and
`daemon start` (ralphd in the background without systemd, refusing a second one)."""

import os
import signal
import subprocess
import time

from harness import (RALPHD, DaemonTestCase, agent_command, is_alive, main, scaled, wait_until)


class RetryTest(DaemonTestCase):

    def test_a_failed_loop_runs_again_from_where_it_was_until_it_completes(self):
        d = self.daemon()
        ws = d.workspace()
        # Its first two runs fail, the third completes; no retry within the loop.
        loop = d.submit(ws, agent_command("fail.sh", 3, 2), max_retries=0)
        failed = d.wait_state(loop["id"], "failed", timeout=15)
        self.assertIn("failed 1 time(s)", failed["stop_reason"])

        out = d.ctl("retry", loop["id"]).stdout
        self.assertEqual(out, "retried loop %d (was failed; now queued)\n" % loop["id"])
        # Its failure before the retry is behind it: one more failure past max_retries 0.
        again = d.wait_state(loop["id"], "failed", timeout=15)
        self.assertEqual(len(d.attempts(loop["id"])), 2)
        self.assertEqual(again["iterations"], 0)

        retried = d.ctl_json("retry", loop["id"])["loop"]
        self.assertEqual(retried["id"], loop["id"])
        done = d.wait_state(loop["id"], "completed", timeout=15)
        self.assertEqual(done["iterations"], 1)
        attempts = d.attempts(loop["id"])
        self.assertEqual([a["termination"] for a in attempts], ["failed", "failed", "exited"])
        self.assertEqual({a["iteration"] for a in attempts}, {1})

        # A completed loop is done: retry says what to do instead.
        refused = d.ctl("retry", loop["id"], check=False)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("cannot retry loop %d: it completed; submit it again" % loop["id"],
                      refused.stderr)

    def test_a_cancelled_loop_keeps_its_iterations_and_a_running_one_cannot_be_retried(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("never-complete.sh"), max_iterations=3, delay_s=30)
        d.wait_state(loop["id"], "waiting", timeout=15)  # the delay after iteration 1
        refused = d.ctl("retry", loop["id"], check=False)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("cannot retry loop %d: it is waiting, not ended" % loop["id"],
                      refused.stderr)

        d.ctl("cancel", loop["id"])
        d.wait_state(loop["id"], "cancelled", timeout=10)
        d.call("loop.retry", {"id": loop["id"]})
        # Iteration 2 runs next: the count went on.
        wait_until(lambda: len(d.attempts(loop["id"])) == 2, scaled(15), "a second attempt")
        self.assertEqual(d.attempts(loop["id"])[1]["iteration"], 2)

    def test_an_exhausted_loop_is_extended_not_retried(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("never-complete.sh"), max_iterations=2)
        d.wait_state(loop["id"], "exhausted", timeout=15)
        refused = d.ctl("retry", loop["id"], check=False)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("give it more iterations: ralphctl extend %d --by N" % loop["id"],
                      refused.stderr)


class ExtendTest(DaemonTestCase):

    def test_an_exhausted_loop_runs_more_iterations_and_a_running_one_runs_longer(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("never-complete.sh"), max_iterations=2)
        d.wait_state(loop["id"], "exhausted", timeout=15)
        out = d.ctl("extend", loop["id"], "--by", 2).stdout
        self.assertEqual(out, "loop %d may run 4 iterations (2 run; was exhausted, now queued)\n"
                         % loop["id"])
        wait_until(lambda: d.get(loop["id"])["iterations"] == 4, scaled(15), "4 iterations")
        done = d.wait_state(loop["id"], "exhausted", timeout=15)
        self.assertEqual(done["max_iterations"], 4)
        self.assertEqual(len(d.attempts(loop["id"])), 4)

        # A running loop: the limit is raised, the loop goes on past its first one.
        running = d.submit(d.workspace("ws2"), agent_command("sleep.sh", 1), max_iterations=1)
        d.wait_state(running["id"], "running", timeout=10)
        extended = d.call("loop.extend", {"id": running["id"], "by": 1})
        self.assertEqual(extended["max_iterations"], 2)
        self.assertEqual(extended["state"], "running")
        ended = d.wait_state(running["id"], "exhausted", timeout=20)
        self.assertEqual(ended["iterations"], 2)

    def test_extend_refuses_what_it_cannot_do_and_says_what_to_do(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("fail.sh", 3))
        d.wait_state(loop["id"], "failed", timeout=15)
        refused = d.ctl("extend", loop["id"], "--by", 3, check=False)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("it is failed, not exhausted; run it again: ralphctl retry %d"
                      % loop["id"], refused.stderr)
        usage = d.ctl("extend", loop["id"], "--by", 0, check=False)
        self.assertEqual(usage.returncode, 2)
        self.assertIn("--by", usage.stderr)
        self.assertNotIn("000000000", usage.stderr)
        missing = d.ctl("extend", loop["id"], check=False)
        self.assertEqual(missing.returncode, 2)
        unknown = d.ctl("extend", 999, "--by", 1, check=False)
        self.assertEqual(unknown.returncode, 1)
        self.assertIn("999", unknown.stderr)


class RemoveTest(DaemonTestCase):

    def test_rm_removes_ended_loops_with_their_files_and_refuses_a_running_one(self):
        d = self.daemon()
        ended = d.submit(d.workspace("a"), agent_command("never-complete.sh"), max_iterations=1)
        d.wait_state(ended["id"], "exhausted", timeout=15)
        running = d.submit(d.workspace("b"), agent_command("sleep.sh", 60), max_iterations=1)
        d.wait_state(running["id"], "running", timeout=10)
        output_file = os.path.join(d.state_dir, "ralph", "output", "%d.log" % ended["id"])
        self.assertTrue(os.path.exists(output_file))

        proc = d.ctl("rm", ended["id"], running["id"], 999, check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stdout, r"^removed loop %d: 1 attempt, \d+ events?, " % ended["id"])
        self.assertIn("cannot remove loop %d: it is running, not ended (cancel it first: "
                      "ralphctl cancel %d)" % (running["id"], running["id"]), proc.stderr)
        self.assertIn("999", proc.stderr)
        self.assertFalse(os.path.exists(output_file))
        ids = [loop["id"] for loop in d.call("loop.list", {})["loops"]]
        self.assertEqual(ids, [running["id"]])

        d.ctl("cancel", running["id"])
        d.wait_state(running["id"], "cancelled", timeout=10)
        out = d.ctl_json("rm", running["id"])
        self.assertEqual([r["id"] for r in out["removed"]], [running["id"]])
        self.assertEqual(out["errors"], [])
        self.assertEqual(d.call("loop.list", {})["loops"], [])


class WaitTest(DaemonTestCase):

    def test_wait_blocks_until_the_loops_end_and_exits_by_their_outcome(self):
        d = self.daemon()
        marker = os.path.join(d.root, "go")
        done = d.submit(d.workspace("a"), agent_command("scripted-agent.py",
                                                        "wait=%s" % marker, "promise"),
                        max_iterations=1)
        d.wait_state(done["id"], "running", timeout=10)
        waiter = d.ctl_popen("wait", done["id"])
        time.sleep(scaled(0.5))
        self.assertIsNone(waiter.poll(), "wait returned while the loop runs")
        with open(marker, "w"):
            pass
        out, err = waiter.communicate(timeout=scaled(15))
        self.assertEqual(waiter.returncode, 0, err)
        self.assertIn(b"loop %d completed" % done["id"], err)

        failed = d.submit(d.workspace("b"), agent_command("fail.sh", 3))
        proc = d.ctl("wait", done["id"], failed["id"], check=False, timeout=20)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("loop %d failed" % failed["id"], proc.stderr)

        # --all: every loop that has not ended; a cancelled one is 130.
        slow = d.submit(d.workspace("c"), agent_command("sleep.sh", 60), max_iterations=1)
        d.wait_state(slow["id"], "running", timeout=10)
        waiter = d.ctl_popen("wait", "--all")
        time.sleep(scaled(0.3))
        self.assertIsNone(waiter.poll())
        d.ctl("cancel", slow["id"])
        waiter.communicate(timeout=scaled(15))
        self.assertEqual(waiter.returncode, 130)

        nothing = d.ctl("wait", "--all")
        self.assertIn("nothing to wait for", nothing.stderr)
        usage = d.ctl("wait", check=False)
        self.assertEqual(usage.returncode, 2)


class DocumentationTest(DaemonTestCase):

    def test_the_verbs_are_in_the_help_the_manual_page_and_the_completions(self):
        d = self.new_daemon_unstarted()
        helped = d.ctl("--help").stdout
        manual = d.ctl("man-page").stdout
        for verb, synopsis in (("retry", "retry ID"), ("extend", "extend ID"), ("rm", "rm IDS"),
                               ("wait", "wait IDS")):
            self.assertRegex(helped, r"(?m)^\s+%s\s" % verb)
            self.assertIn('.SS "ralphctl %s' % synopsis, manual)
        self.assertIn('.SS "ralphctl daemon start', manual)
        self.assertIn("--daemonize", subprocess.run([RALPHD, "--help"], capture_output=True,
                                                    text=True).stdout)
        for shell in ("bash", "zsh", "fish"):
            script = d.ctl("completion", shell).stdout
            for word in ("retry", "extend", "rm", "wait", "start"):
                self.assertIn(word, script, (shell, word))
            self.assertRegex(script, r"--by\b|-l 'by'", shell)


class DaemonStartTest(DaemonTestCase):

    def test_daemon_start_runs_ralphd_in_the_background_and_refuses_a_second(self):
        d = self.new_daemon_unstarted()
        env = {"PATH": os.path.dirname(RALPHD) + os.pathsep + os.environ.get("PATH", "")}
        pid_file = d.db + ".lock"
        started = None
        try:
            proc = d.ctl("daemon", "start", "--", "--db", d.db, "--kill-grace", "1", env=env,
                         timeout=30)
            self.assertRegex(proc.stdout, r"^ralphd started: pid \d+, socket %s" % d.socket)
            info = d.call("daemon.info")
            started = info["pid"]
            with open(pid_file) as f:
                self.assertEqual(int(f.read().strip()), started, proc.stdout)
            # In a session of its own (not ralphctl's), which it does not lead: no terminal.
            self.assertNotEqual(os.getsid(started), os.getsid(0))
            self.assertNotEqual(os.getsid(started), started)
            self.assertTrue(os.path.exists(os.path.join(d.state_dir, "ralph", "ralphd.log")))

            again = d.ctl("daemon", "start", env=env, check=False)
            self.assertEqual(again.returncode, 1)
            self.assertIn("ralphd is already running (pid %d" % started, again.stderr)
            # Another socket, the same database: ralphd itself refuses, naming the pid.
            other = subprocess.run(
                [RALPHD, "--daemonize", "--socket", os.path.join(d.runtime_dir, "other.sock"),
                 "--db", d.db], env=d.env, capture_output=True, text=True,
                timeout=scaled(20))
            self.assertEqual(other.returncode, 1)
            self.assertIn("another ralphd (pid %d) is already running" % started, other.stderr)

            d.ctl("daemon", "stop")
            wait_until(lambda: not is_alive(started), scaled(15), "ralphd to exit")
            started = None
        finally:
            if started and is_alive(started):
                os.kill(started, signal.SIGKILL)


if __name__ == "__main__":
    main()
