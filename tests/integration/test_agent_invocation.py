"""How the `command` agent is started: argv split like a shell would but never run through one,
{prompt} and {prompt_file} as single arguments, --arg appended, stdin, cwd, and the environment
(what the env policy passes of the daemon's, plus the loop's --env, nothing from the client).
--sandbox is tested in test_security.py."""

import os

from harness import DaemonTestCase, TERMINAL_STATES, agent_command, main, read_bytes


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

    def test_the_agent_gets_the_daemons_variables_its_policy_passes_plus_the_loops_env_and_nothing_from_the_client(self):
        d = self.daemon(env={"RALPH_IT_DAEMON_VAR": "from the daemon",
                             "RALPH_IT_OVERRIDDEN": "daemon value"},
                        extra_args=["--env-policy", "+RALPH_IT_*"])
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
        # The API names the loop's variables, never their values.
        self.assertEqual(d.get(loop_id)["env_names"], ["RALPH_IT_LOOP_VAR", "RALPH_IT_OVERRIDDEN"])
        self.assertNotIn("env", d.get(loop_id))


if __name__ == "__main__":
    main()
