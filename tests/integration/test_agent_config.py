"""Every agent as its users configure it (README, Agents' environment): a codex model provider of
config.toml with its env_key and env_http_headers, gemini's GOOGLE_GEMINI_BASE_URL, opencode's
{env:NAME}, claude's apiKeyHelper, aider's azure/ model. The fake agents
(tests/agents/replay-agent.py, agent_config.py) read their configuration as the real CLIs do and
fail with their words without what it names. Checked: each gets what its configuration names,
loops to completion with its tokens, gets nothing of it without the configuration (the env
policy still protects ralphd's other secrets); `ralphctl agents` and `doctor` name what each
gets and what it lacks; a variable withheld or unset is a `config` failure that stops the loop
at its first attempt with the fix."""

import http.server
import json
import os
import threading

from harness import DaemonTestCase, codex_gateway_config, fake_agent_bin, main, write_text

# ralphd's environment: what each configuration below names, and a secret nobody names.
GATEWAY_ENV = {
    "MYGATEWAY_KEY": "codex-gateway-secret",
    "TEAM_TOKEN": "codex-team-header",
    "OC_GATEWAY_KEY": "opencode-gateway-secret",
    "VAULT_TOKEN": "claude-helper-secret",
    "AZURE_API_KEY": "azure-secret",
    "AZURE_API_BASE": "https://azure.invalid",
    "AZURE_API_VERSION": "2025-04-01-preview",
    "GEMINI_API_KEY": "gemini-gateway-key",
    "UNRELATED_SECRET": "nobody's",
}
# What each agent's configuration names.
NAMED = {
    "codex": ["MYGATEWAY_KEY", "TEAM_TOKEN"],
    "opencode": ["OC_GATEWAY_KEY"],
    "claude": ["VAULT_TOKEN"],
    "aider": ["AZURE_API_BASE", "AZURE_API_KEY", "AZURE_API_VERSION"],
    "gemini": ["GOOGLE_GEMINI_BASE_URL"],
}
CONFIG_NAMED = sorted({name for names in NAMED.values() for name in names}
                      - {"GOOGLE_GEMINI_BASE_URL"})




def configure_agents(d):
    """Each agent's own configuration in daemon d's HOME (and XDG_CONFIG_HOME), naming the
    variables of NAMED."""
    home = d.home
    write_text(os.path.join(home, ".codex", "config.toml"),
               codex_gateway_config("http://127.0.0.1:9"))
    write_text(os.path.join(d.config_dir, "opencode", "opencode.json"), json.dumps(
        {"provider": {"gateway": {"options": {"baseURL": "http://127.0.0.1:9/v1",
                                               "apiKey": "{env:OC_GATEWAY_KEY}"}}}}))
    write_text(os.path.join(home, ".claude", "settings.json"),
          json.dumps({"apiKeyHelper": 'printf %s "$VAULT_TOKEN"'}))
    write_text(os.path.join(home, ".aider.conf.yml"), "model: azure/gpt-4o  # the company's\n")


class GeminiGateway:
    """A local endpoint standing for a company's Gemini gateway: answers every POST, records
    the path and API key of each."""

    def __init__(self, test):
        requests = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                requests.append((self.path, self.headers.get("x-goog-api-key")))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        test.addCleanup(self.server.server_close)
        test.addCleanup(self.server.shutdown)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


class ConfiguredAgentsTest(DaemonTestCase):

    def agent_daemon(self, env, *extra_args):
        d = self.new_daemon_unstarted(extra_args=list(extra_args))
        d.env["PATH"] = fake_agent_bin(d.root) + ":" + d.env["PATH"]
        d.env.update(env)
        return d

    def submit(self, d, agent, script, *options, retries="0"):
        ws = d.workspace()
        log = os.path.join(ws, ".fake-agent-log")
        # FAKE_NO_INTERNET: Google's servers are out of reach, as on the machine of the report.
        loop = d.ctl_submit(ws, "Work through the task list.", "--agent", agent,
                            "--env", "FAKE_AGENT_SCRIPT=" + ",".join(script),
                            "--env", "FAKE_AGENT_LOG=" + log, "--env", "FAKE_NO_INTERNET=1",
                            "-m", "5", *options, name=agent, retries=retries)
        return loop, log

    def runs(self, log):
        with open(log) as f:
            return [json.loads(line) for line in f]

    def test_each_agent_gets_what_its_configuration_names_and_loops_to_completion(self):
        gateway = GeminiGateway(self)
        env = dict(GATEWAY_ENV, GOOGLE_GEMINI_BASE_URL=gateway.url)
        d = self.agent_daemon(env)
        configure_agents(d)
        d.start()
        loops = {agent: self.submit(d, agent, ["ralph-iter1", "ralph-iter2"]) for agent in NAMED}
        for agent, (loop, log) in loops.items():
            with self.subTest(agent=agent):
                final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
                self.assertEqual((final["state"], final["iterations"]), ("completed", 2), final)
                attempts = d.attempts(loop["id"])
                self.assertEqual([a["failure"] for a in attempts], ["", ""], attempts)
                self.assertTrue(all(a["input_tokens"] > 0 and a["output_tokens"] > 0
                                    for a in attempts), attempts)
                for run in self.runs(log):
                    for name in NAMED[agent]:
                        self.assertIn(name, run["env"])
                    # Nothing another agent's configuration names, nor ralphd's other secrets.
                    others = set(CONFIG_NAMED) - set(NAMED[agent]) | {"UNRELATED_SECRET"}
                    self.assertEqual(others & set(run["env"]), set(), run["env"])
        # The gateway got gemini's two requests, with the gateway's key.
        self.assertEqual(len(gateway.requests), 2, gateway.requests)
        self.assertTrue(all(key == "gemini-gateway-key" for _, key in gateway.requests))

        # `ralphctl agents` names what each gets of its own (never a value), and what every
        # agent gets; loop.get says the same of the loop's agent.
        listed = d.ctl_json("agents")
        agents = {a["name"]: a for a in listed["agents"]}
        for agent, names in NAMED.items():
            for name in names:
                self.assertIn(name, agents[agent]["environment"]["passed"], agent)
            self.assertEqual(agents[agent]["environment"]["withheld"], [], agent)
        self.assertNotIn("UNRELATED_SECRET", json.dumps(listed))
        self.assertNotIn("codex-gateway-secret", json.dumps(listed))
        self.assertIn("PATH", listed["environment"])
        self.assertEqual(agents["command"]["environment"]["passed"], [])
        self.assertIn("MYGATEWAY_KEY",
                      d.get(loops["codex"][0]["id"])["agent_info"]["environment"]["passed"])
        table = d.ctl("agents").stdout
        self.assertIn("MYGATEWAY_KEY, TEAM_TOKEN", table)
        self.assertIn("every agent gets: ", table)

    def test_without_the_configuration_the_variables_are_withheld(self):
        d = self.agent_daemon(dict(GATEWAY_ENV))
        d.start()
        # (gemini's configuration is its variable: without it, Google is out of reach.)
        loops = {agent: self.submit(d, agent, ["ralph-iter2"]) for agent in NAMED
                 if agent != "gemini"}
        for agent, (loop, log) in loops.items():
            with self.subTest(agent=agent):
                final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
                self.assertEqual(final["state"], "completed", final)
                for run in self.runs(log):
                    self.assertEqual((set(CONFIG_NAMED) | {"UNRELATED_SECRET"}) &
                                     set(run["env"]), set(), run["env"])
        agents = {a["name"]: a for a in d.ctl_json("agents")["agents"]}
        self.assertEqual(agents["codex"]["environment"]["passed"], [])

    def test_a_variable_withheld_or_unset_stops_the_loop_at_once_with_its_fix(self):
        # The gateway's key is in ralphd's environment, and a rule withholds it; the other
        # configuration names a key ralphd does not have.
        d = self.agent_daemon(GATEWAY_ENV, "--env-policy", "-MYGATEWAY_KEY")
        configure_agents(d)
        other = os.path.join(d.root, "other-codex")
        write_text(os.path.join(other, "config.toml"),
                   codex_gateway_config("http://127.0.0.1:9").replace("MYGATEWAY_KEY",
                                                                      "NOWHERE_KEY"))
        d.start()
        withheld, _ = self.submit(d, "codex", ["ralph-iter1"], retries="3")
        unset, _ = self.submit(d, "codex", ["ralph-iter1"], "--env", "CODEX_HOME=" + other,
                               retries="3")
        for loop, name, fix in ((withheld, "MYGATEWAY_KEY", "--env-policy +MYGATEWAY_KEY"),
                                (unset, "NOWHERE_KEY", "not in ralphd's environment")):
            with self.subTest(variable=name):
                final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
                self.assertEqual(final["state"], "failed", final)
                self.assertEqual([a["failure"] for a in d.attempts(loop["id"])], ["config"])
                self.assertIn("Missing environment variable: `%s`" % name, final["stop_reason"])
                self.assertIn(fix, final["stop_reason"])
                self.assertIn("--env %s=" % name, final["stop_reason"])
                self.assertIn(name, d.ctl("show", loop["id"]).stdout)

        # Said before any loop runs: `agents` and `doctor` name it, with the rule that passes it.
        codex = {a["name"]: a for a in d.ctl_json("agents")["agents"]}["codex"]
        self.assertEqual(codex["environment"]["withheld"], ["MYGATEWAY_KEY"])
        self.assertNotIn("MYGATEWAY_KEY", codex["environment"]["passed"])
        self.assertIn("withheld: MYGATEWAY_KEY", d.ctl("agents").stdout)
        checks = {c["check"]: c for c in
                  json.loads(d.ctl("--json", "doctor", check=False).stdout)["checks"]}
        self.assertEqual(checks["agent codex"]["status"], "warn", checks["agent codex"])
        self.assertIn("--env-policy +MYGATEWAY_KEY", checks["agent codex"]["fix"])
        self.assertEqual(checks["agent claude"]["status"], "ok", checks["agent claude"])


if __name__ == "__main__":
    main()
