"""On-done hooks and --worktree end to end (README, "Worktrees", "Hooks and notifications"),
through the real ralphd and ralphctl.

Hooks: the loop's own (`submit --on-done`) and the daemon-wide one (`ralphd --on-done`) run once
when a loop ends — completed, failed, exhausted, cancelled while running or while queued — in the
loop's workspace, stdin /dev/null, in their own process group, with the outcome in RALPH_*
variables (tests/agents/hook.py records all that); their first lines of output and their exit
status are logged; a hook that hangs is killed after --hook-timeout without holding up the next
loop; a missing or failing hook changes nothing; a daemon stop that re-queues a loop runs no
hook; a stop ends the hooks still running.

Worktrees: two --worktree loops on one repository run at the same time
(tests/agents/barrier-agent.sh succeeds only then, and waits for the test to see it), each commits on its own branch
ralph/loop-ID in its own worktree under the state directory, the user's checkout (HEAD, branch,
uncommitted changes) is untouched, and the uncommitted changes are a warning, not a refusal;
without --worktree a second loop on the same workspace still waits; a directory outside git
is refused at submit."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import (RALPHD, DaemonTestCase, RpcError, TERMINAL_STATES, agent_command, git, main,
                     processes_in_group, read_text, scaled, wait_group_gone, wait_until,
                     write_text)


def hook_command(mode, directory=None):
    """The command of tests/agents/hook.py (see its docstring)."""
    return agent_command("hook.py", mode, *([directory] if directory else []))


def records(directory, hook, loop_id):
    """What every run of `hook` ("loop" or "daemon") for the loop recorded, in order."""
    name = re.compile(r"^%s-%d\.json(?:\.(\d+))?$" % (hook, loop_id))
    found = []
    for entry in os.listdir(directory):
        match = name.match(entry)
        if match:
            found.append((int(match.group(1) or 1), os.path.join(directory, entry)))
    return [json.loads(read_text(path)) for _, path in sorted(found)]


def wait_record(directory, hook, loop_id, timeout=20):
    return wait_until(lambda: records(directory, hook, loop_id), timeout,
                      "the %s hook of loop %d to run" % (hook, loop_id))[0]


class HookTestCase(DaemonTestCase):

    def setUp(self):
        self.hooks = tempfile.mkdtemp(prefix="ralph-hooks-")
        self.addCleanup(shutil.rmtree, self.hooks, True)

    def wait_log(self, d, text, count=1, timeout=20):
        return wait_until(lambda: d.log_text().count(text) >= count, timeout,
                          "%d× %r in the daemon's log" % (count, text))


class HookTest(HookTestCase):

    def test_both_hooks_run_once_for_each_end_state_with_the_outcome(self):
        d = self.daemon(extra_args=["--max-concurrent", "4",
                                    "--on-done", hook_command("record", self.hooks)])
        loop_hook = hook_command("record", self.hooks)
        # Through ralphctl submit --on-done.
        done = d.ctl_submit(d.workspace("done"), "p", "--command",
                            agent_command("count-to-complete.sh", "2"), "--on-done", loop_hook,
                            name="done")
        failed = d.submit(d.workspace("fail"), agent_command("fail.sh", "7"), name="failed",
                          on_done=loop_hook)
        exhausted = d.submit(d.workspace("exhaust"), agent_command("never-complete.sh"),
                             name="exhausted", max_iterations=2, on_done=loop_hook)
        # Cancelled while running, and a loop queued behind it (same workspace) while queued.
        ws = d.workspace("cancel")
        running = d.submit(ws, agent_command("sleep.sh", "60"), name="running", on_done=loop_hook)
        queued = d.submit(ws, agent_command("sleep.sh", "60"), name="queued", on_done=loop_hook)
        d.running_attempt(running["id"])
        self.assertEqual(d.get(queued["id"])["state"], "queued")
        d.call("loop.cancel", {"id": queued["id"]})
        d.call("loop.cancel", {"id": running["id"]})

        expected = [(done, "completed"), (failed, "failed"), (exhausted, "exhausted"),
                    (running, "cancelled"), (queued, "cancelled")]
        for loop, state in expected:
            ended = d.wait_state(loop["id"], TERMINAL_STATES)
            self.assertEqual(ended["state"], state)
            for hook in ("loop", "daemon"):
                record = wait_record(self.hooks, hook, loop["id"])
                env = record["env"]
                self.assertEqual(env["RALPH_HOOK"], hook)
                self.assertEqual(env["RALPH_LOOP_ID"], str(loop["id"]))
                self.assertEqual(env["RALPH_LOOP_NAME"], ended["name"])
                self.assertEqual(env["RALPH_STATE"], state)
                self.assertEqual(env["RALPH_STOP_REASON"], ended["stop_reason"])
                self.assertEqual(env["RALPH_ITERATIONS"], str(ended["iterations"]))
                self.assertEqual(env["RALPH_WORKSPACE"], ended["workspace"])
                self.assertEqual(env["RALPH_WORKTREE_BRANCH"], "")
                self.assertEqual(env["RALPH_AGENT"], "command")
                self.assertEqual(env["RALPH_INPUT_TOKENS"], str(ended["input_tokens"]))
                self.assertEqual(env["RALPH_OUTPUT_TOKENS"], str(ended["output_tokens"]))
                self.assertEqual(env["RALPH_COST_USD"], "")  # the command agent reports none
                self.assertEqual(os.path.realpath(record["cwd"]), os.path.realpath(ended["workspace"]))
                self.assertEqual(record["stdin"], "/dev/null")
                self.assertEqual(record["pgid"], record["pid"], "a hook leads its own group")
        self.assertEqual(d.get(done["id"])["iterations"], 2)

        # Once each: every hook has exited, and none ran twice.
        self.wait_log(d, "on-done hook exited with status 0", count=2 * len(expected))
        time.sleep(scaled(0.3))
        for loop, _ in expected:
            for hook in ("loop", "daemon"):
                self.assertEqual(len(records(self.hooks, hook, loop["id"])), 1)
        # The log has each hook's first lines, not all of them.
        log = d.log_text()
        first = "loop %d: submit --on-done hook stdout: hook.py: line 1 of loop %d" % (
            done["id"], done["id"])
        self.assertIn(first, log)
        self.assertIn("ralphd --on-done hook stdout: hook.py: line 10 of loop %d" % done["id"], log)
        self.assertNotIn("line 11 of loop", log)
        self.assertIn("loop %d: submit --on-done hook stdout: (more output not logged)" % done["id"],
                      log)
        self.assertIn("loop %d: ralphd --on-done hook stderr: hook.py: on stderr" % done["id"], log)

    def test_a_hook_that_hangs_is_killed_after_its_limit_without_holding_up_loops(self):
        limit = scaled(4)
        d = self.daemon(extra_args=["--hook-timeout", str(limit),
                                    "--on-done", hook_command("hang", self.hooks)])
        ws = d.workspace()
        first = d.submit(ws, agent_command("count-to-complete.sh", "1"), name="first")
        d.wait_state(first["id"], "completed")
        hook = wait_record(self.hooks, "daemon", first["id"])
        started = time.monotonic()
        wait_until(lambda: len(processes_in_group(hook["pgid"])) == 2, 10,
                   "the hook and its child in its process group")
        # The next loop (same workspace) runs and ends while the hook still hangs.
        second = d.submit(ws, agent_command("count-to-complete.sh", "1"), name="second")
        d.wait_state(second["id"], "completed")
        self.assertLess(time.monotonic() - started, limit)
        self.assertTrue(processes_in_group(hook["pgid"]), "the hook should still be running")
        # Then its whole group is killed at the limit.
        wait_group_gone(hook["pgid"], timeout=limit + 5)
        self.assertGreater(time.monotonic() - started, limit - scaled(1))
        self.wait_log(d, "loop %d: ralphd --on-done hook was killed after its time limit"
                      % first["id"])
        second_hook = wait_record(self.hooks, "daemon", second["id"])
        wait_group_gone(second_hook["pgid"], timeout=limit + 5)
        self.assertEqual(d.call("daemon.info")["loops_by_state"], {"completed": 2})

    def test_daemon_stop_ends_the_hooks_still_running(self):
        d = self.daemon(extra_args=["--on-done", hook_command("hang", self.hooks)])
        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], "completed")
        hook = wait_record(self.hooks, "daemon", loop["id"])
        self.assertTrue(processes_in_group(hook["pgid"]))
        started = time.monotonic()
        d.stop()  # SIGTERM: exits 0
        self.assertLess(time.monotonic() - started, scaled(d.kill_grace + 5))
        wait_group_gone(hook["pgid"], timeout=5)
        self.assertEqual(d.leftover_processes(), [])
        self.assertIn("ralphd --on-done hook still runs at shutdown: killing its process group",
                      d.log_text())

    def test_a_missing_or_failing_hook_is_logged_and_changes_nothing(self):
        d = self.daemon(extra_args=["--on-done", "/nonexistent/ralph-hook --flag"])
        # The loop's own hook is looked for at submit: one that does not exist is refused.
        with self.assertRaises(RpcError) as refused:
            d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"),
                     on_done="no-such-ralph-hook-program")
        self.assertEqual(refused.exception.code, -32602)
        self.assertIn("params.on_done: program 'no-such-ralph-hook-program' not found on the "
                      "loop's PATH", refused.exception.message)
        # One that is gone by the time the loop ends is not looked for again: not run, logged.
        ws = d.workspace()
        hook = os.path.join(ws, "done.sh")
        write_text(hook, "#!/bin/sh\nexit 0\n")
        os.chmod(hook, 0o755)
        missing = d.submit(ws, agent_command("sleep.sh", "60"), on_done="./done.sh")
        self.assertEqual(missing["on_done"], os.path.realpath(hook))
        os.remove(hook)
        d.call("loop.cancel", {"id": missing["id"]})
        self.assertEqual(d.wait_state(missing["id"], TERMINAL_STATES)["state"], "cancelled")
        self.wait_log(d, "loop %d: submit --on-done hook '%s' not run: cannot run %s"
                      % (missing["id"], os.path.realpath(hook), os.path.realpath(hook)))
        self.wait_log(d, "loop %d: ralphd --on-done hook '/nonexistent/ralph-hook --flag' not run"
                      % missing["id"])
        failing = d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"),
                           on_done=hook_command("fail"))
        self.assertEqual(d.wait_state(failing["id"], TERMINAL_STATES)["state"], "completed")
        self.wait_log(d, "loop %d: submit --on-done hook exited with status 3" % failing["id"])
        self.assertIn("loop %d: submit --on-done hook stderr: hook.py: failing on purpose"
                      % failing["id"], d.log_text())
        self.assertEqual(d.call("daemon.info")["loops_by_state"],
                         {"cancelled": 1, "completed": 1})

    def test_no_hook_runs_when_a_daemon_stop_requeues_a_loop(self):
        d = self.daemon(extra_args=["--on-done", hook_command("record", self.hooks)])
        loop = d.submit(d.workspace(), agent_command("sleep.sh", "60"),
                        on_done=hook_command("record", self.hooks))
        d.running_attempt(loop["id"])
        d.stop()
        self.assertEqual(os.listdir(self.hooks), [])
        d.start()
        self.assertIn(d.get(loop["id"])["state"], ("queued", "running"))
        d.running_attempt(loop["id"])
        d.call("loop.cancel", {"id": loop["id"]})
        d.wait_state(loop["id"], "cancelled")
        for hook in ("loop", "daemon"):
            self.assertEqual(wait_record(self.hooks, hook, loop["id"])["env"]["RALPH_STATE"],
                             "cancelled")
        self.wait_log(d, "on-done hook exited with status 0", count=2)
        for hook in ("loop", "daemon"):
            self.assertEqual(len(records(self.hooks, hook, loop["id"])), 1)

    def test_a_hook_that_cannot_be_split_is_refused(self):
        d = self.daemon()
        with self.assertRaises(RpcError) as refused:
            d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"),
                     on_done="notify 'unterminated")
        self.assertEqual(refused.exception.code, -32602)
        self.assertIn("params.on_done: unterminated single quote", refused.exception.message)
        bad = subprocess.run([RALPHD, "--on-done", "  "], env=d.env, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=scaled(10))
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("empty command", bad.stdout + bad.stderr)


class WorktreeTest(HookTestCase):

    def test_two_worktree_loops_on_one_repository_run_at_once_each_on_its_own_branch(self):
        d = self.daemon(extra_args=["--max-concurrent", "4"])
        repo = d.workspace("repo")
        write_text(os.path.join(repo, "README.md"), "committed\n")
        git(repo, "add", "README.md")
        git(repo, "commit", "-q", "-m", "readme")
        # Uncommitted work of the user: stays in the checkout, never reaches the worktrees.
        write_text(os.path.join(repo, "README.md"), "edited, not committed\n")
        write_text(os.path.join(repo, "scratch.txt"), "untracked\n")
        head = git(repo, "rev-parse", "HEAD").strip()
        status = git(repo, "status", "--porcelain")
        barrier = tempfile.mkdtemp(prefix="barrier-", dir=d.root)

        loops = []
        for name in ("one", "two"):
            # No --allow-dirty: with --worktree the changes are a warning, not a refusal.
            proc = d.ctl("--json", "submit", "--workspace", repo, "--name", name, "--delay", "0s",
                         "--retries", "0", "--worktree", "--command",
                         agent_command("barrier-agent.sh", barrier, "2"),
                         "--on-done", hook_command("record", self.hooks), "Do the work.")
            out = json.loads(proc.stdout)
            self.assertEqual(len(out["warnings"]), 1, out)
            self.assertIn("2 uncommitted change(s): they are not in the worktree", out["warnings"][0])
            self.assertIn("warning: workspace %s has 2 uncommitted change(s)"
                          % os.path.realpath(repo), proc.stderr)
            loops.append(out["loop"])

        # Both run at once: each agent waits until the other has started, and until released.
        started = os.path.join(barrier, "started")
        wait_until(lambda: os.path.isdir(started) and len(os.listdir(started)) == 2
                   and all(d.get(l["id"])["state"] == "running" for l in loops), 20,
                   "both loops running at the same time")
        write_text(os.path.join(barrier, "release"), "")
        listed = {l["id"]: l for l in d.ctl_json("list")["loops"]}
        for loop in loops:
            ended = d.wait_state(loop["id"], TERMINAL_STATES)
            self.assertEqual(ended["state"], "completed", d.output(loop["id"]))
            branch = "ralph/loop-%d" % loop["id"]
            path = os.path.join(os.path.realpath(d.state_dir), "ralph", "worktrees",
                                "loop-%d" % loop["id"])
            self.assertEqual(ended["worktree_branch"], branch)
            self.assertEqual(ended["worktree_path"], path)
            self.assertEqual(ended["workspace"], path)
            self.assertEqual(ended["worktree_source"], os.path.realpath(repo))
            self.assertEqual(ended["worktree_base"], head)
            self.assertTrue(ended["worktree"])
            self.assertIn(b"barrier-agent: loop %d in %s on %s" % (loop["id"], path.encode(),
                                                                    branch.encode()),
                          d.output(loop["id"]))
            # Its commit is on its branch, on top of the submitted HEAD, and nowhere else.
            self.assertEqual(git(repo, "rev-parse", branch + "^").strip(), head)
            files = git(repo, "ls-tree", "--name-only", branch).split()
            self.assertIn("work-%d.txt" % loop["id"], files)
            self.assertEqual([f for f in files if f.startswith("work-")],
                             ["work-%d.txt" % loop["id"]])
            # The worktree is kept, with the committed files only.
            self.assertEqual(read_text(os.path.join(path, "README.md")), "committed\n")
            self.assertFalse(os.path.exists(os.path.join(path, "scratch.txt")))
            # The hook ran in the worktree and was told the branch.
            record = wait_record(self.hooks, "loop", loop["id"])
            self.assertEqual(os.path.realpath(record["cwd"]), path)
            self.assertEqual(record["env"]["RALPH_WORKTREE_BRANCH"], branch)
            self.assertEqual(record["env"]["RALPH_WORKSPACE"], path)
            # show and list --json name the worktree and its branch.
            shown = d.ctl("show", loop["id"]).stdout
            self.assertIn("%s, branch %s from %s of %s" % (path, branch, head[:12],
                                                           os.path.realpath(repo)), shown)
            self.assertEqual(listed[loop["id"]]["worktree_path"], path)
            self.assertEqual(listed[loop["id"]]["worktree_branch"], branch)

        # The user's checkout is as it was.
        self.assertEqual(git(repo, "rev-parse", "HEAD").strip(), head)
        self.assertEqual(git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip(), "main")
        self.assertEqual(git(repo, "status", "--porcelain"), status)
        self.assertEqual(read_text(os.path.join(repo, "README.md")), "edited, not committed\n")
        worktrees = git(repo, "worktree", "list", "--porcelain")
        for loop in loops:
            self.assertIn("branch refs/heads/ralph/loop-%d" % loop["id"], worktrees)

    def test_a_second_loop_on_a_workspace_waits_unless_it_runs_in_a_worktree(self):
        d = self.daemon(extra_args=["--max-concurrent", "4"])
        repo = d.workspace("repo")
        first = d.submit(repo, agent_command("sleep.sh", "60"), name="first")
        d.running_attempt(first["id"])
        same = d.submit(repo, agent_command("count-to-complete.sh", "1"), name="same")
        # A subdirectory that HEAD does not have: the loop runs in it, made in the worktree.
        os.makedirs(os.path.join(repo, "sub"))
        in_tree = d.submit(os.path.join(repo, "sub"), agent_command("count-to-complete.sh", "1"),
                           name="tree", worktree=True)
        ended = d.wait_state(in_tree["id"], TERMINAL_STATES)
        self.assertEqual(ended["state"], "completed", d.output(in_tree["id"]))
        self.assertEqual(ended["workspace"], os.path.join(ended["worktree_path"], "sub"))
        self.assertTrue(os.path.exists(os.path.join(ended["workspace"], ".count-to-complete")))
        self.assertEqual(d.get(first["id"])["state"], "running")
        self.assertEqual(d.get(same["id"])["state"], "queued")
        d.call("loop.cancel", {"id": first["id"]})
        self.assertEqual(d.wait_state(same["id"], TERMINAL_STATES)["state"], "completed")
        self.assertEqual(d.get(same["id"])["worktree_path"], "")

    def test_worktree_needs_a_git_repository_with_a_commit(self):
        d = self.daemon()
        plain = tempfile.mkdtemp(prefix="plain-", dir=d.work_dir)
        proc = d.ctl("submit", "--workspace", plain, "--worktree", "--command", "/bin/true",
                     "p", check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("it is not in a git repository (--worktree needs one)", proc.stderr)
        with self.assertRaises(RpcError) as refused:
            d.submit(plain, "/bin/true", worktree=True)
        self.assertEqual(refused.exception.code, -32003)
        empty = tempfile.mkdtemp(prefix="empty-", dir=d.work_dir)
        git(empty, "init", "-q")
        with self.assertRaises(RpcError) as refused:
            d.submit(empty, "/bin/true", worktree=True)
        self.assertIn("no commit yet", refused.exception.message)
        self.assertEqual(d.call("loop.list")["loops"], [])
        self.assertEqual(os.listdir(os.path.join(d.state_dir, "ralph", "worktrees")), [])


if __name__ == "__main__":
    main()
