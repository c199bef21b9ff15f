#!/usr/bin/env python3
"""ralph at a year's size (bench/run.sh scale): what every API call, the start-up and gc cost
with a long history and a long queue, each against a baseline in the same run. Standard library
only.

    scale.py BUILD TMP [--quick]

Databases (bench/year_db.py writes them, cloning a loop a real ralphd ran):
- "year": 100,000 loops over 365 days (1,000,000 attempts, 2,000,000 output chunks and events);
  --quick: 10,000 loops over 36.5 days (the same pace: the same last day).
- "day": the year's last 24 hours only (about 274 loops, 2,700 attempts);
- "empty": a new database.
Each runs in a ralphd of its own (its XDG tree under TMP), at the same time, with the same global
budgets (iterations per hour and per day, tokens and cost per day: set far above their use) and
one loop running (an agent `sleep` in workspace "busy", which the submits queue behind).

1. Start-up: each ralphd started and stopped in turn (5 rounds; --quick 3), from its exec to its
   first answer to daemon.info.
2. The API: each method called --samples times (200; --quick 50) on each daemon, one call to each
   daemon in turn, so that the machine's load falls on all three alike. A call is what ralphctl
   makes: a new connection, one POST /rpc, the whole answer (bench/api_latency.py's Client).
   Printed per method and database: the median and p99 time, and the io thread's CPU per call
   with what it leaves the daemon to do (a submit's schedule() and its loop's cancel, untimed)
   (/proc/PID/schedstat: it moves much less with the machine's load).
3. The queue: two ralphd with the "day" history, one with 10,000 loops queued behind the running
   one (--quick: 2,000), one with none; `list`'s default view (its two requests) and a submit
   (then cancelled, untimed), interleaved.
4. gc: history.gc of the year's loops that ended more than 36.5 days ago (--quick: 3.65; 90% of
   them), while another client calls daemon.info, the default loop.list and loop.get every 10 ms:
   their p50/p99/worst, the WAL's largest size (sampled every 20 ms), ralphd's RSS before, after
   and 2 s after, the database's and output directory's size before and after.
Exits 1 when something fails (a call's error, a count that is not what was made); it is not a
timed test.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_latency import Client, percentile, schedstat  # noqa: E402

DAY_S = 24 * 3600
NOT_ENDED = ["queued", "running", "waiting", "paused"]
ENDED = ["completed", "exhausted", "failed", "cancelled", "stalled"]
# What `ralphctl list` asks by default (client/output.cpp, recent_loops_requests): the first
# screenful (20) of the loops that have not ended with the count of the rest, and the 50 newest ended
# (--old-list: what it asked before the first was paged, every loop that has not ended).
TABLE_FIELDS = ["id", "name", "state", "iterations", "max_iterations", "agent", "created_at",
                "workspace"]
DEFAULT_LIST = [{"states": NOT_ENDED, "limit": 20, "fields": TABLE_FIELDS},
                {"states": ENDED, "limit": 50, "fields": TABLE_FIELDS}]
# A page of `ralphctl list --all`.
ALL_PAGE = 200
BUDGETS = {"iterations_per_hour": 1000000, "iterations_per_day": 1000000,
           "tokens_per_day": 10**12, "cost_per_day_usd": 1000000}


def du_bytes(path):
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total


def mib(n):
    return "%.0f MiB" % (n / 2**20)


class Daemon:
    """A ralphd in an XDG tree of its own under TMP/NAME."""
    started = []  # every one made, stopped at the end whatever happens

    def __init__(self, build, root, name):
        Daemon.started.append(self)
        self.build, self.name = build, name
        self.dir = os.path.join(root, name)
        self.env = dict(os.environ)
        for var, sub in (("XDG_RUNTIME_DIR", "run"), ("XDG_STATE_HOME", "state"),
                         ("XDG_CONFIG_HOME", "config")):
            self.env[var] = os.path.join(self.dir, sub)
            os.makedirs(self.env[var], mode=0o700, exist_ok=True)
        self.socket = os.path.join(self.env["XDG_RUNTIME_DIR"], "ralph", "ralphd.sock")
        self.env["RALPH_SOCKET"] = self.socket
        self.state = os.path.join(self.env["XDG_STATE_HOME"], "ralph")
        self.db = os.path.join(self.state, "ralph.db")
        self.client = Client(self.socket)
        self.process = None

    def start(self):
        """Seconds from ralphd's exec to its first answer to daemon.info."""
        log = open(os.path.join(self.dir, "ralphd.log"), "ab")
        t0 = time.perf_counter()
        self.process = subprocess.Popen([os.path.join(self.build, "daemon", "ralphd"),
                                         "--log-level", "warn"], env=self.env, stderr=log)
        deadline = t0 + 120
        while time.perf_counter() < deadline:
            try:
                self.client.call("daemon.info")
                return time.perf_counter() - t0
            except (OSError, RuntimeError):
                if self.process.poll() is not None:
                    raise RuntimeError("%s: ralphd exited (%s)" % (self.name, self.log_tail()))
                time.sleep(0.002)
        raise RuntimeError("%s: ralphd did not answer" % self.name)

    def stop(self):
        if self.process:
            self.process.send_signal(signal.SIGINT)  # a deliberate stop: the agents end too
            self.process.wait(60)
            self.process = None

    def log_tail(self):
        with open(os.path.join(self.dir, "ralphd.log"), errors="replace") as f:
            return f.read()[-2000:]

    def ctl(self, *args):
        return subprocess.run([os.path.join(self.build, "client", "ralphctl"), *args],
                              env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)

    def call(self, method, params=None):
        return self.client.call(method, params)[1]

    def rss_kib(self):
        with open("/proc/%d/status" % self.process.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def io_cpu_ns(self):
        return schedstat(self.process.pid)[0]

    def run_busy_loop(self, workspace):
        """The loop every submit queues behind: an agent that sleeps in `workspace`, started
        ahead of any queued loop (the scheduler paused meanwhile)."""
        self.call("scheduler.set", {"paused": True})
        loop = self.call("loop.submit", {"workspace": workspace, "agent": "command",
                                         "command": "sleep 3600", "max_iterations": 1,
                                         "priority": 100, "allow_dirty": True})
        self.call("scheduler.set", {"paused": False})
        deadline = time.time() + 30
        while self.call("loop.get", {"id": loop["id"]})["state"] != "running":
            if time.time() > deadline:
                raise RuntimeError("%s: the busy loop did not start" % self.name)
            time.sleep(0.05)
        return loop["id"]


def make_seed(build, root):
    """A database holding one loop that ralphd ran to its end (its spec and argv are cloned)."""
    seed = Daemon(build, root, "seed")
    workspace = os.path.join(root, "ws")
    os.makedirs(workspace, exist_ok=True)
    seed.start()
    seed.ctl("submit", "--workspace", workspace, "--command", "true", "-m", "1", "--delay", "0",
             "--wait", "seed")
    seed.stop()
    return seed


def clone_state(seed, daemon):
    shutil.copytree(seed.state, daemon.state, dirs_exist_ok=True)


def generate(here, daemon, *args):
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.join(here, "year_db.py"), daemon.db,
                          os.path.join(daemon.state, "output"), *args],
                         check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    print("  %s (%.1f s)" % (out, time.perf_counter() - t0), flush=True)
    return time.perf_counter() - t0


def stats(values):
    return percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000


def measure(daemons, calls, samples):
    """{label: {daemon name: (times, io ns per call)}} of the calls, each made `samples` times on
    every daemon in turn. A call is (label, method, params or a function of the daemon)."""
    results = {}
    for label, method, params in calls:
        times = {d.name: [] for d in daemons}
        cpu = {d.name: 0 for d in daemons}
        for _ in range(samples):
            for d in daemons:
                p = params(d) if callable(params) else params
                before = d.io_cpu_ns()
                if isinstance(p, list):  # one call per params, one after the other
                    answers = [d.client.call(method, each) for each in p]
                    elapsed, result = sum(a[0] for a in answers), answers[-1][1]
                else:
                    elapsed, result = d.client.call(method, p)
                times[d.name].append(elapsed)
                after = CLEANUP.get(method)
                if after:
                    after(d, p, result)
                cpu[d.name] += d.io_cpu_ns() - before
        results[label] = {d.name: (times[d.name], cpu[d.name] / samples) for d in daemons}
    return results


def cancel_submitted(daemon, params, result):
    if not params.get("dry_run"):
        daemon.call("loop.cancel", {"id": result["id"]})


CLEANUP = {"loop.submit": cancel_submitted}


def print_results(results, names, baseline, goal, against=()):
    """One line per call: each database's median and p99 ms and io CPU µs; the ratio of the
    medians (and of the CPU) of names[-1] to `baseline`, and to each of `against`."""
    for label, by_name in results.items():
        parts = []
        for name in names:
            times, cpu = by_name[name]
            p50, p99 = stats(times)
            parts.append("%s %.2f ms (p99 %.2f), io CPU %.0f µs" % (name, p50, p99, cpu / 1000))
        last = names[-1]
        ratios = []
        for base in (baseline, *against):
            r = stats(by_name[last][0])[0] / stats(by_name[base][0])[0]
            c = by_name[last][1] / max(1, by_name[base][1])
            ratios.append("%s/%s %.2fx (CPU %.2fx)" % (last, base, r, c))
        print("  %-28s %s; %s (goal <= %s)" % (label + ":", "; ".join(parts), ", ".join(ratios),
                                                goal), flush=True)


class Watcher:
    """While gc runs: another client's calls every 10 ms, and the WAL's size every 20 ms."""

    def __init__(self, daemon, loop_id):
        self.daemon, self.loop_id = daemon, loop_id
        self.times = {"daemon.info": [], "loop.list": [], "loop.get": []}
        self.wal_max = 0
        self.done = threading.Event()
        self.errors = []
        self.slow = []  # the calls over 50 ms, when

    def calls(self):
        client = Client(self.daemon.socket)
        t0 = time.perf_counter()
        while not self.done.is_set():
            try:
                for method, took in (
                        ("daemon.info", client.call("daemon.info")[0]),
                        ("loop.list", sum(client.call("loop.list", r)[0] for r in DEFAULT_LIST)),
                        ("loop.get", client.call("loop.get", {"id": self.loop_id})[0])):
                    self.times[method].append(took)
                    if took > 0.05:
                        self.slow.append("%s %.0f ms at %.1f s" % (
                            method, took * 1000, time.perf_counter() - t0))
            except Exception as e:  # noqa: BLE001: reported after the run
                self.errors.append(str(e))
            time.sleep(0.01)

    def wal(self):
        path = self.daemon.db + "-wal"
        while not self.done.is_set():
            try:
                self.wal_max = max(self.wal_max, os.path.getsize(path))
            except OSError:
                pass
            time.sleep(0.02)

    def __enter__(self):
        self.threads = [threading.Thread(target=self.calls), threading.Thread(target=self.wal)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        for t in self.threads:
            t.join()

    def report(self):
        parts = []
        for method, times in self.times.items():
            if times:
                parts.append("%s p50 %.1f ms, p99 %.1f ms, worst %.1f ms (%d calls)" % (
                    method, percentile(times, 0.5) * 1000, percentile(times, 0.99) * 1000,
                    max(times) * 1000, len(times)))
        return "; ".join(parts)


def bench_history(build, root, here, quick, samples, rounds):
    loops = 10000 if quick else 100000
    days = 36.5 if quick else 365
    now = int(time.time() * 1000)
    seed = make_seed(build, root)
    empty, day, year = (Daemon(build, root, n) for n in ("empty", "day", "year"))
    print("scale: databases (bench/year_db.py)", flush=True)
    clone_state(seed, year)
    took = generate(here, year, "--loops", str(loops), "--days", str(days), "--now", str(now))
    print("  the year's database in %.1f s (goal < 60 s)" % took, flush=True)
    clone_state(seed, day)
    generate(here, day, "--loops", str(loops), "--days", str(days), "--now", str(now),
             "--last-day")
    daemons = [empty, day, year]

    # Start-up, each database in turn (after a first start: the empty one's makes it).
    for d in daemons:
        d.start()
        d.stop()
    starts = {d.name: [] for d in daemons}
    for _ in range(rounds):
        for d in daemons:
            starts[d.name].append(d.start())
            d.stop()
    line = ", ".join("%s %.0f ms (of %s)" % (n, min(v) * 1000, ", ".join(
        "%.0f" % (x * 1000) for x in v)) for n, v in starts.items())
    print("scale: start-up, best of %d: %s; year/empty %.2fx (goal <= 1.5)" % (
        rounds, line, min(starts["year"]) / min(starts["empty"])), flush=True)

    busy = os.path.join(root, "busy")
    plain = os.path.join(root, "plain")
    os.makedirs(busy, exist_ok=True)
    os.makedirs(plain, exist_ok=True)
    for d in daemons:
        d.start()
        d.call("budget.set", BUDGETS)
        d.busy_id = d.run_busy_loop(busy)
    rss = ", ".join("%s %s" % (d.name, mib(d.rss_kib() * 1024)) for d in daemons)
    since_12h = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 12 * 3600))
    submit = {"workspace": busy, "agent": "command", "command": "true", "max_iterations": 1,
              "allow_dirty": True}
    calls = [
        ("daemon.info", "daemon.info", None),
        ("scheduler.get", "scheduler.get", None),
        ("list (default view)", "loop.list", DEFAULT_LIST),
        ("list --all (a page)", "loop.list", {"limit": ALL_PAGE}),
        ("loop.get", "loop.get", lambda d: {"id": d.busy_id}),
        ("budget.get (4 budgets)", "budget.get", None),
        ("submit --dry-run", "loop.submit", dict(submit, workspace=plain, dry_run=True)),
        ("report --since 12h", "history.report", {"since": since_12h}),
        ("submit", "loop.submit", submit),
    ]
    print("scale: the API, %d calls of each per database (RSS %s)" % (samples, rss), flush=True)
    results = measure(daemons, calls, samples)
    print_results(results, ["empty", "day", "year"], "day", "1.5x the day's; budgets and the "
                  "dry run 1.5x empty's", against=("empty",))
    for d in (empty, day):
        d.stop()
    return year, days


def bench_gc(year, days):
    cutoff_s = int(days * DAY_S / 10)
    counts = year.call("daemon.info")["loops_by_state"]
    before = {"rss": year.rss_kib() * 1024, "db": os.path.getsize(year.db),
              "output": du_bytes(os.path.join(year.state, "output"))}
    dry = year.call("history.gc", {"older_than_s": cutoff_s, "dry_run": True})
    print("scale: gc of the loops that ended more than %.1f days ago: %d of %d loops, %d attempts"
          % (cutoff_s / DAY_S, len(dry["loop_ids"]), sum(counts.values()), dry["attempts"]),
          flush=True)
    os.sync()  # the generator's writes on their way to the disk would slow what gc writes
    with Watcher(year, year.busy_id) as quiet:
        time.sleep(3)
    print("  another client without gc: %s" % quiet.report(), flush=True)
    with Watcher(year, year.busy_id) as watcher:
        t0 = time.perf_counter()
        elapsed, result = Client(year.socket, timeout=1800).call("history.gc",
                                                                  {"older_than_s": cutoff_s})
        took = time.perf_counter() - t0
    rss_after = year.rss_kib() * 1024
    time.sleep(2)
    after = {"rss": year.rss_kib() * 1024, "db": os.path.getsize(year.db),
             "output": du_bytes(os.path.join(year.state, "output"))}
    wal_end = os.path.getsize(year.db + "-wal") if os.path.exists(year.db + "-wal") else 0
    # (Loops that ended since the dry run may have come under the cutoff, which follows the clock.)
    if not 0 <= len(result["loop_ids"]) - len(dry["loop_ids"]) < 100 or watcher.errors:
        raise RuntimeError("gc removed %d loops, the dry run counted %d; errors: %s" % (
            len(result["loop_ids"]), len(dry["loop_ids"]), watcher.errors[:3]))
    print("  gc took %.1f s: %d loops, %d attempts, %d events, %s of output" % (
        took, len(result["loop_ids"]), result["attempts"], result["events"],
        mib(result["output_bytes"])), flush=True)
    print("  another client during gc: %s (goal p99 < 10 ms, worst < 50 ms)" % watcher.report(),
          flush=True)
    if watcher.slow:
        print("  over 50 ms: %s" % "; ".join(watcher.slow[:20]), flush=True)
    print("  WAL: largest %s during gc, %s after (goal < 64 MiB); RSS %s before, %s at the end, "
          "%s 2 s later (%.2fx, goal <= 1.5x); database %s -> %s; output files %s -> %s" % (
              mib(watcher.wal_max), mib(wal_end), mib(before["rss"]), mib(rss_after),
              mib(after["rss"]), after["rss"] / before["rss"], mib(before["db"]),
              mib(after["db"]), mib(before["output"]), mib(after["output"])), flush=True)


def bench_queue(build, root, here, quick, samples):
    queued_n = 2000 if quick else 10000
    loops, days = (10000, 36.5) if quick else (100000, 365)
    seed = Daemon(build, root, "seed")
    none, queued = Daemon(build, root, "none-queued"), Daemon(build, root, "queued")
    for d, n in ((none, 0), (queued, queued_n)):
        clone_state(seed, d)
        generate(here, d, "--loops", str(loops), "--days", str(days), "--last-day", "--queued",
                 str(n))
    busy = os.path.join(root, "busy")
    os.makedirs(busy, exist_ok=True)
    for d in (none, queued):
        d.start()
        d.busy_id = d.run_busy_loop(busy)
    state = queued.call("daemon.info")["loops_by_state"]
    if state.get("queued") != queued_n or state.get("running") != 1:
        raise RuntimeError("expected %d queued loops and 1 running: %s" % (queued_n, state))
    first = queued.call("loop.list", DEFAULT_LIST[0])
    print("scale: the queue, %d loops queued behind a running one against none; the default list "
          "shows %d of them%s" % (queued_n, len(first["loops"]), (
              ", and their count: %d" % first["total"]) if "total" in first else ""), flush=True)
    submit = {"workspace": busy, "agent": "command", "command": "true", "max_iterations": 1,
              "allow_dirty": True}
    calls = [("list (default view)", "loop.list", DEFAULT_LIST),
             ("list (its active page)", "loop.list", DEFAULT_LIST[0]),
             ("submit", "loop.submit", submit),
             ("daemon.info", "daemon.info", None)]
    results = measure([none, queued], calls, samples)
    print_results(results, ["none-queued", "queued"], "none-queued", "1.2x none queued")
    state = queued.call("daemon.info")["loops_by_state"]
    if state.get("queued") != queued_n or state.get("running") != 1:
        raise RuntimeError("the queue changed while it was measured: %s" % state)
    for d in (none, queued):
        d.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("tmp")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=["history", "gc", "queue"], action="append")
    parser.add_argument("--old-list", action="store_true")
    args = parser.parse_args()
    if args.old_list:
        del DEFAULT_LIST[0]["limit"]
    here = os.path.dirname(os.path.abspath(__file__))
    samples = 50 if args.quick else 200
    rounds = 3 if args.quick else 5
    only = set(args.only or ["history", "gc", "queue"])
    t0 = time.perf_counter()
    try:
        if only & {"history", "gc"}:
            year, days = bench_history(args.build, args.tmp, here, args.quick, samples, rounds)
            if "gc" in only:
                bench_gc(year, days)
            year.stop()
        if "queue" in only:
            if not os.path.exists(os.path.join(args.tmp, "seed")):
                make_seed(args.build, args.tmp)
            bench_queue(args.build, args.tmp, here, args.quick, samples)
    finally:
        for d in Daemon.started:
            d.stop()
    print("scale: %.0f s in all (load average %s)" % (
        time.perf_counter() - t0, " ".join(open("/proc/loadavg").read().split()[:3])))


if __name__ == "__main__":
    sys.exit(main())
