"""Work that lands (issue 15): `submit --worktree --merge` merges a completed loop's branch into
the branch its workspace was on (its uncommitted work committed first), `ralphctl merge ID`
(loop.merge) does it later by hand; `--pr` and `ralphctl pr ID` (loop.pr) push the branch to a
bare repository and open a pull request with a fake gh (tests/agents/fake-gh.py); `gc` removes
the worktrees whose branch is merged or pushed (with the branch on --delete-branch). A
fast-forward, a merge commit and a conflict are checked with git itself; a conflict and a target
with uncommitted changes change nothing."""

import json
import os
import shutil
import tempfile

from harness import (AGENTS, DaemonTestCase, agent_command, commit_all, git, main, read_text,
                     write_text)
from test_hooks_worktree import hook_command, wait_record


def scripted(*actions):
    return agent_command("scripted-agent.py", *actions)


class LandingTestCase(DaemonTestCase):

    def repo(self, d):
        repo = d.workspace("repo")
        write_text(os.path.join(repo, "a.txt"), "one\ntwo\nthree\n")
        # .ralph/ is where the scripted agent records what it got: not the user's to merge.
        write_text(os.path.join(repo, ".gitignore"), ".ralph/\n")
        commit_all(repo, "a.txt")
        return repo

    def run_loop(self, d, repo, *actions, **params):
        """A --worktree loop of the scripted agent, run to its end; returns the ended loop."""
        loop = d.submit(repo, scripted(*actions), worktree=True, allow_dirty=False, **params)
        ended = d.wait_state(loop["id"], ("completed", "failed", "stalled", "exhausted"))
        self.assertEqual(ended["state"], "completed", (ended["stop_reason"], d.output(loop["id"])))
        return ended

    def head(self, repo, what="HEAD"):
        return git(repo, "rev-parse", what).strip()


class MergeTest(LandingTestCase):

    def test_merge_at_completion_fast_forwards_the_branch_the_workspace_was_on(self):
        d = self.daemon()
        repo = self.repo(d)
        hooks = tempfile.mkdtemp(prefix="ralph-hooks-")
        self.addCleanup(shutil.rmtree, hooks, True)
        # One file committed by the agent, one left uncommitted: both land.
        ended = self.run_loop(d, repo, "write=b.txt:committed\\n", "commit", "write=c.txt:uncommitted\\n",
                              "promise", merge=True, on_done=hook_command("record", hooks))
        branch = ended["worktree_branch"]
        self.assertEqual(ended["worktree_target"], "main")
        self.assertRegex(ended["landing"], r"^merged into main \(fast-forward\) at [0-9a-f]{12}$")
        self.assertTrue(ended["stop_reason"].endswith("; merge: " + ended["landing"]),
                        ended["stop_reason"])
        self.assertEqual(self.head(repo), self.head(repo, branch))
        self.assertEqual(read_text(os.path.join(repo, "b.txt")), "committed\n")
        self.assertEqual(read_text(os.path.join(repo, "c.txt")), "uncommitted\n")
        self.assertEqual(git(repo, "status", "--porcelain"), "")
        self.assertEqual(git(ended["worktree_path"], "status", "--porcelain"), "")
        self.assertIn("landing      " + ended["landing"], d.ctl("show", ended["id"]).stdout)
        self.assertEqual(wait_record(hooks, "loop", ended["id"])["env"]["RALPH_LANDING"],
                         ended["landing"])
        # Merged already: `ralphctl merge` says so and succeeds.
        self.assertEqual(d.ctl("merge", ended["id"]).stdout,
                         "loop %d: already in main\n" % ended["id"])

    def test_a_conflict_at_completion_changes_nothing_and_is_in_the_notification(self):
        d = self.new_daemon_unstarted(extra_args=["--notify", "desktop"])
        # notify-send is tests/agents/hook.py, which records its arguments.
        notified = os.path.join(d.root, "notified")
        bin_dir = os.path.join(d.root, "notify-bin")
        os.makedirs(notified)
        os.makedirs(bin_dir)
        write_text(os.path.join(bin_dir, "notify-send"),
                   '#!/bin/sh\nexec %s record %s "$@"\n' % (os.path.join(AGENTS, "hook.py"), notified))
        os.chmod(os.path.join(bin_dir, "notify-send"), 0o755)
        d.env["PATH"] = bin_dir + ":" + d.env["PATH"]
        d.start()
        repo = self.repo(d)
        go = os.path.join(d.root, "go")
        loop = d.submit(repo, scripted("write=a.txt:one\\nloop\\nthree\\n", "wait=" + go, "promise"),
                        worktree=True, allow_dirty=False, merge=True)
        d.running_attempt(loop["id"])
        # The user changes the same line while the loop runs.
        write_text(os.path.join(repo, "a.txt"), "one\nuser\nthree\n")
        commit_all(repo, "user")
        user_head = self.head(repo)
        write_text(go, "")
        ended = d.wait_state(loop["id"], ("completed", "failed", "stalled", "exhausted"))
        self.assertEqual(ended["state"], "completed", ended["stop_reason"])
        self.assertEqual(ended["landing"], "conflict in a.txt: nothing was merged into main")
        self.assertTrue(ended["stop_reason"].endswith("; merge: conflict in a.txt: nothing was "
                                                      "merged into main"), ended["stop_reason"])
        self.assertEqual(self.head(repo), user_head)
        self.assertEqual(read_text(os.path.join(repo, "a.txt")), "one\nuser\nthree\n")
        self.assertEqual(git(repo, "status", "--porcelain"), "")
        self.assertEqual(git(ended["worktree_path"], "status", "--porcelain"), "")
        argv = wait_record(notified, "notify", ended["id"])["argv"]
        self.assertIn("ralph: loop %d (%s) completed" % (ended["id"], ended["name"]), argv)
        self.assertIn(ended["stop_reason"], argv)

    def test_merge_by_hand_a_conflict_changes_nothing_then_a_merge_commit(self):
        d = self.daemon()
        repo = self.repo(d)
        ended = self.run_loop(d, repo, "write=a.txt:one\\nloop\\nthree\\n", "promise")
        self.assertEqual(ended["landing"], "")
        branch = ended["worktree_branch"]
        # The user changed the same line meanwhile.
        write_text(os.path.join(repo, "a.txt"), "one\nuser\nthree\n")
        commit_all(repo, "user")
        user_head = self.head(repo)
        proc = d.ctl("merge", ended["id"], check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(proc.stdout, "loop %d: conflict in a.txt: nothing was merged into main\n"
                         % ended["id"])
        self.assertEqual(self.head(repo), user_head)
        self.assertEqual(read_text(os.path.join(repo, "a.txt")), "one\nuser\nthree\n")
        self.assertEqual(git(repo, "status", "--porcelain"), "")
        self.assertEqual(d.get(ended["id"])["landing"],
                         "conflict in a.txt: nothing was merged into main")

        # The user takes their change back and makes another one: a merge commit of both.
        git(repo, "reset", "-q", "--hard", "HEAD~1")
        write_text(os.path.join(repo, "d.txt"), "user\n")
        commit_all(repo, "user again")
        ours, theirs = self.head(repo), self.head(repo, branch)
        out = d.ctl_json("merge", ended["id"])
        self.assertTrue(out["landed"])
        self.assertRegex(out["loop"]["landing"], r"^merged into main \(merge commit [0-9a-f]{12}\)$")
        self.assertEqual(git(repo, "rev-parse", "HEAD^1", "HEAD^2").split(), [ours, theirs])
        self.assertEqual(read_text(os.path.join(repo, "a.txt")), "one\nloop\nthree\n")
        self.assertEqual(read_text(os.path.join(repo, "d.txt")), "user\n")
        self.assertEqual(git(repo, "status", "--porcelain"), "")

    def test_merge_refuses_a_running_loop_a_loop_without_worktree_and_uncommitted_changes(self):
        d = self.daemon()
        repo = self.repo(d)
        running = d.submit(repo, agent_command("sleep.sh", "60"), worktree=True)
        d.running_attempt(running["id"])
        proc = d.ctl("merge", running["id"], check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("loop %d is running: its branch lands once it ended" % running["id"],
                      proc.stderr)
        d.call("loop.cancel", {"id": running["id"]})
        d.wait_state(running["id"], "cancelled")
        plain = d.submit(d.workspace("plain"), agent_command("count-to-complete.sh", "1"))
        d.wait_state(plain["id"], "completed")
        proc = d.ctl("merge", plain["id"], check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("did not run in a worktree", proc.stderr)

        ended = self.run_loop(d, repo, "write=b.txt:loop\\n", "promise")
        write_text(os.path.join(repo, "notes.txt"), "the user's\n")
        before = self.head(repo)
        proc = d.ctl("merge", ended["id"], check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("not merged: main is checked out in %s, which has 1 uncommitted change(s): "
                      "?? notes.txt" % os.path.realpath(repo), proc.stdout)
        self.assertEqual(self.head(repo), before)
        self.assertFalse(os.path.exists(os.path.join(repo, "b.txt")))

    def test_submit_merge_needs_a_worktree_and_a_branch(self):
        d = self.daemon()
        repo = self.repo(d)
        proc = d.ctl("submit", "--workspace", repo, "--merge", "--command", "/bin/true", "p",
                     check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("need worktree (--worktree)", proc.stderr)
        git(repo, "checkout", "-q", "--detach")
        proc = d.ctl("submit", "--workspace", repo, "--worktree", "--merge", "--command",
                     "/bin/true", "p", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("its HEAD is detached: --merge needs the branch", proc.stderr)


class GcTest(LandingTestCase):

    def test_gc_removes_the_worktrees_of_merged_branches_only(self):
        d = self.daemon()
        repo = self.repo(d)
        deleted = self.run_loop(d, repo, "write=b.txt:loop\\n", "promise", merge=True,
                                delete_branch=True)
        kept_branch = self.run_loop(d, repo, "write=c.txt:loop\\n", "promise", merge=True)
        unmerged = self.run_loop(d, repo, "write=d.txt:loop\\n", "commit", "promise")
        for loop in (deleted, kept_branch):
            self.assertTrue(d.get(loop["id"])["landing"].startswith("merged into main"))

        dry = d.ctl_json("gc", "--older-than", "0s", "--dry-run")
        self.assertEqual(dry["worktrees_removed"], [deleted["id"], kept_branch["id"]])
        self.assertEqual(dry["kept_for_worktrees"], [unmerged["id"]])
        self.assertTrue(os.path.isdir(deleted["worktree_path"]))

        text = d.ctl("gc", "--older-than", "0s").stdout
        self.assertIn("removed the worktrees of loops %d, %d (merged, nothing uncommitted)"
                      % (deleted["id"], kept_branch["id"]), text)
        self.assertIn("kept loop %d: its worktree is still there with work not merged"
                      % unmerged["id"], text)
        for loop in (deleted, kept_branch):
            self.assertFalse(os.path.exists(loop["worktree_path"]))
        self.assertTrue(os.path.isdir(unmerged["worktree_path"]))
        worktrees = git(repo, "worktree", "list", "--porcelain")
        self.assertNotIn(deleted["worktree_path"], worktrees)
        self.assertNotIn(kept_branch["worktree_path"], worktrees)
        branches = git(repo, "branch", "--format=%(refname:short)").split()
        self.assertNotIn(deleted["worktree_branch"], branches)
        self.assertIn(kept_branch["worktree_branch"], branches)
        self.assertIn(unmerged["worktree_branch"], branches)
        # The merged work is the user's now.
        self.assertEqual(read_text(os.path.join(repo, "b.txt")), "loop\n")
        self.assertEqual(read_text(os.path.join(repo, "c.txt")), "loop\n")


class PullRequestTest(LandingTestCase):
    """The daemon's PATH has tests/agents/fake-gh.py as gh; the remote is a bare repository."""

    def pr_daemon(self):
        d = self.new_daemon_unstarted()
        bin_dir = os.path.join(d.root, "gh-bin")
        os.makedirs(bin_dir)
        os.symlink(os.path.join(AGENTS, "fake-gh.py"), os.path.join(bin_dir, "gh"))
        d.env["PATH"] = bin_dir + ":" + d.env["PATH"]
        self.gh_log = os.path.join(d.root, "gh-log")
        d.env["FAKE_GH_LOG"] = self.gh_log
        d.start()
        return d

    def repo_with_remote(self, d):
        repo = self.repo(d)
        remote = os.path.join(d.root, "remote.git")
        git(d.root, "init", "-q", "--bare", remote)
        git(repo, "remote", "add", "origin", remote)
        return repo, remote

    def pull_requests(self):
        with open(self.gh_log) as f:
            return [json.loads(line) for line in f]

    def test_pr_at_completion_pushes_the_branch_and_opens_a_pull_request(self):
        d = self.pr_daemon()
        repo, remote = self.repo_with_remote(d)
        ended = self.run_loop(d, repo, "write=b.txt:loop\\n", "note=the parser is done",
                              "promise", pr="origin", name="parser")
        branch = ended["worktree_branch"]
        self.assertEqual(ended["landing"], "pull request https://github.com/example/repo/pull/1 "
                         "(%s pushed to origin)" % branch)
        self.assertTrue(ended["stop_reason"].endswith("; pr: " + ended["landing"]))
        self.assertIn("pr           to origin when it completes", d.ctl("show", ended["id"]).stdout)
        # The branch is on the remote, with the work the agent left uncommitted.
        self.assertEqual(git(remote, "rev-parse", branch).strip(), self.head(repo, branch))
        self.assertEqual(git(remote, "show", branch + ":b.txt"), "loop\n")
        [pr] = self.pull_requests()
        self.assertEqual(pr["argv"][:2], ["pr", "create"])
        for option, value in (("head", branch), ("base", "main"), ("title", "parser")):
            self.assertEqual(pr["options"][option], value)
        self.assertEqual(os.path.realpath(pr["cwd"]), os.path.realpath(repo))
        self.assertIn("ralph loop %d (command): completion signal" % ended["id"], pr["body"])
        self.assertIn("1 iteration(s)", pr["body"])
        self.assertIn("the parser is done", pr["body"])
        # Pushed: gc removes the worktree, keeps the branch.
        done = d.ctl_json("gc", "--older-than", "0s")
        self.assertEqual((done["worktrees_removed"], done["loop_ids"]), ([ended["id"]], [ended["id"]]))
        self.assertFalse(os.path.exists(ended["worktree_path"]))
        git(repo, "rev-parse", "--verify", "-q", branch)

    def test_pr_by_hand_says_why_it_failed_until_it_works(self):
        d = self.pr_daemon()
        repo = self.repo(d)
        # A name that looks like an option of gh's stays the title.
        ended = self.run_loop(d, repo, "write=b.txt:loop\\n", "commit", "promise", name="--web")
        proc = d.ctl("pr", ended["id"], check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("loop %d: no pull request: git push to origin failed: " % ended["id"],
                      proc.stdout)
        self.assertEqual(d.ctl_json("gc", "--older-than", "0s")["kept_for_worktrees"],
                         [ended["id"]])

        git(d.root, "init", "-q", "--bare", os.path.join(d.root, "remote.git"))
        git(repo, "remote", "add", "origin", os.path.join(d.root, "remote.git"))
        write_text(self.gh_log + ".fail", "")
        proc = d.ctl("pr", ended["id"], check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("pushed to origin, but gh pr create failed: pull request create failed: "
                      "GraphQL: No commits", proc.stdout)
        os.remove(self.gh_log + ".fail")
        out = d.ctl_json("pr", ended["id"])
        self.assertTrue(out["landed"])
        self.assertEqual(out["loop"]["landing"], "pull request https://github.com/example/repo/"
                         "pull/1 (%s pushed to origin)" % ended["worktree_branch"])
        self.assertEqual(self.pull_requests()[0]["options"]["title"], "--web")

    def test_submit_pr_needs_a_worktree_a_remote_name_and_gh(self):
        d = self.pr_daemon()
        repo = self.repo(d)
        for options, error in ((["--pr"], "need worktree (--worktree)"),
                               (["--worktree", "--pr", "--merge"], "by merge or by pull request"),
                               (["--worktree", "--pr=-x"], "'-x' is not a git remote's name")):
            proc = d.ctl("submit", "--workspace", repo, *options, "--command", "/bin/true", "p",
                         check=False)
            self.assertEqual(proc.returncode, 1, options)
            self.assertIn(error, proc.stderr, options)
        # A ralphd whose PATH has git but not gh.
        bare = self.new_daemon_unstarted()
        bin_dir = os.path.join(bare.root, "git-only")
        os.makedirs(bin_dir)
        os.symlink(shutil.which("git"), os.path.join(bin_dir, "git"))
        bare.env["PATH"] = bin_dir
        bare.start()
        proc = bare.ctl("submit", "--workspace", repo, "--worktree", "--pr", "--command",
                        "/bin/true", "p", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("gh is not on ralphd's PATH", proc.stderr)


if __name__ == "__main__":
    main()
