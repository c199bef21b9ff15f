"""The night simulation (issue 38): each of ralph's features passes its own tests; a user's night
combines them. A seed draws a scenario — one to three ralphd, each with six to twelve small loops
of the four agent CLIs (the replay agent playing their recorded streams) and of two programs of
the user's own (`command`), with judges of the same or another CLI or a program, fallbacks, usage
limits with resets, transient failures, budgets per loop and global, --sandbox, worktrees with
--merge, and the night's events: steer, pause and resume, cancel, kill -9 of ralphd and of agents,
a stop that leaves the agents running, and a full disk (the state directory on a small tmpfs).
The driver plays them on the real ralphd, jumping its clock (--test-clock, debug.clock) over
every wait for a reset or a budget instead of sleeping, until every loop has ended; then
night_checks.py checks the invariants from the database (read-only), the output files, the fake
agents' own logs, the webhook receiver and the announced states.

A failure prints its seed, the scenario and every violation found. Environment:
  RALPH_NIGHT_SEED=N     replay the scenario of seed N (a failure says which)
  RALPH_NIGHT_ROUNDS=N   run N scenarios from a fresh seed (scripts/night.sh: a long soak)
Otherwise (CI) it replays the seeds in REPLAYED: those that once found a bug. Fresh seeds are the
soak's to explore: CI's red must be a regression, not the luck of a new draw.
"""

import json
import os
import random
import shlex
import signal
import sys
import threading
import time
import traceback

import night_checks
from harness import (TERMINAL_STATES, DaemonTestCase, Receiver, RpcError, SmallDisk, command_agent,
                     commit_all, fake_agent_bin, main, make_workspace, parse_time,
                     require_bubblewrap, require_root, scaled, write_text)

CLI = ("claude", "codex", "opencode", "gemini")
PROGRAMS = ("tool-a", "tool-b")  # `command` loops: two programs, two quotas
# Failures each agent's recordings have, besides ralph-iter1 (work) and ralph-iter2 (a claim).
FAILURES = {
    "claude": ("http429", "http500", "refused", "rate-limit", "truncated", "auth"),
    "codex": ("http429", "http500", "echo-promise"),
    "opencode": ("http429", "http500", "refused"),
    "gemini": ("http429", "http500", "refused"),
    "command": ("usage-limit", "http429", "http500"),
}
JUDGE_FAILURES = {"claude": ("rate-limit", "http429", "http500", "garbage", "judge-slow")}
# Where a judge of each CLI may write (its sandbox leaves the agent's own directories writable).
JUDGE_HOME = {"claude": ".claude", "codex": ".codex", "gemini": ".gemini",
              "opencode": ".local/share/opencode"}
# The seeds that found a bug (1: a discarded attempt counted; 7: a verdict lost on a full disk;
# 9: a journal record lost on a full disk; 22: a crash at SIGTERM; 785134362: a loop announced
# three times; 262894340: a notification held 5 minutes by a full disk).
REPLAYED = (1, 7, 9, 22, 785134362, 262894340)
HOLD_MARGIN_S = 300  # a usage limit holds 5 minutes past its reset: the clock must jump it


def kind_of(agent):
    """The agent of a loop's agent or judge: a CLI, or `command` for a program."""
    return agent if agent in CLI else "command"


def draw_script(rng, failures, claim, length):
    """A replay script: work and failures, ending with what repeats (a claim or none)."""
    script = []
    for _ in range(length):
        r = rng.random()
        if r < 0.4:
            script.append(claim[1])
        elif r < 0.7 or not failures:
            script.append(claim[0])
        else:
            script.append(rng.choice(failures))
    return script + [claim[0] if rng.random() < 0.75 else claim[1]]


def draw_loop(rng, name):
    agent = rng.choice(CLI + PROGRAMS)
    loop = {"name": name, "agent": agent, "fallback": [], "judge": "", "judge_script": [],
            "max_iterations": rng.randint(1, 4), "max_retries": rng.randint(0, 3),
            "sandbox": rng.random() < 0.3, "worktree": rng.random() < 0.3,
            "priority": rng.randint(-1, 1)}
    loop["min_iterations"] = rng.randint(1, min(2, loop["max_iterations"]))
    loop["merge"] = loop["worktree"] and rng.random() < 0.7
    if agent in CLI and rng.random() < 0.35:
        loop["fallback"] = rng.sample([a for a in CLI if a != agent], rng.randint(1, 2))
    # Failures the loop's agents all have (the replay counts runs in the workspace, whoever ran).
    agents = [kind_of(agent)] + loop["fallback"]
    failures = [f for f in FAILURES[agents[0]] if all(f in FAILURES[a] for a in agents)]
    if rng.random() < 0.5:
        r = rng.random()
        loop["judge"] = agent if r < 0.3 else rng.choice(CLI) if r < 0.8 else "tool-j"
        judge = kind_of(loop["judge"])
        if judge == "command":  # it can write nowhere to count its runs: one verdict, always
            loop["judge_script"] = [rng.choice(("judge-accept", "judge-accept", "judge-reject"))]
        else:
            loop["judge_script"] = draw_script(
                rng, JUDGE_FAILURES.get(judge, ("http429", "http500", "garbage", "judge-slow")),
                ("judge-accept", "judge-reject"), rng.randint(0, 3))
        loop["judge_max_rejections"] = rng.randint(1, 3)
    loop["script"] = draw_script(rng, failures, ("ralph-iter2", "ralph-iter1"), rng.randint(0, 4))
    if rng.random() < 0.15:
        loop["max_tokens"] = rng.choice((300, 600, 900))
    if rng.random() < 0.1:
        loop["max_cost_usd"] = 0.002
    if rng.random() < 0.15:
        loop["iterations_per_hour"] = rng.randint(1, 3)
    if rng.random() < 0.2:
        loop["stall_failures"] = 2
    loop["own_notify"] = rng.random() < 0.2
    return loop


def draw_actions(rng, loops):
    """The night's events, each when so many attempts have started."""
    n = len(loops)
    budget = 3 * n
    waves = sorted(rng.sample(range(n), min(n, rng.randint(0, 2))))
    actions, first = [], 0
    for cut in waves + [n]:
        at = 0 if first == 0 else rng.randint(1, budget // 2)
        actions.append({"at": at, "do": "submit", "loops": list(range(first, cut))})
        first = cut
    actions = [a for a in actions if a["loops"]]
    kinds = ["pause", "cancel", "steer", "kill_ralphd", "stop_ralphd", "kill_agent", "budget",
             "steer", "kill_agent", "pause"]
    for _ in range(rng.randint(2, 7)):
        kind = rng.choice(kinds)
        action = {"at": rng.randint(1, budget), "do": kind, "loop": rng.randrange(n)}
        if kind == "pause":
            action["resume_after"] = rng.randint(0, 4)
        elif kind == "stop_ralphd":
            action["leave_running"] = rng.random() < 0.6
        elif kind == "budget":
            action["set"] = rng.choice(({"iterations_per_hour": rng.randint(3, 8)},
                                        {"tokens_per_day": rng.choice((1500, 3000))},
                                        {"cost_per_day_usd": 0.004}, {"iterations_per_hour": 0}))
        actions.append(action)
    return sorted(actions, key=lambda a: a["at"])


def draw_scenario(seed):
    rng = random.Random(seed)
    nights = []
    for night in range(rng.randint(1, 3)):
        loops = [draw_loop(rng, "n%d-%d" % (night, i)) for i in range(rng.randint(6, 12))]
        actions = draw_actions(rng, loops)
        small_disk = rng.random() < 0.35
        if small_disk:
            actions.append({"at": rng.randint(1, 2 * len(loops)), "do": "fill_disk",
                            "for_s": rng.uniform(0.5, 2.5)})
            actions.sort(key=lambda a: a["at"])
        nights.append({"max_concurrent": rng.randint(1, 4), "small_disk": small_disk,
                       "budget": rng.choice(({}, {}, {"iterations_per_hour": rng.randint(4, 12)},
                                             {"tokens_per_day": 2500})),
                       "loops": loops, "actions": actions})
    return {"seed": seed, "nights": nights}


class Night:
    """One ralphd of a scenario, driven through its loops and events, then checked."""

    def __init__(self, case, spec, receiver):
        self.case, self.spec, self.receiver = case, spec, receiver
        self.violations, self.waits, self.sockets = [], set(), []
        self.ids, self.cancelled, self.resumes, self.pending = {}, set(), {}, []
        self.timeline = []  # what events.subscribe said: (time, ralphd's start, loop, state, ...)
        self.disk, self.free_at = None, None
        self.offset_ms, self.expected_exit, self.fills = 0, False, 0
        case.addCleanup(self.unmount)  # after the daemon's own cleanups (last in, first out)
        self.d = case.new_daemon_unstarted()
        self.d.env["PATH"] = fake_agent_bin(self.d.root) + ":" + self.d.env["PATH"]
        for directory in JUDGE_HOME.values():
            os.makedirs(os.path.join(self.d.home, directory), exist_ok=True)
        if spec["small_disk"]:
            self.disk = SmallDisk(os.path.dirname(self.d.db), "40m")
        self.source = make_workspace(self.d.work_dir, "shared")
        write_text(os.path.join(self.source, ".gitignore"), ".fake-agent-runs\n.night-log\n.ralph/\n")
        commit_all(self.source)

    def unmount(self):
        for ws in self.sockets:
            ws.close()
        if self.disk:
            self.disk.free()
            self.disk.unmount()
            self.disk = None

    # ---- ralphd, its clock and what it announces

    def start(self):
        now = int(time.time() * 1000)
        clock = 0 if self.d.starts == 0 else now + self.offset_ms + 1000
        self.d.extra_args = ["--max-concurrent", str(self.spec["max_concurrent"]),
                             "--rate-limit-margin", str(HOLD_MARGIN_S), "--rate-limit-wait", "600",
                             "--notify", self.receiver.url("/all"), "--test-clock", str(clock)]
        self.d.start()
        self.clock()
        ws = self.d.websocket(timeout=3600)
        ws.send_json({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe"})
        self.sockets.append(ws)
        threading.Thread(target=self.listen, args=(ws,), daemon=True).start()

    def listen(self, ws):
        try:
            while True:
                message = ws.recv_json()
                if message.get("method") != "loop.changed":
                    continue
                loop = message["params"]
                self.timeline.append((round(time.monotonic(), 3), self.d.starts, loop["id"],
                                      loop["state"], loop["attempts"], loop["stop_reason"]))
                if loop["state"] == "waiting":
                    self.waits.add((loop["id"], loop["stop_reason"]))
        except Exception:  # noqa: BLE001 - the session ends with its ralphd
            pass

    def clock(self, advance_ms=0):
        """ralphd's time (ms), after moving it `advance_ms` on; the restarts keep it."""
        now = self.d.call("debug.clock", {"advance_ms": advance_ms} if advance_ms else {})["now_ms"]
        self.offset_ms = now - int(time.time() * 1000)
        return now

    def restart(self, how):
        self.expected_exit = True
        try:
            if how == "kill":
                self.d.kill9()
            else:
                self.d.stop(leave_running=how == "term")
        except AssertionError as e:  # it crashed or hung: said, and the night goes on
            self.violations.append("ralphd did not stop cleanly (%s): %s" % (how, str(e)[:2000]))
        self.expected_exit = False
        self.start()

    # ---- loops

    def submit(self, index):
        loop = self.spec["loops"][index]
        d, name = self.d, loop["name"]
        ws = self.source if loop["worktree"] else make_workspace(d.work_dir, name)
        env = {"FAKE_AGENT_SCRIPT": ",".join(loop["script"]), "FAKE_AGENT_LOG": ".night-log",
               "FAKE_WRITES": "work-%s.txt" % name, "FAKE_JUDGE_SLEEP": "1"}
        params = {"name": name, "workspace": ws, "prompt": "Work through the task list.",
                  "max_iterations": loop["max_iterations"], "min_iterations": loop["min_iterations"],
                  "delay_s": 0, "timeout_s": 60, "max_retries": loop["max_retries"],
                  "retry_backoff_s": 0.05, "allow_dirty": not loop["worktree"],
                  "fallback": loop["fallback"], "sandbox": loop["sandbox"],
                  "worktree": loop["worktree"], "merge": loop["merge"],
                  "priority": loop["priority"]}
        for key in ("max_tokens", "max_cost_usd", "iterations_per_hour", "stall_failures"):
            if key in loop:
                params[key] = loop[key]
        if kind_of(loop["agent"]) == "command":
            params.update(agent="command", command=shlex.quote(command_agent(loop["agent"])))
        else:
            params["agent"] = loop["agent"]
        if loop["judge"]:
            judge = kind_of(loop["judge"])
            params.update(judge=judge, judge_max_rejections=loop["judge_max_rejections"])
            env["FAKE_JUDGE_SCRIPT"] = ",".join(loop["judge_script"])
            if judge == "command":
                params["judge_command"] = shlex.quote(command_agent(loop["judge"]))
            else:
                env["FAKE_JUDGE_LOG"] = os.path.join(d.home, JUDGE_HOME[judge], name + ".log")
        if loop["own_notify"]:
            params["notify"] = [self.receiver.url("/own/" + name)]
        params["env"] = env
        try:
            self.ids[index] = d.call("loop.submit", params)["id"]
        except RpcError as e:
            if e.code != -32009:  # a full disk: again at the next tick
                self.violations.append("the submit of %s was refused: %s" % (name, e.message))
                return
            self.pending.append(index)

    def act(self, action, started):
        kind, loop_id = action["do"], self.ids.get(action.get("loop"))
        try:
            if kind == "submit":
                for index in action["loops"]:
                    self.submit(index)
            elif kind in ("kill_ralphd", "stop_ralphd"):
                self.restart("kill" if kind == "kill_ralphd" else
                             "term" if action["leave_running"] else "int")
            elif kind == "kill_agent":
                self.kill_an_agent()
            elif kind == "fill_disk" and self.disk:
                self.disk.fill()
                self.fills += 1
                self.free_at = time.monotonic() + action["for_s"]
            elif kind == "budget":
                self.d.call("budget.set", action["set"])
            elif loop_id is None:
                return
            elif kind == "pause":
                self.d.call("loop.pause", {"id": loop_id})
                self.resumes[loop_id] = started + action["resume_after"]
            elif kind == "cancel":
                self.d.call("loop.cancel", {"id": loop_id})
                self.cancelled.add(loop_id)
            elif kind == "steer":
                self.d.call("loop.steer", {"id": loop_id, "text": "Mind the tests."})
        except RpcError as e:
            if e.code not in (-32002, -32009):  # it ended meanwhile; a full disk
                self.violations.append("%s of loop %s: %s" % (kind, loop_id, e.message))

    def kill_an_agent(self):
        for loop in self.d.call("loop.list", {})["loops"]:
            if loop["state"] != "running":
                continue
            for attempt in self.d.call("loop.iterations", {"id": loop["id"]})["attempts"]:
                if attempt["termination"] == "running" and attempt.get("pid"):
                    try:
                        os.killpg(attempt["pid"], signal.SIGKILL)
                    except OSError:
                        pass
                    return

    def resume_due(self, started, quiet):
        for loop_id, at in list(self.resumes.items()):
            if started < at and not quiet:
                continue
            try:
                self.d.call("loop.resume", {"id": loop_id})
                del self.resumes[loop_id]
            except RpcError as e:
                if e.code == -32002 and "already ended" in e.message:
                    del self.resumes[loop_id]

    def jump_over_waits(self, loops):
        """Nothing runs and every loop waits for a time: check the budgets, then move the clock
        just past the earliest end of a wait."""
        resume = [parse_time(l["resume_at"]) * 1000 for l in loops
                  if l["state"] == "waiting" and l["resume_at"]]
        now = self.clock()
        if not resume or min(resume) - now < 2000:
            return
        self.check_budgets()
        self.clock(int(min(resume) - now) + 1000)

    def check_budgets(self):
        """budget.get, globally and for each loop with a budget of its own, against the record,
        while no attempt runs (or the check is skipped)."""
        def quiet_attempts():
            loops = self.d.call("loop.list", {})["loops"]
            if any(l["state"] in ("running", "queued") for l in loops):
                return None
            return sum(l["attempts"] for l in loops), [l["id"] for l in loops]
        before = quiet_attempts()
        if not before:
            return
        budgets = [self.d.call("budget.get", {})] + [self.d.call("budget.get", {"id": i})
                                                     for i in before[1]]
        record = night_checks.Record(self.d.db)
        if quiet_attempts() != before or len(record.attempts) != before[0]:
            return
        for budget in budgets:
            self.violations += night_checks.check_budget_use(record, budget)

    # ---- the night

    def run(self):
        self.start()
        if self.spec["budget"]:
            self.d.call("budget.set", self.spec["budget"])
        actions = list(self.spec["actions"])
        # Loops that have not ended by then are stuck (a night's loops end in seconds).
        limit = scaled(30 + 3 * len(self.spec["loops"]))
        deadline = time.monotonic() + limit
        while True:
            if not self.d.running() and not self.expected_exit:
                self.violations.append("ralphd exited by itself with %s:\n%s" % (
                    self.d.proc.returncode, self.d.log_text()[-3000:]))
                self.start()
            if self.free_at and time.monotonic() >= self.free_at:
                self.disk.free()
                self.free_at = None
            loops = self.d.call("loop.list", {})["loops"]
            for l in loops:
                if l["state"] == "waiting":
                    self.waits.add((l["id"], l["stop_reason"]))
            started = sum(l["attempts"] for l in loops)
            while actions and actions[0]["at"] <= started:
                self.act(actions.pop(0), started)
            if not self.free_at:
                for index in [self.pending.pop() for _ in list(self.pending)]:
                    self.submit(index)
            active = [l for l in loops if l["state"] not in TERMINAL_STATES]
            quiet = all(l["state"] in ("waiting", "paused") for l in active)
            self.resume_due(started, quiet)
            if not active and not actions and not self.pending and len(loops) == len(self.ids):
                break
            if not active and actions:  # what is left to do comes now
                self.act(actions.pop(0), started)
            elif active and quiet and not self.free_at:
                self.jump_over_waits(active)
            if time.monotonic() > deadline:
                self.violations.append("the night did not end in %.0f s: %s" % (
                    limit, [(l["id"], l["name"], l["state"], l["stop_reason"]) for l in active]))
                for l in active:
                    try:
                        self.d.call("loop.cancel", {"id": l["id"]})
                        self.cancelled.add(l["id"])
                    except RpcError:
                        pass  # it ended meanwhile
                break
            time.sleep(0.1)
        self.finish()
        return self.violations

    def finish(self):
        d = self.d
        try:
            self.case.wait_quiet(d)
        except AssertionError as e:
            self.violations.append(str(e))
        self.check_budgets()
        try:
            d.stop()
        except AssertionError as e:
            self.violations.append("ralphd did not stop cleanly: %s" % str(e)[:2000])
        if d.leftover_processes():
            self.violations.append("processes left after ralphd stopped: %r" % d.leftover_processes())
        if "the state machine has no" in d.log_text():
            self.violations.append("ralphd tried a state change its state machine refuses")
        record = night_checks.Record(d.db)
        runs = self.agent_runs(record)
        own = {"/own/" + l["name"]: [self.ids[i]] for i, l in enumerate(self.spec["loops"])
               if l["own_notify"] and i in self.ids}
        own["/all"] = list(self.ids.values())
        targets = {path: (set(loop_ids), [p["body"] for p in self.receiver.received()
                                          if p["path"] == path])
                   for path, loop_ids in own.items()}
        self.violations += (
            night_checks.check_no_rerun(record, runs)
            + night_checks.check_holds(record, sorted(self.waits))
            + night_checks.check_end_states(record, self.cancelled)
            + night_checks.check_loop_totals(record)
            + night_checks.check_notifications(record, targets, d.starts - 1 + self.fills)
            + night_checks.check_output(record, os.path.join(os.path.dirname(d.db), "output"),
                                        runs))
        self.unmount()
        if self.violations:  # what it announced, next to its logs
            with open(os.path.join(d.root, "timeline.json"), "w") as f:
                json.dump(self.timeline, f, indent=0)
            self.violations.insert(0, "ralphd's logs and announced states: %s" % d.root)

    def agent_runs(self, record):
        """What the fake agents logged of their runs: the workers in their workspace, the judges
        under their home."""
        runs = []
        paths = [os.path.join(l["workspace"], ".night-log") for l in record.loops.values()]
        for directory in JUDGE_HOME.values():
            home = os.path.join(self.d.home, directory)
            paths += [os.path.join(home, f) for f in os.listdir(home) if f.endswith(".log")]
        for path in paths:
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    for line in f:
                        try:
                            runs.append(json.loads(line))
                        except ValueError:  # cut short by a full disk (a worktree is on it)
                            pass
        return runs


class NightTest(DaemonTestCase):

    def setUp(self):
        require_root("to give ralph's state a small disk")
        require_bubblewrap()

    def wait_quiet(self, d):
        """The outbox delivered and no agent or shim left, once every loop ended."""
        deadline = time.monotonic() + scaled(20)
        while night_checks.Record(d.db).outbox or d.leftover_processes():
            if time.monotonic() > deadline:
                raise AssertionError("after the last loop ended: %d notification(s) in the "
                                     "outbox, processes left: %r" % (
                                         night_checks.Record(d.db).outbox, d.leftover_processes()))
            time.sleep(0.1)

    def run_scenario(self, scenario):
        receiver = Receiver()
        self.addCleanup(receiver.stop)
        violations = []
        for number, spec in enumerate(scenario["nights"]):
            night = Night(self, spec, receiver)
            found = night.run()
            violations += ["night %d: %s" % (number, v) for v in found]
            receiver.posts.clear()
            if not found:  # a long soak keeps only what shows a failure
                self._daemons.remove(night.d)
                night.d.cleanup()
        return violations

    def test_nights(self):
        if os.environ.get("RALPH_NIGHT_SEED"):
            seeds = [int(os.environ["RALPH_NIGHT_SEED"])]
        elif os.environ.get("RALPH_NIGHT_ROUNDS"):
            first = random.SystemRandom().randrange(1 << 31)
            seeds = range(first, first + int(os.environ["RALPH_NIGHT_ROUNDS"]))
        else:
            seeds = REPLAYED
        for seed in seeds:
            started = time.monotonic()
            scenario = draw_scenario(seed)
            sys.stderr.write("night: seed %d (replay: RALPH_NIGHT_SEED=%d)\n" % (seed, seed))
            with self.subTest(seed=seed):
                try:
                    violations = self.run_scenario(scenario)
                except Exception:  # noqa: BLE001 - said with the seed and the scenario
                    violations = ["the night could not go on:\n" + traceback.format_exc()]
                sys.stderr.write("night: seed %d: %d violation(s) in %.1f s\n"
                                 % (seed, len(violations), time.monotonic() - started))
                if violations:
                    shown = violations[:40] + (["... and %d more" % (len(violations) - 40)]
                                               if len(violations) > 40 else [])
                    self.fail("seed %d (replay: RALPH_NIGHT_SEED=%d) broke %d invariant(s):\n- %s"
                              "\nscenario: %s" % (seed, seed, len(violations),
                                                  "\n- ".join(shown), json.dumps(scenario)))


if __name__ == "__main__":
    main()
