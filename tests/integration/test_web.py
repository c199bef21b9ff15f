"""The API on TCP (ralphd --listen) and its web gate, over real HTTP and WebSocket connections.

The token file is 0600; without the token (or with a wrong one) every request gets 401 and
nothing else; GET /login?token=T answers 303 to / with an HttpOnly SameSite=Strict cookie, which
then opens the API, as does `Authorization: Bearer T`; a Host that is not this server's (DNS
rebinding) and an Origin of another site on a POST or a WebSocket upgrade get 403; every
response carries the Content-Security-Policy; more than 10 failed logins a minute from one address
are answered slowly; `ralphctl web` prints the login URL, `--rotate-token` replaces the token (the
old one and its cookie stop working); the Unix socket needs no token."""

import http.client
import json
import os
import stat
import time

from harness import (DaemonTestCase, UnixHTTPConnection, WebSocket, free_tcp_port, main,
                     read_text, scaled)


RPC_INFO = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "daemon.info"})


class WebGateTest(DaemonTestCase):

    def setUp(self):
        self.port = free_tcp_port()
        self.d = self.daemon(extra_args=["--listen", "127.0.0.1:%d" % self.port])
        self.token = read_text(os.path.join(os.path.dirname(self.d.db), "web-token")).strip()

    def request(self, method, path, body=None, headers=None, host=None):
        """One request on a new TCP connection: (status, headers, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=scaled(30))
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
        self.assertIn("failed logins from 127.0.0.1 within a minute", self.d.log_text())
        # The daemon serves everyone else meanwhile.
        self.assertEqual(self.d.call("daemon.info")["pid"], self.d.pid)

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


if __name__ == "__main__":
    main()
