"""The loop's memory and judgement end to end (README, "Memory, completion and progress", "Judge"),
through the real ralphd and ralphctl: completion rules and their stop reasons, min iterations and
--verify, notes, feedback and .ralph/loop.md, a PROMPT.md the agent edits, stall detection, git
snapshots and --commit, each attempt's diff (loop.diff), the dirty check at submit, steering, the
init templates run to completion, and the inactivity timeout. The agent is
tests/agents/scripted-agent.py (it keeps a copy of each prompt it got, and of .ralph/loop.md and
.ralph/notes.md as they were, under .ralph/agent/), or claude-slow-tool.py installed as `claude`."""

import json
import os
import tempfile
import time

from harness import (DaemonTestCase, RpcError, TERMINAL_STATES, agent_command, agent_path,
                     commit_all, git, main, read_text, scaled, scripted, write_text)

def prompt_of(ws, iteration):
    """The prompt the scripted agent got in `iteration`."""
    return read_text(os.path.join(ws, ".ralph", "agent", "prompt-%d.md" % iteration))


def agent_copy(ws, name, iteration):
    """.ralph/NAME.md as the scripted agent found it when `iteration` started."""
    return read_text(os.path.join(ws, ".ralph", "agent", "%s-%d.md" % (name, iteration)))


def front_matter(text):
    """The YAML front matter of .ralph/loop.md, read minimally: `key: value` lines, one level of
    two-space indented maps, double-quoted strings, integers and null."""
    lines = text.split("\n")
    if lines[0] != "---":
        raise AssertionError("no front matter: %r" % text)
    end = lines.index("---", 1)

    def scalar(value):
        if value == "null":
            return None
        if value.startswith('"'):
            return json.loads(value)  # the escapes ralph writes for our values are JSON's too
        return int(value)

    result, current = {}, None
    for line in lines[1:end]:
        if line.startswith("  "):
            key, _, value = line.strip().partition(": ")
            result[current][key] = scalar(value)
        else:
            key, _, value = line.partition(":")
            value = value.strip()
            if value:
                result[key] = scalar(value)
                current = None
            else:
                result[key] = {}
                current = key
    return result


class MemoryTestCase(DaemonTestCase):

    def memory_daemon(self, env=None):
        """A ralphd that runs up to 8 loops at once, so that one test's loops run together."""
        d = self.new_daemon_unstarted(extra_args=["--max-concurrent", "8"])
        d.env.update(env or {})
        d.start()
        return d

    def run_loop(self, d, ws, actions, *options, name="it-loop", prompt="Do the work.",
                 timeout=30):
        """Submits a scripted-agent loop with ralphctl and waits for its end: (loop, attempts)."""
        loop = self.submit(d, ws, actions, *options, name=name, prompt=prompt)
        return self.finish(d, loop, timeout)

    def submit(self, d, ws, actions, *options, name="it-loop", prompt="Do the work."):
        return d.ctl_submit(ws, prompt, "--command", scripted(*actions), *options, name=name)

    def finish(self, d, loop, timeout=30):
        d.wait_state(loop["id"], TERMINAL_STATES, timeout=timeout)
        shown = d.ctl_json("show", loop["id"])
        return shown["loop"], shown["attempts"]


class CompletionRulesTest(MemoryTestCase):

    def test_each_completion_rule_ends_the_loop_and_is_named_in_the_stop_reason(self):
        d = self.memory_daemon()
        work = "append=work.txt:{i}"  # progress, so that no loop stalls
        cases = {
            # A custom phrase: the default one does not count any more; case and spaces do not
            # matter.
            "promise": (["1:promise", "2:promise=  shipped IT ", work],
                        ["-p", "SHIPPED IT", "-m", "5"], "<promise>SHIPPED IT</promise>"),
            "status": (["1:say=<ralph_status>IN_PROGRESS</ralph_status>",
                        "2:say=<ralph_status>COMPLETED</ralph_status>", work],
                       ["-m", "5"], "status <ralph_status>COMPLETED</ralph_status>"),
            # A custom tag and value replace the default ones.
            "custom-status": (["1:say=<ralph_status>COMPLETED</ralph_status>",
                               "2:say=<deploy> shipped </deploy>", work],
                              ["--status-tag", "deploy", "--status-value", "SHIPPED", "-m", "5"],
                              "status <deploy>SHIPPED</deploy>"),
            "legacy": (["1:say=still working", "2:say=I believe all tasks done now.", work],
                       ["--legacy-phrase", "ALL TASKS DONE", "-m", "5"],
                       'completion phrase "ALL TASKS DONE"'),
        }
        loops = {}
        for name, (actions, options, _) in cases.items():
            loops[name] = self.submit(d, d.workspace(name), actions, *options, name=name)
        # Without --legacy-phrase the same answer is just text.
        plain = self.submit(d, d.workspace("plain"), cases["legacy"][0], "-m", "3", name="plain")

        for name, (_, _, rule) in cases.items():
            with self.subTest(rule=name):
                final, attempts = self.finish(d, loops[name])
                self.assertEqual(final["state"], "completed", final)
                self.assertEqual(final["iterations"], 2)
                self.assertIn(rule, final["stop_reason"])
                self.assertIn("iteration 2", final["stop_reason"])
                self.assertEqual([a["completion_signal"] for a in attempts], [False, True])

        final, attempts = self.finish(d, plain)
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 3), final)
        self.assertEqual([a["completion_signal"] for a in attempts], [False] * 3)

    def test_the_backlog_rule_completes_exactly_when_the_last_box_is_checked(self):
        d = self.memory_daemon()
        ws = d.workspace()
        write_text(os.path.join(ws, "SPECS.md"),
                   "# Specs\n\n- [ ] one\n- [x] already done\n- [ ] two\n  - [ ] nested three\n\n"
                   "```\n- [ ] inside a code block: not a task\n```\n")
        commit_all(ws)
        # Another file named with --specs.
        other = d.workspace("specs")
        write_text(os.path.join(other, "docs", "tasks.md"), "- [ ] first\n- [ ] second\n")
        commit_all(other)
        loop = self.submit(d, ws, ["tick=SPECS.md"], "--backlog", "-m", "10")
        other_loop = self.submit(d, other, ["tick=docs/tasks.md"], "--backlog",
                                 "--specs", "docs/tasks.md", "-m", "10")

        final, attempts = self.finish(d, loop)
        self.assertEqual((final["state"], final["iterations"]), ("completed", 3), final)
        self.assertIn("every checkbox of SPECS.md is checked", final["stop_reason"])
        self.assertEqual([a["completion_signal"] for a in attempts], [False, False, True])
        self.assertEqual(read_text(os.path.join(ws, "SPECS.md")).count("- [ ]"), 1,
                         "only the box in the code block is left")
        self.assertIn("every checkbox in SPECS.md is checked", prompt_of(ws, 1))

        final, attempts = self.finish(d, other_loop)
        self.assertEqual((final["state"], final["iterations"]), ("completed", 2), final)
        self.assertIn("every checkbox of tasks.md is checked", final["stop_reason"])
        self.assertIn('<file path="docs/tasks.md">\n- [ ] first\n- [ ] second\n</file>',
                      prompt_of(other, 1))

    def test_a_signal_before_min_iterations_is_ignored(self):
        d = self.memory_daemon()
        ws = d.workspace()
        final, attempts = self.run_loop(
            d, ws, ["say=<ralph_status>COMPLETED</ralph_status>", "append=work.txt:{i}"],
            "-n", "3", "-m", "10")
        self.assertEqual((final["state"], final["iterations"]), ("completed", 3), final)
        self.assertIn("iteration 3", final["stop_reason"])
        self.assertEqual(len(attempts), 3)
        self.assertIn("a completion signal before iteration 3 is ignored", prompt_of(ws, 1))

    def test_a_signal_counts_only_when_verify_exits_0(self):
        d = self.memory_daemon()
        ws = d.workspace()
        check = ("python3 -c 'import os, sys; ok = os.path.exists(\"ok\"); "
                 "print(\"verify: ok exists:\", ok); sys.exit(0 if ok else 1)'")
        final, attempts = self.run_loop(
            d, ws, ["1:say=warming up", "2-:promise", "3:write=ok:verified",
                    "append=work.txt:{i}"],
            "--verify", check, "-m", "10")
        self.assertEqual((final["state"], final["iterations"]), ("completed", 3), final)
        self.assertEqual([a["verify_exit"] for a in attempts], [None, 1, 0],
                         "verify runs only when a rule matched")
        self.assertEqual([a["completion_signal"] for a in attempts], [False, False, True])
        self.assertIn("verify: ok exists: False", attempts[1]["verify_output"])
        self.assertIn("verify: ok exists: True", attempts[2]["verify_output"])

    def test_a_relative_verify_program_is_found_in_the_workspace(self):
        # Like --command: ./check.sh names the workspace's script, where verify runs, whatever
        # directory ralphd was started in.
        d = self.memory_daemon()
        ws = d.workspace()
        write_text(os.path.join(ws, "check.sh"),
                   "#!/bin/sh\necho verify ran in $(pwd)\n[ -e ok ]\n")
        os.chmod(os.path.join(ws, "check.sh"), 0o755)
        final, attempts = self.run_loop(
            d, ws, ["1:promise", "2:write=ok:verified", "2:promise"], "--verify", "./check.sh",
            "-m", "5")
        self.assertEqual((final["state"], final["iterations"]), ("completed", 2), final)
        self.assertEqual([a["verify_exit"] for a in attempts], [1, 0], attempts)
        self.assertIn("verify ran in " + os.path.realpath(ws), attempts[1]["verify_output"])


class NotesAndFeedbackTest(MemoryTestCase):

    def test_notes_accumulate_in_the_notes_file_and_reach_later_prompts(self):
        d = self.memory_daemon()
        ws = d.workspace()
        own = "# My notes\n\nkeep this line\n"
        write_text(os.path.join(ws, ".ralph", "notes.md"), own)
        final, _ = self.run_loop(d, ws, ["note=note from iteration {i}",
                                         "2:note=second note of iteration 2",
                                         "append=work.txt:{i}"], "-m", "3")
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 3), final)

        notes = read_text(os.path.join(ws, ".ralph", "notes.md"))
        self.assertTrue(notes.startswith(own), notes)
        positions = [notes.index(text) for text in (
            "## Iteration 1 — ", "note from iteration 1", "## Iteration 2 — ",
            "note from iteration 2", "second note of iteration 2", "## Iteration 3 — ",
            "note from iteration 3")]
        self.assertEqual(positions, sorted(positions), notes)
        self.assertEqual(notes.count("## Iteration"), 3)
        # Append-only: what each iteration found is the start of what came after.
        self.assertEqual(agent_copy(ws, "notes", 1), own)
        self.assertTrue(agent_copy(ws, "notes", 3).startswith(agent_copy(ws, "notes", 2)))
        self.assertTrue(notes.startswith(agent_copy(ws, "notes", 3)))

        first, third = prompt_of(ws, 1), prompt_of(ws, 3)
        self.assertIn("keep this line", first)
        self.assertNotIn("note from iteration", first)
        self.assertIn('<file path=".ralph/notes.md">', third)
        for text in ("note from iteration 1", "note from iteration 2",
                     "second note of iteration 2"):
            self.assertIn(text, third)
        self.assertNotIn("note from iteration 3", third)

    def test_feedback_is_stored_and_given_to_the_next_iteration_only(self):
        d = self.memory_daemon()
        ws = d.workspace()
        feedback = ("Implemented the parser.\\n<ralph-feedback>\\nscore: 7/10\\n"
                    "summary: implemented the parser\\nnext steps: write the tests\\n"
                    "blockers: none\\n</ralph-feedback>")
        final, attempts = self.run_loop(d, ws, ["1:say=" + feedback, "2-:say=no feedback",
                                                "append=work.txt:{i}"], "-m", "3")
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 3), final)

        stored = attempts[0]["feedback"]
        self.assertEqual(stored["score"], 7)
        self.assertEqual(stored["next_steps"], "write the tests")
        self.assertEqual(stored["summary"], "implemented the parser")
        self.assertEqual(stored["blockers"], "none")
        self.assertIsNone(attempts[1]["feedback"])
        self.assertEqual(attempts[0]["summary"], "Implemented the parser.")

        second = prompt_of(ws, 2)
        self.assertIn("## Feedback from the previous iteration", second)
        self.assertIn("Score: 7/10", second)
        self.assertIn("Next steps: write the tests", second)
        self.assertNotIn("Feedback from the previous iteration", prompt_of(ws, 1))
        # Iteration 2 gave none: iteration 3 does not get iteration 1's again.
        self.assertNotIn("write the tests", prompt_of(ws, 3))

        state1 = front_matter(agent_copy(ws, "loop", 1))
        state2 = front_matter(agent_copy(ws, "loop", 2))
        state3 = front_matter(agent_copy(ws, "loop", 3))
        self.assertIsNone(state1["previous_feedback"])
        self.assertEqual(state2["previous_feedback"]["score"], 7)
        self.assertEqual(state2["previous_feedback"]["next_steps"], "write the tests")
        self.assertIsNone(state3["previous_feedback"])
        self.assertEqual((state2["loop_id"], state2["iteration"], state2["max_iterations"],
                          state2["min_iterations"]), (final["id"], 2, 3, 1))
        self.assertEqual(state2["completion_signal"], "<promise>COMPLETE</promise>")
        self.assertEqual(state2["name"], "it-loop")
        self.assertEqual(state2["started_at"], final["started_at"])

    def test_a_prompt_md_the_agent_edits_is_the_prompt_of_the_next_iteration(self):
        d = self.memory_daemon()
        ws = d.workspace()
        write_text(os.path.join(ws, "PROMPT.md"), "Original instructions: build the parser.\n")
        commit_all(ws)
        out = d.ctl_json("submit", "--workspace", ws, "--delay", "0s", "--retries", "0",
                         "-m", "2", "--command",
                         scripted("1:write=PROMPT.md:Revised instructions: write the docs.\\n",
                                  "append=work.txt:{i}"))
        final, _ = self.finish(d, out["loop"])
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 2), final)
        self.assertTrue(prompt_of(ws, 1).startswith("Original instructions: build the parser."))
        second = prompt_of(ws, 2)
        self.assertTrue(second.startswith("Revised instructions: write the docs."), second)
        self.assertNotIn("Original instructions", second)


class StallTest(MemoryTestCase):

    def test_a_loop_that_changes_nothing_stalls_and_one_that_works_does_not(self):
        d = self.memory_daemon()
        idle = self.submit(d, d.workspace("idle"), ["say=thinking about it"],
                           "--stall-after", "2", "-m", "10", name="idle")
        edits = self.submit(d, d.workspace("edits"), ["append=work.txt:{i}"],
                            "--stall-after", "2", "-m", "4", name="edits")
        commits = self.submit(d, d.workspace("commits"), ["commit"],
                              "--stall-after", "2", "-m", "4", name="commits")

        final, attempts = self.finish(d, idle)
        self.assertEqual((final["state"], final["iterations"]), ("stalled", 2), final)
        self.assertIn("no progress in 2 iterations", final["stop_reason"])
        self.assertEqual([a["progress"] for a in attempts], [False, False])

        for loop in (edits, commits):
            with self.subTest(loop=loop["name"]):
                final, attempts = self.finish(d, loop)
                self.assertEqual((final["state"], final["iterations"]), ("exhausted", 4), final)
                self.assertEqual([a["progress"] for a in attempts], [True] * 4)

    def test_identical_failures_in_a_row_stall_the_loop_before_its_retries_run_out(self):
        d = self.memory_daemon()
        ws = d.workspace()
        loop = d.ctl_submit(ws, "Fail", "--command", agent_command("fail.sh", 3),
                            "--stall-failures", "2", "--backoff", "0.1s", retries="5")
        final, attempts = self.finish(d, loop)
        self.assertEqual(final["state"], "stalled", final)
        self.assertIn("2 identical failures in a row", final["stop_reason"])
        self.assertIn("status 3", final["stop_reason"])
        self.assertEqual([(a["iteration"], a["attempt"]) for a in attempts], [(1, 1), (1, 2)])
        self.assertEqual([a["exit_code"] for a in attempts], [3, 3])


class GitTest(MemoryTestCase):

    def test_each_attempt_records_head_and_diff_statistics(self):
        d = self.memory_daemon()
        ws = d.workspace()
        start = git(ws, "rev-parse", "HEAD").strip()
        final, attempts = self.run_loop(
            d, ws, ["1:write=feature.txt:one\\ntwo\\nthree\\n",
                    "2:write=feature.txt:one\\nTWO\\nthree\\n", "2:commit", "3:say=nothing"],
            "-m", "3")
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 3), final)
        end = git(ws, "rev-parse", "HEAD").strip()
        self.assertNotEqual(start, end)
        first, second, third = attempts
        # Iteration 1: a new file of three lines, not committed.
        self.assertEqual((first["head_before"], first["head_after"]), (start, start))
        self.assertEqual((first["files_changed"], first["insertions"], first["deletions"]),
                         (1, 3, 0))
        self.assertIs(first["progress"], True)
        # Iteration 2: one line changed, and the agent committed.
        self.assertEqual((second["head_before"], second["head_after"]), (start, end))
        self.assertEqual((second["files_changed"], second["insertions"], second["deletions"]),
                         (1, 1, 1))
        self.assertIs(second["progress"], True)
        # Iteration 3: nothing.
        self.assertEqual((third["head_before"], third["head_after"]), (end, end))
        self.assertEqual((third["files_changed"], third["insertions"], third["deletions"]),
                         (0, 0, 0))
        self.assertIs(third["progress"], False)

    def test_commit_commits_each_iteration_that_changed_something(self):
        d = self.memory_daemon()
        ws = d.workspace()
        start = git(ws, "rev-parse", "HEAD").strip()
        final, attempts = self.run_loop(
            d, ws, ["-2:write=file-{i}.txt:content {i}\\n", "3:say=nothing to do"],
            "--commit", "-m", "3", name="committer")
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 3), final)
        log = git(ws, "log", "--format=%H %s").splitlines()
        self.assertEqual(len(log), 3, log)  # two iterations and the initial commit
        for (sha, subject), iteration in zip((line.split(" ", 1) for line in log[:2]), (2, 1)):
            self.assertEqual(subject, "ralph: loop %d (committer), iteration %d"
                             % (final["id"], iteration))
            self.assertEqual(attempts[iteration - 1]["head_after"], sha)
            files = git(ws, "show", "--format=", "--name-only", sha).split()
            self.assertIn("file-%d.txt" % iteration, files)
        self.assertEqual(attempts[0]["head_before"], start)
        self.assertEqual(attempts[1]["head_before"], attempts[0]["head_after"])
        self.assertEqual(attempts[2]["head_after"], attempts[1]["head_after"])
        self.assertEqual(git(ws, "status", "--porcelain", "--", ".", ":(exclude).ralph"), "")

    def test_outside_git_progress_is_seen_by_file_hashes(self):
        d = self.memory_daemon()
        ws = tempfile.mkdtemp(prefix="plain-", dir=d.work_dir)
        write_text(os.path.join(ws, "existing.txt"), "unchanged\n")
        final, attempts = self.run_loop(d, ws, ["1:write=a.txt:hello\\n", "2:say=nothing"],
                                        "-m", "2")
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 2), final)
        self.assertEqual([a["progress"] for a in attempts], [True, False])
        self.assertEqual([a["files_changed"] for a in attempts], [1, 0])
        self.assertEqual([a["head_before"] for a in attempts], ["", ""])

    def changed_lines(self, diff):
        """The added and removed lines of a unified diff, without the file headers."""
        return [line for line in diff.split("\n")
                if line[:1] in ("+", "-") and line[:3] not in ("+++", "---")]

    def test_loop_diff_gives_what_each_attempt_changed_and_nothing_else(self):
        d = self.memory_daemon()
        # Each iteration changes the tracked file and adds a file git does not track yet.
        actions = ["1:write=tracked.txt:alpha\\nBETA one\\ngamma\\n",
                   "1:write=new-1.txt:untracked one\\n",
                   "2:write=tracked.txt:alpha\\nBETA one\\ngamma\\ndelta two\\n",
                   "2:write=new-2.txt:untracked two\\n"]
        expected = {1: ["+untracked one", "-beta", "+BETA one"],  # files in path order
                    2: ["+untracked two", "+delta two"]}
        for where in ("checkout", "worktree"):
            with self.subTest(where=where):
                ws = d.workspace(where)
                write_text(os.path.join(ws, "tracked.txt"), "alpha\nbeta\ngamma\n")
                commit_all(ws)
                # A --worktree loop's diff is of its worktree, where its agent worked.
                options = ["-m", "2"] + (["--worktree"] if where == "worktree" else [])
                final, attempts = self.run_loop(d, ws, actions, *options, name=where)
                self.assertEqual((final["state"], final["iterations"]), ("exhausted", 2), final)
                first, second = attempts
                self.assertRegex(first["tree_before"], "^[0-9a-f]{40}$")
                self.assertEqual(second["tree_before"], first["tree_after"])
                self.assertNotIn(second["tree_after"], (first["tree_before"], ""))
                diffs = {}
                for attempt in attempts:
                    diff = d.call("loop.diff", {"id": final["id"], "attempt": attempt["id"]})
                    self.assertEqual({key: diff[key] for key in
                                      ("id", "attempt", "iteration", "cut", "error")},
                                     {"id": final["id"], "attempt": attempt["id"],
                                      "iteration": attempt["iteration"], "cut": False,
                                      "error": ""})
                    diffs[attempt["iteration"]] = diff["diff"]
                for iteration, lines in expected.items():
                    self.assertEqual(self.changed_lines(diffs[iteration]), lines, diffs[iteration])
                self.assertIn("+++ b/new-1.txt\n", diffs[1])
                self.assertNotIn("new-2.txt", diffs[1])
                self.assertIn("+++ b/new-2.txt\n", diffs[2])
                self.assertNotIn("new-1.txt", diffs[2])
                self.assertNotIn(".ralph/", diffs[1] + diffs[2])
        # max_bytes cuts the diff at a whole line, and says so.
        whole = diffs[1]
        cut = d.call("loop.diff", {"id": final["id"], "attempt": first["id"],
                                   "max_bytes": len(whole) - 1})
        self.assertTrue(cut["cut"])
        self.assertTrue(whole.startswith(cut["diff"]) and cut["diff"].endswith("\n"), cut)
        self.assertLess(len(cut["diff"]), len(whole))
        exact = d.call("loop.diff", {"id": final["id"], "attempt": first["id"],
                                     "max_bytes": len(whole)})
        self.assertEqual((exact["diff"], exact["cut"]), (whole, False))

        # Outside git there is no diff to give: the answer says why.
        plain = tempfile.mkdtemp(prefix="plain-", dir=d.work_dir)
        other, (outside,) = self.run_loop(d, plain, ["write=a.txt:hello\\n"], "-m", "1",
                                          name="plain")
        answer = d.call("loop.diff", {"id": other["id"], "attempt": outside["id"]})
        self.assertEqual((answer["diff"], answer["cut"]), ("", False))
        self.assertEqual(answer["error"],
                         "attempt %d has no diff: ralph kept no git snapshot of the workspace "
                         "before it (the workspace is not in a git work tree that ralph uses, or "
                         "the attempt was recorded by a ralphd older than loop.diff)"
                         % outside["id"])
        # Nor after an attempt that failed: its workspace was not snapshotted after it.
        failing, (failed,) = self.run_loop(d, d.workspace("failing"), ["exit=3"], "-m", "1",
                                           name="failing")
        answer = d.call("loop.diff", {"id": failing["id"], "attempt": failed["id"]})
        self.assertEqual(answer["error"],
                         "attempt %d has no diff: it ended failed: ralph snapshots the workspace "
                         "after an attempt that succeeded only" % failed["id"])

        def refusal(params):
            with self.assertRaises(RpcError) as refused:
                d.call("loop.diff", params)
            return refused.exception.code, refused.exception.message

        self.assertEqual(refusal({"id": final["id"], "attempt": outside["id"]}),
                         (-32001, "loop %d has no attempt %d (it is loop %d's)"
                          % (final["id"], outside["id"], other["id"])))
        self.assertEqual(refusal({"id": final["id"], "attempt": outside["id"] + 1000}),
                         (-32001, "loop %d has no attempt %d" % (final["id"], outside["id"] + 1000)))
        self.assertEqual(refusal({"id": other["id"] + 1000, "attempt": first["id"]}),
                         (-32001, "no loop with id %d" % (other["id"] + 1000)))
        self.assertEqual(refusal({"id": final["id"]}), (-32602, "params.attempt is required"))
        for bad in (0, 4 * 1024 * 1024 + 1):
            self.assertEqual(refusal({"id": final["id"], "attempt": first["id"],
                                      "max_bytes": bad}),
                             (-32602, "params.max_bytes: must be in 1..4194304, not %d" % bad))


class DirtyWorkspaceTest(MemoryTestCase):

    def submit_plain(self, d, ws, *options):
        """`ralphctl submit` as a user would type it (stdin is not a terminal)."""
        return d.ctl("submit", "--workspace", ws, "--delay", "0s", "--command",
                     scripted("say=hello"), "-m", "1", *options, "Do the work.", check=False)

    def test_uncommitted_changes_refuse_a_submit_unless_allow_dirty(self):
        d = self.memory_daemon()
        ws = d.workspace()
        write_text(os.path.join(ws, "tracked.txt"), "v1\n")
        commit_all(ws)
        write_text(os.path.join(ws, "tracked.txt"), "v2\n")
        write_text(os.path.join(ws, "scratch.txt"), "not committed\n")

        proc = self.submit_plain(d, ws)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("uncommitted", proc.stderr)
        self.assertIn("tracked.txt", proc.stderr)
        self.assertIn("scratch.txt", proc.stderr)
        self.assertIn("--allow-dirty", proc.stderr)
        self.assertEqual(d.call("loop.list", {})["loops"], [])

        proc = self.submit_plain(d, ws, "--allow-dirty")
        self.assertEqual(proc.returncode, 0, proc)
        self.assertEqual(len(d.call("loop.list", {})["loops"]), 1)

    def test_a_repository_that_libgit2_must_not_open_is_submitted_with_a_warning(self):
        d = self.memory_daemon()
        ws = d.workspace()
        write_text(os.path.join(ws, "tracked.txt"), "v1\n")
        commit_all(ws)
        # Format version 1: libgit2 1.5 would leak memory at each opening (workspace/git_repository.cpp).
        git(ws, "config", "core.repositoryformatversion", "1")
        git(ws, "config", "extensions.worktreeConfig", "true")
        write_text(os.path.join(ws, "scratch.txt"), "not committed\n")
        proc = self.submit_plain(d, ws)
        self.assertEqual(proc.returncode, 0, proc)
        self.assertIn("was not checked for uncommitted changes", proc.stderr)
        self.assertIn("format version is 1", proc.stderr)

    def test_ralph_leftovers_alone_do_not_make_a_workspace_dirty(self):
        d = self.memory_daemon()
        ws = d.workspace()
        write_text(os.path.join(ws, ".ralph", "notes.md"), "# Notes\n")
        write_text(os.path.join(ws, ".ralph", "loop.md"), "---\niteration: 3\n---\n")
        proc = self.submit_plain(d, ws)
        self.assertEqual(proc.returncode, 0, proc)
        self.assertEqual(len(d.call("loop.list", {})["loops"]), 1)


class SteerTest(MemoryTestCase):

    def test_a_hint_reaches_the_next_iteration_once(self):
        d = self.memory_daemon()
        ws = d.workspace()
        loop = self.submit(d, ws, ["1:sleep=2", "sleep=0.3", "append=work.txt:{i}"], "-m", "3")
        running = d.running_attempt(loop["id"])
        self.assertEqual(running["iteration"], 1)
        proc = d.ctl("steer", loop["id"], "focus on X")
        self.assertIn("iteration 2 will get the hint", proc.stdout)
        out = d.ctl_json("steer", loop["id"], "then Y")
        self.assertEqual(out["steering"]["next_iteration"], 2)
        final, _ = self.finish(d, loop)
        self.assertEqual((final["state"], final["iterations"]), ("exhausted", 3), final)
        self.assertNotIn("focus on X", prompt_of(ws, 1))
        second = prompt_of(ws, 2)
        self.assertEqual(second.count("focus on X"), 1)
        self.assertIn("## Steering", second)
        self.assertIn("- focus on X\n- then Y\n", second)
        for text in ("focus on X", "then Y", "## Steering"):
            self.assertNotIn(text, prompt_of(ws, 3))

        proc = d.ctl("steer", loop["id"], "too late", check=False)
        self.assertNotEqual(proc.returncode, 0, proc)
        self.assertIn("already ended", proc.stderr)


class InitTemplatesTest(MemoryTestCase):

    def test_each_init_template_runs_to_completion(self):
        d = self.memory_daemon()
        # template: (agent actions, submit options, the file of boxes, what ended the loop)
        cases = {
            "default": (["tick=SPECS.md", "promise-if-done=SPECS.md"], [], "SPECS.md",
                        "<promise>COMPLETE</promise>"),
            "plan": (["tick=plan.md", "append=progress.md:## item {i}\\ndone and verified",
                      "promise-if-done=plan.md"], [], "plan.md", "<promise>COMPLETE</promise>"),
            "backlog": (["tick=backlog.md", "append=notepad.md:- learned {i}"], ["--backlog"],
                        "backlog.md", "every checkbox of backlog.md is checked"),
        }
        started = {}
        for name, (actions, options, boxes, _) in cases.items():
            ws = d.workspace(name)
            d.ctl("init", "--template", name, ws)
            commit_all(ws, "ralphctl init")
            tasks = read_text(os.path.join(ws, boxes)).count("- [ ]")
            self.assertGreater(tasks, 1)
            # No prompt and no --allow-dirty: the prompt comes from the template's files.
            out = d.ctl_json("submit", "--workspace", ws, "--name", name, "--delay", "0s",
                             "--retries", "0", "--command", scripted(*actions), *options)
            started[name] = (ws, out["loop"], tasks)

        for name, (ws, loop, tasks) in started.items():
            with self.subTest(template=name):
                final, attempts = self.finish(d, loop)
                self.assertEqual((final["state"], final["iterations"]), ("completed", tasks),
                                 final)
                self.assertIn(cases[name][3], final["stop_reason"])
                self.assertNotIn("- [ ]", read_text(os.path.join(ws, cases[name][2])))
                source = ".ralph/prompt.md" if name == "backlog" else "PROMPT.md"
                self.assertTrue(prompt_of(ws, 1).startswith(
                    read_text(os.path.join(ws, source)).rstrip()), prompt_of(ws, 1))
                injected = {"default": "SPECS.md", "backlog": "backlog.md"}.get(name)
                if injected:
                    self.assertIn('<file path="%s">' % injected, prompt_of(ws, 1))
        progress = read_text(os.path.join(started["plan"][0], "progress.md"))
        self.assertEqual(progress.count("## item"), started["plan"][2], progress)


class InactivityTest(MemoryTestCase):

    def test_a_silent_agent_is_ended_by_the_inactivity_timeout(self):
        d = self.memory_daemon()
        began = time.monotonic()
        loop = d.ctl_submit(d.workspace(), "Hang", "--command", agent_command("sleep.sh", 60),
                            "--inactivity-timeout", "1s", "--timeout", "60s")
        final, attempts = self.finish(d, loop)
        self.assertLess(time.monotonic() - began, scaled(15))
        self.assertEqual(final["state"], "failed", final)
        self.assertIn("inactivity", final["stop_reason"])
        self.assertEqual(attempts[0]["termination"], "timeout")
        self.assertEqual(attempts[0]["failure"], "timeout")
        self.assertIn("inactivity", attempts[0]["error"])

    def test_a_claude_agent_waiting_for_a_tool_result_is_not_inactive(self):
        d = self.new_daemon_unstarted(extra_args=["--max-concurrent", "8"])
        bin_dir = os.path.join(d.root, "fake-bin")
        os.makedirs(bin_dir)
        os.symlink(agent_path("claude-slow-tool.py"), os.path.join(bin_dir, "claude"))
        d.env["PATH"] = bin_dir + ":" + d.env["PATH"]
        d.start()
        waiting = d.ctl_submit(d.workspace("tool"), "Run the tests", "--agent", "claude",
                               "--inactivity-timeout", "1s", "--env", "FAKE_SILENCE=2.5",
                               name="tool")
        # The same silence with no tool call pending is a hang.
        hung = d.ctl_submit(d.workspace("idle"), "Run the tests", "--agent", "claude",
                            "--inactivity-timeout", "1s", "--env", "FAKE_SILENCE=5",
                            "--env", "FAKE_SILENT_WHILE=idle", name="idle")

        final, attempts = self.finish(d, waiting)
        self.assertEqual((final["state"], final["iterations"]), ("completed", 1), final)
        self.assertEqual(attempts[0]["termination"], "exited")

        final, attempts = self.finish(d, hung)
        self.assertEqual(final["state"], "failed", final)
        self.assertEqual(attempts[0]["termination"], "timeout")
        self.assertIn("inactivity", attempts[0]["error"])


if __name__ == "__main__":
    main()
