"""`ralphctl submit --host auto`: a loop placed on the host with the most room.

loop.submit's dry run (`dry_run: true`) checks all that a submit checks and creates nothing (no
loop, no id spent, no worktree, no branch, no file in the workspace or the state directory), and
answers the daemon's capacity: free slots, the queue, whether the scheduler starts loops now (not
paused, inside its time window), whether the loop's workspace is busy, whether a usage limit holds
the loop's agents. A slot where the loop would not start now is not free. `--host auto` asks every
host at once — this machine's daemon and two more, each behind a real sshd of its own
(harness.SshServer) — and submits to one whose scheduler is not held, then the one with the most
free slots, then the shortest queue, then the first in the hosts file, and warns when every host
was held; a host that is down is skipped. When no host accepts, the error names every host with
its reason (exit 1; 3 when none was reachable).
`--host auto` with any other command is a usage error that says so.
"""

import json
import os
import time

from harness import (RALPHCTL, DaemonTestCase, RpcError, SshServer, fake_agent_bin, git, main,
                     make_workspace, parse_time, wait_until, write_text)

BUILD_CLIENT = os.path.dirname(os.path.abspath(RALPHCTL)) if RALPHCTL else ""
SLEEP = "/bin/sh -c 'echo started; exec sleep 300'"


def files_under(path):
    """Every file and directory under `path`, with its size and modification time."""
    found = {}
    for directory, dirs, files in os.walk(path):
        for name in dirs + files:
            st = os.lstat(os.path.join(directory, name))
            found[os.path.relpath(os.path.join(directory, name), path)] = (st.st_size,
                                                                           st.st_mtime_ns)
    return found


class DryRunTest(DaemonTestCase):

    def capacity(self, d, request):
        return d.call("loop.submit", dict(request, dry_run=True))["capacity"]

    def test_a_dry_run_checks_as_a_submit_creates_nothing_and_tells_the_capacity(self):
        d = self.daemon(extra_args=["--max-concurrent", "3", "--rate-limit-margin", "0"])
        ws = d.workspace()
        request = {"workspace": ws, "command": SLEEP, "dry_run": True}
        ws_before, state_before = files_under(ws), set(files_under(d.state_dir))
        dry = d.call("loop.submit", request)
        self.assertEqual((dry["id"], dry["dry_run"], dry["created"], dry["state"]),
                         (0, True, False, "queued"))
        self.assertEqual(dry["workspace"], os.path.realpath(ws))
        self.assertEqual(dry["capacity"], {"max_concurrent": 3, "running": 0, "free_slots": 3,
                                           "queued": 0, "scheduler_held": False,
                                           "scheduler_held_reason": "", "workspace_busy": False,
                                           "agent_held": False, "agent_held_until": None})
        # A worktree is planned (named after the next id) but neither it nor its branch is made.
        planned = d.call("loop.submit", dict(request, worktree=True))
        self.assertEqual(planned["worktree_branch"], "ralph/loop-1")
        self.assertFalse(os.path.exists(planned["worktree_path"]))
        self.assertEqual(git(ws, "branch", "--list", "ralph/*"), "")
        self.assertEqual(d.call("loop.list", {})["loops"], [])
        self.assertEqual(files_under(ws), ws_before)
        self.assertEqual(set(files_under(d.state_dir)), state_before)

        # Each refusal of a submit, with its code: workspace, agent, bounds, uncommitted changes.
        for change, code in (({"workspace": ws + "/missing"}, -32003), ({"agent": "nope"}, -32004),
                             ({"max_iterations": -1}, -32602)):
            with self.assertRaises(RpcError) as refused:
                d.call("loop.submit", dict(request, **change))
            self.assertEqual(refused.exception.code, code, change)
        write_text(os.path.join(ws, "wip.txt"), "uncommitted\n")
        with self.assertRaises(RpcError) as dirty:
            d.call("loop.submit", request)
        self.assertEqual((dirty.exception.code, dirty.exception.data["changes"]),
                         (-32008, ["?? wip.txt"]))
        request["allow_dirty"] = True
        self.assertEqual(self.capacity(d, request)["free_slots"], 3)

        # A running loop takes a slot, and its workspace: a loop there would queue behind it.
        sleeper = d.submit(ws, SLEEP)
        d.wait_state(sleeper["id"], "running")
        behind = self.capacity(d, request)
        self.assertEqual((behind["running"], behind["free_slots"], behind["workspace_busy"]),
                         (1, 0, True))
        elsewhere = dict(request, workspace=d.workspace("elsewhere"))
        self.assertEqual(self.capacity(d, elsewhere)["free_slots"], 2)
        # A usage limit holds claude until its stated reset.
        resets_at = int(time.time()) + 3600
        claude_env = {"PATH": fake_agent_bin(d.root) + ":" + os.environ["PATH"],
                      "FAKE_AGENT_SCRIPT": "rate-limit", "FAKE_RESETS_AT": str(resets_at)}
        limited = d.submit(d.workspace("limited"), "", agent="claude", env=claude_env)
        d.wait_state(limited["id"], "waiting")
        on_claude = dict(elsewhere, agent="claude", command="", env=claude_env)
        held = wait_until(lambda: (c := self.capacity(d, on_claude))["running"] == 1 and c, 10,
                          "the parked loop to leave its slot")
        self.assertEqual((held["free_slots"], held["queued"], held["agent_held"]), (2, 0, True))
        self.assertEqual(parse_time(held["agent_held_until"]), resets_at)
        self.assertFalse(self.capacity(d, dict(on_claude, fallback=["codex"]))["agent_held"])
        self.assertFalse(self.capacity(d, elsewhere)["agent_held"])

        # The queue: loops that wait for a slot (the parked loop waits for its reset instead).
        d.call("scheduler.set", {"max_concurrent": 1})
        d.submit(d.workspace("queued"), SLEEP, idempotency_key="nightly")
        full = self.capacity(d, elsewhere)
        self.assertEqual((full["max_concurrent"], full["running"], full["free_slots"],
                          full["queued"], full["workspace_busy"]), (1, 1, 0, 1, False))
        # The key of a loop in the history: that loop, with the capacity, nothing checked.
        again = d.call("loop.submit", dict(request, idempotency_key="nightly",
                                           workspace="/nowhere"))
        self.assertEqual((again["id"], again["created"], again["capacity"]["queued"]),
                         (3, False, 1))
        # No dry run spent an id or left a loop.
        self.assertEqual(d.submit(ws, SLEEP)["id"], 4)
        self.assertEqual(sorted(loop["id"] for loop in d.call("loop.list", {})["loops"]),
                         [1, 2, 3, 4])

        # A paused scheduler, or one outside its time window, starts no loop: no slot is free.
        d.call("scheduler.set", {"max_concurrent": 3, "paused": True})
        paused = self.capacity(d, elsewhere)
        self.assertEqual((paused["free_slots"], paused["scheduler_held"],
                          paused["scheduler_held_reason"]), (0, True, "the scheduler is paused"))
        opens = time.localtime(time.time() + 3600)
        closed = "%02d:%02d-%02d:%02d" % (opens.tm_hour, opens.tm_min, (opens.tm_hour + 1) % 24,
                                          opens.tm_min)
        d.call("scheduler.set", {"paused": False, "window": closed})
        shut = self.capacity(d, elsewhere)
        self.assertEqual((shut["free_slots"], shut["scheduler_held"],
                          shut["scheduler_held_reason"]),
                         (0, True, "outside the time window " + closed))


class PlacementTest(DaemonTestCase):
    """This machine's daemon (`local`) and b1, b2, each behind its own sshd, in the hosts file."""

    def setUp(self):
        self.local = self.daemon()
        self.daemons = {"local": self.local, "b1": self.daemon(), "b2": self.daemon()}
        self.servers = {}
        for name in ("b1", "b2"):
            server = SshServer(self.daemons[name].root,
                               {"PATH": BUILD_CLIENT + ":/usr/bin:/bin",
                                "RALPH_SOCKET": self.daemons[name].socket})
            self.addCleanup(server.stop)
            self.servers[name] = server
        write_text(os.path.join(self.local.config_dir, "ralph", "hosts"),
                   "b1 %s\nb2 %s\n" % (self.servers["b1"].address, self.servers["b2"].address))
        self.ssh = SshServer.command_for(list(self.servers.values()),
                                         os.path.join(self.local.root, "ssh_config"))

    def ctl(self, *args, env=None):
        return self.local.ctl(*args, env=dict(env or {}, RALPH_SSH_COMMAND=self.ssh), check=False)

    def auto_submit(self, name, *options, ws=None):
        """`ralphctl --json --host auto submit` of a `sleep` loop (in a new workspace)."""
        ws = ws or make_workspace(self.local.work_dir, name)
        done = self.ctl("--json", "--host", "auto", "submit", "--workspace", ws, "--name", name,
                        "--command", SLEEP, *options)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout)

    def names_on(self, host):
        return sorted(loop["name"] for loop in self.daemons[host].call("loop.list", {})["loops"])

    def test_the_loop_goes_to_the_host_with_the_most_room_and_a_host_down_is_skipped(self):
        busy = self.local.submit(self.local.workspace("busy"), SLEEP, name="busy")
        self.local.wait_state(busy["id"], "running")

        def placed(name, host, state, *options):
            out = self.auto_submit(name, *options)
            self.assertEqual(out["host"], host, out["placement"])
            self.assertEqual(out["loop"]["name"], name)
            self.daemons[host].wait_state(out["loop"]["id"], state)
            return out

        # local's one slot runs `busy`; b1 and b2 have one free each: b1, first in the file.
        one = placed("one", "b1", "running", "--idempotency-key", "nightly-one")
        self.assertEqual([(h["host"], h["accepted"], h["capacity"]["free_slots"])
                          for h in one["placement"]], [("local", True, 0), ("b1", True, 1),
                                                       ("b2", True, 1)])
        # Its retry goes where the key's loop is, though b2 has more room now: nothing new.
        retry = self.auto_submit("one-again", "--idempotency-key", "nightly-one")
        self.assertEqual((retry["host"], retry["created"], retry["loop"]["id"]),
                         ("b1", False, one["loop"]["id"]))
        # b2 alone has a free slot. RALPH_HOST=auto does what --host auto does; the id printed is
        # qualified by its host, as commands take it.
        ws = make_workspace(self.local.work_dir, "two")
        two = self.ctl("submit", "--workspace", ws, "--name", "two", "--command", SLEEP,
                       env={"RALPH_HOST": "auto"})
        self.assertEqual(two.returncode, 0, two.stderr)
        self.assertEqual(two.stdout, "submitted loop b2:1 (two) in %s\n" % os.path.realpath(ws))
        self.daemons["b2"].wait_state(1, "running")
        # No slot free, no queue anywhere: the first host, local, queues it.
        placed("three", "local", "queued")
        # local has a queue now; b1's is as short as b2's and b1 comes first.
        placed("four", "b1", "queued")
        # b2 has the shortest queue, but its sshd is down: skipped. Between local and b1 (a loop
        # queued on each), local.
        self.servers["b2"].stop()
        five = placed("five", "local", "queued")
        down = five["placement"][2]
        self.assertEqual((down["host"], down["reachable"], down["accepted"], down["capacity"]),
                         ("b2", False, False, None))
        self.assertIn("ssh exited with status 255", down["error"])
        self.assertEqual(five["placement"][1]["capacity"]["queued"], 1)
        # The dry runs left nothing: each daemon has the loops placed there, no more.
        self.assertEqual(self.names_on("local"), ["busy", "five", "three"])
        self.assertEqual(self.names_on("b1"), ["four", "one"])
        self.assertEqual(self.names_on("b2"), ["two"])

    def test_a_host_that_would_not_start_the_loop_now_is_passed_over(self):
        # local has a free slot, but the loop's workspace is busy there: b1, idle, gets it.
        self.local.call("scheduler.set", {"max_concurrent": 2})
        ws = make_workspace(self.local.work_dir, "shared")
        first = self.local.submit(ws, SLEEP, name="first")
        self.local.wait_state(first["id"], "running")
        second = self.auto_submit("second", ws=ws)
        self.assertEqual(second["host"], "b1", second["placement"])
        room = second["placement"][0]["capacity"]
        self.assertEqual((room["running"], room["free_slots"], room["workspace_busy"]),
                         (1, 0, True))
        self.daemons["b1"].wait_state(second["loop"]["id"], "running")
        # local, paused, has two slots no loop runs in; b2 one: b2 gets the loop.
        self.local.call("scheduler.set", {"max_concurrent": 3, "paused": True})
        third = self.auto_submit("third")
        self.assertEqual(third["host"], "b2", third["placement"])
        room = third["placement"][0]["capacity"]
        self.assertEqual((room["free_slots"], room["scheduler_held"],
                          room["scheduler_held_reason"]), (0, True, "the scheduler is paused"))
        self.daemons["b2"].wait_state(third["loop"]["id"], "running")
        # No slot free anywhere, no queue: a full host's queue moves, a paused one's does not.
        self.assertEqual(self.auto_submit("fourth")["host"], "b1")
        # Every host paused: the shortest queue (local's), with a warning that it waits there.
        for host in ("b1", "b2"):
            self.daemons[host].call("scheduler.set", {"paused": True})
        fifth_ws = make_workspace(self.local.work_dir, "fifth")
        fifth = self.ctl("--host", "auto", "submit", "--workspace", fifth_ws, "--name", "fifth",
                         "--command", SLEEP)
        self.assertEqual(fifth.returncode, 0, fifth.stderr)
        self.assertEqual(fifth.stdout, "submitted loop local:2 (fifth) in %s\n"
                         % os.path.realpath(fifth_ws))
        self.assertEqual(fifth.stderr, "ralphctl: warning: no host that accepted the loop starts "
                                       "loops now: loop local:2 waits on local (the scheduler is "
                                       "paused)\n")
        self.assertEqual(self.local.get(2)["state"], "queued")

    def test_when_no_host_accepts_each_says_why(self):
        # auto is submit's only: any other command says so (usage error), as a host it is refused.
        for args, env in ((("--host", "auto", "list"), None), (("list",), {"RALPH_HOST": "auto"})):
            other = self.ctl(*args, env=env)
            self.assertEqual(other.returncode, 2, other.stderr)
            self.assertIn("--host auto is for submit only", other.stderr)
            self.assertIn("'list' needs the daemon it acts on", other.stderr)

        # A workspace that no host has (nor this machine: the hosts check it, not ralphctl).
        missing = os.path.join(self.local.work_dir, "missing")
        refused = self.ctl("--host", "auto", "submit", "--workspace", missing, "--command", "true")
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("ralphctl: no host accepted the loop:\n", refused.stderr)
        for host in ("local", "b1", "b2"):
            self.assertIn("\n  %s: cannot use workspace %s: no such directory" % (host, missing),
                          refused.stderr)

        # Uncommitted changes without --allow-dirty: every host refuses, and the hint says how.
        ws = make_workspace(self.local.work_dir, "dirty")
        write_text(os.path.join(ws, "wip.txt"), "uncommitted\n")
        dirty = self.ctl("--host", "auto", "submit", "--workspace", ws, "--command", "true")
        self.assertEqual(dirty.returncode, 1, dirty.stderr)
        for host in ("local", "b1", "b2"):
            self.assertRegex(dirty.stderr,
                             r"\n  %s: workspace \S+ has 1 uncommitted change\(s\)\n" % host)
        self.assertIn("or submit with --allow-dirty", dirty.stderr)
        for host in self.daemons:
            self.assertEqual(self.names_on(host), [], host)

        # b1 down, the others refuse: still exit 1, b1 named with ssh's reason.
        self.servers["b1"].stop()
        dirty = self.ctl("--host", "auto", "submit", "--workspace", ws, "--command", "true")
        self.assertEqual(dirty.returncode, 1, dirty.stderr)
        self.assertRegex(dirty.stderr, r"\n  b1 \(ssh://\S+\): not reachable: .*ssh exited with "
                                       r"status 255: .*Connection refused\n")
        self.assertIn("\n  b2: workspace ", dirty.stderr)
        allowed = self.auto_submit("allowed", "--allow-dirty", ws=ws)
        self.assertEqual(allowed["host"], "local")

        # No host reachable: exit 3.
        self.servers["b2"].stop()
        self.local.stop()
        nowhere = self.ctl("--host", "auto", "submit", "--workspace", ws, "--command", "true")
        self.assertEqual(nowhere.returncode, 3, nowhere.stderr)
        for host in ("local", "b1", "b2"):
            self.assertRegex(nowhere.stderr, r"\n  %s \(\S+\): not reachable: " % host)

        # No host of the hosts file may be named auto.
        write_text(os.path.join(self.local.config_dir, "ralph", "hosts"), "auto ssh://x\n")
        named = self.ctl("hosts")
        self.assertEqual(named.returncode, 2, named.stderr)
        self.assertIn("'auto' is not a host's name", named.stderr)


if __name__ == "__main__":
    main()
