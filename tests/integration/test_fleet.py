"""ralphctl over a fleet: the --all-hosts views (list, top --once and live, report, budget,
agents; -H '*' is the same) with one host down, and `tail -f` over ssh whose ssh process dies
mid-stream.

Three hosts in the hosts file: `local` (this machine's test daemon), `build` (a second daemon
reached through a real sshd, harness.SshServer) and `gone` (an ssh address where nothing
listens). Every view must show the loops of both daemons with their HOST and qualified ids,
name `gone` as down (stderr or the frame; "unreachable" in --json) and exit 3. The tail test
kills the local ssh of a `tail -f --raw` (found among ralphctl's children in /proc) while the
remote loop is between two bursts of output: ralphctl connects again, its output is byte-exact
against the stored output (no gap, no byte twice) and the loop goes on as if nothing happened.
"""

import json
import os
import signal
import subprocess
import time

from harness import (RALPHCTL, DaemonTestCase, Screen, SshServer, child_processes, free_tcp_port,
                     main, make_workspace, proc_cmdline, read_bytes, scaled, wait_until,
                     write_text)

BUILD_CLIENT = os.path.dirname(os.path.abspath(RALPHCTL)) if RALPHCTL else ""


class FleetTest(DaemonTestCase):

    def setUp(self):
        self.d = self.daemon()  # local
        self.build = self.daemon()  # behind sshd
        self.server = SshServer(self.build.root, {"PATH": BUILD_CLIENT + ":/usr/bin:/bin",
                                                  "RALPH_SOCKET": self.build.socket})
        self.addCleanup(self.server.stop)
        hosts_file = os.path.join(self.d.config_dir, "ralph", "hosts")
        os.makedirs(os.path.dirname(hosts_file), exist_ok=True)
        write_text(hosts_file, "build %s\ngone ssh://127.0.0.1:%d\n"
                   % (self.server.address, free_tcp_port()))
        self.env = {"RALPH_SSH_COMMAND": self.server.ssh_command}

    def ctl(self, *args):
        return self.d.ctl(*args, env=self.env, check=False)

    def fleet_json(self, *args):
        """`ralphctl --json ARGS` with `gone` down: exit 3, `gone` unreachable; the document."""
        proc = self.ctl("--json", *args)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        document = json.loads(proc.stdout)
        self.assertEqual([u["host"] for u in document["unreachable"]], ["gone"])
        self.assertRegex(document["unreachable"][0]["error"], r"ssh exited with status 255")
        return document

    def fleet_table(self, *args):
        """`ralphctl ARGS` (human) with `gone` down: exit 3; stdout and stderr."""
        proc = self.ctl(*args)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        return proc.stdout, proc.stderr

    def test_every_fleet_view_shows_both_daemons_and_names_the_host_that_is_down(self):
        ws = make_workspace(self.d.work_dir)
        here = self.d.submit(ws, "/bin/echo hi", name="here", max_iterations=1)
        self.d.wait_state(here["id"], "exhausted")
        there = self.build.submit(make_workspace(self.build.work_dir),
                                  "/bin/sh -c 'echo there-says-hi; exec sleep 300'", name="there")
        self.build.wait_state(there["id"], "running")
        self.build.ctl("budget", "set", "--iterations-per-day", "50")
        expected = [("build", there["id"]), ("local", here["id"])]

        # list: the newest first, whatever the host; `gone` on stderr.
        started = time.monotonic()
        listed = self.fleet_json("list", "--all-hosts")
        self.assertLess(time.monotonic() - started, scaled(8))  # a down host delays nothing
        self.assertEqual([(l["host"], l["id"]) for l in listed["loops"]], expected)
        out, err = self.fleet_table("list", "--all-hosts")
        self.assertRegex(out, r"(?m)^HOST +ID +NAME")
        self.assertRegex(out, r"(?m)^build +build:%d +there +running" % there["id"])
        self.assertRegex(out, r"(?m)^local +local:%d +here +exhausted" % here["id"])
        self.assertIn("ralphctl: gone (ssh://127.0.0.1:", err)

        # top --once: a header line per host (the down one says why), the rows of both.
        frame, _ = self.fleet_table("top", "--once", "--all-hosts")
        self.assertIn("3 hosts, 1 down", frame)
        self.assertRegex(frame, r"(?m)^gone down: .*ssh exited with status 255")
        self.assertRegex(frame, r"(?m)^build ralph \S+ · scheduler 1 of \d+ running · running 1")
        self.assertRegex(frame, r"(?m)^local ralph \S+ · scheduler 0 of \d+ running")
        self.assertRegex(frame, r"(?m)^HOST +ID +NAME +STATE")
        self.assertRegex(frame, r"(?m)^local +local:%d +here +exhausted" % here["id"])
        self.assertRegex(frame, r"(?m)^build +build:%d +there +running" % there["id"])
        # -H '*' is --all-hosts; the selected loop is the running one, on build.
        self.assertIn("── loop build:%d there" % there["id"], frame)
        top = self.fleet_json("-H", "*", "top", "--once")
        self.assertEqual([h["host"] for h in top["hosts"]], ["local", "build"])
        self.assertEqual(top["hosts"][1]["daemon"]["pid"], self.build.pid)
        self.assertEqual(sorted((l["host"], l["id"]) for l in top["loops"]), expected)

        # report: one table and one total over both.
        report = self.fleet_json("report", "--all-hosts")
        self.assertEqual(sorted((l["host"], l["id"], l["name"]) for l in report["loops"]),
                         [("build", there["id"], "there"), ("local", here["id"], "here")])
        self.assertEqual(report["totals"]["attempts"], 2)
        self.assertEqual(report["totals"]["loops"], 2)
        out, err = self.fleet_table("report", "--all-hosts")
        self.assertRegex(out, r"(?m)^HOST +ID +NAME +STATE")
        self.assertRegex(out, r"(?m)^build +build:%d +there +running" % there["id"])
        self.assertRegex(out, r"(?m)^local:%d here: " % here["id"])
        self.assertRegex(out, r"(?m)^Total: 2 loops \(")
        self.assertIn("ralphctl: gone (", err)

        # budget: build's budget, local's none.
        budgets = self.fleet_json("budget", "-H", "*")
        self.assertEqual([b["host"] for b in budgets["budgets"]], ["local", "build"])
        self.assertEqual(budgets["budgets"][0]["use"], [])
        self.assertEqual([(u["name"], u["limit"]) for u in budgets["budgets"][1]["use"]],
                         [("iterations_per_day", 50)])
        out, _ = self.fleet_table("budget", "--all-hosts")
        self.assertRegex(out, r"(?m)^HOST +BUDGET +OF +USED +LIMIT")
        self.assertRegex(out, r"(?m)^local +none")
        self.assertRegex(out, r"(?m)^build +iterations per day +all loops +\d+ +50 ")

        # agents: each host's; the version of a remote host's program is not asked here.
        agents = self.fleet_json("agents", "--all-hosts")
        by_host = {(a["host"], a["name"]): a for a in agents["agents"]}
        self.assertTrue(by_host[("local", "demo")]["path"])
        self.assertTrue(by_host[("build", "demo")]["path"])
        self.assertIsNone(by_host[("build", "demo")]["version"])
        out, _ = self.fleet_table("agents", "--all-hosts")
        self.assertRegex(out, r"(?m)^HOST +AGENT +FOUND")
        self.assertRegex(out, r"(?m)^build +demo +yes +- ")

        # -H NAME is --host NAME; -H '*' only where every host makes sense.
        one = self.ctl("--json", "-H", "build", "list")
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertEqual([l["id"] for l in json.loads(one.stdout)["loops"]], [there["id"]])
        refused = self.ctl("-H", "*", "show", "1")
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn("-H '*' (every host) is for list, agents, budget, report, top only",
                      refused.stderr)

        # The live view: both daemons' rows, the down host in the header, the output of the
        # selected loop read from build; its keys act on that loop's host.
        screen = Screen(self.d, "--all-hosts", "--interval", "0.2", env=self.env, columns=160)
        self.addCleanup(screen.close)
        screen.wait_for("gone down:", "build:%d" % there["id"], "local:%d" % here["id"],
                        "── loop build:%d there" % there["id"], "there-says-hi", "q quit")
        screen.press(b"cy")  # c asks, y answers
        screen.wait_for("cancel loop build:%d: now" % there["id"])
        self.build.wait_state(there["id"], "cancelled")
        self.assertEqual(self.d.get(here["id"])["state"], "exhausted")
        screen.press(b"q")
        self.assertEqual(screen.wait_exit(), 0)

    def test_live_top_refreshes_the_other_hosts_while_one_hangs(self):
        there = self.build.submit(make_workspace(self.build.work_dir),
                                  "/bin/sh -c 'echo there-says-hi; exec sleep 300'", name="there")
        self.build.wait_state(there["id"], "running")
        idle = self.d.submit(make_workspace(self.d.work_dir, "idle"),
                             "/bin/sh -c 'echo idle-here; exec sleep 300'", name="idle")
        self.d.wait_state(idle["id"], "running")
        # The selected loop is build's: its output is read with build's rows, on build's question.
        screen = Screen(self.d, "--all-hosts", "--interval", "0.4", "build:%d" % there["id"],
                        env=self.env, columns=160)
        self.addCleanup(screen.close)
        screen.wait_for("local:%d" % idle["id"], "── loop build:%d there" % there["id"],
                        "there-says-hi")

        # build accepts ssh and its ralphd answers nothing: its question waits, the others go on,
        # the selected loop's output stays as it was.
        os.kill(self.build.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, self.build.pid, signal.SIGCONT)
        screen.mark()
        screen.wait_for("3 hosts, 1 down, 1 late", "no answer for 2 s, its rows as they were",
                        "build:%d" % there["id"], "there-says-hi")
        started = time.monotonic()
        here = self.d.submit(make_workspace(self.d.work_dir), "/bin/echo hi", name="here",
                             max_iterations=1)
        screen.wait_for("local:%d" % here["id"], timeout=5)
        self.assertLess(time.monotonic() - started, scaled(3), "a refresh waited for build")
        screen.wait_for("no answer for 4 s", "build:%d" % there["id"])
        # One question at a time: build's first one still waits on its one ssh.
        ssh = [pid for pid in child_processes(screen.pid, "ssh")
               if str(self.server.port) in proc_cmdline(pid)]
        self.assertEqual(len(ssh), 1, ssh)

        # A key on build's loop is not sent to a host that hangs (it would act who knows when);
        # one on local's loop is, at once.
        screen.press(b"cy")
        screen.wait_for("cancel loop build:%d: not sent, build gave no answer for" % there["id"])
        screen.press(b"k")  # the rows: local's queued `here`, its running `idle`, build's
        screen.wait_for("── loop local:%d idle" % idle["id"], "idle-here")
        screen.press(b"cy")
        screen.wait_for("cancel loop local:%d: now" % idle["id"], timeout=5)
        self.d.wait_state(idle["id"], "cancelled")

        # build answers again: its rows are fresh, nothing is late, its loop was not cancelled.
        os.kill(self.build.pid, signal.SIGCONT)
        screen.mark()
        screen.wait_for("3 hosts, 1 down · ")
        self.assertEqual(self.build.get(there["id"])["state"], "running")
        screen.press(b"q")
        self.assertEqual(screen.wait_exit(), 0)

    def test_tail_f_over_ssh_connects_again_when_its_ssh_dies(self):
        flag = os.path.join(self.build.root, "go-on")
        # Two bursts of 150 KB (and bytes that are not UTF-8), the second once the test says.
        burst = 'head -c 110000 /dev/urandom | base64; printf "\\377\\376\\n"'
        script = ('%s; echo first-burst-done; while [ ! -e %s ]; do sleep 0.02; done; %s; '
                  'echo "<promise>COMPLETE</promise>"' % (burst, flag, burst))
        loop = self.build.submit(make_workspace(self.build.work_dir),
                                 "/bin/sh -c '%s'" % script, max_iterations=1)
        out_path = os.path.join(self.d.root, "tail.out")
        with open(out_path, "wb") as out:
            tail = self.d.ctl_popen("--host", "build", "tail", "-f", "--raw", loop["id"],
                                    stdout=out, env=self.env)
        self.addCleanup(lambda: tail.poll() is None and tail.kill())

        # The first burst is written and ralphctl has printed all of it.
        self.build.wait_output_contains(loop["id"], b"first-burst-done\n")
        first = self.build.output(loop["id"])
        wait_until(lambda: os.path.getsize(out_path) == len(first), 10,
                   "tail to print the first %d bytes" % len(first))
        [ssh] = wait_until(lambda: child_processes(tail.pid, "ssh"), 5, "ralphctl's ssh")
        os.kill(ssh, signal.SIGKILL)
        time.sleep(0.1)
        self.assertEqual(self.build.get(loop["id"])["state"], "running")
        # The second burst comes while ralphctl connects again.
        write_text(flag, "")
        try:
            _, err = tail.communicate(timeout=scaled(30))
        except subprocess.TimeoutExpired:
            self.fail("tail -f did not end after its ssh was killed")
        err = err.decode(errors="replace")
        self.assertEqual(tail.returncode, 0, err)
        self.assertIn("ssh was killed by signal 9; connecting again", err)
        self.assertIn("connected again to ssh://", err)

        stored = self.build.output(loop["id"])
        self.assertGreater(len(stored), len(first) + 140000)
        self.assertEqual(read_bytes(out_path), stored)
        # The remote loop never noticed: one attempt, which ran to its end.
        self.assertEqual(self.build.get(loop["id"])["state"], "completed")
        [attempt] = self.build.attempts(loop["id"])
        self.assertEqual((attempt["termination"], attempt["exit_code"]), ("exited", 0))


if __name__ == "__main__":
    main()
