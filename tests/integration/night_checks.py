"""The invariants of a night (test_night.py), checked from what ralphd left: its database, opened
read-only, and its output files; what the fake agents logged of each run; what ralphd posted to
the webhook receiver; and the loop states it announced (events.subscribe). Each check returns the
violations it found as sentences that name the loop, the attempts and the rows that show them.

- no iteration's work attempt runs again once it finished, and every agent run is in the record
  and could write its workspace;
- a usage-limit hold holds only the loops that share its quota;
- every loop ended, and its end state is justified by its attempts;
- budgets are the sums of the attempts' tokens and cost, for the loops and for budget.get;
- one notification per cause;
- every byte of each loop's output file is stored once: in one attempt's range, one chunk, and,
  for a replayed recording, exactly the bytes the fake agent wrote.
"""

import json
import os
import re
import sqlite3

from harness import FIXTURES, TERMINAL_STATES, parse_time

STREAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agents", "streams")
CLI_AGENTS = ("claude", "codex", "opencode", "gemini")
# replay-agent.py's exit status when it cannot write where it counts its runs.
CANNOT_WRITE = 98
# Scenarios the replay agent plays as another recording.
PLAYED_AS = {"judge-slow": "judge-accept", "judge-edit": "judge-accept"}


class Record:
    """ralphd's database, read-only: loops (with their spec parsed), attempts, output chunks."""

    def __init__(self, db_path):
        con = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
        con.row_factory = sqlite3.Row
        try:
            self.loops = {}
            for row in con.execute("SELECT * FROM loops ORDER BY id"):
                loop = dict(row)
                loop["spec"] = json.loads(loop["spec"])
                self.loops[loop["id"]] = loop
            self.attempts = [dict(r) for r in con.execute("SELECT * FROM attempts ORDER BY id")]
            self.chunks = [dict(r) for r in con.execute(
                "SELECT * FROM output_chunks ORDER BY loop_id, offset")]
            self.outbox = con.execute("SELECT count(*) FROM notifications").fetchone()[0]
        finally:
            con.close()

    def attempts_of(self, loop_id):
        return [a for a in self.attempts if a["loop_id"] == loop_id]


def describe(a):
    """An attempt as a violation names it."""
    return ("attempt %d (iteration %d #%d, %s on %s: %s%s%s)"
            % (a["id"], a["iteration"], a["attempt"], a["kind"], a["agent"], a["termination"],
               " " + a["failure"] if a["failure"] else "",
               ", claim" if a["completion_signal"] else ""))


def program_name(command):
    """The program of a `command` template: its first word's file name."""
    return os.path.basename(command.split()[0]) if command.strip() else ""


def quotas_of(spec):
    """What a loop's agents draw on: each CLI agent (its own, its fallbacks, its judge), and for
    `command` the program (its own and its judge's)."""
    quotas = set()
    if spec.get("agent") == "command":
        quotas.add(("command", program_name(spec.get("command", ""))))
    else:
        quotas.add((spec.get("agent"), ""))
    for fallback in spec.get("fallback", []):
        quotas.add((fallback.split(":")[0], ""))
    if spec.get("judge") == "command":
        quotas.add(("command", program_name(spec.get("judge_command", ""))))
    elif spec.get("judge"):
        quotas.add((spec["judge"], ""))
    return quotas


# --------------------------------------------------------------------------- attempts

def check_no_rerun(record, runs):
    """A work attempt that exited is the last work attempt of its iteration; a judge runs only on
    a claim; every run of a fake agent is an attempt of the record, once, and could write its own
    files."""
    found = []
    for loop_id in record.loops:
        by_iteration, reruns = {}, []
        for a in record.attempts_of(loop_id):
            by_iteration.setdefault(a["iteration"], []).append(a)
        for iteration, attempts in by_iteration.items():
            finished = None
            for a in attempts:
                if a["kind"] == "work":
                    if finished:
                        reruns.append("loop %d: %s ran after %s had finished the iteration's "
                                      "work" % (loop_id, describe(a), describe(finished)))
                    if a["termination"] == "exited":
                        finished = a
                elif not (finished and finished["completion_signal"]):
                    found.append("loop %d: judge %s ran without a claim of completion before it"
                                 % (loop_id, describe(a)))
        found += reruns[:3] + (["loop %d: and %d more work attempts like these" % (
            loop_id, len(reruns) - 3)] if len(reruns) > 3 else [])
    for a in record.attempts:
        if a["exit_code"] == CANNOT_WRITE:
            found.append("loop %d: %s could not write its own files (its workspace, or a judge's "
                         "home): ralph left them read-only" % (a["loop_id"], describe(a)))
    keys = {}
    for a in record.attempts:
        keys[(a["loop_id"], a["iteration"], a["attempt"], a["kind"])] = a
    seen = {}
    for run in runs:
        if not run.get("loop"):
            continue
        key = (int(run["loop"]), int(run["iteration"]), int(run["attempt"]), run["kind"])
        if key not in keys:
            found.append("loop %d: an agent ran (iteration %d #%d, %s, %s) that is in no attempt "
                         "of the record: unbilled, unseen work" % (key[0], key[1], key[2], key[3],
                                                                  run["scenario"]))
        elif key in seen:
            found.append("loop %d: attempt %d (iteration %d #%d) ran its agent twice"
                         % (key[0], keys[key]["id"], key[1], key[2]))
        seen[key] = run
    return found


# --------------------------------------------------------------------------- holds

# "the reset of account A's QUOTA usage limit": QUOTA an agent CLI, or command:PROGRAM.
HOLD = re.compile(r"reset of account \S+'s (\S+) usage limit")


def check_holds(record, waits):
    """Each wait for a usage limit (a loop.changed to `waiting` that ralphd announced) is a wait
    for a quota the loop draws on: the agent named, or for `command`, the program that hit it."""
    found = []
    for loop_id, reason in waits:
        if "usage limit" not in reason or loop_id not in record.loops:
            continue
        agent = HOLD.search(reason)
        if not agent:
            found.append("loop %d waited for a hold this test cannot read: %r" % (loop_id, reason))
            continue
        name = agent.group(1)
        if name.startswith("command:"):
            held = {("command", name[len("command:"):])}
        else:
            held = {(name, "")}
        mine = quotas_of(record.loops[loop_id]["spec"])
        if not held & mine:
            found.append("loop %d (draws on %s) waited for a hold it does not share: %r"
                         % (loop_id, sorted(mine), reason))
    return found


# --------------------------------------------------------------------------- end states

def failures_in(attempts):
    """The attempts that count toward the retries: failed, but not for a usage limit (it burns
    none) and not ended by ralph itself."""
    return [a for a in attempts if a["failure"] not in ("", "rate_limit")
            and a["termination"] not in ("interrupted", "cancelled")]


def justify_end(loop, attempts, cancelled):
    """Why the loop may be in its end state, from its attempts; None when it may, else why not."""
    spec, state, reason = loop["spec"], loop["state"], loop["stop_reason"]
    last_iteration = [a for a in attempts if a["iteration"] == loop["iterations"]]
    tokens = sum(a["input_tokens"] + a["output_tokens"] for a in attempts)
    cost = sum(a["cost_usd"] or 0 for a in attempts)
    if state not in TERMINAL_STATES:
        return "it never ended: %s (%s)" % (state, reason)
    if "internal error" in reason:
        return "it ended by an internal error"
    if spec.get("max_iterations") and loop["iterations"] > spec["max_iterations"]:
        return "it counted %d iterations of at most %d" % (loop["iterations"],
                                                           spec["max_iterations"])
    if state == "cancelled":
        return None if loop["id"] in cancelled else "it was cancelled, and nobody cancelled it"
    if state == "completed":
        claims = [a for a in last_iteration if a["kind"] == "work" and a["completion_signal"]
                  and a["termination"] == "exited"]
        if not claims:
            return "it completed without a claim of completion in its last iteration"
        if loop["iterations"] < spec.get("min_iterations", 1):
            return "it completed before its min_iterations"
        if spec.get("judge"):
            verdicts = [a for a in last_iteration if a["kind"] == "judge" and a["id"] > claims[-1]["id"]]
            if not verdicts or verdicts[-1]["verdict"] != "accept":
                return "it completed without its judge's ACCEPT of the claim"
        return None
    if state == "exhausted":
        if reason.startswith("reached max iterations"):
            return None if loop["iterations"] == spec.get("max_iterations") else \
                "it says %r after %d iterations" % (reason, loop["iterations"])
        if reason.startswith("reached its token cap"):
            return None if tokens >= spec.get("max_tokens", 0) > 0 else \
                "it says %r with %d tokens in its attempts" % (reason, tokens)
        if reason.startswith("reached its cost cap"):
            return None if cost >= spec.get("max_cost_usd", 0) > 0 else \
                "it says %r with $%f in its attempts" % (reason, cost)
        return "exhausted for no reason this test knows: %r" % reason
    if state == "failed":
        last = attempts[-1] if attempts else None
        if reason.startswith("cannot create the worktree"):
            return None
        match = re.match(r"iteration (\d+) failed (\d+) time", reason)
        if match:
            iteration, count = int(match.group(1)), int(match.group(2))
            of_iteration = [a for a in attempts if a["iteration"] == iteration]
            claims = [a for a in of_iteration if a["kind"] == "work" and a["termination"] == "exited"]
            if claims:  # the judge's failures count after the claim only
                of_iteration = [a for a in of_iteration if a["id"] > claims[-1]["id"]]
            counted = len(failures_in(of_iteration))
            if counted != count or count <= spec.get("max_retries", 3):
                return "it says %r but its iteration %d has %d failures for %d retries" % (
                    reason, iteration, counted, spec.get("max_retries", 3))
            return None
        if last and (last["termination"] == "spawn_failed"
                     or last["failure"] in ("auth", "missing_program", "config")):
            return None
        return "failed for no reason its attempts show: %r (last: %s)" % (
            reason, describe(last) if last else "none")
    if state == "stalled":
        match = re.search(r"rejected the claim of completion (\d+) time", reason)
        if match:
            rejects = sum(1 for a in attempts if a["verdict"] == "reject")
            return None if rejects >= spec.get("judge_max_rejections", 3) else \
                "it says %r with %d rejections" % (reason, rejects)
        match = re.match(r"(\d+) identical failures in a row", reason)
        if match:
            count = int(match.group(1))
            tail = failures_in(attempts)[-count:]
            same = len({(a["failure"], a["error"]) for a in tail}) == 1
            return None if count >= spec.get("stall_failures", 5) and len(tail) == count and same \
                else "it says %r; its last failures: %s" % (reason, [describe(a) for a in tail])
        if reason.startswith("no progress in"):
            return None if spec.get("stall_iterations", 3) > 0 else "stalled without the rule"
        return "stalled for no reason this test knows: %r" % reason
    return "an end state this test does not know: %s" % state


def check_end_states(record, cancelled):
    found = []
    for loop_id, loop in record.loops.items():
        attempts = record.attempts_of(loop_id)
        why_not = justify_end(loop, attempts, cancelled)
        if why_not:
            found.append("loop %d ended %s: %s; attempts: %s" % (
                loop_id, loop["state"], why_not, [describe(a) for a in attempts]))
        # An accepted claim ends the loop there.
        for a in attempts:
            if a["verdict"] == "accept" and (loop["state"] not in ("completed", "cancelled")
                                             or a["iteration"] != loop["iterations"]):
                found.append("loop %d: the judge accepted in %s, and the loop went on to %s "
                             "after %d iterations" % (loop_id, describe(a), loop["state"],
                                                      loop["iterations"]))
    return found


# --------------------------------------------------------------------------- budgets

def check_loop_totals(record):
    """The loops' totals are the sums of their attempts; and no attempt of a loop started once
    the loop had reached its token or cost cap."""
    found = []
    for loop_id, loop in record.loops.items():
        attempts = record.attempts_of(loop_id)
        for column in ("input_tokens", "output_tokens", "turns", "tool_calls"):
            total = sum(a[column] for a in attempts)
            if loop[column] != total:
                found.append("loop %d: %s %d, its attempts sum to %d" % (loop_id, column,
                                                                        loop[column], total))
        costs = [a["cost_usd"] for a in attempts if a["cost_usd"] is not None]
        if (loop["cost_usd"] is None) != (not costs) or \
                abs((loop["cost_usd"] or 0) - sum(costs)) > 1e-9:
            found.append("loop %d: cost %r, its attempts sum to %r" % (loop_id, loop["cost_usd"],
                                                                        sum(costs) if costs else None))
        if loop["attempts"] != len(attempts):
            found.append("loop %d counts %d attempts and has %d" % (loop_id, loop["attempts"],
                                                                     len(attempts)))
        spec, tokens, cost = loop["spec"], 0, 0.0
        for a in attempts:
            capped = (spec.get("max_tokens") and tokens >= spec["max_tokens"]) or \
                     (spec.get("max_cost_usd") and cost >= spec["max_cost_usd"] - 1e-12)
            if capped:
                found.append("loop %d: %s started at %d tokens, $%f, past its cap" % (
                    loop_id, describe(a), tokens, cost))
                break
            tokens += a["input_tokens"] + a["output_tokens"]
            cost += a["cost_usd"] or 0
    return found


CHARGES = {"tokens_per_day": lambda a: a["input_tokens"] + a["output_tokens"],
           "cost_per_day_usd": lambda a: a["cost_usd"] or 0}


def check_budget_use(record, budget):
    """budget.get's use (taken while no attempt ran) against the attempts it counts: those
    started in its window before its `now`."""
    found = []
    now = int(round(parse_time(budget["now"]) * 1000))
    for use in budget["use"]:
        counted = [a for a in record.attempts if now - use["window_ms"] < a["started_at"] <= now
                   and (use["loop_id"] == 0 or a["loop_id"] == use["loop_id"])]
        charge = CHARGES.get(use["name"], lambda a: 1)
        expected = sum(charge(a) for a in counted)
        if abs(use["used"] - expected) > 1e-9:
            found.append("budget %s%s at %s: used %r, its attempts sum to %r (%d attempts)" % (
                use["name"], " of loop %d" % use["loop_id"] if use["loop_id"] else "",
                budget["now"], use["used"], expected, len(counted)))
    return found


# --------------------------------------------------------------------------- notifications

END_EVENTS = tuple("loop." + state for state in TERMINAL_STATES)


def check_notifications(record, posts_by_target, takeovers):
    """posts_by_target: {target: (the loops whose events go there, [posted bodies])}. Each loop
    that ended is announced once per target, in its end state; a wait and a rejection at most
    once (a redelivery of the same id is not a second notification); a recovery at most once per
    takeover (a restart, or a storage fault's end)."""
    found = []
    if record.outbox:
        found.append("%d notification(s) were never delivered" % record.outbox)
    for target, (loop_ids, bodies) in posts_by_target.items():
        unique = {}
        for body in bodies:
            unique[body["id"]] = body
        causes = {}
        for body in unique.values():
            loop = body.get("loop") or {}
            event = body["event"]
            if event in END_EVENTS:
                key = ("end", loop.get("id"))
            elif event == "loop.waiting":
                # The same wait (what it waits for, until when), with no attempt between.
                key = ("wait", loop.get("id"), loop.get("stop_reason", "").split(" (")[0],
                       loop.get("resume_at"), loop.get("attempts"))
            elif event == "loop.rejected":
                key = ("rejected", loop.get("id"), body.get("iteration"))
            else:
                key = (event, body["id"])
            causes.setdefault(key, []).append(body)
            if loop and loop.get("id") not in loop_ids:
                found.append("%s got %s of loop %s, which does not notify it" % (
                    target, event, loop.get("id")))
        for key, same in causes.items():
            if len(same) > 1:
                found.append("%s got %d notifications of one cause %r: ids %s, texts %r" % (
                    target, len(same), key, [b["id"] for b in same], [b["text"] for b in same]))
        recoveries = sum(1 for key in causes if key[0] == "daemon.recovered")
        if recoveries > takeovers:
            found.append("%s got %d recoveries for %d restarts and full disks" % (
                target, recoveries, takeovers))
        for loop_id in loop_ids:
            loop = record.loops.get(loop_id)
            if not loop or loop["state"] not in TERMINAL_STATES:
                continue
            ends = causes.get(("end", loop_id), [])
            if len(ends) != 1 or ends[0]["event"] != "loop." + loop["state"]:
                found.append("%s: loop %d ended %s and was announced as %s" % (
                    target, loop_id, loop["state"], [b["event"] for b in ends]))
    return found


# --------------------------------------------------------------------------- output

def recording(agent, scenario, resets_at):
    """The stdout and stderr the replay agent writes for a scenario, or None (garbage, hang)."""
    scenario = PLAYED_AS.get(scenario, scenario)
    for base in (STREAMS, os.path.join(FIXTURES, "agents")):
        for ext in (".jsonl", ".txt"):
            path = os.path.join(base, agent, scenario + ext)
            if os.path.exists(path):
                stem = path[: -len(ext)]
                with open(path, "rb") as f:
                    stdout = f.read().replace(b"RESETS_AT", resets_at.encode())
                with open(stem + ".stderr", "rb") as f:
                    stderr = f.read()
                with open(stem + ".rc") as f:
                    rc = int(f.read().strip() or 0)
                return stdout, stderr, rc
    return None


def check_output(record, output_dir, runs):
    """Each loop's output file is exactly its attempts' ranges one after the other, each covered
    by its own chunks; and an attempt that replayed a recording stored exactly its bytes (a
    prefix of them when it was ended before its agent finished)."""
    found = []
    played = {(int(r["loop"]), int(r["iteration"]), int(r["attempt"]), r["kind"]): r
              for r in runs if r.get("loop")}
    for loop_id, loop in record.loops.items():
        path = os.path.join(output_dir, "%d.log" % loop_id)
        data = b""
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
        if len(data) != loop["output_bytes"]:
            found.append("loop %d: output file of %d bytes, %d committed" % (
                loop_id, len(data), loop["output_bytes"]))
        end = 0
        for a in record.attempts_of(loop_id):
            if a["output_start"] != end or a["output_end"] < a["output_start"]:
                found.append("loop %d: %s has output [%d, %d) after the previous one ended at %d"
                             % (loop_id, describe(a), a["output_start"], a["output_end"], end))
            end = max(end, a["output_end"])
        if end != loop["output_bytes"]:
            found.append("loop %d: its attempts' output ends at %d, the loop's at %d" % (
                loop_id, end, loop["output_bytes"]))
        chunks = [c for c in record.chunks if c["loop_id"] == loop_id]
        at = 0
        for c in chunks:
            if c["offset"] != at:
                found.append("loop %d: output chunk at %d after %d (%s)" % (
                    loop_id, c["offset"], at, "overlap" if c["offset"] < at else "gap"))
            at = c["offset"] + c["length"]
        if at != loop["output_bytes"]:
            found.append("loop %d: its chunks end at %d, its output at %d" % (
                loop_id, at, loop["output_bytes"]))
        for a in record.attempts_of(loop_id):
            mine = [c for c in chunks if c["attempt_id"] == a["id"]]
            if any(not a["output_start"] <= c["offset"] < a["output_end"] for c in mine) or \
                    sum(c["length"] for c in mine) != a["output_end"] - a["output_start"]:
                found.append("loop %d: the chunks of %s do not cover exactly its output" % (
                    loop_id, describe(a)))
                continue
            run = played.get((loop_id, a["iteration"], a["attempt"], a["kind"]))
            expected = run and recording(a["agent"], run["scenario"], run["resets_at"])
            if not expected:
                continue
            ended_itself = a["termination"] in ("exited", "failed") and a["exit_code"] == expected[2]
            if any(c["stream"] == "recovered" for c in mine):
                # Bytes no journal announced (its shim died): stored, their streams unknown.
                size = sum(c["length"] for c in mine)
                wrote = len(expected[0]) + len(expected[1])
                if size > wrote or (ended_itself and size != wrote):
                    found.append("loop %d: %s stored %d bytes where its agent wrote %d" % (
                        loop_id, describe(a), size, wrote))
                continue
            for stream, want in (("stdout", expected[0]), ("stderr", expected[1])):
                got = b"".join(data[c["offset"]:c["offset"] + c["length"]]
                               for c in mine if c["stream"] == stream)
                if got != want and (ended_itself or not want.startswith(got)):
                    found.append("loop %d: %s stored %d bytes of %s where its agent wrote %d "
                                 "(%s/%s)%s" % (loop_id, describe(a), len(got), stream, len(want),
                                                a["agent"], run["scenario"],
                                                "" if ended_itself else ", nor a prefix of them"))
    return found
