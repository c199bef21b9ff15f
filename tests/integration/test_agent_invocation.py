"""How the `command` agent is started: argv split like a shell would but never run through one,
{prompt} and {prompt_file} as single arguments, --arg appended, stdin, cwd, and the environment
(the daemon's own plus the loop's --env, nothing from the client); and --sandbox (bubblewrap):
what the agent may write, and that a cancel still ends everything inside."""

import os
import shutil
import subprocess
import unittest

from harness import (DaemonTestCase, TERMINAL_STATES, agent_command, main, processes_in_group,
                     wait_until, scaled)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def recorded_args(ws):
    return [a.decode() for a in read_bytes(os.path.join(ws, ".args")).split(b"\0")[:-1]]


class AgentInvocationTest(DaemonTestCase):

    def prompt_with_shell_syntax(self, d):
        self.markers = [os.path.join(d.root, name) for name in ("pwned-1", "pwned-2", "pwned-3")]
        return ("Fix \"the bug\" and it's done; $(touch %s) `touch %s` ${HOME} * ? ~ \\ \n"
                "second line | touch %s && echo 'single' > /dev/null #end"
                % tuple(self.markers))

    def assertNothingRanThroughAShell(self):
        for marker in self.markers:
            self.assertFalse(os.path.exists(marker), "the prompt was run through a shell")

    def test_prompt_is_substituted_as_one_verbatim_argument_and_stdin_is_dev_null(self):
        d = self.daemon()
        ws = d.workspace()
        prompt = self.prompt_with_shell_syntax(d)
        template = agent_command("print-args.sh") + " {prompt} 'two words' \"\" plain"
        loop = d.ctl_submit(ws, prompt, "--command", template, "--arg", "extra arg", "-m", "1")
        d.wait_state(loop["id"], TERMINAL_STATES, timeout=20)
        self.assertEqual(d.attempts(loop["id"])[0]["termination"], "exited")

        args = recorded_args(ws)
        self.assertEqual(len(args), 5, args)
        self.assertIn(prompt, args[0], "the whole prompt is one argument")
        self.assertEqual(args[1:], ["two words", "", "plain", "extra arg"])
        self.assertEqual(read_bytes(os.path.join(ws, ".stdin")), b"",
                         "stdin is /dev/null when the prompt is an argument")
        self.assertEqual(os.path.realpath(read_bytes(os.path.join(ws, ".cwd")).decode().strip()),
                         os.path.realpath(ws), "the agent runs in its workspace")
        self.assertNothingRanThroughAShell()
        argv = d.attempts(loop["id"])[0]["argv"]
        self.assertEqual(argv[1:], args, "the attempt records the argv it ran")

    def test_prompt_file_is_substituted_as_one_path_and_the_prompt_is_also_on_stdin(self):
        d = self.daemon()
        ws = d.workspace()
        prompt = self.prompt_with_shell_syntax(d)
        template = agent_command("print-args.sh") + " --file {prompt_file}"
        loop = d.ctl_submit(ws, prompt, "--command", template, "-m", "1")
        d.wait_state(loop["id"], TERMINAL_STATES, timeout=20)
        self.assertEqual(d.attempts(loop["id"])[0]["termination"], "exited")

        args = recorded_args(ws)
        self.assertEqual(len(args), 2, args)
        self.assertEqual(args[0], "--file")
        self.assertTrue(os.path.isabs(args[1]), args)
        self.assertIn(prompt.encode(), read_bytes(os.path.join(ws, ".argfile.1")))
        self.assertIn(prompt.encode(), read_bytes(os.path.join(ws, ".stdin")),
                      "stdin is the prompt file")
        self.assertNothingRanThroughAShell()

    def test_the_agent_gets_the_daemons_environment_plus_the_loops_env_and_nothing_from_the_client(self):
        d = self.daemon(env={"RALPH_IT_DAEMON_VAR": "from the daemon",
                             "RALPH_IT_OVERRIDDEN": "daemon value"})
        ws = d.workspace()
        command = agent_command("print-env.sh", "RALPH_IT_DAEMON_VAR", "RALPH_IT_LOOP_VAR",
                                "RALPH_IT_OVERRIDDEN", "RALPH_IT_CLIENT_VAR")
        proc = d.ctl("--json", "submit", "--workspace", ws, "--name", "env", "--delay", "0s",
                     "-m", "1", "--command", command,
                     "--env", "RALPH_IT_LOOP_VAR=loop value with = sign",
                     "--env", "RALPH_IT_OVERRIDDEN=loop value", "Print the environment",
                     env={"RALPH_IT_CLIENT_VAR": "only in the client"})
        loop_id = d.find_loop("env")["id"]
        self.assertIn('"schema_version"', proc.stdout)
        d.wait_state(loop_id, TERMINAL_STATES, timeout=20)
        self.assertEqual(d.output(loop_id),
                         b"RALPH_IT_DAEMON_VAR=from the daemon\n"
                         b"RALPH_IT_LOOP_VAR=loop value with = sign\n"
                         b"RALPH_IT_OVERRIDDEN=loop value\n"
                         b"RALPH_IT_CLIENT_VAR is unset\n")
        self.assertEqual(d.get(loop_id)["env"],
                         {"RALPH_IT_LOOP_VAR": "loop value with = sign",
                          "RALPH_IT_OVERRIDDEN": "loop value"})


def bubblewrap_problem():
    """Why bwrap cannot sandbox anything here, or None when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (scripts/install-deps.sh installs it)"
    proc = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return "bwrap cannot create its namespaces on this machine: " + proc.stderr.strip()
    return None


class SandboxTest(DaemonTestCase):

    def setUp(self):
        super().setUp()
        problem = bubblewrap_problem()
        if problem:
            raise unittest.SkipTest(problem)

    def git_workspace(self, d):
        ws = d.workspace()
        for args in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@example.com",
                                      "commit", "-q", "--allow-empty", "-m", "start"]):
            subprocess.run(["git", "-C", ws] + args, check=True, capture_output=True)
        return ws

    def test_a_sandboxed_agent_writes_only_its_workspace_git_directory_and_a_private_tmp(self):
        d = self.daemon()
        ws = self.git_workspace(d)
        outside = os.path.join(d.root, "outside")
        os.mkdir(outside)
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
        log = subprocess.run(["git", "-C", ws, "log", "--format=%s"], capture_output=True,
                             text=True, check=True).stdout.split("\n")
        self.assertEqual(log[0], "sandbox probe", "the agent's commit is in the repository")
        self.assertRegex(d.ctl("show", loop["id"]).stdout, r"sandbox\s+bubblewrap")
        argv = d.attempts(loop["id"])[0]["argv"]
        self.assertTrue(argv[0].endswith("/bwrap"), argv)
        self.assertEqual(argv[-2:], [agent_command("sandbox-probe.sh"), outside])

        # The same agent without --sandbox writes where it likes.
        plain = d.ctl_submit(ws, "Probe again.", "-m", "1", "--command",
                             agent_command("sandbox-probe.sh", outside), name="plain")
        d.wait_state(plain["id"], ["completed"], timeout=30)
        self.assertIn("outside: ok", d.output(plain["id"]).decode())
        if os.path.exists(host_tmp_file):
            os.unlink(host_tmp_file)

    def test_cancel_ends_everything_inside_the_sandbox(self):
        d = self.daemon()
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
        d = self.daemon()
        empty = os.path.join(d.root, "empty-bin")
        os.mkdir(empty)
        proc = d.ctl("submit", "--workspace", d.workspace(), "--sandbox", "--env", "PATH=" + empty,
                     "--command", agent_command("count-to-complete.sh", 1), "Probe.",
                     check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("apt install bubblewrap", proc.stderr)


if __name__ == "__main__":
    main()
