"""`ralphctl report` and `ralphctl gc` (history.report, history.gc) through the real ralphd and
ralphctl: the report's numbers against what real loops of the fake agents did (a loop that
commits in a git workspace, one that fails, one cancelled), --since as an age or an ISO 8601
time, the human output; gc removing the loops that ended before the cutoff with their output
files and prompts, never a live loop, --dry-run removing nothing, removed loops not found any
more, and a tail of a loop being removed ending cleanly. Loops are made "old" by moving their
timestamps in the SQLite file while the daemon is stopped."""

import datetime
import os
import sqlite3
import time

from harness import (DaemonTestCase, RpcError, TERMINAL_STATES, agent_command, git, main,
                     parse_time, scaled, scripted)

DAY_MS = 24 * 3600 * 1000
TOKENS_LINE = "Tokens: 1,000 sent, 200 received. Cost: $0.05 message, $0.10 session."


def now_ms():
    return int(time.time() * 1000)


def iso_utc(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def iso_local(ms):
    """The same time as local time without a zone, as a user would type it."""
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%dT%H:%M:%S")


def shift_history(db_path, loop_ids, delta_ms, attempts_before=None):
    """Moves the loops' times (and their attempts', or only those of iterations below
    attempts_before) by delta_ms; ralphd must be stopped."""
    with sqlite3.connect(db_path) as db:
        for loop_id in loop_ids:
            db.execute("UPDATE loops SET created_at = created_at + ?1, "
                       "started_at = CASE WHEN started_at > 0 THEN started_at + ?1 ELSE 0 END, "
                       "updated_at = updated_at + ?1 WHERE id = ?2", (delta_ms, loop_id))
            where = "loop_id = ?2" + ("" if attempts_before is None
                                      else " AND iteration < %d" % attempts_before)
            db.execute("UPDATE attempts SET started_at = started_at + ?1, "
                       "ended_at = CASE WHEN ended_at > 0 THEN ended_at + ?1 ELSE 0 END "
                       "WHERE " + where, (delta_ms, loop_id))


def set_finished(db_path, loop_id, finished_ms):
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE loops SET finished_at = ?1, updated_at = ?1 WHERE id = ?2",
                   (finished_ms, loop_id))


def agent_seconds(attempts):
    """How long the attempts ran, in seconds, as the report sums them (ms precision)."""
    total_ms = 0
    for a in attempts:
        total_ms += (round(parse_time(a["ended_at"]) * 1000)
                     - round(parse_time(a["started_at"]) * 1000))
    return total_ms / 1000


class HistoryTestCase(DaemonTestCase):

    def history_daemon(self):
        return self.daemon(extra_args=["--max-concurrent", "8"])

    def finish(self, d, loop_id, states=TERMINAL_STATES):
        d.wait_state(loop_id, states, timeout=30)
        return d.ctl_json("show", loop_id)

    def run_three_loops(self, d):
        """A loop that commits three iterations in a git workspace and completes, one whose
        agent fails twice (one retry), one cancelled while its agent runs. Returns
        ({name: (loop, attempts)}, the committer's workspace, its HEAD before the loop)."""
        ws = d.workspace("committer")
        first_head = git(ws, "rev-parse", "HEAD").strip()
        committer = d.ctl_submit(ws, "Do the work.", "--command",
                                 scripted("append=work.txt:line {i}", "commit",
                                          "say=" + TOKENS_LINE, "3:promise"),
                                 "-m", "5", name="committer")
        failing = d.ctl_submit(d.workspace("failing"), "Fail.", "--command",
                               agent_command("fail.sh", "3"), "--backoff", "0.1",
                               name="failing", retries="1")
        cancelled = d.ctl_submit(d.workspace("cancelled"), "Sleep.", "--command",
                                 agent_command("sleep.sh", "60"), name="cancelled")
        d.running_attempt(cancelled["id"])
        d.ctl("cancel", cancelled["id"])

        result = {}
        for loop in (committer, failing, cancelled):
            shown = self.finish(d, loop["id"])
            result[loop["name"]] = (shown["loop"], shown["attempts"])
        self.assertEqual(result["committer"][0]["state"], "completed")
        self.assertEqual(result["failing"][0]["state"], "failed")
        self.assertEqual(result["cancelled"][0]["state"], "cancelled")
        return result, ws, first_head


class ReportTest(HistoryTestCase):

    def test_report_numbers_are_what_the_loops_did(self):
        d = self.history_daemon()
        started = now_ms()
        loops, ws, first_head = self.run_three_loops(d)
        last_head = git(ws, "rev-parse", "HEAD").strip()
        self.assertEqual(git(ws, "rev-list", "--count", first_head + ".." + last_head).strip(), "3")

        report = d.ctl_json("report")
        window = parse_time(report["until"]) - parse_time(report["since"])
        self.assertAlmostEqual(window, 86400, delta=5, msg="the default window is 24 hours")
        by_name = {loop["name"]: loop for loop in report["loops"]}
        self.assertEqual(sorted(by_name), ["cancelled", "committer", "failing"])
        self.assertEqual([loop["id"] for loop in report["loops"]],
                         sorted(loop["id"] for loop in report["loops"]), "by id")

        c = by_name["committer"]
        loop, attempts = loops["committer"]
        self.assertEqual((c["id"], c["state"], c["stop_reason"], c["workspace"], c["agent"]),
                         (loop["id"], "completed", loop["stop_reason"], loop["workspace"],
                          "command"))
        self.assertIn("iteration 3", c["stop_reason"])
        self.assertEqual((c["attempts"], c["iterations"], c["iterations_total"],
                          c["max_iterations"], c["retries"]), (3, 3, 3, 5, 0))
        self.assertEqual((c["commits"], c["head_before"], c["head_after"]),
                         (3, first_head, last_head))
        self.assertEqual((c["files_changed"], c["insertions"], c["deletions"]), (3, 3, 0))
        self.assertEqual((c["input_tokens"], c["output_tokens"]), (3000, 600))
        self.assertAlmostEqual(c["cost_usd"], 0.15)
        self.assertEqual(c["failures"], {})
        self.assertEqual((c["created_at"], c["started_at"], c["finished_at"]),
                         (loop["created_at"], loop["started_at"], loop["finished_at"]))
        self.assertAlmostEqual(c["agent_time_s"], agent_seconds(attempts), places=3)
        self.assertGreaterEqual(c["duration_s"], c["agent_time_s"])
        self.assertLess(c["duration_s"], (now_ms() - started) / 1000)

        f = by_name["failing"]
        self.assertEqual((f["state"], f["attempts"], f["iterations"], f["iterations_total"],
                          f["retries"], f["commits"]), ("failed", 2, 1, 0, 1, 0))
        self.assertEqual(f["failures"], {"crash": 2})
        self.assertEqual((f["input_tokens"], f["output_tokens"], f["cost_usd"]), (0, 0, None))
        self.assertIn("iteration 1 failed 2 time(s)", f["stop_reason"])

        x = by_name["cancelled"]
        self.assertEqual((x["state"], x["stop_reason"], x["attempts"], x["iterations"],
                          x["iterations_total"], x["failures"]),
                         ("cancelled", "cancelled by the user", 1, 1, 0, {}))
        self.assertEqual((x["head_before"], x["head_after"], x["commits"]),
                         (loops["cancelled"][1][0]["head_before"], "", 0))

        t = report["totals"]
        self.assertEqual((t["loops"], t["by_state"]),
                         (3, {"completed": 1, "failed": 1, "cancelled": 1}))
        self.assertEqual((t["attempts"], t["iterations"], t["retries"], t["commits"]),
                         (6, 5, 1, 3))
        self.assertEqual((t["files_changed"], t["insertions"], t["deletions"]), (3, 3, 0))
        self.assertEqual((t["input_tokens"], t["output_tokens"]), (3000, 600))
        self.assertAlmostEqual(t["cost_usd"], 0.15)
        self.assertEqual(t["failures"], {"crash": 2})
        self.assertAlmostEqual(t["agent_time_s"], sum(
            agent_seconds(attempts) for _, attempts in loops.values()), places=3)

        # The human report says the same.
        text = d.ctl("report").stdout
        self.assertTrue(text.startswith("Loops active since "), text)
        self.assertNotIn("\x1b", text, "no colours: NO_COLOR is set and stdout is no terminal")
        header = text.splitlines()[2]
        for column in ("ID", "NAME", "STATE", "ITER", "TOTAL", "COMMITS", "CHANGES",
                       "TOKENS IN/OUT", "COST", "TIME"):
            self.assertIn(column, header)
        row = next(line for line in text.splitlines() if " committer " in line)
        for cell in ("completed", "3/5", "3 files +3 -0", "3.0k/600", "$0.1500"):
            self.assertIn(cell, row)
        self.assertIn("git -C %s log %s..%s" % (ws, first_head[:10], last_head[:10]), text)
        self.assertIn("1 retry; failures: crash 2", text)
        self.assertIn("%d cancelled: cancelled by the user" % x["id"], text)
        totals = text.rstrip("\n").splitlines()[-1]
        self.assertTrue(totals.startswith("Total: 3 loops (completed 1, failed 1, cancelled 1) · "
                                          "5 iterations · 3 commits · 3 files +3 -0 · "
                                          "3000 in / 600 out tokens · cost $0.1500"), totals)
        self.assertIn("· 1 retry · failures: crash 2", totals)

    def test_since_selects_the_loops_and_attempts_of_the_window(self):
        d = self.history_daemon()
        loops, ws, first_head = self.run_three_loops(d)
        committer = loops["committer"][0]["id"]
        failing = loops["failing"][0]["id"]
        cancelled = loops["cancelled"][0]["id"]
        head_after_first = loops["committer"][1][0]["head_after"]
        # Three days ago: the failed and cancelled loops entirely, the committer's creation and
        # first iteration; its iterations 2 and 3 and its end stay recent.
        d.stop()
        shift_history(d.db, [failing, cancelled], -3 * DAY_MS)
        for loop_id in (failing, cancelled):
            with sqlite3.connect(d.db) as db:
                db.execute("UPDATE loops SET finished_at = finished_at - ?1 WHERE id = ?2",
                           (3 * DAY_MS, loop_id))
        shift_history(d.db, [committer], -3 * DAY_MS, attempts_before=2)
        d.start()

        def report(*args):
            out = d.ctl_json("report", *args)
            return {loop["name"]: loop for loop in out["loops"]}, out

        recent, out = report("--since", "2d")
        self.assertEqual(sorted(recent), ["committer"])
        c = recent["committer"]
        self.assertEqual((c["attempts"], c["iterations"], c["iterations_total"], c["commits"]),
                         (2, 2, 3, 2))
        self.assertEqual((c["head_before"], c["insertions"], c["input_tokens"]),
                         (head_after_first, 2, 2000))
        self.assertAlmostEqual(c["cost_usd"], 0.10)
        self.assertEqual(out["totals"]["loops"], 1)

        # The same window as an ISO 8601 time, in UTC and in local time.
        two_days_ago = now_ms() - 2 * DAY_MS
        for since in (iso_utc(two_days_ago), iso_local(two_days_ago)):
            with self.subTest(since=since):
                again, _ = report("--since", since)
                self.assertEqual(sorted(again), ["committer"])
                self.assertEqual(again["committer"]["attempts"], 2)

        everything, out = report("--since", "4d")
        self.assertEqual(sorted(everything), ["cancelled", "committer", "failing"])
        self.assertEqual(everything["committer"]["attempts"], 3)
        self.assertEqual(everything["committer"]["head_before"], first_head)
        self.assertEqual(out["totals"]["attempts"], 6)

        # Nothing happened in the last second.
        empty, out = report("--since", "0s")
        self.assertEqual(empty, {})
        self.assertEqual((out["totals"]["loops"], out["totals"]["by_state"]), (0, {}))
        text = d.ctl("report", "--since", "0s").stdout
        self.assertTrue(text.startswith("No loop was active since "), text)

    def test_a_running_loop_is_in_the_report_with_its_attempt_so_far(self):
        d = self.history_daemon()
        loop = d.ctl_submit(d.workspace("sleeper"), "Sleep.", "--command",
                            agent_command("sleep.sh", "60"), name="sleeper")
        d.running_attempt(loop["id"])
        time.sleep(scaled(0.3))
        report = d.ctl_json("report", "--since", "1m")
        (entry,) = report["loops"]
        self.assertEqual((entry["id"], entry["state"], entry["attempts"], entry["iterations"],
                          entry["iterations_total"]), (loop["id"], "running", 1, 1, 0))
        self.assertGreater(entry["agent_time_s"], 0.2)
        self.assertGreater(entry["duration_s"], 0.2)
        self.assertIsNone(entry["finished_at"])
        d.ctl("cancel", loop["id"])
        d.wait_state(loop["id"], "cancelled")

    def test_bad_times_are_usage_errors_and_the_api_names_the_field(self):
        d = self.history_daemon()
        for args in (["report", "--since", "last tuesday"], ["report", "--since", "-2h"],
                     ["report", "--since", "2026-13-01"], ["gc", "--older-than", "soon"]):
            with self.subTest(args=args):
                proc = d.ctl(*args, check=False)
                self.assertEqual(proc.returncode, 2, proc)
                self.assertEqual(proc.stdout, "")
                self.assertIn("ralphctl: ", proc.stderr)
        proc = d.ctl("report", "--since", "yesterday", check=False)
        self.assertIn("give an age (30m, 8h, 2d) or an ISO 8601 time", proc.stderr)

        for method, params, message in (
                ("history.report", {"since": "yesterday"}, "params.since: invalid time"),
                ("history.report", {"since": iso_utc(now_ms() + DAY_MS)},
                 "params.since: must not be in the future"),
                ("history.report", {"since": 5}, "params.since: expected a string"),
                ("history.gc", {"older_than_s": -1}, "params.older_than_s: must be between"),
                ("history.gc", {"dry_run": "yes"}, "params.dry_run: expected a boolean")):
            with self.subTest(method=method, params=params):
                with self.assertRaises(RpcError) as raised:
                    d.call(method, params)
                self.assertEqual(raised.exception.code, -32602)
                self.assertIn(message, raised.exception.message)

        # Without the daemon: exit 3, with the hint.
        d.stop()
        for args in (["report"], ["gc", "--dry-run"]):
            proc = d.ctl(*args, check=False)
            self.assertEqual(proc.returncode, 3, proc)


class GcTest(HistoryTestCase):

    def output_file(self, d, loop_id):
        return os.path.join(os.path.dirname(d.db), "output", "%d.log" % loop_id)

    def prompt_file(self, d, loop_id):
        return os.path.join(os.path.dirname(d.db), "prompts", "%d.prompt.md" % loop_id)

    def events_of(self, d, loop_id):
        return len(d.call("loop.events", {"id": loop_id, "limit": 10000})["events"])

    def test_gc_removes_loops_that_ended_before_the_cutoff_and_keeps_the_rest(self):
        d = self.history_daemon()
        loops, _, _ = self.run_three_loops(d)
        old_completed = loops["committer"][0]["id"]
        old_failed = loops["failing"][0]["id"]
        recent = loops["cancelled"][0]["id"]
        expected_attempts = len(loops["committer"][1]) + len(loops["failing"][1])
        expected_events = self.events_of(d, old_completed) + self.events_of(d, old_failed)
        self.assertGreater(expected_events, 0)
        expected_bytes = 0
        for loop_id in (old_completed, old_failed):
            size = os.path.getsize(self.output_file(d, loop_id))
            self.assertEqual(size, d.get(loop_id)["output_bytes"])
            self.assertTrue(os.path.exists(self.prompt_file(d, loop_id)))
            expected_bytes += size
        self.assertGreater(expected_bytes, 0)

        d.stop()
        set_finished(d.db, old_completed, now_ms() - 40 * DAY_MS)
        set_finished(d.db, old_failed, now_ms() - 35 * DAY_MS)
        d.start()
        # Live loops: one running, one queued behind it (same workspace); neither ever goes.
        shared = d.workspace("live")
        running = d.ctl_submit(shared, "Sleep.", "--command", agent_command("sleep.sh", "60"),
                               name="running")
        queued = d.ctl_submit(shared, "Sleep.", "--command", agent_command("sleep.sh", "60"),
                              name="queued")
        d.running_attempt(running["id"])
        self.assertEqual(d.get(queued["id"])["state"], "queued")

        dry = d.ctl_json("gc", "--dry-run")
        self.assertEqual((dry["dry_run"], dry["loops"], dry["loop_ids"]),
                         (True, 2, [old_completed, old_failed]), "oldest first")
        self.assertEqual((dry["attempts"], dry["events"], dry["output_bytes"]),
                         (expected_attempts, expected_events, expected_bytes))
        for loop_id in (old_completed, old_failed):
            self.assertEqual(d.get(loop_id)["id"], loop_id, "a dry run removes nothing")
            self.assertTrue(os.path.exists(self.output_file(d, loop_id)))
        text = d.ctl("gc", "--dry-run").stdout
        self.assertTrue(text.startswith("would remove 2 loops that ended before "), text)
        self.assertIn("(%d, %d): %d attempts, %d events, " % (
            old_completed, old_failed, expected_attempts, expected_events), text)

        done = d.ctl_json("gc")
        del dry["before"], done["before"]  # now, less 30 days: a moment later
        self.assertEqual(done, dict(dry, dry_run=False))
        for loop_id in (old_completed, old_failed):
            with self.assertRaises(RpcError) as raised:
                d.get(loop_id)
            self.assertEqual(raised.exception.code, -32001)
            self.assertFalse(os.path.exists(self.output_file(d, loop_id)))
            self.assertFalse(os.path.exists(self.prompt_file(d, loop_id)))
            for args in (["show", loop_id], ["tail", loop_id], ["tail", "-f", loop_id]):
                proc = d.ctl(*args, check=False, timeout=10)
                self.assertEqual(proc.returncode, 1, proc)
                self.assertIn("no loop with id %d" % loop_id, proc.stderr)
        with sqlite3.connect(d.db) as db:
            for table in ("attempts", "events", "steering", "output_chunks"):
                (left,) = db.execute("SELECT count(*) FROM %s WHERE loop_id IN (?, ?)" % table,
                                     (old_completed, old_failed)).fetchone()
                self.assertEqual(left, 0, table)
        # The rest is untouched.
        self.assertEqual(d.get(recent)["state"], "cancelled")
        self.assertTrue(os.path.exists(self.output_file(d, recent)))
        self.assertEqual(d.get(running["id"])["state"], "running")
        self.assertEqual(d.get(queued["id"])["state"], "queued")
        self.assertEqual(sorted(loop["id"] for loop in d.call("loop.list")["loops"]),
                         [recent, running["id"], queued["id"]])
        self.assertEqual(d.ctl_json("report", "--since", "100d")["totals"]["loops"], 3)

        again = d.ctl_json("gc")
        self.assertEqual((again["loops"], again["loop_ids"], again["output_bytes"]), (0, [], 0))
        text = d.ctl("gc").stdout
        self.assertTrue(text.startswith("nothing to remove: no loop ended before "), text)

        # --older-than 0s takes every loop that has ended, and still no live one.
        everything = d.ctl_json("gc", "--older-than", "0s")
        self.assertEqual(everything["loop_ids"], [recent])
        self.assertEqual(d.get(running["id"])["state"], "running")
        self.assertEqual(d.get(queued["id"])["state"], "queued")
        self.assertEqual(d.call("daemon.info")["loops_by_state"], {"running": 1, "queued": 1})
        d.ctl("cancel", queued["id"])
        d.ctl("cancel", running["id"])
        d.wait_state(running["id"], "cancelled")

    def test_gc_keeps_the_loops_whose_agent_runs_a_global_budget_still_counts(self):
        d = self.history_daemon()
        done = []
        for name in ("two-days-ago", "an-hour-ago"):
            loop = d.ctl_submit(d.workspace(name), "Count.", "--command",
                                agent_command("count-to-complete.sh", "1"), name=name)
            done.append(d.wait_state(loop["id"], "completed")["id"])
        old, recent = done
        d.stop()
        shift_history(d.db, [old], -2 * DAY_MS)
        set_finished(d.db, old, now_ms() - 2 * DAY_MS)
        shift_history(d.db, [recent], -3600 * 1000)
        set_finished(d.db, recent, now_ms() - 3600 * 1000)
        d.start()
        d.call("budget.set", {"iterations_per_day": 100})

        # Removing the recent loop would give its run back to the daily budget.
        kept = d.ctl_json("gc", "--older-than", "0s")
        self.assertEqual((kept["loop_ids"], kept["kept_for_budgets"]), ([old], True))
        self.assertAlmostEqual(parse_time(kept["before"]), time.time() - 86400, delta=10)
        self.assertEqual(d.get(recent)["state"], "completed")
        text = d.ctl("gc", "--older-than", "0s").stdout
        self.assertEqual(text, "nothing to remove: no loop ended before %s\n"
                         "loops that ended later are kept while the global budgets count their "
                         "agent runs\n" % text.split("before ", 1)[1].split("\n")[0])
        # A cutoff older than the budget's window is not moved.
        asked = d.ctl_json("gc", "--older-than", "2d")
        self.assertEqual((asked["loop_ids"], asked["kept_for_budgets"]), ([], False))

        d.call("budget.set", {"iterations_per_day": 0})
        freed = d.ctl_json("gc", "--older-than", "0s")
        self.assertEqual((freed["loop_ids"], freed["kept_for_budgets"]), ([recent], False))

    def test_gc_keeps_a_loop_while_its_worktree_is_there(self):
        d = self.history_daemon()
        repo = d.workspace("repo")
        loop = d.ctl_json("submit", "--workspace", repo, "--name", "in-worktree", "--delay", "0s",
                          "--worktree", "--command", agent_command("count-to-complete.sh", "1"),
                          "Count.")["loop"]
        ended = d.wait_state(loop["id"], "completed")
        self.assertTrue(os.path.isdir(ended["worktree_path"]))

        kept = d.ctl_json("gc", "--older-than", "0s")
        self.assertEqual((kept["loop_ids"], kept["kept_for_worktrees"]), ([], [loop["id"]]))
        self.assertEqual(d.get(loop["id"])["state"], "completed")
        self.assertIn("kept loop %d: its worktree is still there with work not merged (ralphctl "
                      "merge ID, or git worktree remove it, then gc)\n" % loop["id"],
                      d.ctl("gc", "--older-than", "0s").stdout)

        git(repo, "worktree", "remove", "--force", ended["worktree_path"])
        removed = d.ctl_json("gc", "--older-than", "0s")
        self.assertEqual((removed["loop_ids"], removed["kept_for_worktrees"]),
                         ([loop["id"]], []))
        # The branch with the loop's work is the user's to merge or delete.
        git(repo, "rev-parse", "--verify", "-q", ended["worktree_branch"])

    def test_a_tail_of_a_loop_being_removed_ends_and_the_daemon_goes_on(self):
        d = self.history_daemon()
        total = 8_000_000
        flood = agent_command("flood.sh", str(total))
        loop = d.submit(d.workspace("flood"), flood, max_iterations=1)
        d.wait_state(loop["id"], TERMINAL_STATES, timeout=60)
        self.assertEqual(d.get(loop["id"])["output_bytes"], total)

        with d.websocket() as ws:
            ws.send_json({"jsonrpc": "2.0", "id": 1, "method": "loop.tail",
                          "params": {"id": loop["id"], "encoding": "base64"}})
            self.assertEqual(ws.recv_json()["result"]["offset"], 0)
            first = ws.recv_json()
            self.assertEqual(first["method"], "loop.output")
            # The client reads no further while the loop is removed: its replay is far from
            # done, and the session's writer is stuck on a full socket.
            removed = d.call("history.gc", {"older_than_s": 0})
            self.assertEqual(removed["loop_ids"], [loop["id"]])
            self.assertEqual(removed["output_bytes"], total)
            # The newest loop is gone, yet the next one gets a new id (an id names one loop for
            # good), and has as much output: the old tail must not go on with its bytes.
            successor = d.submit(d.workspace("successor"), flood, max_iterations=1)
            self.assertEqual(successor["id"], loop["id"] + 1)
            d.wait_state(successor["id"], TERMINAL_STATES, timeout=60)
            offset = first["params"]["offset"] + first["params"]["length"]
            while True:
                message = ws.recv_json()
                if message["method"] == "loop.state":
                    break
                self.assertEqual(message["params"]["offset"], offset, "no gap, no duplicate")
                offset += message["params"]["length"]
            self.assertEqual((message["params"]["id"], message["params"]["state"],
                              message["params"]["final"]), (loop["id"], "exhausted", True))
            self.assertLess(offset, total, "the removed loop's tail ended where it was")
            # The session goes on.
            ws.send_json({"jsonrpc": "2.0", "id": 3, "method": "daemon.info"})
            self.assertEqual(ws.recv_json()["result"]["loops_by_state"], {"exhausted": 1})

        # And so does the daemon: a new loop runs and is tailed to its end.
        again = d.ctl_submit(d.workspace("after"), "Count.", "--command",
                             agent_command("count-to-complete.sh", "1"), name="after")
        proc = d.ctl("tail", "-f", again["id"], timeout=30)
        self.assertIn("<promise>COMPLETE</promise>", proc.stdout)


if __name__ == "__main__":
    main()
