"""ralphctl.conf and submit's default agent: without --agent (nor --command, nor a configured
agent) a loop runs on the first of claude, codex, gemini, opencode, aider, kiro that ralphd finds
on its PATH, and submit says so; none found is a usage error that says what to do. The file
($XDG_CONFIG_HOME/ralph/ralphctl.conf) gives the agent, its model, the host and submit's limits,
which the command line overrides; a mistake in it is an error naming the line."""

import os

from harness import DaemonTestCase, fake_agent_bin, main, write_text


class ClientConfigTest(DaemonTestCase):

    def daemon_with_agents(self, *names):
        """A ralphd whose PATH has fake agent CLIs of these names (and no real one)."""
        d = self.new_daemon_unstarted()
        d.env["PATH"] = fake_agent_bin(d.root, names) + ":/usr/bin:/bin"
        return d.start()

    def configure(self, d, text):
        write_text(os.path.join(d.config_dir, "ralph", "ralphctl.conf"), text)

    def submit(self, d, *options):
        """`ralphctl submit` of a prompt in a new workspace: the loop and the submitted line."""
        proc = d.ctl("submit", "--workspace", d.workspace(), "--allow-dirty", *options,
                     "Implement SPECS.md")
        loop = d.call("loop.list", {})["loops"][0]
        d.call("loop.cancel", {"id": loop["id"]})
        return d.get(loop["id"]), proc.stdout

    def test_without_an_agent_the_first_agent_cli_ralphd_finds_runs_and_submit_says_so(self):
        d = self.daemon_with_agents("gemini", "codex", "aider")
        loop, said = self.submit(d)
        self.assertEqual(loop["agent"], "codex", "codex comes before gemini and aider")
        self.assertIn("with codex (the first agent CLI ralphd finds on its PATH", said)
        # Named on the command line, or with --command, nothing is chosen or said.
        loop, said = self.submit(d, "--agent", "aider")
        self.assertEqual(loop["agent"], "aider")
        self.assertNotIn(" with ", said)
        loop, said = self.submit(d, "--command", "/bin/true")
        self.assertEqual(loop["agent"], "command")

        none = self.daemon_with_agents()
        proc = none.ctl("submit", "--workspace", none.workspace(), "x", check=False)
        self.assertEqual(proc.returncode, 2, proc)
        self.assertIn("ralphd finds none of claude, codex, gemini, opencode, aider, kiro on its PATH",
                      proc.stderr)
        self.assertIn("--agent NAME", proc.stderr)
        self.assertEqual(none.call("loop.list", {})["loops"], [])

    def test_ralphctl_conf_gives_the_agent_its_model_the_limits_and_the_host(self):
        d = self.daemon_with_agents("claude", "codex")
        self.configure(d, "# mine\nagent = codex\nmodel = \"o3-mini\"   # the cheap one\n"
                          "max-iterations = 7\ntimeout = 45m\nmax-cost = 2.5\n")
        loop, said = self.submit(d)
        self.assertEqual((loop["agent"], loop["model"], loop["max_iterations"], loop["timeout_s"],
                          loop["max_cost_usd"]), ("codex", "o3-mini", 7, 2700, 2.5))
        self.assertIn("with codex o3-mini (set in ", said)
        self.assertIn("ralphctl.conf)", said)
        # The command line wins; the configured model goes with the configured agent only.
        loop, _ = self.submit(d, "--agent", "claude", "-m", "3")
        self.assertEqual((loop["agent"], loop["model"], loop["max_iterations"]), ("claude", "", 3))
        loop, _ = self.submit(d, "--agent", "codex", "--model", "o3")
        self.assertEqual(loop["model"], "o3")

        # host: the ralphd ralphctl talks to when RALPH_SOCKET (and --host, RALPH_HOST) does not
        # say; a socket nobody listens on shows that it is the one asked.
        without_socket = {"RALPH_SOCKET": None}
        self.configure(d, "host = unix://%s\n" % d.socket)
        self.assertIn("codex", d.ctl("list", env=without_socket).stdout)
        self.configure(d, "host = unix://%s/elsewhere.sock\n" % d.root)
        proc = d.ctl("list", env=without_socket, check=False)
        self.assertEqual(proc.returncode, 3, proc)
        self.assertIn("elsewhere.sock", proc.stderr)
        self.assertEqual(d.ctl("list").returncode, 0, "RALPH_SOCKET wins over the file")

    def test_a_mistake_in_ralphctl_conf_is_an_error_naming_its_line(self):
        d = self.daemon_with_agents("claude")
        for text, said, hint in (("agent = claude\nagnet = codex\n",
                                  "ralphctl.conf:2: 'agnet' is not a setting of ralphctl",
                                  "did you mean 'agent'?"),
                                 ("max-iterations = lots\n",
                                  "ralphctl.conf:1: max-iterations: 'lots' is not a whole number",
                                  "give max-iterations as"),
                                 ("just words\n", "ralphctl.conf:1: 'just words' is not a setting",
                                  "name = value")):
            self.configure(d, text)
            proc = d.ctl("list", check=False)
            self.assertEqual(proc.returncode, 2, proc)
            self.assertIn(said, proc.stderr)
            self.assertIn(hint, proc.stderr)


if __name__ == "__main__":
    main()
