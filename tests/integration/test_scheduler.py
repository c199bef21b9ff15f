"""The scheduler and budgets (README, "Scheduling, budgets") with a clock the tests control: ralphd
runs with --test-clock and the tests move its wall clock with debug.clock instead of sleeping for
hours. Priority order, concurrency limits changed at run time, one loop per workspace, budgets per
rolling hour/day (global and per loop, iterations, tokens, cost) that free up with their window and
survive a restart, per-loop caps, a usage limit's reset taken on the daemon's clock, the daily time
window, pause/resume of a loop and of the scheduler, cancel of a paused loop, and kill -9 during
three concurrent loops."""

import datetime
import os
import shlex
import shutil
import signal
import sqlite3

from harness import (DaemonTestCase, agent_command, command_agent, fake_agent_bin, main,
                     parse_time, slow_counter_output, wait_group_gone, wait_until)

FIXTURE_DB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                          "schema-v1.db")
HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS


def epoch_ms(text):
    return int(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


class SchedulerTestCase(DaemonTestCase):

    def clock_daemon(self, *extra_args, start="2026-11-22T12:00:00Z"):
        """A ralphd in UTC whose wall clock starts at `start` and that debug.clock can move."""
        d = self.new_daemon_unstarted(extra_args=["--test-clock", str(epoch_ms(start)),
                                                  *extra_args],
                                      env={"TZ": "UTC"})
        d.env["PATH"] = fake_agent_bin(d.root, names=("claude",)) + ":" + d.env["PATH"]
        d.start()
        return d

    def advance(self, d, ms):
        return d.call("debug.clock", {"advance_ms": ms})

    def now_ms(self, d):
        return d.call("debug.clock", {})["now_ms"]

    def started_order(self, d, ids):
        loops = [d.get(i) for i in ids]
        return [loop["id"] for loop in sorted(loops, key=lambda loop: parse_time(loop["started_at"]))]

    def running_ids(self, d):
        return sorted(loop["id"] for loop in d.call("loop.list", {"states": ["running"]})["loops"])


class QueueTest(SchedulerTestCase):

    def test_a_run_time_concurrency_stands_until_the_configuration_changes(self):
        d = self.clock_daemon("--max-concurrent", "2")

        def max_concurrent():
            return d.call("scheduler.get")["max_concurrent"]

        self.assertEqual(max_concurrent(), 2)
        d.ctl("scheduler", "set", "--max-concurrent", "5")
        # The same configuration at a restart and at SIGHUP: the user's 5 stands.
        d.restart()
        self.assertEqual(max_concurrent(), 5)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "configuration reloaded" in d.log_text(), 10, "the reload")
        self.assertEqual(max_concurrent(), 5)
        # Another value in the configuration: it applies.
        d.extra_args[d.extra_args.index("--max-concurrent") + 1] = "3"
        d.restart()
        self.assertEqual(max_concurrent(), 3)

    def test_priority_then_submit_order_and_max_concurrent_changed_at_run_time(self):
        d = self.clock_daemon()
        blocker = d.submit(d.workspace("blocker"), agent_command("sleep.sh", 60), max_iterations=1)
        d.wait_state(blocker["id"], "running")
        low = d.submit(d.workspace("low"), agent_command("sleep.sh", 60), priority=0, max_iterations=1)
        high = d.submit(d.workspace("high"), agent_command("sleep.sh", 60), priority=5, max_iterations=1)
        mid = d.submit(d.workspace("mid"), agent_command("sleep.sh", 60), priority=1, max_iterations=1)
        mid2 = d.submit(d.workspace("mid2"), agent_command("sleep.sh", 60), priority=1, max_iterations=1)
        for loop in (low, high, mid, mid2):
            self.assertEqual(d.get(loop["id"])["state"], "queued")

        out = d.ctl_json("scheduler", "set", "--max-concurrent", "3")
        self.assertEqual(out["scheduler"]["max_concurrent"], 3)
        wait_until(lambda: len(self.running_ids(d)) == 3, 10, "three loops running")
        self.assertEqual(self.running_ids(d), sorted([blocker["id"], high["id"], mid["id"]]))
        self.assertEqual(d.call("daemon.info")["max_concurrent"], 3)

        d.call("loop.cancel", {"id": high["id"]})
        d.wait_state(mid2["id"], "running")  # same priority as mid: submit order
        self.assertEqual(d.get(low["id"])["state"], "queued")
        d.call("loop.cancel", {"id": mid["id"]})
        d.wait_state(low["id"], "running")

        # The setting is kept across a restart (no --max-concurrent given).
        d.stop()
        d.start()
        self.assertEqual(d.ctl_json("scheduler")["scheduler"]["max_concurrent"], 3)
        human = d.ctl("scheduler").stdout
        self.assertIn("3 at once", human)

    def test_two_loops_never_run_in_the_same_workspace_at_once(self):
        d = self.clock_daemon("--max-concurrent", "2")
        ws = d.workspace()
        first = d.submit(ws, agent_command("sleep.sh", 60), max_iterations=1)
        second = d.submit(ws, agent_command("count-to-complete.sh", 1), max_iterations=1)
        other = d.submit(d.workspace("other"), agent_command("sleep.sh", 60), max_iterations=1)
        d.wait_state(other["id"], "running")
        d.wait_state(first["id"], "running")
        self.assertEqual(d.get(second["id"])["state"], "queued")
        d.call("loop.cancel", {"id": first["id"]})
        d.wait_state(second["id"], "completed")


class BudgetTest(SchedulerTestCase):

    def test_iterations_per_hour_and_day_wait_for_their_window_and_survive_a_restart(self):
        d = self.clock_daemon()
        out = d.ctl_json("budget", "set", "--iterations-per-hour", "2", "--iterations-per-day", "3")
        self.assertEqual(out["budget"]["limits"]["iterations_per_hour"], 2)
        ws = d.workspace()
        loop = d.submit(ws, agent_command("count-to-complete.sh", 100), max_iterations=10)
        waiting = d.wait_state(loop["id"], "waiting")
        self.assertEqual(waiting["iterations"], 2)
        self.assertIn("iterations per hour", waiting["stop_reason"])
        first_start = epoch_ms(d.attempts(loop["id"])[0]["started_at"])
        self.assertEqual(epoch_ms(waiting["resume_at"]), first_start + HOUR_MS)

        budget = d.ctl_json("budget")["budget"]
        hourly = [u for u in budget["use"] if u["name"] == "iterations_per_hour"][0]
        self.assertEqual((hourly["used"], hourly["limit"]), (2, 2))
        self.assertEqual(epoch_ms(hourly["frees_at"]), first_start + HOUR_MS)
        self.assertIn("iterations per hour", d.ctl("budget").stdout)

        # A restart resets nothing: the window is computed from the stored attempts.
        d.stop()
        d.start()
        self.assertEqual(d.call("debug.clock", {"set_ms": epoch_ms("2026-11-22T12:00:00Z")})["now"][:10],
                         "2026-11-22")
        self.assertEqual(d.get(loop["id"])["state"], "waiting")
        self.assertEqual(d.get(loop["id"])["iterations"], 2)

        # An hour later the hourly budget frees up; the daily one (3) stops it after one more.
        d.call("debug.clock", {"set_ms": first_start + HOUR_MS + 1000})
        again = wait_until(lambda: d.get(loop["id"])["iterations"] == 3 and
                           d.get(loop["id"])["state"] == "waiting" and d.get(loop["id"]),
                           20, "the third iteration, then a wait for the daily budget")
        self.assertIn("iterations per day", again["stop_reason"])
        self.assertEqual(epoch_ms(again["resume_at"]), first_start + DAY_MS)

        self.advance(d, DAY_MS)
        d.wait_state(loop["id"], "waiting")
        wait_until(lambda: d.get(loop["id"])["iterations"] == 5, 20, "two more iterations a day later")

    def test_a_loops_own_budget_holds_only_that_loop(self):
        d = self.clock_daemon("--max-concurrent", "2")
        limited = d.submit(d.workspace("limited"), agent_command("count-to-complete.sh", 100),
                           max_iterations=10, iterations_per_hour=1)
        free = d.submit(d.workspace("free"), agent_command("count-to-complete.sh", 4), max_iterations=10)
        waiting = d.wait_state(limited["id"], "waiting")
        self.assertIn("loop %d's budget iterations per hour" % limited["id"], waiting["stop_reason"])
        d.wait_state(free["id"], "completed")
        self.assertIn("1 runs/hour", d.ctl("show", str(limited["id"])).stdout)
        uses = d.call("budget.get", {"id": limited["id"]})["use"]
        self.assertEqual([(u["name"], u["loop_id"], u["used"]) for u in uses],
                         [("iterations_per_hour", limited["id"], 1)])
        self.advance(d, HOUR_MS)
        wait_until(lambda: d.get(limited["id"])["iterations"] == 2, 20, "the next hour's iteration")

    def test_cost_and_token_budgets_and_caps_from_what_the_agent_reported(self):
        d = self.clock_daemon()
        ws = d.workspace()
        # Each run of the recorded claude iteration reports $0.0012 and never completes.
        d.ctl_json("budget", "set", "--cost-per-day", "0.002")
        loop = d.ctl_submit(ws, "Work.", "--agent", "claude", "--env",
                            "FAKE_AGENT_SCRIPT=ralph-iter1", "-m", "10", "--stall-after", "0")
        waiting = d.wait_state(loop["id"], "waiting")
        self.assertEqual(waiting["iterations"], 2)
        self.assertIn("cost per day", waiting["stop_reason"])
        tokens = sum(a["input_tokens"] + a["output_tokens"] for a in d.attempts(loop["id"]))
        self.assertGreater(tokens, 0)
        d.call("loop.cancel", {"id": loop["id"]})

        d.ctl_json("budget", "set", "--cost-per-day", "0", "--tokens-per-day", str(tokens * 2))
        other = d.ctl_submit(d.workspace("other"), "Work.", "--agent", "claude", "--env",
                             "FAKE_AGENT_SCRIPT=ralph-iter1", "-m", "10", "--stall-after", "0")
        waiting = d.wait_state(other["id"], "waiting")
        self.assertEqual(waiting["iterations"], 2, "the day's tokens: 2 of the first loop + 2 here")
        self.assertIn("tokens per day", waiting["stop_reason"])
        d.call("loop.cancel", {"id": other["id"]})

        d.ctl_json("budget", "set", "--tokens-per-day", "0")
        capped = d.ctl_submit(d.workspace("capped"), "Work.", "--agent", "claude", "--env",
                              "FAKE_AGENT_SCRIPT=ralph-iter1", "-m", "10", "--stall-after", "0",
                              "--max-cost", "0.003")
        final = d.wait_state(capped["id"], "exhausted")
        self.assertEqual(final["iterations"], 3)
        self.assertIn("cost cap", final["stop_reason"])

    def test_a_reset_the_agent_states_is_taken_on_the_daemons_clock(self):
        # The daemon's clock is days behind the real one, on which agents state their resets:
        # claude's resetsAt (an epoch: the real time + 2 s) and a program's "try again in 20m".
        d = self.clock_daemon("--rate-limit-margin", "1", "--max-concurrent", "2")
        limited = d.ctl_submit(d.workspace("claude"), "Work.", "--agent", "claude", "--env",
                               "FAKE_AGENT_SCRIPT=rate-limit,ralph-iter2")
        program = d.submit(d.workspace("program"), shlex.quote(command_agent("tool-a")),
                           env={"FAKE_AGENT_SCRIPT": "http429,ralph-iter2"})
        waiting = d.wait_state(program["id"], "waiting")
        self.assertAlmostEqual(parse_time(waiting["resume_at"]) * 1000,
                               self.now_ms(d) + 20 * 60 * 1000 + 1000, delta=10000)
        # Two seconds on, claude's reset has passed on the daemon's clock too.
        final = d.wait_state(limited["id"], ("completed", "failed"), timeout=30)
        self.assertEqual(final["state"], "completed", final)
        held = [a["started_at"] for a in d.attempts(limited["id"])]
        self.assertLess(parse_time(held[1]) - parse_time(held[0]), 15)
        self.advance(d, 21 * 60 * 1000)
        self.assertEqual(d.wait_state(program["id"], "completed")["iterations"], 1)


class TimeWindowTest(SchedulerTestCase):

    def test_loops_run_only_inside_the_window_and_a_running_loop_stops_at_its_end(self):
        d = self.clock_daemon(start="2026-11-22T12:00:00Z")
        out = d.ctl_json("scheduler", "set", "--window", "01:00-07:00")["scheduler"]
        self.assertFalse(out["window_open"])
        self.assertEqual(out["window_opens_at"], "2026-11-23T01:00:00.000Z")
        ws = d.workspace()
        loop = d.submit(ws, agent_command("slow-counter.sh", 100, "0.5"), max_iterations=0)
        waiting = d.wait_state(loop["id"], "waiting")
        self.assertEqual(waiting["resume_at"], "2026-11-23T01:00:00.000Z")
        self.assertIn("time window", waiting["stop_reason"])
        self.assertIn("closed; opens", d.ctl("scheduler").stdout)

        d.call("debug.clock", {"set_ms": epoch_ms("2026-11-23T06:59:00Z")})
        d.wait_state(loop["id"], "running")
        wait_until(lambda: d.get(loop["id"])["iterations"] >= 1, 20, "an iteration in the window")
        d.call("debug.clock", {"set_ms": epoch_ms("2026-11-23T07:00:30Z")})
        waiting = d.wait_state(loop["id"], "waiting")
        self.assertEqual(waiting["resume_at"], "2026-11-24T01:00:00.000Z")
        attempts = d.attempts(loop["id"])
        self.assertEqual({a["termination"] for a in attempts}, {"exited"},
                         "the iteration running when the window closed was not interrupted")

        d.ctl_json("scheduler", "set", "--window", "")
        d.wait_state(loop["id"], "running")
        d.call("loop.cancel", {"id": loop["id"]})


class PauseTest(SchedulerTestCase):

    def test_pause_and_resume_a_running_a_queued_and_a_paused_loop(self):
        d = self.clock_daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("slow-counter.sh", 3, "0.2", 0, 60), max_iterations=10)
        attempt = d.running_attempt(loop["id"])
        queued = d.submit(d.workspace("queued"), agent_command("count-to-complete.sh", 1))
        self.assertEqual(d.ctl_json("pause", str(queued["id"]))["loop"]["state"], "paused")

        d.ctl("pause", str(loop["id"]))
        paused = d.wait_state(loop["id"], "paused")
        self.assertEqual(paused["stop_reason"], "paused by the user")
        wait_group_gone(attempt["pid"], timeout=10)
        self.assertEqual(d.attempts(loop["id"])[0]["termination"], "interrupted")
        self.assertEqual(d.get(queued["id"])["state"], "paused", "a paused loop does not start")

        # Paused survives a restart.
        d.stop()
        d.start()
        self.assertEqual(d.get(loop["id"])["state"], "paused")
        busy = d.submit(d.workspace("busy"), agent_command("sleep.sh", 60))
        d.wait_state(busy["id"], "running")
        failed = d.ctl("resume", str(busy["id"]), check=False)
        self.assertEqual(failed.returncode, 1)
        self.assertIn("not paused", failed.stderr)
        d.call("loop.cancel", {"id": busy["id"]})

        d.ctl("resume", str(loop["id"]))
        final = d.wait_state(loop["id"], "completed", timeout=30)
        self.assertEqual([a["iteration"] for a in d.attempts(loop["id"])], [1, 2, 3],
                         "resumed with the iteration after the interrupted one")
        self.assertEqual(final["iterations"], 3)
        self.assertEqual(d.ctl_json("cancel", str(queued["id"]))["loop"]["state"], "cancelled")

    def test_a_paused_scheduler_lets_iterations_finish_and_starts_nothing(self):
        d = self.clock_daemon()
        loop = d.submit(d.workspace(), agent_command("slow-counter.sh", 2, "1"), max_iterations=5)
        d.running_attempt(loop["id"])
        out = d.ctl_json("scheduler", "pause")["scheduler"]
        self.assertTrue(out["paused"])
        back = d.wait_state(loop["id"], "queued")
        self.assertEqual(back["iterations"], 1)
        self.assertEqual(d.attempts(loop["id"])[0]["termination"], "exited")
        other = d.submit(d.workspace("other"), agent_command("count-to-complete.sh", 1))
        self.assertIn("paused", d.ctl("scheduler").stdout)
        self.assertEqual(d.get(other["id"])["state"], "queued")
        d.ctl("scheduler", "resume")
        d.wait_state(loop["id"], "completed")
        d.wait_state(other["id"], "completed")


class CrashTest(SchedulerTestCase):

    def test_kill_9_during_three_concurrent_loops_then_all_three_continue(self):
        d = self.clock_daemon("--max-concurrent", "3")
        loops = []
        for name in ("a", "b", "c"):
            ws = d.workspace(name)
            loops.append((d.submit(ws, agent_command("slow-counter.sh", 3, "0.2", 0, 3),
                                   max_iterations=10, name=name), ws))
        for loop, _ in loops:
            d.running_attempt(loop["id"])
            d.wait_output_contains(loop["id"], slow_counter_output(1, 3, finished=False))
        d.kill9()
        d.restart()
        # The agents went on under their shims; the new ralphd adopted them.
        expected = (slow_counter_output(1, 3) + slow_counter_output(2, 3) +
                    slow_counter_output(3, 3))
        for loop, ws in loops:
            d.wait_state(loop["id"], "completed", timeout=40)
            self.assertEqual([a["termination"] for a in d.attempts(loop["id"])],
                             ["exited", "exited", "exited"])
            self.assertEqual(d.output(loop["id"]), expected)
        self.assertEqual(d.leftover_processes(), [])

    def test_daemon_shutdown_ends_the_agents_and_the_loops_continue_at_the_next_start(self):
        d = self.clock_daemon("--max-concurrent", "2")
        loops = [d.submit(d.workspace(name), agent_command("slow-counter.sh", 2, "0.2", 0, 60),
                          max_iterations=10, name=name) for name in ("a", "b")]
        pids = [d.running_attempt(loop["id"])["pid"] for loop in loops]
        d.ctl("daemon", "stop")
        self.assertEqual(d.proc.wait(timeout=20), 0)
        for pid in pids:
            wait_group_gone(pid, timeout=5)
        with sqlite3.connect(d.db) as db:
            states = [row[0] for row in db.execute("SELECT state FROM loops ORDER BY id")]
        self.assertEqual(states, ["queued", "queued"])
        d.start()
        for loop in loops:
            d.wait_state(loop["id"], "completed", timeout=30)
            self.assertEqual([a["termination"] for a in d.attempts(loop["id"])],
                             ["interrupted", "exited"])

    def test_a_database_of_the_first_schema_is_migrated_and_served(self):
        d = self.new_daemon_unstarted()
        shutil.copy(FIXTURE_DB, d.db)
        d.start()
        loops = d.call("loop.list", {})["loops"]
        self.assertGreater(len(loops), 0)
        with sqlite3.connect(d.db) as db:
            self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 17)
            # v16: loop.retry's mark, 0 for the loops never retried.
            self.assertEqual(db.execute("SELECT DISTINCT retried_after FROM loops").fetchall(),
                             [(0,)])
            # v13: a claim of completion keeps its rule and answer for its judge.
            columns = [row[1] for row in db.execute("PRAGMA table_info(attempts)")]
            self.assertEqual(columns[-2:], ["completion_rule", "final_answer"])
            # v12: a hold belongs to an account and names where it came from.
            self.assertEqual([row[1] for row in db.execute("PRAGMA table_info(agent_holds)")],
                             ["agent", "account", "until", "reason", "origin"])
            # v7: each attempt of before names the agent it ran on, its loop's.
            self.assertEqual(db.execute("SELECT count(*) FROM attempts a JOIN loops l ON "
                                        "a.loop_id = l.id WHERE a.agent != l.agent").fetchone()[0],
                             0)
            # v8: every attempt of before is the loop's work.
            self.assertEqual(db.execute("SELECT count(*) FROM attempts WHERE kind != 'work'")
                             .fetchone()[0], 0)
            # v9: no loop of before tried to merge its branch.
            self.assertEqual(db.execute("SELECT count(*) FROM loops WHERE landing != ''")
                             .fetchone()[0], 0)
            # v11: no attempt of before kept the trees of its snapshots.
            self.assertEqual(db.execute("SELECT count(*) FROM attempts WHERE tree_before != '' "
                                        "OR tree_after != ''").fetchone()[0], 0)
        # So such an attempt has no diff to give, and the answer says why.
        demo = loops[-1]["id"]
        answer = d.call("loop.diff", {"id": demo, "attempt": d.attempts(demo)[0]["id"]})
        self.assertEqual(answer["diff"], "")
        self.assertIn("kept no git snapshot of the workspace before it", answer["error"])
        self.assertEqual(d.call("budget.get")["use"], [])


if __name__ == "__main__":
    main()
