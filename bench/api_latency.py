#!/usr/bin/env python3
"""The latency of ralphd's API while many agents run (bench/run.sh latency). Standard library only.

    api_latency.py SOCKET ROOT [--loops 50] [--samples 200] [--rounds 25] [--git-repo DIR]

Submits --loops loops whose agent is a `sleep` that outlives the benchmark: the first in the git
repository --git-repo when given (it must be clean, under ROOT), the others in directories
ROOT/ws-<i> made here. The daemon must run that many at once (ralphd --max-concurrent). Every call
is what a client like ralphctl makes: a new connection to SOCKET, one HTTP POST /rpc, the whole
answer read; timed from connect to the answer's last byte.

The calls, one after the other:
- daemon.info;
- loop.list of every loop that has not ended (the running ones), all fields;
- loop.submit into ROOT/ws-1, a plain directory with a loop of its own (one loop runs per
  workspace), with allow_dirty: the new loop is queued;
- with --git-repo, loop.submit into the git repository without allow_dirty: the dirty check reads
  the work tree (and ralph looks for links in its git directory), and the loop is queued. Only
  in the "running" phase: it holds ralphd's one thread for milliseconds, which would add to the
  latency of the calls of the other process in the "starting" phase. As made by bench/run.sh the
  repository has its objects loose ("git, loose"); after the other calls it is packed (`git gc`)
  and measured again ("git, packed").
Every submitted loop is cancelled at once (not timed): the queue stays empty, nothing else starts.

Two phases, each printing p50 and p99 per method (nearest rank, in ms):
- "starting": another process makes these calls (10 ms between sets) while this one submits the
  loops back to back and waits until every agent runs (found in /proc): the agents' processes
  are being created.
  The submits that start the agents are reported too. Then the loops are cancelled and their
  agents waited for, and again, until each method has --samples calls or after --rounds rounds.
- "running": every agent runs; --samples calls of each method.
Exits 1 when a call fails or the agents do not all start; it is not a timed test.
"""

import argparse
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import time

AGENT_SECONDS = 120  # outlives the benchmark; gone on its own should anything leave it behind
NOT_ENDED = ["queued", "running", "waiting", "paused"]
SAMPLER_PERIOD = 0.01  # seconds between the starting phase's sets of calls


class Client:
    def __init__(self, path, timeout=30):
        self.path = path
        self.timeout = timeout  # seconds a call may take
        self.next_id = 1

    def call(self, method, params=None):
        """(seconds taken, result). Raises on an error answer."""
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            request["params"] = params
        body = json.dumps(request).encode()
        head = ("POST /rpc HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % len(body)).encode()
        t0 = time.perf_counter()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.path)
            sock.sendall(head + body)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("%s: the connection closed before the answer" % method)
                data += chunk
            header, _, rest = data.partition(b"\r\n\r\n")
            length = None
            for line in header.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                raise RuntimeError("%s: an answer without Content-Length" % method)
            while len(rest) < length:
                chunk = sock.recv(max(65536, length - len(rest)))
                if not chunk:
                    raise RuntimeError("%s: the connection closed within the answer" % method)
                rest += chunk
        finally:
            sock.close()
        elapsed = time.perf_counter() - t0
        status = header.split(b"\r\n", 1)[0]
        if b" 200 " not in status + b" ":
            raise RuntimeError("%s: %s" % (method, status.decode(errors="replace")))
        answer = json.loads(rest)
        if "error" in answer:
            raise RuntimeError("%s: %s" % (method, answer["error"]))
        return elapsed, answer["result"]


def agents_running(root):
    """Pids of the benchmark's agents: `sleep` processes working in a directory under root."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % name) as f:
                if f.read().strip() != "sleep":
                    continue
            if os.readlink("/proc/%s/cwd" % name).startswith(root + "/"):
                pids.append(int(name))
        except OSError:
            pass
    return pids


def schedstat(pid):
    """(ns on a CPU, ns waiting for one) of the process's threads: the first one (ralphd's io
    thread) and all of them."""
    first, total = (0, 0), (0, 0)
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                run, wait = (int(v) for v in f.read().split()[:2])
        except OSError:
            continue
        total = (total[0] + run, total[1] + wait)
        if int(tid) == pid:
            first = (run, wait)
    return first + total


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


class Bench:
    def __init__(self, args):
        self.client = Client(args.socket)
        self.root = os.path.realpath(args.root)
        self.args = args
        self.workspaces = [os.path.realpath(args.git_repo)] if args.git_repo else []
        for i in range(len(self.workspaces), args.loops):
            ws = os.path.join(self.root, "ws-%d" % i)
            os.makedirs(ws, exist_ok=True)
            self.workspaces.append(ws)
        if not all(ws.startswith(self.root + "/") for ws in self.workspaces):
            raise SystemExit("api_latency: the git repository must be under ROOT")
        self.running_ids = []
        self.listed = 0
        self.daemon_pid = self.client.call("daemon.info")[1]["pid"]
        self.cpu = [0, 0, 0, 0]  # schedstat() over the measured spans

    def measure(self, since):
        """Adds ralphd's schedstat() since `since` (its value then) to self.cpu."""
        now = schedstat(self.daemon_pid)
        self.cpu = [c + n - s for c, n, s in zip(self.cpu, now, since)]

    def cpu_note(self, seconds):
        io_run, io_wait, run, wait = (v / 1e6 for v in self.cpu)
        self.cpu = [0, 0, 0, 0]
        return ("ralphd in %.1f s: io thread %.0f ms on a CPU, %.0f ms waiting for one; all "
                "threads %.0f ms, %.0f ms" % (seconds, io_run, io_wait, run, wait))

    def submit(self, workspace, allow_dirty=True, name="latency"):
        return self.client.call("loop.submit", {
            "name": name, "workspace": workspace, "agent": "command",
            "command": "sleep %d" % AGENT_SECONDS, "prompt": "latency benchmark",
            "max_iterations": 1, "delay_s": 0, "timeout_s": 600, "max_retries": 0,
            "stall_iterations": 0, "allow_dirty": allow_dirty})

    def queued_submit(self, workspace, allow_dirty):
        elapsed, loop = self.submit(workspace, allow_dirty, name="queued")
        _, cancelled = self.client.call("loop.cancel", {"id": loop["id"]})
        if cancelled["state"] != "cancelled":  # it had started: it should have been queued
            raise RuntimeError("a loop submitted into a busy workspace was %s when cancelled"
                               % cancelled["state"])
        return elapsed

    def one_of_each(self, samples, git=True):
        """One timed call of each method, into samples[method]."""
        elapsed, _ = self.client.call("daemon.info")
        samples.setdefault("daemon.info", []).append(elapsed)
        elapsed, result = self.client.call("loop.list", {"states": NOT_ENDED})
        samples.setdefault("loop.list", []).append(elapsed)
        self.listed = len(result["loops"])
        samples.setdefault("loop.submit", []).append(
            self.queued_submit(self.workspaces[1], allow_dirty=True))
        if git and self.args.git_repo:
            samples.setdefault("loop.submit (git, loose)", []).append(
                self.queued_submit(self.workspaces[0], allow_dirty=False))

    def sampler(self):
        """A process making one_of_each's calls until told to stop: (pid, stop fd, result fd)."""
        stop_r, stop_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(stop_w)
                os.close(result_r)
                samples = {}
                # Paced, as a few clients polling would be (`ralphctl top` polls every second):
                # a sampler calling flat out would keep ralphd's thread busy by itself.
                while not select.select([stop_r], [], [], SAMPLER_PERIOD)[0]:
                    self.one_of_each(samples, git=False)
                text = json.dumps(samples)
            except Exception as e:
                text = json.dumps({"error": str(e)})
                code = 1
            with os.fdopen(result_w, "w") as out:
                out.write(text)
            os._exit(code)
        os.close(stop_r)
        os.close(result_w)
        return pid, stop_w, result_r

    def wait_agents(self, want, timeout=60):
        deadline = time.monotonic() + timeout
        while len(agents_running(self.root)) != want:
            if time.monotonic() > deadline:
                raise RuntimeError("%d agents running after %d s, expected %d"
                                   % (len(agents_running(self.root)), timeout, want))
            time.sleep(0.025)

    def start_loop(self, workspace, submits):
        elapsed, loop = self.submit(workspace)
        submits.append(elapsed)
        self.running_ids.append(loop["id"])

    def stop_loops(self):
        for loop_id in self.running_ids:
            self.client.call("loop.cancel", {"id": loop_id})
        self.running_ids = []
        self.wait_agents(0)

    def starting_round(self, samples, submits):
        """Submits the loops while a sampler calls; (ms to submit them all, ms until all run)."""
        n = len(self.workspaces)
        since = schedstat(self.daemon_pid)
        t0 = time.perf_counter()
        # The sampler's loops go where one is already: they wait in the queue.
        self.start_loop(self.workspaces[0], submits)
        self.start_loop(self.workspaces[1], submits)
        pid, stop, result = self.sampler()
        try:
            for ws in self.workspaces[2:]:
                self.start_loop(ws, submits)
            submitted = time.perf_counter() - t0
            self.wait_agents(n)
            running = time.perf_counter() - t0
            self.measure(since)
        finally:
            os.write(stop, b"x")
            os.close(stop)
            with os.fdopen(result) as f:
                text = f.read()
            os.waitpid(pid, 0)
        got = json.loads(text) if text else {"error": "the sampler died"}
        if "error" in got:
            raise RuntimeError("sampler: %s" % got["error"])
        for method, values in got.items():
            samples.setdefault(method, []).extend(values)
        self.stop_loops()
        return submitted, running

    def run(self):
        n = len(self.workspaces)
        starting, submits, spans = {}, [], []
        for _ in range(self.args.rounds):
            spans.append(self.starting_round(starting, submits))
            if min(len(v) for v in starting.values()) >= self.args.samples:
                break
        starting["loop.submit, starting one"] = submits
        report("starting", starting,
               "%d rounds; %d loops submitted / all agents running after, ms: %s"
               % (len(spans), n, ", ".join("%.0f/%.0f" % (s * 1000, a * 1000) for s, a in spans)),
               self.cpu_note(sum(a for _, a in spans)))

        for ws in self.workspaces:
            self.start_loop(ws, [])
        self.wait_agents(n)
        running = {}
        since = schedstat(self.daemon_pid)
        t0 = time.perf_counter()
        for _ in range(self.args.samples):
            self.one_of_each(running)
        self.measure(since)
        seconds = time.perf_counter() - t0
        if self.args.git_repo:
            # The same repository with its objects packed, as a clone has them.
            subprocess.run(["git", "-C", self.workspaces[0], "gc", "-q"], check=True)
            packed = running.setdefault("loop.submit (git, packed)", [])
            for _ in range(self.args.samples):
                packed.append(self.queued_submit(self.workspaces[0], allow_dirty=False))
        if self.listed != n:
            raise RuntimeError("loop.list listed %d loops, expected %d" % (self.listed, n))
        if len(agents_running(self.root)) != n:
            raise RuntimeError("an agent ended during the measurement")
        report("running", running, "%d agents running" % n, self.cpu_note(seconds))
        self.stop_loops()


def report(phase, samples, note, cpu):
    print("latency, %s (%s):" % (phase, note))
    print("  %s" % cpu)
    for method, values in samples.items():
        ms = [v * 1000 for v in values]
        p99 = percentile(ms, 0.99)
        print("  %-26s n=%-4d p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms%s"
              % (method, len(ms), percentile(ms, 0.5), p99, max(ms),
                 "" if p99 <= 10 else "  (goal p99 <= 10 ms: not met)"))
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("socket")
    parser.add_argument("root")
    parser.add_argument("--loops", type=int, default=50)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--git-repo", default="")
    args = parser.parse_args()
    bench = Bench(args)
    try:
        bench.run()
    except Exception as e:  # a benchmark that breaks says why and leaves no agent behind
        print("bench: latency: %s" % e, file=sys.stderr)
        for pid in agents_running(bench.root):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
