"""The real agent CLIs, configured as their users configure them, loop to completion under ralphd
(README, Agents' environment): codex with a model provider of its own `~/.codex/config.toml`
(base_url, env_key, env_http_headers), gemini with GOOGLE_GEMINI_BASE_URL and the API key its
settings select. No internet and no real model: each talks to a stand-in server on loopback
(model_servers.py) that answers in its API's streaming shape and records every request.

Checked, with ralphd's default env policy: each loop completes in 2 iterations; the stand-in saw
2 model requests, each with the key (and the header) the user's configuration names; the tokens
ralph recorded per attempt are those the stand-in reported. And the failures a user meets first,
in the real CLIs' own words: codex's env_key withheld by the policy, gemini in a workspace it
does not trust, each a `config` failure that stops the loop at its first attempt with a fix that
works.

The CLIs are npm packages pinned by tests/agent-clis/package-lock.json (scripts/test.sh runs
`npm ci` there): without them the tests are skipped, or fail under CI."""

import json
import os
import subprocess
import tempfile

from harness import DaemonTestCase, codex_gateway_config, main, skip_test, write_text
from model_servers import GeminiServer, ResponsesServer, usage

HERE = os.path.dirname(os.path.abspath(__file__))
CLI_BIN = os.path.join(HERE, "..", "agent-clis", "node_modules", ".bin")

ANSWERS = ["Iteration 1: the first tasks are done. More work remains.",
           "All tasks finished.\n<promise>COMPLETE</promise>"]
PROMPT = ("Work through the task list in this repository. When every task is done, reply with "
          "<promise>COMPLETE</promise>.")




def require_cli(name):
    """Skips (or fails under CI) unless the CLI `name` of tests/agent-clis runs here."""
    path = os.path.join(CLI_BIN, name)
    if not os.access(path, os.X_OK):
        skip_test("%s is not installed: run `npm ci --prefix tests/agent-clis --ignore-scripts` "
                  "(scripts/test.sh does; it needs npm's registry once)" % name)
    # gemini-cli needs Node.js 20 or later (Debian 12's is 18).
    with tempfile.TemporaryDirectory() as home:  # what it writes at start is not the user's
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, HOME=home))
    if proc.returncode != 0:
        skip_test("`%s --version` fails here: %s" % (name, (proc.stderr or proc.stdout).strip()))


class RealCliTest(DaemonTestCase):

    def cli_daemon(self, env, *extra_args):
        """ralphd with the real CLIs first on its PATH, `env` in its environment (the user's
        keys, as their shell has them)."""
        d = self.new_daemon_unstarted(extra_args=list(extra_args))
        d.env["PATH"] = os.path.abspath(CLI_BIN) + ":" + d.env["PATH"]
        d.env.update(env)
        return d

    def submit(self, d, agent, *options):
        return d.ctl_submit(d.workspace(), PROMPT, "--agent", agent, "-m", "2",
                            "--timeout", "60s", *options, name=agent, retries="3")

    def assert_completed_with_the_servers_tokens(self, d, loop, server):
        final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=90)
        attempts = d.attempts(loop["id"])
        self.assertEqual((final["state"], final["iterations"]), ("completed", 2),
                         (final, attempts, server.requests))
        self.assertEqual([(a["failure"], a["error"]) for a in attempts], [("", "")] * 2, attempts)
        self.assertEqual([(a["input_tokens"], a["output_tokens"]) for a in attempts],
                         [usage(0), usage(1)], attempts)
        self.assertEqual(len(server.model_requests()), 2, server.requests)

    # ------------------------------------------------------------------ codex

    def codex_daemon(self, server, *extra_args):
        d = self.cli_daemon({"MYGATEWAY_KEY": "codex-gateway-secret"}, *extra_args)
        write_text(os.path.join(d.home, ".codex", "config.toml"),
                   codex_gateway_config(server.url, model="company-model"))
        d.start()
        return d

    def test_codex_with_its_own_model_provider_loops_to_completion(self):
        require_cli("codex")
        server = ResponsesServer(self, ANSWERS)
        d = self.codex_daemon(server)
        # The key from ralphd's environment (the provider's env_key names it); the header's
        # token given to this loop.
        loop = self.submit(d, "codex", "--env", "TEAM_TOKEN=codex-team-header")
        self.assert_completed_with_the_servers_tokens(d, loop, server)
        for request in server.model_requests():
            self.assertEqual(request["path"], "/v1/responses")
            self.assertEqual(request["body"]["model"], "company-model")
            self.assertEqual(request["headers"].get("authorization"),
                             "Bearer codex-gateway-secret", request["headers"])
            self.assertEqual(request["headers"].get("x-team"), "codex-team-header")
        self.assertIn("All tasks finished.", d.output(loop["id"]).decode())

    def test_codex_without_its_providers_key_stops_at_once_with_the_fix(self):
        require_cli("codex")
        server = ResponsesServer(self, ANSWERS)
        d = self.codex_daemon(server, "--env-policy", "-MYGATEWAY_KEY")
        loop = self.submit(d, "codex")
        final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
        self.assertEqual(final["state"], "failed", final)
        attempts = d.attempts(loop["id"])
        self.assertEqual([a["failure"] for a in attempts], ["config"], attempts)
        self.assertIn("Missing environment variable: `MYGATEWAY_KEY`", final["stop_reason"])
        self.assertIn("--env-policy +MYGATEWAY_KEY", final["stop_reason"])
        self.assertEqual(server.requests, [])

    # ------------------------------------------------------------------ gemini

    def gemini_daemon(self, server, trusted=True):
        d = self.cli_daemon({"GOOGLE_GEMINI_BASE_URL": server.url,
                             "GEMINI_API_KEY": "gemini-gateway-key"})
        # What a user who chose "Use Gemini API key" keeps in ~/.gemini/settings.json, and the
        # folders they trusted (gemini-cli refuses to run headless in any other).
        write_text(os.path.join(d.home, ".gemini", "settings.json"),
              json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
        if trusted:
            write_text(os.path.join(d.home, ".gemini", "trustedFolders.json"),
                  json.dumps({d.work_dir: "TRUST_FOLDER"}))
        d.start()
        return d

    def test_gemini_with_its_base_url_loops_to_completion(self):
        require_cli("gemini")
        server = GeminiServer(self, ANSWERS)
        d = self.gemini_daemon(server)
        loop = self.submit(d, "gemini", "--model", "gemini-2.5-pro")
        self.assert_completed_with_the_servers_tokens(d, loop, server)
        for request in server.model_requests():
            self.assertEqual(request["path"],
                             "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
            self.assertEqual(request["headers"].get("x-goog-api-key"), "gemini-gateway-key")
        self.assertIn("All tasks finished.", d.output(loop["id"]).decode())

    def test_gemini_in_a_workspace_it_does_not_trust_stops_at_once_with_the_fix(self):
        require_cli("gemini")
        server = GeminiServer(self, ANSWERS)
        d = self.gemini_daemon(server, trusted=False)
        loop = self.submit(d, "gemini", "--model", "gemini-2.5-pro")
        final = d.wait_state(loop["id"], ("completed", "failed", "exhausted"), timeout=60)
        self.assertEqual(final["state"], "failed", final)
        attempts = d.attempts(loop["id"])
        self.assertEqual([a["failure"] for a in attempts], ["config"], attempts)
        self.assertIn("not running in a trusted directory", final["stop_reason"])
        fix = "--env GEMINI_CLI_TRUST_WORKSPACE=true"
        self.assertIn(fix, final["stop_reason"])
        self.assertEqual(server.requests, [])
        # The fix it gives works.
        loop = self.submit(d, "gemini", "--model", "gemini-2.5-pro", *fix.split())
        self.assert_completed_with_the_servers_tokens(d, loop, server)


if __name__ == "__main__":
    main()
