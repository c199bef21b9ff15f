"""The agent adapters end to end (README, "Agents"): each real agent CLI is replaced by the replay
agent (tests/agents/replay-agent.py), which replays the recorded streams of tests/fixtures/agents
and the variants in tests/agents/streams through the real ralphd. Checked: the argv and stdin each
agent gets, events, tokens, cost, final answers and completion, false completions, the failure
taxonomy, rate-limit parking across loops, `ralphctl agents`, `show` and `tail`."""

import json
import os
import shlex
import time

from harness import DaemonTestCase, agent_path, fake_agent_bin, main, parse_time, scaled


def iteration_script(*names):
    return "FAKE_AGENT_SCRIPT=" + ",".join(names)


class AgentTestCase(DaemonTestCase):

    def agent_daemon(self, *extra_args, env=None):
        """A ralphd with the fake agents first on its PATH (and `env` in its environment)."""
        d = self.new_daemon_unstarted(extra_args=extra_args)
        d.env["PATH"] = fake_agent_bin(d.root) + ":" + d.env["PATH"]
        d.env.update(env or {})
        d.start()
        return d

    def submit_agent(self, d, agent, script, *options, workspace=None, name="it-loop",
                     retries="0", delay="0s"):
        ws = workspace or d.workspace()
        log = os.path.join(ws, ".fake-agent-log")
        loop = d.ctl_submit(ws, "Work through the task list.", "--agent", agent,
                            "--env", iteration_script(*script), "--env", "FAKE_AGENT_LOG=" + log,
                            *options, name=name, retries=retries, delay=delay)
        return loop, log

    def agent_runs(self, log):
        with open(log) as f:
            return [json.loads(line) for line in f]

    def events(self, d, loop_id, iteration=0):
        return d.call("loop.events", {"id": loop_id, "iteration": iteration})["events"]


class RecordedRunsTest(AgentTestCase):

    # Per agent: the argv after the program, with PROMPT where the prompt is an argument;
    # whether the prompt is on stdin; the tool each iteration used; cost per iteration.
    EXPECTED = {
        "claude": (["-p", "--output-format", "stream-json", "--verbose",
                    "--dangerously-skip-permissions"], True, ["Write", "Bash"], 0.0012),
        "codex": (["exec", "--json", "--dangerously-bypass-approvals-and-sandbox",
                   "--skip-git-repo-check", "-"], True, None, None),
        "opencode": (["run", "--format", "json", "PROMPT"], False, ["write", "bash"], 0.0),
        "gemini": (["-p", "PROMPT", "--yolo", "--output-format", "stream-json"], False, None, None),
    }

    def test_each_structured_agent_completes_its_recorded_loop_on_the_second_iteration(self):
        d = self.agent_daemon()
        loops = {}
        for agent in self.EXPECTED:
            loops[agent] = self.submit_agent(d, agent, ["ralph-iter1", "ralph-iter2"], "-m", "5",
                                             name=agent)
        for agent, (args, on_stdin, tools, cost) in self.EXPECTED.items():
            with self.subTest(agent=agent):
                loop, log = loops[agent]
                final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
                self.assertEqual(final["state"], "completed", final)
                self.assertEqual(final["iterations"], 2)
                self.assertIn("iteration 2", final["stop_reason"])

                # The exact invocation: argv without a shell, the prompt where the CLI wants it.
                runs = self.agent_runs(log)
                self.assertEqual(len(runs), 2)
                for run in runs:
                    prompt = run["stdin"] if on_stdin else run["argv"][args.index("PROMPT") + 1]
                    self.assertIn("Work through the task list.", prompt)
                    self.assertIn("<promise>COMPLETE</promise>", prompt)
                    got = [("PROMPT" if a == prompt else a) for a in run["argv"][1:]]
                    self.assertEqual(got, args)
                    if not on_stdin:
                        self.assertEqual(run["stdin"], "")
                # opencode and gemini litter $TMPDIR: each attempt gets its own, removed after.
                if agent in ("opencode", "gemini"):
                    self.assertTrue(runs[0]["tmpdir"].startswith(d.state_dir), runs[0])
                    self.assertFalse(os.path.exists(runs[0]["tmpdir"]))

                attempts = d.attempts(loop["id"])
                self.assertEqual([a["termination"] for a in attempts], ["exited", "exited"])
                self.assertEqual([a["completion_signal"] for a in attempts], [False, True])
                self.assertEqual([a["failure"] for a in attempts], ["", ""])
                self.assertEqual(attempts[0]["summary"],
                                 "Iteration 1: wrote ralph-progress.txt. More work remains.")
                self.assertEqual(attempts[1]["summary"], "All tasks finished.")
                for a in attempts:
                    self.assertEqual((a["input_tokens"], a["output_tokens"]), (200, 40), a)
                    self.assertEqual(a["tool_calls"], 1, a)
                    self.assertGreaterEqual(a["turns"], 1, a)
                    if cost is None:
                        self.assertIsNone(a["cost_usd"], a)
                    else:
                        self.assertAlmostEqual(a["cost_usd"], cost, places=6)
                # The loop's totals are the sums of its attempts.
                self.assertEqual((final["input_tokens"], final["output_tokens"]), (400, 80))
                self.assertEqual(final["tool_calls"], 2)
                if cost is not None:
                    self.assertAlmostEqual(final["cost_usd"], 2 * cost, places=6)

                # Events: the tool calls, and the final answer with the tag in iteration 2.
                for iteration in (1, 2):
                    events = self.events(d, loop["id"], iteration)
                    kinds = [e["kind"] for e in events]
                    self.assertIn("tool_use", kinds)
                    self.assertIn("usage", kinds)
                    self.assertIn("final_answer", kinds)
                    self.assertTrue(all(e["iteration"] == iteration for e in events))
                    if tools:
                        self.assertEqual([e["tool"] for e in events if e["kind"] == "tool_use"],
                                         [tools[iteration - 1]])
                    answer = [e["text"] for e in events if e["kind"] == "final_answer"][-1]
                    self.assertEqual("<promise>COMPLETE</promise>" in answer, iteration == 2)

    def test_plain_text_agents_complete_and_aider_reports_tokens_and_cost(self):
        d = self.agent_daemon()
        aider, aider_log = self.submit_agent(d, "aider", ["ralph-iter1", "ralph-iter2"], "-m", "5",
                                             "--model", "sonnet", name="aider")
        kiro, kiro_log = self.submit_agent(d, "kiro", ["ralph-iter1", "ralph-iter2"], "-m", "5",
                                           name="kiro")
        for loop in (aider, kiro):
            final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
            self.assertEqual((final["state"], final["iterations"]), ("completed", 2), final)

        run = self.agent_runs(aider_log)[0]
        self.assertEqual(run["argv"][1], "--message-file")
        self.assertTrue(os.path.isabs(run["argv"][2]), run)
        self.assertEqual(run["argv"][3:], ["--yes-always", "--model", "sonnet"])
        self.assertEqual(self.agent_runs(kiro_log)[0]["argv"][1:4],
                         ["chat", "--no-interactive", "--trust-all-tools"])

        attempts = d.attempts(aider["id"])
        self.assertTrue(all(a["input_tokens"] > 0 and a["output_tokens"] > 0 for a in attempts),
                        attempts)
        self.assertTrue(all(a["cost_usd"] and a["cost_usd"] > 0 for a in attempts), attempts)
        for a in d.attempts(kiro["id"]):
            self.assertEqual((a["input_tokens"], a["cost_usd"]), (0, None))


class FalseCompletionTest(AgentTestCase):

    def test_a_tag_in_the_prompt_tool_input_or_tool_output_never_completes_a_loop(self):
        d = self.agent_daemon()
        cases = [("claude", "prompt-contains-promise"), ("codex", "echo-promise"),
                 ("kiro", "echo-prompt"), ("aider", "echo-prompt"),
                 # gemini's stream echoes the prompt, which holds the tag, on its second line
                 ("gemini", "ralph-iter1")]
        loops = [(agent, scenario, self.submit_agent(d, agent, [scenario], "-m", "1",
                                                     name=agent + "-" + scenario)[0])
                 for agent, scenario in cases]
        for agent, scenario, loop in loops:
            with self.subTest(agent=agent, scenario=scenario):
                final = d.wait_state(loop["id"], ("completed", "exhausted", "failed"), timeout=60)
                self.assertEqual(final["state"], "exhausted", final)
                self.assertEqual([a["completion_signal"] for a in d.attempts(loop["id"])], [False])
                self.assertIn(b"<promise>COMPLETE</promise>", d.output(loop["id"]),
                              "the tag was in the agent's output, just not in its answer")


class FailureTaxonomyTest(AgentTestCase):

    def test_transient_api_errors_and_crashes_are_retried(self):
        d = self.agent_daemon()
        loops = {
            "claude-500": self.submit_agent(d, "claude", ["http500", "ralph-iter2"],
                                            "--backoff", "0.1s", retries="1", name="c500")[0],
            "claude-refused": self.submit_agent(d, "claude", ["refused", "ralph-iter2"],
                                                "--backoff", "0.1s", retries="1", name="cref")[0],
            "opencode-500": self.submit_agent(d, "opencode", ["http500", "ralph-iter2"],
                                              "--backoff", "0.1s", retries="1", name="o500")[0],
            "gemini-500": self.submit_agent(d, "gemini", ["http500", "ralph-iter2"],
                                            "--backoff", "0.1s", retries="1", name="g500")[0],
            "codex-500": self.submit_agent(d, "codex", ["http500", "ralph-iter2"],
                                           "--backoff", "0.1s", retries="1", name="x500")[0],
            "claude-truncated": self.submit_agent(d, "claude", ["truncated", "ralph-iter2"],
                                                  "--backoff", "0.1s", retries="1",
                                                  name="ctrunc")[0],
        }
        # Garbage and an exit status of 0: the iteration is spent, nothing in it completes.
        garbage, _ = self.submit_agent(d, "claude", ["garbage", "ralph-iter2"], name="cgarbage")
        expected_failure = {"claude-500": "transient", "claude-refused": "transient",
                            "opencode-500": "transient", "gemini-500": "transient",
                            "codex-500": "transient", "claude-truncated": "crash"}
        for key, loop in loops.items():
            with self.subTest(case=key):
                final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
                self.assertEqual(final["state"], "completed", final)
                attempts = d.attempts(loop["id"])
                self.assertEqual([(a["iteration"], a["attempt"]) for a in attempts],
                                 [(1, 1), (1, 2)])
                self.assertEqual(attempts[0]["failure"], expected_failure[key], attempts[0])
                self.assertTrue(attempts[0]["error"], attempts[0])
                self.assertEqual(attempts[1]["failure"], "")
        final = d.wait_state(garbage["id"], ("completed", "failed", "exhausted"), timeout=60)
        self.assertEqual((final["state"], final["iterations"]), ("completed", 2), final)
        first = d.attempts(garbage["id"])[0]
        self.assertEqual((first["termination"], first["summary"]), ("exited", ""), first)
        self.assertIn("raw", [e["kind"] for e in self.events(d, garbage["id"], 1)])

    def test_an_authentication_failure_stops_the_loop_with_a_clear_message(self):
        d = self.agent_daemon()
        loop, _ = self.submit_agent(d, "claude", ["auth", "ralph-iter2"], retries="3")
        final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=30)
        self.assertEqual(final["state"], "failed")
        self.assertIn("could not authenticate", final["stop_reason"])
        self.assertIn("claude", final["stop_reason"])
        self.assertEqual([a["failure"] for a in d.attempts(loop["id"])], ["auth"])

    def test_a_hanging_agent_times_out_and_huge_lines_and_bad_bytes_are_survived(self):
        d = self.agent_daemon()
        hang, _ = self.submit_agent(d, "codex", ["hang", "ralph-iter2"], "--timeout", "1s",
                                    "--backoff", "0.1s", retries="1", name="hang")
        huge, _ = self.submit_agent(d, "claude", ["huge-line", "ralph-iter2"], "-m", "5",
                                    name="huge")
        bad, _ = self.submit_agent(d, "claude", ["invalid-utf8"], "-m", "1", name="bad-utf8")
        final = d.wait_state(hang["id"], ("completed", "failed"), timeout=60)
        self.assertEqual(final["state"], "completed", final)
        self.assertEqual([a["failure"] for a in d.attempts(hang["id"])], ["timeout", ""])

        final = d.wait_state(huge["id"], ("completed", "failed", "exhausted"), timeout=60)
        self.assertEqual((final["state"], final["iterations"]), ("completed", 2), final)
        first = d.attempts(huge["id"])[0]
        self.assertGreater(first["output_end"] - first["output_start"], 20 << 20)
        self.assertEqual(first["summary"],
                         "Iteration 1: wrote ralph-progress.txt. More work remains.")
        skipped = [e for e in self.events(d, huge["id"], 1) if e["kind"] == "raw"]
        self.assertTrue(skipped and "bytes" in skipped[0]["text"], skipped[:1])

        final = d.wait_state(bad["id"], ("completed", "failed", "exhausted"), timeout=60)
        self.assertEqual(d.attempts(bad["id"])[0]["termination"], "exited", final)

    def test_a_missing_agent_program_is_refused_at_submit_and_fails_a_queued_loop(self):
        d = self.new_daemon_unstarted()
        bin_dir = fake_agent_bin(d.root, names=("claude",))
        d.env["PATH"] = bin_dir + ":" + d.env["PATH"]
        d.start()
        ws = d.workspace()
        proc = d.ctl("submit", "--workspace", ws, "--agent", "gemini", "go", check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("gemini", proc.stderr)
        self.assertIn("not found", proc.stderr)
        self.assertIn("--agent-binary", proc.stderr)
        self.assertEqual(d.call("loop.list", {})["loops"], [], "nothing was submitted")

        # Found at submit, gone when the loop runs: the loop fails, it is not retried.
        blocker, _ = self.submit_agent(d, "claude", ["hang"], name="blocker")
        loop, _ = self.submit_agent(d, "claude", ["ralph-iter2"], workspace=ws, retries="3")
        # The blocker's agent has to be running (its attempt has a pid once it is: the row comes
        # before the start) before its program goes away.
        d.running_attempt(blocker["id"])
        os.remove(os.path.join(bin_dir, "claude"))
        d.call("loop.cancel", {"id": blocker["id"]})
        final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=30)
        self.assertEqual(final["state"], "failed")
        self.assertIn("not found", final["stop_reason"])
        self.assertEqual([a["failure"] for a in d.attempts(loop["id"])], ["missing_program"])


class RateLimitTest(AgentTestCase):

    def test_a_usage_limit_parks_every_loop_on_that_agent_until_the_stated_reset(self):
        d = self.agent_daemon("--max-concurrent", "3", "--rate-limit-margin", "0.5")
        # Time for the second loop to be parked before the reset, on a slow (sanitized) build too.
        resets_at = int(time.time() + scaled(3))
        limited, _ = self.submit_agent(d, "claude", ["rate-limit", "ralph-iter2"],
                                       "--env", "FAKE_RESETS_AT=%d" % resets_at, name="limited")
        d.wait_state(limited["id"], "waiting", timeout=20)
        # Another claude loop submitted now waits for the same reset instead of hitting the
        # limit; a loop on another agent runs meanwhile.
        other, _ = self.submit_agent(d, "claude", ["ralph-iter2"], name="same-agent")
        codex, _ = self.submit_agent(d, "codex", ["ralph-iter2"], name="other-agent")
        parked = d.wait_state(other["id"], "waiting", timeout=20)
        waiting = d.get(limited["id"])
        expected_resume = resets_at + 0.5
        for loop in (waiting, parked):
            self.assertAlmostEqual(parse_time(loop["resume_at"]), expected_resume, delta=0.01)
            self.assertIn("usage limit", loop["stop_reason"])
        self.assertEqual(d.wait_state(codex["id"], "completed", timeout=30)["state"], "completed")
        self.assertLess(time.time(), expected_resume, "the test machine was too slow to check")

        # After the reset both claude loops go on by themselves. --retries 0: the limit burned
        # no retry, or the limited loop would have failed.
        for loop in (limited, other):
            final = d.wait_state(loop["id"], ("completed", "failed"), timeout=30)
            self.assertEqual(final["state"], "completed", final)
            started = [parse_time(a["started_at"]) for a in d.attempts(loop["id"])]
            self.assertGreaterEqual(started[-1], expected_resume - 0.05)
        attempts = d.attempts(limited["id"])
        self.assertEqual([a["failure"] for a in attempts], ["rate_limit", ""])
        events = self.events(d, limited["id"])
        limit_events = [e for e in events if e["kind"] == "rate_limit"]
        self.assertEqual(len(limit_events), 1, "the allowed_warning event is not a limit")

    def test_a_usage_limit_without_a_reset_time_waits_and_resumes(self):
        d = self.agent_daemon("--rate-limit-wait", "1")
        loop, _ = self.submit_agent(d, "claude", ["http429", "ralph-iter2"])
        d.wait_state(loop["id"], "waiting", timeout=20)
        final = d.wait_state(loop["id"], ("completed", "failed"), timeout=30)
        self.assertEqual(final["state"], "completed", final)
        attempts = d.attempts(loop["id"])
        self.assertEqual([a["failure"] for a in attempts], ["rate_limit", ""])
        gap = parse_time(attempts[1]["started_at"]) - parse_time(attempts[0]["ended_at"])
        self.assertGreaterEqual(gap, 0.9)


class QuotaTest(AgentTestCase):
    """A usage limit holds what shares its quota: the agent CLI, and for `command` the program
    its command runs (or the loop's --quota-key) — not every `command` loop, not a loop whose
    judge alone draws on it (issue 38)."""

    def program(self, d, name):
        """scripted-agent.py under another name: another program, as far as quotas go."""
        bin_dir = os.path.join(d.root, "programs")
        os.makedirs(bin_dir, exist_ok=True)
        path = os.path.join(bin_dir, name)
        if not os.path.lexists(path):
            os.symlink(agent_path("scripted-agent.py"), path)
        return path

    def test_one_programs_usage_limit_holds_its_loops_only(self):
        d = self.agent_daemon("--max-concurrent", "4", "--rate-limit-wait", "%d" % scaled(60))
        limited_program = self.program(d, "gateway-agent")
        other_program = self.program(d, "local-agent")
        limited = d.ctl_submit(d.workspace(), "Go.", "--command", "%s err=429_usage_limit exit=1"
                               % shlex.quote(limited_program), name="limited")
        held = d.wait_state(limited["id"], "waiting", timeout=30)
        self.assertIn("command:gateway-agent usage limit", held["stop_reason"])
        # The same program again: parked for the same reset. Another program: runs.
        same = d.ctl_submit(d.workspace(), "Go.", "--command", "%s promise"
                            % shlex.quote(limited_program), name="same")
        other = d.ctl_submit(d.workspace(), "Go.", "--command", "%s promise"
                             % shlex.quote(other_program), name="other")
        # The same program with a quota of its own (another account behind the gateway): runs.
        keyed = d.ctl_submit(d.workspace(), "Go.", "--command", "%s promise"
                             % shlex.quote(limited_program), "--quota-key", "team-b",
                             name="keyed")
        self.assertEqual(d.wait_state(other["id"], ("completed", "waiting"), timeout=30)["state"],
                         "completed")
        self.assertEqual(d.wait_state(keyed["id"], ("completed", "waiting"), timeout=30)["state"],
                         "completed")
        parked = d.wait_state(same["id"], "waiting", timeout=30)
        self.assertEqual(parked["resume_at"], held["resume_at"])
        holds = d.call("budget.get", {})["holds"]
        self.assertEqual([h["agent"] for h in holds], ["command:gateway-agent"])
        for loop in (limited, same):
            d.call("loop.cancel", {"id": loop["id"]})

    def test_a_judge_programs_usage_limit_does_not_hold_the_workers_agent(self):
        d = self.agent_daemon("--max-concurrent", "2", "--rate-limit-wait", "%d" % scaled(60))
        judge = self.program(d, "judge-agent")
        # The judge program's limit is met first, by a loop of its own.
        limited = d.ctl_submit(d.workspace(), "Go.", "--command", "%s err=429_usage_limit exit=1"
                               % shlex.quote(judge), name="limited")
        d.wait_state(limited["id"], "waiting", timeout=30)
        # A claude loop judged by that program: its claude work runs (claude is not held), its
        # claim then waits for the judge's quota.
        loop, log = self.submit_agent(d, "claude", ["ralph-iter2"], "--judge", "command",
                                      "--judge-command", shlex.quote(judge) + " promise",
                                      "--stall-after", "0")
        waiting = d.wait_state(loop["id"], "waiting", timeout=30)
        self.assertIn("command:judge-agent usage limit", waiting["stop_reason"])
        self.assertEqual([(a["kind"], a["termination"]) for a in d.attempts(loop["id"])],
                         [("work", "exited")])
        self.assertEqual(len(self.agent_runs(log)), 1)
        for each in (limited, loop):
            d.call("loop.cancel", {"id": each["id"]})


class FallbackTest(AgentTestCase):

    def test_a_held_agent_hands_the_iteration_to_its_fallback_and_gets_it_back_after_the_reset(self):
        # Each agent's key is in ralphd's environment: a fallback must get its own, never the
        # loop's own agent's.
        d = self.agent_daemon("--rate-limit-margin", "0.5",
                              env={"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test"})
        resets_at = int(time.time() + scaled(3))
        # Claude's first run hits its usage limit; the same iteration goes on at once on codex
        # (with the fallback's model, without claude's --arg); the next iteration, after the
        # reset, is claude's again.
        loop, log = self.submit_agent(
            d, "claude", ["rate-limit", "ralph-iter1", "ralph-iter2"], "--arg=--claude-only",
            "--fallback", "codex:o3-test", "--env", "FAKE_RESETS_AT=%d" % resets_at,
            delay="%.1f" % scaled(4))
        final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
        self.assertEqual(final["state"], "completed", final)
        attempts = d.attempts(loop["id"])
        self.assertEqual([(a["iteration"], a["agent"], a["model"], a["failure"]) for a in attempts],
                         [(1, "claude", "", "rate_limit"), (1, "codex", "o3-test", ""),
                          (2, "claude", "", "")])
        self.assertLess(parse_time(attempts[1]["started_at"]), resets_at,
                        "the fallback did not take over before the reset")
        self.assertGreaterEqual(parse_time(attempts[2]["started_at"]), resets_at + 0.5 - 0.05)
        runs = self.agent_runs(log)
        self.assertEqual([os.path.basename(r["argv"][0]) for r in runs],
                         ["claude", "codex", "claude"])
        self.assertEqual(runs[1]["argv"][1:], ["exec", "--json",
                                               "--dangerously-bypass-approvals-and-sandbox",
                                               "--skip-git-repo-check", "-m", "o3-test", "-"])
        self.assertIn("--claude-only", runs[2]["argv"])
        self.assertEqual([r["api_keys"] for r in runs],
                         [["ANTHROPIC_API_KEY"], ["OPENAI_API_KEY"], ["ANTHROPIC_API_KEY"]])

        # show and report break tokens and cost down by agent; the JSON names each attempt's.
        by_agent = {}
        for a in attempts:
            used = by_agent.setdefault(a["agent"], [0, 0])
            used[0] += a["input_tokens"]
            used[1] += a["output_tokens"]
        self.assertTrue(all(sum(used) > 0 for used in by_agent.values()), by_agent)
        shown = d.ctl("show", loop["id"]).stdout
        self.assertIn("fallback", shown)
        self.assertIn("codex:o3-test", shown)
        for agent, (tokens_in, tokens_out) in by_agent.items():
            self.assertIn("%s %d in / %d out tokens" % (agent, tokens_in, tokens_out), shown)
        report = d.call("history.report", {})
        self.assertEqual({agent: [u["input_tokens"], u["output_tokens"]]
                          for agent, u in report["loops"][0]["by_agent"].items()}, by_agent)
        self.assertIn("by agent: claude", d.ctl("report").stdout)

        # Each attempt's output is rendered in its agent's format, codex's JSON lines as readably
        # as claude's, in the order they ran: from the pages of loop.output and from tail -f's
        # notifications, each of which says the format of the attempt that wrote it.
        for tail in (("tail",), ("tail", "-f")):
            shown = d.ctl(*tail, loop["id"]).stdout
            self.assertNotIn('{"type":', shown)
            self.assertLess(shown.index("I'll record progress."), shown.index("All tasks finished."))
        pieces = [json.loads(line) for line in d.ctl("--json", "tail", loop["id"]).stdout.splitlines()]
        self.assertEqual([p["format"] for p in pieces], ["claude", "codex", "claude"])
        self.assertEqual([p["offset"] for p in pieces], [a["output_start"] for a in attempts])

    def test_with_every_agent_held_the_loop_waits_for_the_earliest_reset(self):
        d = self.agent_daemon("--rate-limit-wait", "%.1f" % scaled(1))
        claude_resets_at = time.time() + scaled(30)
        # Claude is held until its stated reset, far off; then codex hits a limit that states
        # none (held twice --rate-limit-wait: the iteration's second limit): the loop waits for
        # codex, the earlier of the two, and goes on with it.
        loop, _ = self.submit_agent(d, "claude", ["rate-limit", "http429", "ralph-iter2"],
                                    "--fallback", "codex",
                                    "--env", "FAKE_RESETS_AT=%d" % claude_resets_at)
        waiting = d.wait_state(loop["id"], "waiting", timeout=20)
        attempts = d.attempts(loop["id"])
        self.assertEqual([(a["agent"], a["failure"]) for a in attempts],
                         [("claude", "rate_limit"), ("codex", "rate_limit")])
        codex_resumes = parse_time(waiting["resume_at"])
        self.assertLess(codex_resumes, claude_resets_at)
        self.assertIn("codex usage limit", waiting["stop_reason"])
        final = d.wait_state(loop["id"], ("completed", "failed"), timeout=60)
        self.assertEqual(final["state"], "completed", final)
        last = d.attempts(loop["id"])[-1]
        self.assertEqual((last["agent"], last["failure"]), ("codex", ""))
        self.assertGreaterEqual(parse_time(last["started_at"]), codex_resumes - 0.05)
        self.assertLess(time.time(), claude_resets_at, "the test machine was too slow to check")

    def test_a_fallback_must_be_a_known_agent_that_is_installed_and_comes_once(self):
        d = self.agent_daemon()
        ws = d.workspace()
        for fallback, error in (("nosuch", "nosuch"), ("claude:opus", "comes twice"),
                                (":model", "names no agent")):
            proc = d.ctl("submit", "--workspace", ws, "--agent", "claude", "--fallback", fallback,
                         "--allow-dirty", "task", check=False)
            self.assertNotEqual(proc.returncode, 0, fallback)
            self.assertIn(error, proc.stderr, fallback)


class ClientTest(AgentTestCase):

    def test_agents_lists_each_adapter_with_its_program_version_and_capabilities(self):
        d = self.new_daemon_unstarted()
        bin_dir = fake_agent_bin(d.root, names=("claude", "codex"))
        other_dir = os.path.join(d.root, "elsewhere")
        fake_agent_bin(other_dir, names=("kiro-cli",))
        d.env["PATH"] = bin_dir + ":" + d.env["PATH"]
        d.extra_args += ["--agent-binary", "kiro=" + os.path.join(other_dir, "fake-bin", "kiro-cli")]
        d.start()
        agents = {a["name"]: a for a in d.ctl_json("agents")["agents"]}
        self.assertEqual(list(agents), ["claude", "codex", "opencode", "gemini", "aider", "kiro",
                                        "command", "demo"])
        self.assertEqual(agents["claude"]["path"], os.path.join(bin_dir, "claude"))
        self.assertEqual(agents["claude"]["version"], "claude 9.9.9 (ralph replay)")
        self.assertEqual(agents["kiro"]["version"], "kiro-cli 9.9.9 (ralph replay)")
        self.assertIsNone(agents["gemini"]["path"])
        self.assertIsNone(agents["gemini"]["version"])
        self.assertRegex(agents["demo"]["version"], r"^ralph-demo-agent \d")
        self.assertFalse(os.path.exists(os.path.join(d.work_dir, "demo-progress.md")),
                         "asking for a version must not run an agent's work")
        self.assertTrue(agents["claude"]["structured_output"] and agents["claude"]["cost"])
        self.assertFalse(agents["codex"]["cost"])
        self.assertFalse(agents["kiro"]["structured_output"] or agents["kiro"]["tokens"])

        table = d.ctl("agents").stdout
        self.assertIn("claude 9.9.9 (ralph replay)", table)
        self.assertRegex(table, r"gemini\s+no")

    def test_show_reports_usage_and_what_a_text_agent_lacks_and_tail_renders_the_stream(self):
        d = self.agent_daemon()
        claude, _ = self.submit_agent(d, "claude", ["ralph-iter1", "ralph-iter2"], name="c")
        kiro, _ = self.submit_agent(d, "kiro", ["ralph-iter2"], name="k")
        for loop in (claude, kiro):
            d.wait_state(loop["id"], "completed", timeout=30)

        shown = d.ctl("show", claude["id"]).stdout
        self.assertIn("400 in / 80 out tokens, $0.0024", shown)
        self.assertIn("All tasks finished.", shown)
        self.assertNotIn("agent lacks", shown)
        shown = d.ctl("show", kiro["id"]).stdout
        self.assertRegex(shown, r"agent lacks\s+no tool events")
        self.assertIn("no token counts", shown)

        listed = {l["id"]: l for l in d.ctl_json("list")["loops"]}
        self.assertEqual(listed[claude["id"]]["input_tokens"], 400)
        self.assertAlmostEqual(listed[claude["id"]]["cost_usd"], 0.0024, places=6)
        self.assertIsNone(listed[kiro["id"]]["cost_usd"])

        with_events = d.ctl_json("show", "--events", claude["id"])
        self.assertIn("Write", [e["tool"] for e in with_events["events"]])

        rendered = d.ctl("tail", claude["id"]).stdout
        self.assertIn("● Write", rendered)
        self.assertIn("Iteration 1: wrote ralph-progress.txt. More work remains.", rendered)
        self.assertNotIn('{"type"', rendered)
        # top, with the claude loop selected: its stream rendered the same way, tokens and cost.
        frame = d.ctl("top", "--once", claude["id"]).stdout
        self.assertRegex(frame, r"%d\s+c\s+completed\s+2/30\s+\S+\s+480\s+\$0\.0024" % claude["id"])
        self.assertIn("── loop %d c" % claude["id"], frame)
        self.assertIn("● Write", frame)
        self.assertIn("All tasks finished.", frame)
        self.assertNotIn('{"type"', frame)

        raw = d.ctl("tail", "--raw", claude["id"], text=False).stdout
        fixtures = os.environ["RALPH_FIXTURES"]
        recorded = b"".join(open(os.path.join(fixtures, "agents", "claude", s + ".jsonl"), "rb").read()
                            for s in ("ralph-iter1", "ralph-iter2"))
        self.assertEqual(raw, recorded)


if __name__ == "__main__":
    main()
