"""Issue 19 ("Safe to leave alone") end to end: every escape and attack it lists is tried here by a
hostile agent (tests/agents/hostile-agent.sh), a hostile repository or another local user, and
must fail to get through.

- The sandbox holds: ralphd's socket, its state directory, other loops' workspaces and ralphd's
  process are out of reach; links planted for ralph's own writes are refused (and recorded as
  "refused" events); .git/config and .git/hooks cannot be changed; --verify and the hooks run in
  the sandbox; --sandbox=offline shares no network.
- No write through a link: a root ralphd and a workspace owned by another user (refused unless
  --allow-foreign-workspace) with links at .ralph, .ralph/notes.md and .ralph/loop.md.
- ralph's own git work (libgit2) runs nothing of the repository (fsmonitor, filters, signing,
  hooks), with or without --sandbox, and a FIFO planted where it reads a file stalls no loop.
- The client trusts only a safe socket; ralphd cannot be blocked by another user's directory.
- Agents get an explicit environment, PWD included; --env values are never shown.
- Every number has a bound; oversized ones are -32602 errors on a connection that stays open.
"""

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from harness import (RALPHCTL, RALPHD, DaemonTestCase, RpcError, UnixHTTPConnection,
                     agent_command, agent_path, commit_all, git, main, make_workspace,
                     processes_in_group, read_text, require_bubblewrap, require_root, scaled,
                     skip_test, wait_until, write_text)

OTHER_UID = 65534  # nobody: "another local user"


def write_executable(path, text):
    write_text(path, text)
    os.chmod(path, 0o755)


def hostile(*args):
    return agent_command("hostile-agent.sh", *args)


def events_of(d, loop_id, kind):
    return [e for e in d.call("loop.events", {"id": loop_id})["events"] if e["kind"] == kind]


class SandboxTest(DaemonTestCase):
    """A hostile agent under --sandbox tries each of the seven escapes of issue 19."""

    def setUp(self):
        super().setUp()
        require_bubblewrap()

    def setup_daemon(self, extra_args=(), env=None):
        # Outside /tmp, which is empty in the sandbox anyway: every path hidden here is hidden by
        # ralph, not by that. Two loops at once for the test of another loop's workspace.
        d = self.daemon(parent="/var/tmp", extra_args=["--max-concurrent", "2", *extra_args],
                        env=env)
        self.outside = os.path.join(d.root, "outside")
        os.mkdir(self.outside)
        self.marker = os.path.join(self.outside, "escaped")
        return d

    def run_sandboxed(self, d, ws, *options, name="hostile", states=("completed",)):
        loop = d.ctl_submit(ws, "Get out.", "--sandbox", *options, name=name)
        d.wait_state(loop["id"], list(states), timeout=30)
        return loop, d.output(loop["id"]).decode()

    def assert_not_escaped(self):
        self.assertFalse(os.path.exists(self.marker), "the agent got out of its sandbox")
        self.assertEqual(os.listdir(self.outside), [])

    def test_a_sandboxed_agent_writes_only_its_workspace_git_directory_and_a_private_tmp(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        outside = self.outside
        host_tmp_file = "/tmp/ralph-sandbox-probe.txt"
        if os.path.exists(host_tmp_file):
            os.unlink(host_tmp_file)

        loop = d.ctl_submit(ws, "Probe the sandbox.", "--sandbox", "-m", "1", "--command",
                            agent_command("sandbox-probe.sh", outside))
        self.assertTrue(loop["sandbox"])
        d.wait_state(loop["id"], ["completed"], timeout=30)
        output = d.output(loop["id"]).decode()
        for line in ("workspace: ok", "outside: denied", "tmp: ok", "git: ok"):
            self.assertIn(line, output)
        self.assertTrue(os.path.exists(os.path.join(ws, "probe-workspace.txt")))
        self.assertEqual(os.listdir(outside), [], "nothing written outside the workspace")
        self.assertFalse(os.path.exists(host_tmp_file), "the agent's /tmp is its own")
        log = git(ws, "log", "--format=%s").split("\n")
        self.assertEqual(log[0], "sandbox probe", "the agent's commit is in the repository")
        self.assertRegex(d.ctl("show", loop["id"]).stdout, r"sandbox\s+bubblewrap")
        argv = d.attempts(loop["id"])[0]["argv"]
        self.assertTrue(argv[0].endswith("/bwrap"), argv)
        self.assertEqual(argv[-2:], [agent_path("sandbox-probe.sh"), outside])

        # The same agent without --sandbox writes where it likes.
        plain = d.ctl_submit(ws, "Probe again.", "-m", "1", "--command",
                             agent_command("sandbox-probe.sh", outside), name="plain")
        d.wait_state(plain["id"], ["completed"], timeout=30)
        self.assertIn("outside: ok", d.output(plain["id"]).decode())
        if os.path.exists(host_tmp_file):
            os.unlink(host_tmp_file)

    def test_cancel_ends_everything_inside_the_sandbox(self):
        d = self.setup_daemon()
        loop = d.ctl_submit(d.workspace(), "Sleep.", "--sandbox", "--command",
                            agent_command("ignore-term-with-grandchild.sh"))
        attempt = d.running_attempt(loop["id"])
        wait_until(lambda: len(processes_in_group(attempt["pid"])) >= 3, scaled(10),
                   "bwrap, the agent and its grandchild to run")
        d.call("loop.cancel", {"id": loop["id"]})
        d.wait_state(loop["id"], ["cancelled"], timeout=30)
        wait_until(lambda: not processes_in_group(attempt["pid"]), scaled(10),
                   "every process of the sandboxed group to end")

    def test_without_bwrap_on_the_path_a_sandboxed_submit_is_refused(self):
        d = self.setup_daemon()
        empty = os.path.join(d.root, "empty-bin")
        os.mkdir(empty)
        proc = d.ctl("submit", "--workspace", d.workspace(), "--sandbox", "--env", "PATH=" + empty,
                     "--command", agent_command("count-to-complete.sh", 1), "Probe.",
                     check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("apt install bubblewrap", proc.stderr)

    def test_a_the_daemons_socket_is_hidden_so_no_loop_can_be_submitted_from_inside(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--command",
                                          hostile("submit-via-socket", d.socket, self.marker))
        self.assertIn("submit-via-socket: denied", output)
        self.assertEqual([l["id"] for l in d.call("loop.list")["loops"]], [loop["id"]])
        self.assert_not_escaped()
        # Nor is the state directory (the database: every loop's spec, --env included) there.
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--command",
                                          hostile("read", d.db), name="read-db")
        self.assertIn("read: denied", output)
        # Nor ralphd itself: its /proc entry is not in the sandbox's PID namespace.
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--command",
                                          hostile("read", "/proc/%d/environ" % d.pid),
                                          name="read-proc")
        self.assertIn("read: denied", output)

    def test_b_a_link_at_the_notes_file_is_refused_and_recorded(self):
        d = self.setup_daemon()
        target = os.path.join(self.outside, "notes.md")
        loop, output = self.run_sandboxed(d, make_workspace(d.root), "-m", "1", "--command",
                                          hostile("link-notes", target))
        self.assertIn("link-notes: done", output)  # the agent may make links in its workspace
        self.assert_not_escaped()  # ... but ralph does not append through them
        refused = events_of(d, loop["id"], "refused")
        self.assertEqual(len(refused), 1, refused)
        self.assertIn(".ralph/notes.md", refused[0]["text"])

    def test_c_git_config_that_would_run_programs_cannot_be_written(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--commit", "--command",
                                          hostile("git-config", self.marker))
        self.assertIn("git-config: denied", output)
        self.assertNotIn("fsmonitor", git(ws, "config", "--list", "--local"))
        self.assert_not_escaped()

    def test_d_git_hooks_cannot_be_planted(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--commit", "--command",
                                          hostile("git-hook", self.marker))
        self.assertIn("git-hook: denied", output)
        for hook in ("pre-commit", "post-commit"):
            self.assertFalse(os.path.exists(os.path.join(ws, ".git", "hooks", hook)))
        git(ws, "commit", "-q", "--allow-empty", "-m", "the user commits later")
        self.assert_not_escaped()

    def test_the_git_directory_can_be_neither_replaced_nor_redirected(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        config = read_text(os.path.join(ws, ".git", "config"))
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--commit", "--command",
                                          hostile("git-redirect", self.marker))
        # .git is a mount point in the sandbox: it cannot be renamed away.
        self.assertIn("git-redirect rename: denied", output)
        self.assertFalse(os.path.exists(os.path.join(ws, ".git.old")))
        self.assertEqual(read_text(os.path.join(ws, ".git", "config")), config)
        # A commondir cannot be kept from being written; ralph removes it after the run.
        self.assertIn("git-redirect commondir: done", output)
        self.assertFalse(os.path.exists(os.path.join(ws, ".git", "commondir")))
        texts = [e["text"] for e in events_of(d, loop["id"], "refused")]
        self.assertTrue(any(".git/commondir" in t for t in texts), texts)
        attempt = d.attempts(loop["id"])[0]
        self.assertNotEqual(attempt["head_after"], attempt["head_before"],
                            "--commit committed to the repository's own git directory")
        # The user's git, later, runs nothing of what the agent left.
        git(ws, "status")
        git(ws, "commit", "-q", "--allow-empty", "-m", "the user commits later")
        self.assert_not_escaped()

    def test_a_worktree_loops_git_directories_can_be_neither_replaced_nor_redirected(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--worktree", "--command",
                                          hostile("git-redirect", self.marker))
        self.assertIn("git-redirect rename: denied", output)
        self.assertIn("git-redirect commondir: denied", output)
        worktree = d.get(loop["id"])["worktree_path"]
        # The worktree itself is the agent's to write (found by the night simulation: it was
        # read-only under --sandbox, and every such loop failed).
        self.assertTrue(os.path.isdir(os.path.join(worktree, ".hostile-git")), output)
        git(worktree, "status")
        git(worktree, "commit", "-q", "--allow-empty", "-m", "the user commits later")
        git(ws, "status")
        self.assert_not_escaped()

    def test_links_planted_in_the_git_directory_make_ralph_write_nothing_outside(self):
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        reflog = os.path.join(self.outside, "reflog")
        write_text(reflog, "untouched\n")
        head = git(ws, "rev-parse", "HEAD").strip()
        loop, output = self.run_sandboxed(d, ws, "-m", "1", "--commit", "--command",
                                          hostile("git-link", self.outside))
        self.assertIn("git-link: done", output)
        # Neither a loose object nor the reflog of a commit went through the links.
        self.assertEqual(os.listdir(self.outside), ["reflog"])
        self.assertEqual(read_text(reflog), "untouched\n")
        self.assertEqual(git(ws, "rev-parse", "HEAD").strip(), head, "--commit committed nothing")
        texts = [e["text"] for e in events_of(d, loop["id"], "refused")]
        self.assertTrue(any("holds a symbolic link" in t for t in texts), texts)

    def run_rewriting(self, script, option):
        """A loop whose `option` runs ./`script` of the workspace, which the agent rewrites."""
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        write_executable(os.path.join(ws, script), "#!/bin/sh\nexit 0\n")
        loop, output = self.run_sandboxed(d, ws, "-m", "1", option, "./" + script, "--command",
                                          hostile("rewrite", script, self.marker))
        self.assertIn("rewrite: done", output)
        return d, loop

    def test_e_a_verify_check_the_agent_could_rewrite_is_refused_at_submit(self):
        # Under --sandbox the agent writes its workspace: a --verify program there (or reached
        # through a link from elsewhere) could be made to pass. Refused, saying the fix; one
        # outside the workspace runs.
        d = self.setup_daemon()
        ws = make_workspace(d.root)
        check = os.path.join(ws, "check.sh")
        write_executable(check, "#!/bin/sh\nexit 0\n")
        commit_all(ws)
        tools = os.path.join(d.root, "tools")
        os.mkdir(tools)
        os.symlink(check, os.path.join(tools, "linked-check"))
        for verify in ("./check.sh", os.path.join(tools, "linked-check")):
            proc = d.ctl("submit", "--workspace", ws, "--sandbox", "--verify", verify,
                         "--command", agent_command("count-to-complete.sh", 1), "Probe.",
                         check=False)
            self.assertEqual(proc.returncode, 1, proc)
            self.assertIn("params.verify_command: the program ", proc.stderr)
            self.assertIn("is in %s, which the agent may write under --sandbox" % ws, proc.stderr)
            self.assertIn("put it outside the workspace (for example in ~/bin), or submit "
                          "without --sandbox", proc.stderr)
        self.assertEqual(d.call("loop.list", {})["loops"], [])
        mine = os.path.join(tools, "check")
        write_executable(mine, "#!/bin/sh\necho checked\n")
        loop, _ = self.run_sandboxed(d, ws, "-m", "1", "--verify", mine, "--command",
                                     agent_command("count-to-complete.sh", 1))
        self.assertEqual(d.attempts(loop["id"])[0]["verify_exit"], 0)
        # Without --sandbox the agent can change anything the user can: nothing to refuse.
        d.ctl_submit(ws, "Probe.", "--verify", "./check.sh", "--command",
                     agent_command("count-to-complete.sh", 1), name="unsandboxed")

    def test_f_a_rewritten_on_done_hook_runs_inside_the_sandbox(self):
        d, loop = self.run_rewriting("hook.sh", "--on-done")
        wait_until(lambda: "submit --on-done hook exited" in d.log_text(), 20, "the hook to end")
        self.assertIn("Read-only file system", d.log_text())
        self.assert_not_escaped()

    def test_a_rewritten_hook_learns_none_of_ralphds_secrets(self):
        # Both hooks run ./hook.sh of the workspace, which the agent rewrites to print what they
        # see (to ralphd's log: the hooks of a sandboxed loop can write nothing else).
        d = self.setup_daemon(extra_args=["--on-done", "./hook.sh"],
                              env={"SOME_SERVICE_API_KEY": "secret-of-ralphd"})
        ws = make_workspace(d.root)
        write_executable(os.path.join(ws, "hook.sh"), "#!/bin/sh\nexit 0\n")
        loop, output = self.run_sandboxed(
            d, ws, "-m", "1", "--on-done", "./hook.sh", "--env", "LOOP_VAR=from-the-loop",
            "--command", hostile("rewrite-env", "hook.sh", "RALPH_HOOK", "SOME_SERVICE_API_KEY",
                                 "LOOP_VAR"))
        self.assertIn("rewrite-env: done", output)
        for hook in ("submit", "ralphd"):
            wait_until(lambda: "%s --on-done hook exited" % hook in d.log_text(), 20,
                       "the %s hook to end" % hook)
        log = d.log_text()
        self.assertNotIn("secret-of-ralphd", log)
        self.assertEqual(log.count("hook sees SOME_SERVICE_API_KEY unset"), 2, log)
        for hook in ("loop", "daemon"):
            self.assertIn("hook sees RALPH_HOOK=%s" % hook, log)
        self.assertEqual(log.count("hook sees LOOP_VAR=from-the-loop"), 2, log)

    def test_g_a_link_at_the_ralph_directory_is_refused_and_recorded(self):
        d = self.setup_daemon()
        # -n 2: the completion signal of iteration 1 is ignored, so .ralph/loop.md is written
        # again for iteration 2, after the agent made .ralph a link.
        loop, output = self.run_sandboxed(d, make_workspace(d.root), "-m", "2", "-n", "2",
                                          "--command", hostile("link-ralph-dir", self.outside))
        self.assertIn("link-ralph-dir: done", output)
        self.assert_not_escaped()
        texts = [e["text"] for e in events_of(d, loop["id"], "refused")]
        self.assertTrue(any(".ralph/notes.md" in t for t in texts), texts)
        self.assertTrue(any(".ralph/loop.md" in t for t in texts), texts)

    def test_other_loops_workspaces_are_hidden(self):
        d = self.setup_daemon()
        other = make_workspace(d.root, "other")
        write_text(os.path.join(other, "secret.txt"), "the other loop's secret")
        waiting = d.ctl_submit(other, "Wait.", "--command", agent_command("sleep.sh", "60"),
                               name="other")
        d.running_attempt(waiting["id"])
        loop, output = self.run_sandboxed(d, make_workspace(d.root), "-m", "1", "--command",
                                          hostile("read", os.path.join(other, "secret.txt")))
        self.assertIn("read: denied", output)
        self.assertNotIn("secret", output)
        d.call("loop.cancel", {"id": waiting["id"]})

    def test_offline_shares_no_network(self):
        d = self.setup_daemon()
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        self.addCleanup(server.close)
        port = server.getsockname()[1]
        probe = ("python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", %d), 5); "
                 "print(\"<promise>COMPLETE</promise>\")'" % port)
        ws = make_workspace(d.root)
        write_executable(os.path.join(ws, "probe.sh"), "#!/bin/sh\n" + probe + "\n")
        online = d.ctl_submit(ws, "Connect.", "--sandbox", "-m", "1", "--command", "./probe.sh",
                              name="online")
        d.wait_state(online["id"], ["completed"], timeout=30)
        offline = d.ctl_submit(ws, "Connect.", "--sandbox=offline", "-m", "1", "--command",
                               "./probe.sh", name="offline")
        self.assertTrue(offline["sandbox_offline"])
        d.wait_state(offline["id"], ["failed", "exhausted"], timeout=30)
        self.assertIn(b"Connection refused", d.output(offline["id"]))


class WorkspaceLinkTest(DaemonTestCase):

    def test_a_workspace_replaced_by_a_link_is_not_followed_and_the_loop_fails_once(self):
        # The first run moves the workspace away and leaves a link to another directory in its
        # place: the next attempt would run there, ralph writing its files there.
        d = self.daemon()
        ws = make_workspace(d.root)
        elsewhere = os.path.join(d.root, "elsewhere")
        os.mkdir(elsewhere)
        swap = os.path.join(d.root, "swap.sh")
        # Quoted: the tests also run from a directory with spaces in its path (test-clone.sh).
        flag, moved = shlex.quote(os.path.join(d.root, "swapped")), shlex.quote(ws + ".moved")
        write_executable(swap, "#!/bin/sh\n[ -e %s ] && exit 0\ntouch %s\n"
                               "mv %s %s && ln -s %s %s && echo swapped\n"
                               % (flag, flag, shlex.quote(ws), moved, shlex.quote(elsewhere),
                                  shlex.quote(ws)))
        loop = d.ctl_submit(ws, "Work.", "-m", "3", "--command", shlex.quote(swap))
        final = d.wait_state(loop["id"], ["failed", "exhausted", "completed"], timeout=30)
        self.assertEqual(final["state"], "failed", final)
        self.assertIn("workspace %s is not the directory the loop was submitted with any more: "
                      "%s is now a symbolic link (to %s), which ralph does not follow; put the "
                      "directory back and resubmit the loop" % (ws, ws, elsewhere),
                      final["stop_reason"])
        self.assertEqual([(a["iteration"], a["termination"], a["failure"])
                          for a in d.attempts(loop["id"])],
                         [(1, "exited", ""), (2, "spawn_failed", "config")])
        self.assertEqual(os.listdir(elsewhere), [], "ralph or the agent wrote through the link")


class LinkTest(DaemonTestCase):
    """A root ralphd and a workspace another user owns, with links planted in it."""

    def setUp(self):
        super().setUp()
        require_root()

    def foreign_workspace(self, d):
        ws = make_workspace(d.root, "foreign")
        for root, dirs, files in os.walk(ws):
            for name in dirs + files + ["."]:
                os.lchown(os.path.join(root, name), OTHER_UID, OTHER_UID)
        os.chmod(d.root, 0o755)  # the other user reaches its workspace
        return ws

    def test_a_workspace_of_another_user_is_refused_unless_allowed(self):
        d = self.daemon()
        ws = self.foreign_workspace(d)
        proc = d.ctl("submit", "--workspace", ws, "--allow-dirty", "--command",
                     agent_command("count-to-complete.sh", "1"), "Work.", check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("belongs to uid %d" % OTHER_UID, proc.stderr)
        self.assertIn("--allow-foreign-workspace", proc.stderr)
        loop = d.ctl_submit(ws, "Work.", "--allow-foreign-workspace", "-m", "1", "--command",
                            agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], ["completed"], timeout=30)

    def test_ralph_writes_through_no_link_in_a_foreign_workspace(self):
        d = self.daemon()
        protected = os.path.join(d.root, "root-only")
        os.mkdir(protected, 0o700)
        notes_target = os.path.join(protected, "passwd")
        write_text(notes_target, "root:x:0:0\n")
        cases = {
            ".ralph/notes.md": lambda ws: os.symlink(notes_target, os.path.join(ws, ".ralph", "notes.md")),
            ".ralph/loop.md": lambda ws: os.symlink(notes_target, os.path.join(ws, ".ralph", "loop.md")),
            ".ralph (a directory)": lambda ws: (os.rmdir(os.path.join(ws, ".ralph")),
                                                os.symlink(protected, os.path.join(ws, ".ralph"))),
        }
        for what, plant in cases.items():
            with self.subTest(what):
                ws = self.foreign_workspace(d)
                os.mkdir(os.path.join(ws, ".ralph"))
                plant(ws)
                loop = d.ctl_submit(ws, "Work.", "--allow-foreign-workspace", "-m", "2", "-n", "2",
                                    "--command", hostile("read", "/dev/null"), name=what)
                d.wait_state(loop["id"], ["completed"], timeout=30)
                self.assertEqual(read_text(notes_target), "root:x:0:0\n")
                self.assertEqual(sorted(os.listdir(protected)), ["passwd"])
                self.assertTrue(events_of(d, loop["id"], "refused"), "the refusal is recorded")


class RepositoryConfigTest(DaemonTestCase):
    """ralph's own git work (snapshots, the dirty check, --commit, worktrees) runs nothing a
    repository configures: the escape of a hostile repository, or of an agent without
    --sandbox that leaves something for ralph to run."""

    def test_fsmonitor_filters_signing_and_hooks_of_the_repository_never_run(self):
        d = self.daemon()
        ws = make_workspace(d.root)
        marker = os.path.join(d.root, "ran")
        script = os.path.join(d.root, "marker.sh")
        write_executable(script, "#!/bin/sh\ntouch %s\ncat\n" % marker)
        hooks = os.path.join(d.root, "hooks")
        os.mkdir(hooks)
        for hook in ("pre-commit", "post-commit", "post-checkout"):
            shutil.copy(script, os.path.join(hooks, hook))
            shutil.copy(script, os.path.join(ws, ".git", "hooks", hook))
        git(ws, "config", "core.fsmonitor", script)
        git(ws, "config", "filter.hostile.clean", script)
        git(ws, "config", "filter.hostile.smudge", script)
        git(ws, "config", "commit.gpgSign", "true")
        git(ws, "config", "gpg.program", script)
        write_text(os.path.join(ws, ".gitattributes"), "* filter=hostile\n")
        # Without core.hooksPath first (the repository's own hooks), then with it.
        for name, extra in (("own-hooks", []), ("hooks-path", ["core.hooksPath", hooks])):
            with self.subTest(name):
                if extra:
                    git(ws, "config", *extra)
                loop = d.ctl_submit(ws, "Work.", "-m", "1", "--commit", "--command",
                                    hostile("read", "/dev/null"), name=name)
                d.wait_state(loop["id"], ["completed"], timeout=30)
                attempt = d.attempts(loop["id"])[0]
                self.assertNotEqual(attempt["head_after"], attempt["head_before"],
                                    "--commit committed")
                self.assertFalse(os.path.exists(marker), "ralph ran a program the repository names")
        # A worktree loop: the checkout of a new worktree runs no post-checkout or smudge either.
        worktree = d.ctl_submit(ws, "Work.", "-m", "1", "--worktree", "--command",
                                hostile("read", "/dev/null"), name="worktree")
        d.wait_state(worktree["id"], ["completed"], timeout=30)
        self.assertFalse(os.path.exists(marker), "ralph ran a program the repository names")

    def test_a_fifo_planted_where_git_reads_a_file_holds_up_no_loop(self):
        # libgit2 opens .git/config and .git/index without O_NONBLOCK: the snapshot after the
        # attempt would wait for a writer forever, and every loop's work on the pool thread
        # behind it. With the configuration unreadable the repository cannot be opened (compared
        # as files: a change); with the index unreadable the tree after is unknown, and so is
        # the progress (which counts as progress: the loop is not stopped as stalled).
        for name, progress in (("config", True), ("index", None)):
            with self.subTest(name):
                d = self.daemon()
                ws = make_workspace(d.root)
                plain = os.path.join(d.root, "plain")
                os.mkdir(plain)
                hostile_loop = d.ctl_submit(ws, "Work.", "-m", "1", "--command",
                                            hostile("git-fifo", name), name="fifo")
                wait_until(lambda: "git-fifo: done" in d.output(hostile_loop["id"]).decode(), 30,
                           "the agent to plant its FIFOs")
                other = d.ctl_submit(plain, "Work.", "-m", "1", "--command",
                                     hostile("read", "/dev/null"), name="other")
                started = time.monotonic()
                d.wait_state(hostile_loop["id"], ["completed"], timeout=60)
                d.wait_state(other["id"], ["completed"], timeout=60)
                self.assertLess(time.monotonic() - started, scaled(30))
                # The open ends in EINTR: ralphd's own signal after a few seconds, or any signal
                # the thread happens to take first (a SIGCHLD).
                self.assertRegex(d.log_text(),
                                 r"iteration 1: what changed is known only in part: .*\.git/%s'"
                                 % name)
                attempt = d.attempts(hostile_loop["id"])[0]
                self.assertEqual(attempt["exit_code"], 0)
                self.assertEqual(attempt["progress"], progress)


class FakeServer:
    """A Unix socket server that records every byte it receives (a user posing as ralphd)."""

    def __init__(self, path, uid=None, chown_to=None):
        script = (
            "import os, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "s.bind(sys.argv[1])\n"
            "if sys.argv[3] != '-': os.chown(sys.argv[1], int(sys.argv[3]), -1)\n"
            "if sys.argv[2] != '-': os.setuid(int(sys.argv[2]))\n"
            "s.listen(8)\n"
            "print('ready', flush=True)\n"
            "while True:\n"
            "    c, _ = s.accept()\n"
            "    c.settimeout(2)\n"
            "    try:\n"
            "        data = c.recv(65536)\n"
            "    except OSError:\n"
            "        data = b''\n"
            "    if data: sys.stdout.write('received %d\\n' % len(data)); sys.stdout.flush()\n"
            "    c.close()\n")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, path, "-" if uid is None else str(uid),
             "-" if chown_to is None else str(chown_to)],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def received(self):
        self.proc.kill()
        out, _ = self.proc.communicate()
        return out


class SocketTrustTest(DaemonTestCase):

    def setUp(self):
        super().setUp()
        require_root()

    def submit_with_secret(self, d, socket_path):
        return d.ctl("submit", "--workspace", d.workspace(), "--env", "API_KEY=hunter2",
                     "--command", "true", "Work.", env={"RALPH_SOCKET": socket_path}, check=False)

    def test_the_client_refuses_a_socket_in_a_directory_of_another_user(self):
        d = self.daemon()
        squatted = os.path.join(d.root, "squatted")
        os.mkdir(squatted, 0o755)
        os.chmod(d.root, 0o755)
        os.chown(squatted, OTHER_UID, OTHER_UID)
        server = FakeServer(os.path.join(squatted, "ralphd.sock"), uid=OTHER_UID)
        proc = self.submit_with_secret(d, os.path.join(squatted, "ralphd.sock"))
        self.assertEqual(proc.returncode, 3, proc)
        self.assertIn("refusing to talk to %s" % os.path.join(squatted, "ralphd.sock"), proc.stderr)
        self.assertIn("belongs to uid %d" % OTHER_UID, proc.stderr)
        self.assertNotIn("received", server.received(), "nothing was sent")

    def test_the_client_refuses_a_directory_others_may_write(self):
        d = self.daemon()
        shared = os.path.join(d.root, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        server = FakeServer(os.path.join(shared, "ralphd.sock"))
        proc = self.submit_with_secret(d, os.path.join(shared, "ralphd.sock"))
        self.assertEqual(proc.returncode, 3, proc)
        self.assertIn("may be written by other users", proc.stderr)
        self.assertNotIn("received", server.received())

    def test_the_client_refuses_a_socket_of_another_uid_and_a_listener_of_another_uid(self):
        d = self.daemon()
        private = os.path.join(d.root, "private")
        os.mkdir(private, 0o700)
        for what, server_args, expected in (
                ("socket file", {"chown_to": OTHER_UID}, "belongs to uid %d" % OTHER_UID),
                ("listening process", {"uid": OTHER_UID}, "runs as uid %d" % OTHER_UID)):
            with self.subTest(what):
                path = os.path.join(private, "ralphd-%s.sock" % what.replace(" ", "-"))
                server = FakeServer(path, **server_args)
                proc = self.submit_with_secret(d, path)
                self.assertEqual(proc.returncode, 3, proc)
                self.assertIn(expected, proc.stderr)
                self.assertNotIn("received", server.received(), "the secret was never sent")

    def test_ralphd_never_makes_a_shared_directory_private(self):
        # `--socket /tmp/ralphd.sock` as root once made /tmp 0700, locking every other user out.
        d = self.new_daemon_unstarted()
        shared = os.path.join(d.root, "shared-tmp")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        for flag, path in (("--socket", os.path.join(shared, "ralphd.sock")),
                           ("--db", os.path.join(shared, "ralph.db"))):
            with self.subTest(flag):
                args = ["--socket", d.socket, "--db", d.db]
                args[args.index(flag) + 1] = path
                proc = subprocess.run([RALPHD] + args, env=d.env, capture_output=True, text=True,
                                      timeout=scaled(20))
                self.assertEqual(proc.returncode, 1, proc)
                self.assertIn("%s is shared (others may write to it)" % shared, proc.stderr)
                self.assertEqual(os.stat(shared).st_mode & 0o7777, 0o1777)

    def test_ralphd_refuses_another_users_directory_by_name(self):
        d = self.new_daemon_unstarted()
        squatted = os.path.join(d.root, "squatted")
        os.mkdir(squatted)
        os.chown(squatted, OTHER_UID, OTHER_UID)
        proc = subprocess.run([RALPHD, "--socket", os.path.join(squatted, "ralphd.sock"), "--db",
                               d.db], env=d.env, capture_output=True, text=True, timeout=scaled(20))
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("%s belongs to uid %d" % (squatted, OTHER_UID), proc.stderr)

    def squatted_fallback(self):
        """A user of the test's own (so that /tmp/ralph-$UID is the test's alone), without
        XDG_RUNTIME_DIR, whose /tmp/ralph-$UID another user made first: (uid, its directory,
        its HOME, its environment, a preexec_fn that becomes it)."""
        if os.stat("/tmp").st_mode & 0o001 == 0:
            skip_test("/tmp is closed to other users here (mode %o): the user of the test cannot "
                      "reach /tmp/ralph-$UID" % (os.stat("/tmp").st_mode & 0o7777))
        uid = 4000 + os.getpid() % 1000
        fallback = "/tmp/ralph-%d" % uid
        home = tempfile.mkdtemp(prefix="ralph-it-home-")
        self.addCleanup(self.cleanup_fallback, fallback, home, uid)
        os.chown(home, uid, uid)
        os.chmod(home, 0o700)
        os.makedirs(fallback, exist_ok=True)
        os.chmod(fallback, 0o755)
        os.chown(fallback, OTHER_UID, OTHER_UID)  # another user got there first
        env = {"HOME": home, "PATH": os.environ["PATH"], "RALPH_IT_TAG": home}

        def as_user():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        return uid, fallback, home, env, as_user

    def test_the_client_refuses_another_users_fallback_directory_when_ralphd_recorded_none(self):
        uid, fallback, home, env, as_user = self.squatted_fallback()
        server = FakeServer(os.path.join(fallback, "ralphd.sock"), uid=OTHER_UID)
        proc = subprocess.run(
            [RALPHCTL, "submit", "--workspace", home, "--env", "API_KEY=hunter2", "--command",
             "true", "Work."], env=env, cwd=home, preexec_fn=as_user, capture_output=True,
            text=True, timeout=scaled(20))
        self.assertEqual(proc.returncode, 3, proc)
        self.assertIn("refusing to talk to %s/ralphd.sock" % fallback, proc.stderr)
        self.assertIn("%s belongs to uid %d" % (fallback, OTHER_UID), proc.stderr)
        self.assertNotIn("received", server.received(), "the secret was never sent")

    def test_another_user_cannot_block_ralphds_fallback_directory(self):
        uid, fallback, home, env, as_user = self.squatted_fallback()
        daemon = subprocess.Popen([RALPHD], env=env, cwd=home, preexec_fn=as_user,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        self.addCleanup(daemon.wait)
        self.addCleanup(daemon.terminate)
        status = lambda: subprocess.run(  # noqa: E731
            [RALPHCTL, "--json", "daemon", "status"], env=env, cwd=home, preexec_fn=as_user,
            capture_output=True, text=True, timeout=scaled(20))
        wait_until(lambda: status().returncode == 0, 20, "ralphd to answer in its new directory")
        info = json.loads(status().stdout)
        self.assertRegex(info["daemon"]["socket"], r"^/tmp/ralph-%d-\w{6}/ralphd\.sock$" % uid)
        self.assertEqual(os.stat(fallback).st_uid, OTHER_UID, "the squatter's directory is untouched")

    @staticmethod
    def cleanup_fallback(fallback, home, uid):
        for entry in os.listdir("/tmp"):
            if entry == os.path.basename(fallback) or entry.startswith(os.path.basename(fallback) + "-"):
                shutil.rmtree(os.path.join("/tmp", entry), ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


class EnvironmentTest(DaemonTestCase):

    DAEMON_ENV = {"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-openai",
                  "AWS_SECRET_ACCESS_KEY": "aws", "RALPH_IT_DAEMON_VAR": "daemon",
                  "LANG": "C.UTF-8", "https_proxy": "http://proxy:3128",
                  "PWD": "/where/ralphd/was/started", "OLDPWD": "/before/that"}

    def agent_env(self, d, loop_id):
        lines = d.output(loop_id).decode().splitlines()
        env = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("<"))
        cwd = [line[len("cwd: "):] for line in lines if line.startswith("cwd: ")]
        return env, cwd[0] if cwd else None

    def check_default_policy(self, d, *options):
        """ralphd runs in d.root with DAEMON_ENV; the agent in a workspace elsewhere."""
        ws = make_workspace(d.work_dir)
        self.assertNotEqual(os.path.dirname(ws), d.root)
        loop = d.ctl_submit(ws, "Print.", "-m", "1", "--env", "LOOP_VAR=from the loop",
                            "--command", hostile("env"), *options)
        d.wait_state(loop["id"], ["completed"], timeout=30)
        env, cwd = self.agent_env(d, loop["id"])
        for name in ("PATH", "HOME", "LANG", "https_proxy", "LOOP_VAR", "RALPH_LOOP_ID"):
            self.assertIn(name, env)
        self.assertEqual(env["LOOP_VAR"], "from the loop")
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
                     "RALPH_IT_DAEMON_VAR", "OLDPWD"):
            self.assertNotIn(name, env)
        self.assertEqual(env["PWD"], ws, "PWD is where the agent runs, not where ralphd does")
        self.assertEqual(cwd, ws)

    def test_the_default_policy_passes_what_agents_need_and_no_other_secret(self):
        self.check_default_policy(self.daemon(env=self.DAEMON_ENV))

    def test_the_same_environment_and_pwd_under_sandbox(self):
        require_bubblewrap()
        self.check_default_policy(self.daemon(env=self.DAEMON_ENV, parent="/var/tmp"), "--sandbox")

    def test_an_agent_gets_its_own_api_variables_and_the_policy_adds_or_withholds(self):
        for rules, present, absent in (
                ([], ["ANTHROPIC_API_KEY"], ["OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY"]),
                (["--env-policy", "+AWS_*", "--env-policy", "-ANTHROPIC_API_KEY"],
                 ["AWS_SECRET_ACCESS_KEY"], ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"])):
            with self.subTest(rules=rules):
                dumper = os.path.join(tempfile.mkdtemp(prefix="ralph-it-bin-"), "claude")
                self.addCleanup(shutil.rmtree, os.path.dirname(dumper))
                write_executable(dumper, "#!/bin/sh\nenv\n")
                d = self.daemon(env=self.DAEMON_ENV,
                                extra_args=rules + ["--agent-binary", "claude=" + dumper])
                loop = d.ctl_submit(make_workspace(d.root), "Print.", "-m", "1", "--agent", "claude")
                d.wait_state(loop["id"], ["exhausted", "completed"], timeout=30)
                env, _ = self.agent_env(d, loop["id"])
                for name in present:
                    self.assertIn(name, env)
                for name in absent:
                    self.assertNotIn(name, env)

    def test_a_bad_policy_rule_is_refused_at_start(self):
        d = self.new_daemon_unstarted()
        proc = subprocess.run(d.argv() + ["--env-policy", "AWS_*"], env=d.env,
                              capture_output=True, text=True, timeout=scaled(20))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("+PATTERN", proc.stderr + proc.stdout)

    def test_env_values_are_never_shown(self):
        d = self.daemon()
        ws = make_workspace(d.root)
        loop = d.ctl_submit(ws, "Work.", "-m", "1", "--env", "SECRET_TOKEN=hunter2",
                            "--command", agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], ["completed"], timeout=30)
        self.assertNotIn("hunter2", json.dumps(loop))
        got = d.call("loop.get", {"id": loop["id"]})
        self.assertEqual(got["env_names"], ["SECRET_TOKEN"])
        self.assertNotIn("hunter2", json.dumps(got))
        for args in (["show", loop["id"]], ["--json", "show", loop["id"]], ["--json", "list"],
                     ["--json", "report"]):
            out = d.ctl(*args).stdout
            self.assertNotIn("hunter2", out, args)
        self.assertIn("SECRET_TOKEN", d.ctl("show", loop["id"]).stdout)
        self.assertNotIn("hunter2", d.log_text())
        self.assertEqual(d.output(loop["id"]).count(b"hunter2"), 0)


class BoundsTest(DaemonTestCase):

    def post_twice_on_one_connection(self, d, first):
        """Sends `first` and then daemon.info on one HTTP connection: both replies."""
        conn = UnixHTTPConnection(d.socket)
        replies = []
        for body in (first, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "daemon.info"})):
            conn.request("POST", "/rpc", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            replies.append(json.loads(response.read()))
        conn.close()
        return replies

    def test_numbers_beyond_64_bits_are_invalid_params_naming_the_field_on_a_connection_that_stays(self):
        d = self.daemon()
        ws = d.workspace()
        cases = (
            ('{"jsonrpc":"2.0","id":7,"method":"loop.submit","params":{"workspace":"%s",'
             '"timeout_s":1e400}}' % ws, 7, "params.timeout_s"),
            ('{"jsonrpc":"2.0","id":%s,"method":"daemon.info"}' % ("9" * 100000), None, "id"),
            ('[{"jsonrpc":"2.0","id":1,"method":"loop.get","params":{"id":-1e999}}]', None,
             "[0].params.id"))
        for body, reply_id, field in cases:
            with self.subTest(field):
                error, info = self.post_twice_on_one_connection(d, body)
                self.assertEqual(error["error"]["code"], -32602, error)
                self.assertEqual(error["id"], reply_id)
                self.assertIn(field + ":", error["error"]["message"])
                self.assertIn("result", info, "the connection stays open")

    def test_ids_are_positive_63_bit_integers(self):
        d = self.daemon()
        for bad in (0, -1, 2 ** 63, 2 ** 64 - 1):
            with self.subTest(bad):
                body = d.rpc("loop.get", {"id": bad})
                self.assertEqual(body["error"]["code"], -32602, body)
                self.assertIn("params.id", body["error"]["message"])

    def test_every_count_and_duration_has_a_bound(self):
        d = self.daemon()
        ws = d.workspace()
        week = 7 * 24 * 3600
        for field, value in (("timeout_s", 1e308), ("timeout_s", week + 1), ("delay_s", 1e308),
                             ("retry_backoff_s", week + 1), ("inactivity_timeout_s", week + 1),
                             ("max_iterations", 1000001), ("min_iterations", 1000001),
                             ("max_retries", 1000001), ("priority", -1000001),
                             ("stall_iterations", 1000001), ("stall_failures", 1000001),
                             ("iterations_per_hour", 1000001), ("iterations_per_day", 1000001),
                             ("max_tokens", 10 ** 12 + 1), ("max_cost_usd", 1e6 + 1),
                             ("max_iterations", 2 ** 63)):
            with self.subTest(field=field, value=value):
                with self.assertRaises(RpcError) as caught:
                    d.submit(ws, "true", **{field: value})
                self.assertEqual(caught.exception.code, -32602)
                self.assertIn("params." + field, caught.exception.message)
        for method, params in (("budget.set", {"tokens_per_day": 10 ** 12 + 1}),
                               ("budget.set", {"cost_per_day_usd": 1e300}),
                               ("scheduler.set", {"max_concurrent": 1001}),
                               ("loop.events", {"id": 1, "after": -1}),
                               ("loop.list", {"limit": -1})):
            with self.subTest(method=method, params=params):
                body = d.rpc(method, params)
                self.assertEqual(body["error"]["code"], -32602, body)
        self.assertEqual(d.call("loop.list")["loops"], [], "nothing was created")

    def test_loop_output_offsets_and_page_sizes_have_bounds(self):
        d = self.daemon()
        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"), max_iterations=1)
        d.wait_state(loop["id"], ["completed"], timeout=30)
        for field, value, message in (
                ("offset", -1, "must be in 0.."), ("offset", 2 ** 63, "out of range"),
                ("last_lines", -1, "must be in 0.."), ("max_bytes", 0, "1..4194304"),
                ("max_bytes", 4194305, "1..4194304")):
            with self.subTest(field=field, value=value):
                body = d.rpc("loop.output", {"id": loop["id"], field: value})
                self.assertEqual(body["error"]["code"], -32602, body)
                self.assertIn("params.%s" % field, body["error"]["message"])
                self.assertIn(message, body["error"]["message"])
        page = d.call("loop.output", {"id": loop["id"], "offset": 2 ** 63 - 1, "max_bytes": 4194304})
        self.assertEqual(page["data"], "", "an offset past the end is an empty page")

    def test_ralphds_own_durations_have_bounds(self):
        d = self.new_daemon_unstarted()
        for flag, values in (("--kill-grace", ("0", "-1", "3601", "nan", "inf", "1e308")),
                             ("--hook-timeout", ("0", "86401", "nan", "1e308")),
                             ("--rate-limit-wait", ("0", "86401", "nan", "-inf")),
                             ("--rate-limit-margin", ("-1", "86401", "nan")),
                             ("--max-concurrent", ("0", "1001", "99999999999999999999"))):
            for value in values:
                with self.subTest(flag=flag, value=value):
                    proc = subprocess.run(d.argv() + [flag, value], env=d.env, capture_output=True,
                                          text=True, timeout=scaled(20))
                    self.assertNotEqual(proc.returncode, 0, proc)
                    self.assertIn(flag, proc.stderr + proc.stdout)

    def test_the_client_refuses_a_duration_that_would_overflow(self):
        d = self.daemon()
        proc = d.ctl("submit", "--workspace", d.workspace(), "--timeout", "99999999999999d", "--command",
                     "true", "Work.", check=False)
        self.assertEqual(proc.returncode, 2, proc)
        self.assertIn("too long", proc.stderr)
        proc = d.ctl("submit", "--workspace", d.workspace(), "--timeout", "8d", "--command",
                     "true", "Work.", check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("params.timeout_s: must be in 0..604800", proc.stderr)


if __name__ == "__main__":
    main()
