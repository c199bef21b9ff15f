"""Agents outlive ralphd: each runs under its ralph-shim, which writes its output and keeps its exit
status, and a new ralphd adopts the attempts of the one before (after kill -9, SIGTERM, an
upgrade) instead of killing and re-running them. Compared byte for byte with the agents' own
copies of their output. A deliberate stop (SIGINT, `ralphctl daemon stop`) still ends them."""

import os
import random
import shutil
import time

from harness import (RALPHD, DaemonTestCase, agent_command, git, is_alive, main, parse_time,
                     read_bytes, slow_counter_output, wait_group_gone, wait_until)


def read_pid(workspace, name):
    with open(os.path.join(workspace, name)) as f:
        return int(f.read().strip())


class AdoptionTest(DaemonTestCase):

    def test_kill_9_five_times_during_three_floods_loses_no_byte_and_runs_nothing_twice(self):
        d = self.daemon(extra_args=["--max-concurrent", "3"])
        loops = []
        for _ in range(3):
            ws = d.workspace()
            loop = d.submit(ws, agent_command("flood-copy.py", 24, 0.3), max_iterations=1)
            loops.append((loop["id"], ws))
        for loop_id, _ in loops:
            d.running_attempt(loop_id)
        seed = random.randrange(1 << 30)
        moments = random.Random(seed)
        for _ in range(5):
            time.sleep(moments.uniform(0.2, 1.0))
            d.kill9()
            d.restart()
        for loop_id, ws in loops:
            with self.subTest(loop=loop_id, seed=seed):
                final = d.wait_state(loop_id, "completed", timeout=90)
                self.assertEqual(final["iterations"], 1)
                attempts = d.attempts(loop_id)
                self.assertEqual(len(attempts), 1, "an adopted iteration is never run again")
                self.assertEqual(attempts[0]["termination"], "exited")
                self.assertEqual(attempts[0]["exit_code"], 0)
                own = read_bytes(os.path.join(ws, ".own-output"))
                self.assertEqual(own.count(b"\n"), 24 * 16 * 1024 + 1)
                self.assertTrue(own.endswith(b"<promise>COMPLETE</promise>\n"))
                stored = d.output(loop_id)
                self.assertEqual(len(stored), len(own))
                self.assertEqual(stored, own, "the output differs from the agent's own copy")
                self.assertEqual(attempts[0]["output_end"] - attempts[0]["output_start"], len(own))

    def test_an_agent_that_ends_while_ralphd_is_down_is_recorded_with_its_exit_status(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("flood-copy.py", 2, 0.5, 3), max_iterations=1)
        attempt = d.running_attempt(loop["id"])
        wait_until(lambda: os.path.exists(os.path.join(ws, ".flood.pid")), 10, "the agent")
        d.kill9()
        agent = read_pid(ws, ".flood.pid")
        wait_until(lambda: not is_alive(agent), 20, "the agent to end while ralphd is down")
        ended_by = time.time()
        d.restart()
        final = d.wait_state(loop["id"], "failed", timeout=20)
        attempts = d.attempts(loop["id"])
        self.assertEqual([a["id"] for a in attempts], [attempt["id"]])
        self.assertEqual(attempts[0]["termination"], "failed")
        self.assertEqual(attempts[0]["exit_code"], 3)
        self.assertIn("status 3", final["stop_reason"])
        self.assertLessEqual(parse_time(attempts[0]["ended_at"]), ended_by + 0.5,
                             "the end time is the agent's, not the restart's")
        self.assertEqual(d.output(loop["id"]), read_bytes(os.path.join(ws, ".own-output")))

    def test_an_upgraded_ralphd_adopts_the_agents_of_the_one_before(self):
        # The old version: a copy of ralphd and its shim elsewhere, as a package upgrade leaves
        # the running binary's files behind.
        d = self.new_daemon_unstarted()
        old = os.path.join(d.root, "old-bin")
        os.mkdir(old)
        for name in ("ralphd", "ralph-shim"):
            shutil.copy2(os.path.join(os.path.dirname(RALPHD), name), old)
        d.program = os.path.join(old, "ralphd")
        d.start()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("slow-counter.sh", 2, "0.2", 0, 3), max_iterations=5)
        first = d.running_attempt(loop["id"])
        d.wait_output_contains(loop["id"], b"iteration 1 of 2 started")
        d.stop(leave_running=True)  # SIGTERM, as systemctl restart sends
        self.assertTrue(is_alive(first["pid"]), "SIGTERM left the agent running")
        d.program = RALPHD
        d.start()
        d.wait_state(loop["id"], "completed", timeout=30)
        attempts = d.attempts(loop["id"])
        self.assertEqual(attempts[0]["id"], first["id"])
        self.assertEqual([a["termination"] for a in attempts], ["exited", "exited"])
        self.assertEqual([a["iteration"] for a in attempts], [1, 2])
        self.assertEqual(d.output(loop["id"]),
                         slow_counter_output(1, 2) + slow_counter_output(2, 2))
        # The snapshot before the adopted attempt came with it (in its directory): its diff is
        # the first run's count.
        self.assertEqual(attempts[0]["head_before"], git(ws, "rev-parse", "HEAD").strip())
        diff = d.call("loop.diff", {"id": loop["id"], "attempt": first["id"]})
        self.assertEqual(diff["error"], "")
        self.assertIn("--- /dev/null\n+++ b/.slow-counter\n@@ -0,0 +1 @@\n+1\n", diff["diff"])

    def test_daemon_stop_ends_the_agents_unless_asked_to_leave_them_running(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("slow-counter.sh", 2, "30"), max_iterations=2)
        attempt = d.running_attempt(loop["id"])
        d.ctl("daemon", "stop", "--leave-running")
        d.proc.wait(timeout=20)
        self.assertEqual(d.proc.returncode, 0)
        self.assertTrue(is_alive(attempt["pid"]))
        d.start()
        self.assertEqual(d.running_attempt(loop["id"])["id"], attempt["id"])
        d.ctl("daemon", "stop")
        d.proc.wait(timeout=20)
        self.assertEqual(d.proc.returncode, 0)
        wait_group_gone(attempt["pid"], timeout=10)
        d.start()
        self.assertEqual(d.attempts(loop["id"])[0]["termination"], "interrupted")
        # The interrupted iteration counts as spent: the loop goes on with the next one.
        self.assertEqual(d.running_attempt(loop["id"])["iteration"], 2)

    def test_sigterm_leaves_the_agents_running_and_sigint_ends_them(self):
        d = self.daemon()  # --kill-grace 1
        ws = d.workspace()
        loop = d.submit(ws, agent_command("ignore-term-with-grandchild.sh"), max_iterations=1)
        attempt = d.running_attempt(loop["id"])
        wait_until(lambda: os.path.exists(os.path.join(ws, ".grandchild.pid")), 10,
                   "the agent's grandchild")
        d.stop(leave_running=True)  # SIGTERM: exits 0
        self.assertTrue(is_alive(attempt["pid"]))
        d.start()
        d.stop(timeout=20)  # SIGINT: exits 0 once the agent that ignores SIGTERM was killed
        wait_group_gone(attempt["pid"], timeout=5)

    def test_sigterm_while_agents_start_exits_0_and_the_next_ralphd_takes_each_one_up(self):
        # Eight loops start at once: their starts (snapshots, the shims) wait for the thread
        # pool when SIGTERM comes. ralphd ends what the pool was doing, runs nothing it had not
        # begun, and exits 0 (it crashed, a start running on what it had destroyed: found by
        # the night simulation, seed 22); the next ralphd finds every loop.
        for _ in range(3):
            d = self.daemon(extra_args=["--max-concurrent", "8"])
            d.call("scheduler.set", {"paused": True})
            loops = [d.submit(d.workspace("w%d" % i), agent_command("sleep.sh", "30"),
                              max_iterations=1)["id"] for i in range(8)]
            d.call("scheduler.set", {"paused": False})
            time.sleep(0.02)
            d.stop(leave_running=True)
            d.start()
            for loop_id in loops:
                d.wait_state(loop_id, "running")
            d.stop()


class NoEscapeTest(DaemonTestCase):
    """Every process an attempt creates ends with it, also those that leave its process group
    (setsid) or double-fork while holding its stdout: with a cgroup per attempt (as root) and
    with the shim ending its descendants (--cgroups off)."""

    def escapees(self, ws):
        wait_until(lambda: all(os.path.exists(os.path.join(ws, name))
                               for name in (".escaped-setsid.pid", ".escaped-fork.pid")),
                   10, "the escaping sleepers")
        return [read_pid(ws, ".escaped-setsid.pid"), read_pid(ws, ".escaped-fork.pid")]

    def assert_gone(self, pids, timeout=10):
        wait_until(lambda: not any(is_alive(pid) for pid in pids), timeout,
                   "the attempt's processes %r to end" % pids)

    def check_mode(self, mode):
        d = self.daemon(extra_args=["--cgroups", mode])
        with self.subTest(mode=mode, end="the agent exits"):
            ws = d.workspace()
            loop = d.submit(ws, agent_command("escape-artist.sh", "exit"), max_iterations=1)
            pids = self.escapees(ws)
            if mode == "auto" and os.geteuid() == 0:
                with open("/proc/%d/cgroup" % pids[0]) as f:
                    self.assertIn("-attempt-", f.read(), "the agent runs in its attempt's cgroup")
            started = time.monotonic()
            d.wait_state(loop["id"], "completed", timeout=20)
            self.assert_gone(pids)
            # Ended at the agent's exit: SIGTERM, then SIGKILL after the grace (1 s).
            self.assertLess(time.monotonic() - started, 8)
        with self.subTest(mode=mode, end="cancel"):
            ws = d.workspace()
            loop = d.submit(ws, agent_command("escape-artist.sh", "wait"), max_iterations=1)
            pids = self.escapees(ws)
            d.ctl("cancel", loop["id"])
            d.wait_state(loop["id"], "cancelled", timeout=20)
            self.assert_gone(pids)
        with self.subTest(mode=mode, end="timeout"):
            ws = d.workspace()
            loop = d.submit(ws, agent_command("escape-artist.sh", "wait"), max_iterations=1,
                            timeout_s=2)
            pids = self.escapees(ws)
            d.wait_state(loop["id"], "failed", timeout=20)
            self.assertEqual(d.attempts(loop["id"])[0]["termination"], "timeout")
            self.assert_gone(pids)
        with self.subTest(mode=mode, end="restart, then stop"):
            ws = d.workspace()
            loop = d.submit(ws, agent_command("escape-artist.sh", "wait"), max_iterations=1)
            pids = self.escapees(ws)
            d.kill9()
            d.restart()
            self.assertTrue(all(is_alive(pid) for pid in pids), "adopted, not killed")
            d.stop()  # SIGINT: a deliberate stop ends them
            self.assert_gone(pids)

    def test_an_agent_that_kills_its_shim_leaves_none_of_its_group_running(self):
        # Without cgroups the shim ends what the agent leaves; an agent that kills its shim
        # first is ended by ralphd, which finds the shim gone without an exit file: the agent's
        # whole process group (the double-forked sleeper with it). One that left the group
        # (setsid) only a cgroup can find (README, "No orphans").
        d = self.daemon(extra_args=["--cgroups", "off"])
        ws = d.workspace()
        loop = d.submit(ws, agent_command("escape-artist.sh", "kill-shim"), max_iterations=1)
        setsid_pid, fork_pid = self.escapees(ws)
        self.addCleanup(lambda: is_alive(setsid_pid) and os.kill(setsid_pid, 9))
        final = d.wait_state(loop["id"], ("failed", "completed", "exhausted"), timeout=20)
        [attempt] = d.attempts(loop["id"])
        self.assert_gone([attempt["pid"], fork_pid])
        self.assertNotEqual(final["state"], "completed", final)
        self.assertNotEqual(attempt["termination"], "exited", attempt)

    def test_with_a_cgroup_per_attempt(self):
        self.check_mode("auto")

    def test_with_the_shim_as_subreaper(self):
        self.check_mode("off")


if __name__ == "__main__":
    main()
