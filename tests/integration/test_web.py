"""The API on TCP (ralphd --listen) and its web gate, over real HTTP and WebSocket connections.

The token file is 0600; without the token (or with a wrong one) every request gets 401 and
nothing else; GET /login?token=T answers 303 to / with an HttpOnly SameSite=Strict cookie, which
then opens the API, as does `Authorization: Bearer T`; a Host that is not this server's (DNS
rebinding) and an Origin of another site on a POST or a WebSocket upgrade get 403; every
response carries the Content-Security-Policy; more than 10 failed logins a minute from one address
are answered slowly; `ralphctl web` prints the login URL, `--rotate-token` replaces the token (the
old one and its cookie stop working); the Unix socket needs no token; a web client may call
every method but the peers'."""

import http.client
import json
import os
import socket
import stat
import threading
import time

from harness import (DaemonTestCase, UnixHTTPConnection, WebSocket, all_pids, free_tcp_port,
                     main, proc_cmdline, read_text, scaled, wait_until, write_text)


RPC_INFO = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "daemon.info"})


class WebGateTest(DaemonTestCase):

    def setUp(self):
        self.port = free_tcp_port()
        self.d = self.daemon(extra_args=["--listen", "127.0.0.1:%d" % self.port])
        self.token = read_text(os.path.join(os.path.dirname(self.d.db), "web-token")).strip()

    def request(self, method, path, body=None, headers=None, host=None, source=None):
        """One request on a new TCP connection (from the address `source`, when given):
        (status, headers, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=scaled(30),
                                          source_address=(source, 0) if source else None)
        try:
            conn.putrequest(method, path, skip_host=True)
            conn.putheader("Host", host or "127.0.0.1:%d" % self.port)
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            data = body.encode() if body else b""
            if body is not None:
                conn.putheader("Content-Type", "application/json")
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def rpc(self, headers, **kwargs):
        return self.request("POST", "/rpc", RPC_INFO, headers, **kwargs)

    def login_cookie(self):
        status, headers, _ = self.request("GET", "/login?token=" + self.token)
        self.assertEqual(status, 303)
        return headers["Set-Cookie"].split(";")[0]

    def test_token_file_and_what_each_credential_opens(self):
        path = os.path.join(os.path.dirname(self.d.db), "web-token")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertRegex(self.token, r"^[0-9a-f]{64}$")

        status, headers, body = self.rpc({})
        self.assertEqual((status, body), (401, b""))
        self.assertEqual(self.rpc({"Authorization": "Bearer " + "0" * 64})[0], 401)
        self.assertEqual(self.rpc({"Cookie": "ralph_token=" + self.token[:-1] + "x"})[0], 401)
        self.assertEqual(self.request("GET", "/login?token=" + "f" * 64)[0], 401)
        self.assertEqual(self.request("GET", "/login")[0], 401)

        status, headers, body = self.rpc({"Authorization": "Bearer " + self.token})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["result"]["pid"], self.d.pid)

        status, headers, _ = self.request("GET", "/login?token=" + self.token)
        self.assertEqual(status, 303)
        self.assertEqual(headers["Location"], "/")
        cookie = headers["Set-Cookie"]
        self.assertEqual(cookie, "ralph_token=%s; HttpOnly; SameSite=Strict; Path=/" % self.token)
        status, _, body = self.rpc({"Cookie": "other=1; " + cookie.split(";")[0]})
        self.assertEqual(status, 200)
        # Every answer carries the browser's security policy, refusals included.
        for answer in (self.rpc({}), self.request("GET", "/login?token=" + self.token),
                       self.rpc({"Cookie": cookie.split(";")[0]})):
            policy = answer[1]["Content-Security-Policy"]
            self.assertIn("default-src 'self'", policy)
            self.assertIn("frame-ancestors 'none'", policy)
            self.assertEqual(answer[1]["X-Content-Type-Options"], "nosniff")
        # The dashboard's page: 401 without the token, served with it.
        self.assertEqual(self.request("GET", "/")[:3:2], (401, b""))
        self.assertEqual(self.request("GET", "/app.js")[:3:2], (401, b""))
        status, headers, body = self.request("GET", "/", headers={"Cookie": cookie.split(";")[0]})
        self.assertEqual((status, headers["Content-Type"]), (200, "text/html; charset=utf-8"))
        self.assertIn(b'<script src="/app.js"', body)
        self.assertIn("script-src 'self'", headers["Content-Security-Policy"])
        # The Unix socket needs no token, for the API and the pages.
        self.assertEqual(self.d.call("daemon.info")["pid"], self.d.pid)
        conn = UnixHTTPConnection(self.d.socket, timeout=scaled(30))
        try:
            conn.request("GET", "/")
            page = conn.getresponse()
            self.assertEqual(page.status, 200)
            self.assertIn(b"<title>ralph</title>", page.read())
        finally:
            conn.close()

    def test_host_and_origin_of_other_sites_are_refused(self):
        cookie = self.login_cookie()
        # DNS rebinding: a page of evil.example whose name now points at 127.0.0.1.
        self.assertEqual(self.rpc({"Cookie": cookie}, host="evil.example:%d" % self.port)[0],
                         403)
        self.assertEqual(self.request("GET", "/login?token=" + self.token,
                                      host="evil.example:%d" % self.port)[0], 403)
        self.assertEqual(self.rpc({"Cookie": cookie}, host="127.0.0.1:1")[0], 403)
        self.assertEqual(self.rpc({"Cookie": cookie}, host="localhost:%d" % self.port)[0], 200)
        # Another site's page posting with the cookie.
        self.assertEqual(self.rpc({"Cookie": cookie, "Origin": "http://evil.example"})[0], 403)
        self.assertEqual(self.rpc({"Cookie": cookie,
                                   "Origin": "http://127.0.0.1:%d" % self.port})[0], 200)
        # WebSocket upgrades: the same Origin rule, and the token.
        address = ("127.0.0.1", self.port)
        with self.assertRaisesRegex(AssertionError, "403"):
            WebSocket(address, headers={"Cookie": cookie, "Origin": "http://evil.example"})
        with self.assertRaisesRegex(AssertionError, "401"):
            WebSocket(address, headers={"Origin": "http://127.0.0.1:%d" % self.port})
        with WebSocket(address, headers={"Cookie": cookie,
                                         "Origin": "http://127.0.0.1:%d" % self.port}) as ws:
            ws.send_json({"jsonrpc": "2.0", "id": 7, "method": "daemon.info"})
            self.assertEqual(ws.recv_json()["result"]["pid"], self.d.pid)
        self.assertIn("refused a request from 127.0.0.1 for host 'evil.example", self.d.log_text())

    def test_a_web_client_may_not_call_the_peers_methods(self):
        # A peer's link comes over ssh to the Unix socket, never on TCP: -32601 there, on a
        # POST and on a WebSocket session, and nothing of the call is recorded.
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        hold = {"agent": "claude", "until": until, "reason": "limit", "origin": "build1"}
        status, _, body = self.request(
            "POST", "/rpc", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "peer.hold",
                                        "params": hold}),
            {"Authorization": "Bearer " + self.token})
        self.assertEqual(status, 200)
        error = json.loads(body)["error"]
        self.assertEqual((error["code"], error["message"]), (-32601, "Method not found"))
        self.assertIn("not available to a web client", error["data"])
        with WebSocket(("127.0.0.1", self.port),
                       headers={"Authorization": "Bearer " + self.token}) as ws:
            ws.send_json({"jsonrpc": "2.0", "id": 2, "method": "peer.link",
                          "params": {"host": "build1", "holds": [hold]}})
            self.assertEqual(ws.recv_json()["error"]["code"], -32601)
            ws.send_json({"jsonrpc": "2.0", "id": 3, "method": "events.subscribe"})
            self.assertEqual(ws.recv_json()["result"], {"subscribed": True})
        self.assertEqual(self.d.call("budget.get")["holds"], [])
        # On the Unix socket, the same hold is taken.
        self.assertTrue(self.d.call("peer.hold", hold)["changed"])
        self.assertEqual([h["agent"] for h in self.d.call("budget.get")["holds"]], ["claude"])

    def test_failed_logins_are_slowed_down(self):
        wrong = "/login?token=" + "e" * 64
        started = time.monotonic()
        for _ in range(10):
            self.assertEqual(self.request("GET", wrong)[0], 401)
        self.assertLess(time.monotonic() - started, scaled(5))
        started = time.monotonic()
        self.assertEqual(self.request("GET", wrong)[0], 401)  # the 11th: a second
        self.assertEqual(self.request("GET", wrong)[0], 401)  # the 12th: two
        self.assertGreaterEqual(time.monotonic() - started, 3)
        self.assertIn("failed logins from this machine (loopback) within a minute",
                      self.d.log_text())
        # The daemon serves everyone else meanwhile.
        self.assertEqual(self.d.call("daemon.info")["pid"], self.d.pid)

    def test_failed_logins_slow_their_source_never_the_right_token(self):
        # Eleven wrong tokens at once from 127.0.0.1: the 11th is answered a second late.
        wrong = "/login?token=" + "e" * 64
        guesses = [threading.Thread(target=self.request, args=("GET", wrong))
                   for _ in range(11)]
        for guess in guesses:
            guess.start()
        wait_until(lambda: "failed logins from" in self.d.log_text(), 10, "the brake")
        # The owner, from the same address, with the right token: answered at once.
        started = time.monotonic()
        self.assertEqual(self.rpc({"Authorization": "Bearer " + self.token})[0], 200)
        self.assertLess(time.monotonic() - started, 1.0, "the right token waited")
        for guess in guesses:
            guess.join(scaled(20))
        # Another loopback address is the same machine, and the same guesser: the 12th failure
        # waits two seconds.
        started = time.monotonic()
        self.assertEqual(self.request("GET", wrong, source="127.0.0.2")[0], 401)
        self.assertGreaterEqual(time.monotonic() - started, 1.5, "a new address escaped the brake")
        self.assertIn("11 failed logins from this machine (loopback) within a minute",
                      self.d.log_text())

    def test_a_strangers_body_is_not_read_before_its_token(self):
        # The header of a 1 MiB POST without the token, and a little of its body: the 401 comes
        # at once, without waiting for (and holding) the rest.
        with socket.create_connection(("127.0.0.1", self.port), timeout=scaled(10)) as s:
            s.sendall(("POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
                       "application/json\r\nContent-Length: %d\r\n\r\n"
                       % (self.port, 1 << 20)).encode() + b"x" * 4096)
            s.settimeout(3)
            self.assertTrue(s.recv(64).startswith(b"HTTP/1.1 401 "),
                            "no answer before the whole body")
        # With the token, a body is read and served as ever.
        self.assertEqual(self.rpc({"Authorization": "Bearer " + self.token})[0], 200)

    def test_ralphctl_web_prints_the_login_url_and_rotates_the_token(self):
        url = self.d.ctl("web").stdout.strip()
        self.assertEqual(url, "http://127.0.0.1:%d/login?token=%s" % (self.port, self.token))
        cookie = self.login_cookie()
        rotated = self.d.ctl_json("web", "--rotate-token")["web"]
        self.assertNotEqual(rotated["token"], self.token)
        self.assertEqual(rotated["url"], "http://127.0.0.1:%d/login?token=%s"
                         % (self.port, rotated["token"]))
        path = os.path.join(os.path.dirname(self.d.db), "web-token")
        self.assertEqual(read_text(path).strip(), rotated["token"])
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertEqual(self.rpc({"Cookie": cookie})[0], 401)
        self.assertEqual(self.rpc({"Authorization": "Bearer " + rotated["token"]})[0], 200)
        # The token survives a restart; a daemon without --listen says how to reach it.
        self.d.stop()
        self.d.start()
        self.assertEqual(self.rpc({"Authorization": "Bearer " + rotated["token"]})[0], 200)
        self.d.stop()
        self.d.extra_args = []
        self.d.start()
        out = self.d.ctl("web").stdout
        self.assertIn("ralphd serves no TCP (start it with --listen 127.0.0.1:7177)", out)
        self.assertIn("ssh -L 7177:%s HOST" % self.d.socket, out)

    def test_bad_listen_addresses_are_refused_at_start(self):
        for bad in ("7177", "example.org:7177", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:x"):
            proc = self.new_daemon_unstarted(extra_args=["--listen", bad])
            proc.start(wait=False)
            proc.proc.wait(timeout=scaled(10))
            self.assertNotEqual(proc.proc.returncode, 0)
            self.assertIn("expected ADDRESS:PORT", proc.log_text())
            proc.proc = None


FAKE_BROWSER = """#!/usr/bin/env python3
# xdg-open as `ralphctl web --open` runs it: logs in with the URL it is given, says how that went,
# then stays a moment (a browser runs on) so that its command line can be seen.
import http.client, json, sys, time, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
answers = []
for _ in range(2):  # the second use of a login code must fail
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request("GET", url.path + "?" + url.query)
    answer = conn.getresponse()
    answers.append([answer.status, answer.getheader("Set-Cookie", "")])
    conn.close()
with open(sys.argv[0] + ".json", "w") as out:
    json.dump({"url": sys.argv[1], "answers": answers}, out)
time.sleep(2)
"""

# The agent: keeps the key it was given, and runs a moment.
SECRET_AGENT = """#!/bin/sh
printf %s "$API_KEY" > key-seen
printf %s "$OTHER_KEY" > other-key-seen
sleep 2
echo '<promise>COMPLETE</promise>'
"""


def private_file(path, text, mode=0o600):
    write_text(path, text)
    os.chmod(path, mode)
    return path


class NoSecretOnACommandLineTest(DaemonTestCase):
    """Every secret ralph is given — the web token, webhook URLs, the agents' API keys (from a file,
    or from ralphctl's environment with `--env K`) — stays off every command line (/proc/PID/cmdline, which every user reads) of every process of a
    realistic flow: ralphd with --notify-file and an on-done hook, a submit with --env-file and
    --notify-file, its agent under its shim, and `ralphctl web --open` with its browser."""

    def test_no_secret_is_on_a_command_line(self):
        from test_notifications import Receiver
        receiver = Receiver()
        self.addCleanup(receiver.stop)
        secrets = {"daemon webhook": "daemon-hook-" + os.urandom(8).hex(),
                   "loop webhook": "loop-hook-" + os.urandom(8).hex(),
                   "API key": "api-key-" + os.urandom(8).hex(),
                   "key from the environment": "other-key-" + os.urandom(8).hex()}
        port = free_tcp_port()
        d = self.new_daemon_unstarted()
        files = os.path.join(d.root, "files")
        os.makedirs(files)
        daemon_hooks = private_file(os.path.join(files, "daemon-hooks"),
                                    "# the daemon's webhook\n%s\n"
                                    % receiver.url("/" + secrets["daemon webhook"]))
        on_done = private_file(os.path.join(files, "on-done.sh"),
                               "#!/bin/sh\nsleep 1\ntouch %s/hook-ran\n" % files, 0o700)
        d.extra_args = ["--listen", "127.0.0.1:%d" % port, "--notify-file", daemon_hooks,
                        "--on-done", on_done]
        d.start()
        token = read_text(os.path.join(os.path.dirname(d.db), "web-token")).strip()
        secrets["web token"] = token

        env_file = private_file(os.path.join(files, "agent.env"),
                                "API_KEY=%s\n" % secrets["API key"])
        loop_hooks = private_file(os.path.join(files, "loop-hooks"),
                                  receiver.url("/" + secrets["loop webhook"]) + "\n")
        agent = private_file(os.path.join(files, "agent.sh"), SECRET_AGENT, 0o700)
        browser_bin = os.path.join(files, "bin")
        browser = private_file(os.path.join(browser_bin, "xdg-open"), FAKE_BROWSER, 0o700)
        ws = d.workspace()

        seen = {}  # what the scan saw run: name -> a command line of it
        leaks = []

        def scan():
            for pid in all_pids():
                line = proc_cmdline(pid)
                for name, secret in secrets.items():
                    if secret in line:
                        leaks.append((name, pid, line))
                for name in ("ralphd", "ralph-shim", "agent.sh", "on-done.sh", "xdg-open",
                             "ralphctl"):
                    if name in line and d.root in line or name == "ralphd" and pid == d.pid:
                        seen.setdefault(name, line)

        submit = d.ctl_popen("submit", "--agent", "command", "--command", agent,
                             "--env-file", env_file, "--env", "OTHER_KEY",
                             "--notify-file", loop_hooks, "--workspace", ws, "--allow-dirty",
                             "--max-iterations", "1", "--wait", "work on it",
                             env={"OTHER_KEY": secrets["key from the environment"]})
        web = d.ctl_popen("web", "--open", env={"PATH": browser_bin + ":" + os.environ["PATH"]})
        deadline = time.monotonic() + scaled(30)
        while (submit.poll() is None or web.poll() is None or
               not os.path.exists(os.path.join(files, "hook-ran"))):
            scan()
            self.assertLess(time.monotonic(), deadline, "the flow did not end: %r" % seen)
            time.sleep(0.01)
        self.assertEqual(leaks, [])
        self.assertEqual(sorted(seen), ["agent.sh", "on-done.sh", "ralph-shim", "ralphctl",
                                        "ralphd", "xdg-open"], "the scan saw each of them run")
        submitted, web_said = submit.communicate(), web.communicate()
        self.assertEqual(submit.returncode, 0, submitted)
        self.assertEqual(read_text(os.path.join(ws, "key-seen")), secrets["API key"],
                         "the agent got its key")
        self.assertEqual(read_text(os.path.join(ws, "other-key-seen")),
                         secrets["key from the environment"])
        # The browser logged in with a code that worked once.
        opened = json.loads(read_text(browser + ".json"))
        self.assertRegex(opened["url"], r"^http://127\.0\.0\.1:%d/login\?code=[0-9a-f]{32}$" % port)
        self.assertEqual(opened["answers"][0][0], 303)
        self.assertTrue(opened["answers"][0][1].startswith("ralph_token=%s;" % token))
        self.assertEqual(opened["answers"][1][0], 401)
        self.assertEqual(web.returncode, 0, web_said)
        # Both webhooks were told, at the URLs of the files.
        wait_until(lambda: len(receiver.received()) >= 2, 10, "the notifications")
        self.assertEqual(sorted(p["path"] for p in receiver.received()),
                         sorted("/" + secrets[name] for name in ("daemon webhook", "loop webhook")))

    def test_files_of_secrets_others_may_read_are_refused(self):
        d = self.daemon()
        shared = os.path.join(d.root, "shared.env")
        private_file(shared, "API_KEY=x\n", 0o644)
        refused = d.ctl("submit", "--env-file", shared, "--workspace", d.workspace(), "p",
                        check=False)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn("--env-file %s: others may read or write it (mode 0644)" % shared,
                      refused.stderr)
        self.assertIn("chmod 600 " + shared, refused.stderr)
        d.stop()
        d.extra_args = ["--notify-file", shared]
        d.start(wait=False)
        d.proc.wait(timeout=scaled(10))
        self.assertNotEqual(d.proc.returncode, 0)
        self.assertIn("--notify-file %s: others may read or write it" % shared, d.log_text())
        d.proc = None


if __name__ == "__main__":
    main()
