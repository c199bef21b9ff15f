"""Push notifications end to end (ralphd --notify URL, submit --notify URL, ralphctl notify test)
against local receivers: HTTP servers of this test on 127.0.0.1, and an HTTPS one whose
certificate a test CA made here signs (ralphd trusts it through SSL_CERT_FILE).

Every event — a loop completed, exhausted, failed, stalled, cancelled, waiting for a budget, its
completion rejected by --verify, and ralphd taking up a running loop after kill -9 — reaches every
format with its body (generic JSON, ntfy, Slack, Discord, Telegram). A receiver that is down gets
every notification once it is up, in order, each id once (a duplicate only with its id); ralphd
killed with SIGKILL before delivering delivers after its restart; HTTPS verifies the server's
certificate (a certificate of another CA is refused); a loop's own URL gets that loop's events
only and is shown redacted; bad URLs are refused with a clear message; an answer that never ends
is read up to its cap (ralphd's memory does not grow with it) and for 10 s at most."""

import json
import os
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import tempfile
import threading
import time

from harness import (DaemonTestCase, Receiver, RpcError, agent_command, free_tcp_port, main,
                     scaled,
                     wait_until, write_text)

FORMAT_PATHS = {
    "generic": "/generic",
    "slack": "/slack",
    "discord": "/discord",
    "telegram": "/botTOKEN/sendMessage?chat_id=42",
    "ntfy": "/ntfy/night",
}


def make_certificates(directory):
    """A test CA and a certificate it signs for 127.0.0.1; and a self-signed one of another
    "CA" for 127.0.0.1 that ralphd must refuse."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=ralph test CA")
    openssl("req", *key, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    write_text(os.path.join(directory, "san.ext"), "subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    openssl("req", "-x509", *key, "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")


def server_context(directory, name):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(directory, name + ".pem"),
                            os.path.join(directory, name + ".key"))
    return context


class EndlessReceiver:
    """A receiver that takes a POST and answers 200 with a chunked body that does not end: one
    chunk line that never ends (`limit` bytes of it, as fast as the socket takes them, then
    nothing), or, `trickle`, a chunk of one byte every 50 ms for 30 s."""

    def __init__(self, limit=0, trickle=False):
        self.limit = limit
        self.trickle = trickle
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            try:
                if self.trickle:
                    started = time.monotonic()
                    while time.monotonic() - started < 30:
                        conn.sendall(b"1\r\nx\r\n")
                        time.sleep(0.05)
                    return
                conn.sendall(b"1;")
                piece = b"a" * 65536
                for _ in range(self.limit // len(piece)):
                    conn.sendall(piece)
                conn.recv(1)  # then holds the connection until ralphd closes it
            except OSError:
                pass  # ralphd stopped reading

    def url(self):
        return "http://127.0.0.1:%d/endless" % self.port

    def close(self):
        self.server.close()


def peak_memory_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([line for line in f if line.startswith("VmHWM:")][0].split()[1])


class NotificationTest(DaemonTestCase):

    @classmethod
    def setUpClass(cls):
        cls.certs = tempfile.mkdtemp(prefix="ralph-certs-")
        make_certificates(cls.certs)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.certs, True)

    def receiver(self, tls=None, answer=b"ok"):
        r = Receiver(tls, answer)
        self.addCleanup(r.stop)
        return r

    def notify_daemon(self, urls, more_args=(), **kwargs):
        args = list(more_args)
        for url in urls:
            args += ["--notify", url]
        env = {"SSL_CERT_FILE": os.path.join(self.certs, "ca.pem")}
        return self.daemon(extra_args=args, env=env, **kwargs)

    def wait_posts(self, receiver, path, count, timeout=30):
        return wait_until(lambda: len(receiver.received(path)) >= count and
                          receiver.received(path), timeout,
                          "%d notification(s) at %s (got %r)" % (count, path,
                                                                  receiver.received(path)))

    def events_at(self, receiver, path):
        return [p["headers"].get("X-Ralph-Event") for p in receiver.received(path)]

    def test_every_event_reaches_every_format(self):
        r = self.receiver()
        urls = [r.url(path, "" if name == "generic" else name + "+")
                for name, path in FORMAT_PATHS.items()]
        d = self.notify_daemon(urls)
        ws = d.workspace()
        expected = []

        def run(state, command, **params):
            loop = d.submit(ws, command, **params)
            d.wait_state(loop["id"], state)
            expected.append(("loop." + state, loop["id"]))
            self.wait_posts(r, "/generic", len(expected))
            return loop

        run("completed", agent_command("count-to-complete.sh", "1"), name="done")
        run("failed", agent_command("fail.sh", "3"))
        run("exhausted", agent_command("never-complete.sh"), max_iterations=1)
        run("stalled", agent_command("fail.sh", "4"), max_retries=5, stall_failures=2)
        # --verify rejects the claim of completion: a rejection, then the loop runs out.
        os.remove(os.path.join(ws, ".count-to-complete"))
        rejected = d.submit(ws, agent_command("count-to-complete.sh", "1"), max_iterations=1,
                            verify_command="/bin/false")
        d.wait_state(rejected["id"], "exhausted")
        expected += [("loop.rejected", rejected["id"]), ("loop.exhausted", rejected["id"])]
        self.wait_posts(r, "/generic", len(expected))
        # The loop's own budget: one iteration an hour. It waits for it; then it is cancelled.
        waiting = d.submit(ws, agent_command("never-complete.sh"), max_iterations=3,
                           iterations_per_hour=1)
        d.wait_state(waiting["id"], "waiting")
        expected.append(("loop.waiting", waiting["id"]))
        self.wait_posts(r, "/generic", len(expected))
        d.call("loop.cancel", {"id": waiting["id"]})
        expected.append(("loop.cancelled", waiting["id"]))
        self.wait_posts(r, "/generic", len(expected))
        # ralphd killed while an agent runs: the next one adopts it and says so.
        running = d.submit(ws, agent_command("sleep.sh", "60"))
        d.wait_state(running["id"], "running")
        wait_until(lambda: d.attempts(running["id"]) and d.attempts(running["id"])[0]["pid"],
                   10, "the agent to run")
        d.kill9()
        d.start()
        expected.append(("daemon.recovered", None))
        self.wait_posts(r, "/generic", len(expected))
        d.call("loop.cancel", {"id": running["id"]})
        d.wait_state(running["id"], "cancelled")
        expected.append(("loop.cancelled", running["id"]))

        generic = self.wait_posts(r, "/generic", len(expected))
        self.assertEqual([(p["body"]["event"], (p["body"]["loop"] or {}).get("id"))
                          for p in generic], expected)
        ids = [p["body"]["id"] for p in generic]
        self.assertEqual(ids, sorted(set(ids)), "ids increase, each once")
        for post in generic:
            body = post["body"]
            self.assertEqual(body["schema_version"], 1)
            self.assertEqual(post["headers"]["X-Ralph-Notification-Id"], str(body["id"]))
            self.assertEqual(post["headers"]["Content-Type"], "application/json")
            self.assertTrue(body["title"] and body["text"] and body["time"] and body["host"])
            if body["event"] not in ("loop.rejected", "daemon.recovered"):
                self.assertEqual(body["event"], "loop." + body["loop"]["state"])
        done = generic[0]["body"]
        self.assertEqual(done["loop"]["name"], "done")
        self.assertIn("completion signal <promise>COMPLETE</promise>", done["text"])
        self.assertEqual(generic[4]["body"]["iteration"], 1)
        self.assertIn("--verify exited 1", generic[4]["body"]["text"])
        self.assertIn("waiting for the", generic[6]["body"]["text"])
        self.assertEqual(generic[8]["body"]["adopted"], 1)

        # The other formats: the same events, in the same order, in their own bodies.
        count = len(expected)
        for name in ("slack", "discord", "telegram"):
            self.wait_posts(r, FORMAT_PATHS[name].split("?")[0], count)
        slack = r.received("/slack")
        self.assertEqual(self.events_at(r, "/slack"), [e for e, _ in expected])
        self.assertEqual(list(slack[0]["body"]), ["text"])
        self.assertTrue(slack[0]["body"]["text"].startswith('*loop %d "done" completed*\n'
                                                            % expected[0][1]))
        discord = r.received("/discord")
        self.assertEqual(list(discord[0]["body"]), ["content"])
        self.assertTrue(discord[0]["body"]["content"].startswith("**loop"))
        telegram = r.received("/botTOKEN/sendMessage")
        self.assertEqual(telegram[0]["path"], FORMAT_PATHS["telegram"])
        self.assertEqual(telegram[0]["body"]["chat_id"], "42")
        self.assertIn("completed", telegram[0]["body"]["text"])
        # ntfy: JSON publishing to the server's root, the topic in the body.
        ntfy = self.wait_posts(r, "/ntfy/", count)
        self.assertEqual({p["path"] for p in ntfy}, {"/ntfy/"})
        self.assertEqual(ntfy[0]["body"]["topic"], "night")
        self.assertEqual(ntfy[0]["body"]["tags"], ["white_check_mark"])
        self.assertEqual(ntfy[1]["body"]["priority"], 4)  # failed
        self.assertIn('"done" completed', ntfy[0]["body"]["title"])

    def test_links_lead_to_the_dashboard_with_listen(self):
        r = self.receiver()
        port = free_tcp_port()
        d = self.notify_daemon([r.url("/generic"), r.url("/ntfy/night", "ntfy+")],
                               more_args=["--listen", "127.0.0.1:%d" % port])
        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], "completed")
        link = "http://127.0.0.1:%d/#/loop/%d" % (port, loop["id"])
        self.assertEqual(self.wait_posts(r, "/generic", 1)[0]["body"]["link"], link)
        self.assertEqual(self.wait_posts(r, "/ntfy/", 1)[0]["body"]["click"], link)

    def test_receiver_down_gets_everything_in_order_once_up(self):
        r = self.receiver()
        d = self.notify_daemon([r.url("/hook")])
        r.stop()
        ws = d.workspace()
        ids = []
        for n in range(3):
            loop = d.submit(ws, agent_command("never-complete.sh"), max_iterations=1,
                            name="l%d" % n)
            d.wait_state(loop["id"], "exhausted")
            ids.append(loop["id"])
        wait_until(lambda: "not delivered" in d.log_text(), 20, "a failed delivery logged")
        self.assertEqual(r.received(), [])
        r.start()
        posts = self.wait_posts(r, "/hook", 3)
        self.assertEqual([p["body"]["loop"]["id"] for p in posts], ids)
        ids_sent = [p["body"]["id"] for p in posts]
        self.assertEqual(ids_sent, sorted(set(ids_sent)))
        # The URL's path is a secret: the log names the host and port only.
        self.assertIn("http://127.0.0.1:%d/…" % r.port, d.log_text())
        self.assertNotIn("/hook", d.log_text())

    def test_sigkill_before_delivery_delivers_after_restart(self):
        r = self.receiver()
        d = self.notify_daemon([r.url("/hook")])
        r.stop()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], "completed")
        wait_until(lambda: "not delivered" in d.log_text(), 20, "a failed delivery logged")
        d.kill9()
        with sqlite3.connect(d.db) as db:
            rows = db.execute("SELECT id, target, tries FROM notifications").fetchall()
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][1], r.url("/hook"))
        self.assertGreaterEqual(rows[0][2], 1)
        r.start()
        d.start()
        posts = self.wait_posts(r, "/hook", 1)
        self.assertEqual(posts[0]["body"]["id"], rows[0][0])
        self.assertEqual(posts[0]["body"]["event"], "loop.completed")
        wait_until(lambda: not sqlite3.connect(d.db).execute(
            "SELECT count(*) FROM notifications").fetchone()[0], 10, "the outbox to empty")

    def test_a_planned_restart_is_not_announced_and_a_crash_is(self):
        # systemd's restart (SIGTERM: the agents go on, the next ralphd adopts them) is what the
        # user asked for: no daemon.recovered. A kill -9 after it is a crash: one.
        r = self.receiver()
        d = self.notify_daemon([r.url("/hook")])
        running = d.submit(d.workspace(), agent_command("sleep.sh", "60"))
        wait_until(lambda: d.attempts(running["id"]) and d.attempts(running["id"])[0]["pid"],
                   10, "the agent to run")
        d.stop(leave_running=True)
        d.start()
        wait_until(lambda: "adopting iteration" in d.log_text(), 10, "the agent to be adopted")
        self.assertEqual(d.get(running["id"])["state"], "running")
        d.kill9()
        d.start()
        posts = self.wait_posts(r, "/hook", 1)
        time.sleep(1)
        self.assertEqual([p["body"]["event"] for p in r.received("/hook")], ["daemon.recovered"])
        self.assertEqual(posts[0]["body"]["adopted"], 1)
        d.call("loop.cancel", {"id": running["id"]})
        d.wait_state(running["id"], "cancelled")

    def test_given_up_after_a_day_of_failures(self):
        r = self.receiver()
        d = self.notify_daemon([r.url("/hook")], more_args=["--test-clock", "0"])
        r.stop()
        ws = d.workspace()
        old = d.submit(ws, agent_command("never-complete.sh"), max_iterations=1, name="old")
        d.wait_state(old["id"], "exhausted")
        wait_until(lambda: "not delivered" in d.log_text(), 20, "a failed delivery logged")
        d.call("debug.clock", {"advance_ms": 25 * 3600 * 1000})
        wait_until(lambda: "given up after" in d.log_text(), 30, "the notification given up")
        self.assertIn("over 24 hours, last: cannot connect", d.log_text())
        r.start()
        new = d.submit(ws, agent_command("never-complete.sh"), max_iterations=1, name="new")
        d.wait_state(new["id"], "exhausted")
        posts = self.wait_posts(r, "/hook", 1)
        self.assertEqual([p["body"]["loop"]["name"] for p in posts], ["new"])

    def test_a_loop_parked_again_for_the_same_budget_is_announced_once(self):
        r = self.receiver()
        d = self.notify_daemon([r.url("/hook")], more_args=["--test-clock", "0"])
        d.call("budget.set", {"iterations_per_hour": 1})
        first = d.submit(d.workspace(), agent_command("never-complete.sh"), max_iterations=3)
        wait_until(lambda: d.call("loop.get", {"id": first["id"]})["state"] == "waiting", 20,
                   "the first loop to wait for the budget after its run")
        second = d.submit(d.workspace(), agent_command("never-complete.sh"), max_iterations=3)
        parked = d.wait_state(second["id"], "waiting")
        self.wait_posts(r, "/hook", 2)
        # An hour on: the first loop runs again and waits again (news: it ran); the second is
        # parked again for the same budget before it could run (not news).
        d.call("debug.clock", {"advance_ms": 61 * 60 * 1000})
        wait_until(lambda: d.call("loop.get", {"id": first["id"]})["attempts"] == 2 and
                   d.call("loop.get", {"id": first["id"]})["state"] == "waiting", 20,
                   "the first loop's second run and wait")
        wait_until(lambda: d.call("loop.get", {"id": second["id"]})["resume_at"] !=
                   parked["resume_at"], 20, "the second loop parked again")
        self.assertEqual(d.call("loop.get", {"id": second["id"]})["attempts"], 0)
        d.call("loop.cancel", {"id": second["id"]})
        posts = self.wait_posts(r, "/hook", 4)
        self.assertEqual([(p["body"]["event"], p["body"]["loop"]["id"]) for p in posts],
                         [("loop.waiting", first["id"]), ("loop.waiting", second["id"]),
                          ("loop.waiting", first["id"]), ("loop.cancelled", second["id"])])

    def test_sighup_takes_new_urls_for_the_next_events(self):
        r = self.receiver()
        d = self.notify_daemon([])
        config = os.path.join(d.config_dir, "ralph", "ralphd.conf")
        os.makedirs(os.path.dirname(config), exist_ok=True)
        write_text(config, 'notify = ["desktop", "%s"]\n' % r.url("/late"))
        os.kill(d.pid, signal.SIGHUP)
        wait_until(lambda: "configuration reloaded" in d.log_text(), 10, "the reload")
        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], "completed")
        self.assertEqual(self.wait_posts(r, "/late", 1)[0]["body"]["loop"]["id"], loop["id"])

    def test_https_verifies_the_receiver(self):
        good = self.receiver(server_context(self.certs, "server"))
        rogue = self.receiver(server_context(self.certs, "rogue"))
        d = self.notify_daemon([good.url("/hook")])
        loop = d.submit(d.workspace(), agent_command("count-to-complete.sh", "1"))
        d.wait_state(loop["id"], "completed")
        posts = self.wait_posts(good, "/hook", 1)
        self.assertEqual(posts[0]["body"]["event"], "loop.completed")
        # ralphctl notify test: delivered to the good one, refused for the rogue certificate.
        sent = d.ctl_json("notify", "test", good.url("/probe"))["notify"]
        self.assertEqual(len(sent), 1)
        self.assertEqual(sent[0]["delivered"], True)
        self.assertEqual(sent[0]["status"], 200)
        self.assertEqual(good.received("/probe")[0]["body"]["event"], "test")
        proc = d.ctl("notify", "test", rogue.url("/probe"), check=False)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("not delivered: TLS: certificate verify failed", proc.stdout)
        self.assertEqual(rogue.received(), [])

    def test_notify_test_without_a_url_tests_each_webhook_and_status_lists_them_masked(self):
        r = self.receiver()
        down = self.receiver()
        down.stop()
        secret = "tk_0123456789secret"
        d = self.notify_daemon([r.url("/hook/" + secret), down.url("/gone")])
        # daemon status, daemon.info and doctor name each target, never its path or token.
        status = d.ctl("daemon", "status").stdout
        self.assertIn("notify", status)
        self.assertIn("http://127.0.0.1:%d/…" % r.port, status)
        self.assertIn("http://127.0.0.1:%d/…" % down.port, status)
        self.assertEqual(d.call("daemon.info")["notify_targets"],
                         ["http://127.0.0.1:%d/…" % r.port, "http://127.0.0.1:%d/…" % down.port])
        doctor = d.ctl_json("doctor", check=False)
        notify = [c for c in doctor["checks"] if c["check"] == "notify"][0]
        self.assertIn("http://127.0.0.1:%d/…" % r.port, notify["detail"])
        for text in (status, json.dumps(doctor), d.ctl("doctor", check=False).stdout):
            self.assertNotIn(secret, text)
        # No URL: every one of ralphd's, each said; one not delivered is exit 1.
        proc = d.ctl("notify", "test", check=False)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("delivered (HTTP 200)", proc.stdout)
        self.assertIn("not delivered: ", proc.stdout)
        self.assertNotIn(secret, proc.stdout)
        self.assertEqual([p["body"]["event"] for p in r.received("/hook/")], ["test"])
        sent = d.ctl_json("notify", "test", check=False)["notify"]
        self.assertEqual([s["delivered"] for s in sent], [True, False])
        # A daemon without targets says how to give one, exit 1 (a refused request).
        bare = self.notify_daemon([])
        proc = bare.ctl("notify", "test", check=False)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("no --notify target to test", proc.stderr)
        self.assertIn("ralphctl notify test URL", proc.stderr)
        self.assertIn("no webhook", bare.ctl("daemon", "status").stdout)

    def test_an_endless_answer_is_read_up_to_its_cap(self):
        # 300 MB of an answer that never parses: ralphd reads a bounded part of it and is done.
        endless = EndlessReceiver(300 << 20)
        self.addCleanup(endless.close)
        d = self.notify_daemon([])
        before = peak_memory_kib(d.pid)
        started = time.monotonic()
        d.ctl("notify", "test", endless.url(), check=False, timeout=60)
        self.assertLess(time.monotonic() - started, scaled(12), "past the 10 s limit")
        grown = peak_memory_kib(d.pid) - before
        self.assertLess(grown, 32 << 10, "ralphd's memory grew by %d KiB" % grown)

    def test_an_answer_that_never_ends_is_cut_at_10_s(self):
        # A well-formed answer, a byte at a time, that would last 30 s: ralphd gives up at 10 s.
        endless = EndlessReceiver(trickle=True)
        self.addCleanup(endless.close)
        d = self.notify_daemon([])
        started = time.monotonic()
        sent = d.ctl("notify", "test", endless.url(), check=False, timeout=60)
        self.assertLess(time.monotonic() - started, scaled(14), "past the 10 s limit")
        self.assertIn("not delivered: no answer within 10 s", sent.stdout)

    def test_a_loops_own_url_and_bad_urls(self):
        shared = self.receiver()
        own = self.receiver()
        d = self.notify_daemon([shared.url("/all")])
        ws = d.workspace()
        mine = d.ctl_submit(ws, "p", "--agent", "command", "--command",
                            agent_command("count-to-complete.sh", "1"), "--max-iterations", "1",
                            "--notify", own.url("/secret-token"), name="mine")
        d.wait_state(mine["id"], "completed")
        other = d.submit(ws, agent_command("never-complete.sh"), max_iterations=1)
        d.wait_state(other["id"], "exhausted")
        self.wait_posts(shared, "/all", 2)
        self.assertEqual([p["body"]["loop"]["id"] for p in self.wait_posts(own, "/", 1)],
                         [mine["id"]])
        # A webhook's URL is a secret: the API and `show` give it redacted.
        self.assertEqual(d.get(mine["id"])["notify"], ["http://127.0.0.1:%d/…" % own.port])
        self.assertNotIn("secret-token", d.ctl("show", mine["id"]).stdout)
        with self.assertRaises(RpcError) as refused:
            d.submit(ws, "true", notify=["ftp://example.org/x"])
        self.assertEqual(refused.exception.code, -32602)
        self.assertIn("params.notify: a notification URL is http:// or https://",
                      refused.exception.message)
        with self.assertRaises(RpcError) as refused:
            d.submit(ws, "true", notify=["telegram+https://api.telegram.org/botX/sendMessage"])
        self.assertIn("no chat", refused.exception.message)
        # A receiver whose answer is larger than ralphd reads (64 KiB): its status decides.
        chatty = self.receiver(answer=b"x" * (1 << 20))
        self.assertEqual(d.ctl_json("notify", "test", chatty.url("/big"))["notify"][0]["status"],
                         200)
        proc = d.ctl("notify", "test", "https://user:pw@example.org/x", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no user or password", proc.stderr)
        # ralphd itself refuses a bad --notify before it starts.
        bad = subprocess.run([d.program, "--notify", "slack+mailto://x", "--socket",
                              os.path.join(d.root, "other.sock"), "--db",
                              os.path.join(d.root, "other.db")], capture_output=True, text=True,
                             timeout=scaled(10), env=d.env)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--notify", bad.stderr + bad.stdout)
        self.assertIn("http:// or https://", bad.stderr + bad.stdout)


if __name__ == "__main__":
    main()
