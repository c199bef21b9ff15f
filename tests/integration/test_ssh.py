"""ralphctl against a ralphd on another host, Docker's way: `--host ssh://USER@HOST:PORT` runs the
system's ssh, which runs `ralphctl dial-stdio` there (client/ssh_dial.hpp).

A real OpenSSH server (harness.SshServer: sshd on 127.0.0.1, keys made by the test, the client
trusting that host key only) whose sessions have the build's ralphctl on PATH and RALPH_SOCKET
of a test daemon. Submit, `tail -f` byte-exact against the daemon's stored output, list and
cancel go over ssh; `RALPH_HOST` does what `--host` does; `unix://PATH` names a socket; an
authentication refused, a remote daemon down and a host without ralphctl exit 3 with ssh's or
the remote ralphctl's own message. `web` prints the ssh -L command for the host's socket (run
here, it forwards the dashboard); `doctor` is the host's own, run there.
"""

import base64
import http.client
import json
import os
import subprocess

from harness import (RALPHCTL, DaemonTestCase, SshServer, free_tcp_port, main, make_workspace,
                     scaled, wait_until, write_text)

BUILD_CLIENT = os.path.dirname(os.path.abspath(RALPHCTL)) if RALPHCTL else ""


def dashboard_through(port):
    """(status, body) of GET / on 127.0.0.1:PORT; None while nothing answers there."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(10))
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


class SshTest(DaemonTestCase):

    def setUp(self):
        self.d = self.daemon()
        self.server = self.ssh_server(self.d, BUILD_CLIENT + ":/usr/bin:/bin")

    def ssh_server(self, d, path):
        server = SshServer(d.root, {"PATH": path, "RALPH_SOCKET": d.socket})
        self.addCleanup(server.stop)
        return server

    def remote(self, *args, server=None, env=None, **kwargs):
        """ralphctl --host ssh://… ARGS, with the test's ssh configuration."""
        server = server or self.server
        more = {"RALPH_SSH_COMMAND": server.ssh_command, "RALPH_SOCKET": None}
        more.update(env or {})
        return self.d.ctl("--host", server.address, *args, env=more, check=False, **kwargs)

    def stored_output(self, loop_id):
        page = self.d.call("loop.output", {"id": loop_id, "encoding": "base64",
                                           "max_bytes": 4 << 20})
        return base64.b64decode(page["data"])

    def test_submit_tail_list_cancel_over_ssh(self):
        ws = make_workspace(self.d.work_dir)
        # 300 KB of output in many writes, and bytes that are not UTF-8.
        command = ("/bin/sh -c 'head -c 225000 /dev/urandom | base64; printf \"\\377\\376\\n\"; "
                   "echo \"<promise>COMPLETE</promise>\"'")
        submitted = self.remote("--json", "submit", "--workspace", ws, "--command", command,
                                "--max-iterations", "1")
        self.assertEqual(submitted.returncode, 0, submitted.stderr)
        loop_id = json.loads(submitted.stdout)["loop"]["id"]
        tail = self.remote("tail", "-f", "--raw", str(loop_id), text=False)
        self.assertEqual(tail.returncode, 0, tail.stderr)
        self.assertEqual(self.d.get(loop_id)["state"], "completed")
        stored = self.stored_output(loop_id)
        self.assertGreater(len(stored), 300000)
        self.assertEqual(tail.stdout, stored)

        # RALPH_HOST instead of --host; a cancel over ssh is applied once.
        sleeper = self.d.submit(ws, "/bin/sh -c 'echo started; exec sleep 300'")
        self.d.wait_state(sleeper["id"], "running")
        env = {"RALPH_SSH_COMMAND": self.server.ssh_command, "RALPH_SOCKET": None,
               "RALPH_HOST": self.server.address}
        listed = self.d.ctl("--json", "list", env=env, check=False)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual({loop["id"] for loop in json.loads(listed.stdout)["loops"]},
                         {loop_id, sleeper["id"]})
        cancelled = self.d.ctl("cancel", str(sleeper["id"]), env=env, check=False)
        self.assertEqual(cancelled.returncode, 0, cancelled.stderr)
        self.assertEqual(self.d.wait_state(sleeper["id"], "cancelled")["state"], "cancelled")
        again = self.d.ctl("cancel", str(sleeper["id"]), env=env, check=False)
        self.assertEqual(again.returncode, 1)
        self.assertIn("already", again.stderr)

        # unix://PATH is the socket itself.
        local = self.d.ctl("--host", "unix://" + self.d.socket, "list", check=False,
                           env={"RALPH_SOCKET": None})
        self.assertEqual(local.returncode, 0, local.stderr)

    def test_named_hosts_and_ralphctl_hosts(self):
        hosts_file = os.path.join(self.d.config_dir, "ralph", "hosts")
        os.makedirs(os.path.dirname(hosts_file), exist_ok=True)
        write_text(hosts_file, "# the fleet\nbuild  %s   # over ssh\n\ngone ssh://127.0.0.1:%d\n"
                   % (self.server.address, free_tcp_port()))
        env = {"RALPH_SSH_COMMAND": self.server.ssh_command}
        loop = self.d.submit(make_workspace(self.d.work_dir), "/bin/echo hi", max_iterations=1)
        self.d.wait_state(loop["id"], "exhausted")
        by_name = self.d.ctl("--json", "--host", "build", "list", env=env, check=False)
        self.assertEqual(by_name.returncode, 0, by_name.stderr)
        self.assertEqual([l["id"] for l in json.loads(by_name.stdout)["loops"]], [loop["id"]])
        from_env = self.d.ctl("--json", "list", env=dict(env, RALPH_HOST="build"), check=False)
        self.assertEqual(from_env.returncode, 0, from_env.stderr)

        hosts = self.d.ctl("--json", "hosts", env=env, check=False)
        self.assertEqual(hosts.returncode, 3, hosts.stderr)  # one host is down
        answers = {h["name"]: h for h in json.loads(hosts.stdout)["hosts"]}
        self.assertEqual(list(answers), ["local", "build", "gone"])
        self.assertTrue(answers["local"]["reachable"] and answers["build"]["reachable"])
        self.assertEqual(answers["build"]["daemon"]["pid"], self.d.pid)
        self.assertIn("demo", answers["build"]["agents"])
        self.assertEqual(answers["build"]["scheduler"]["paused"], False)
        self.assertFalse(answers["gone"]["reachable"])
        # Several hosts at once: ssh's own message is in the host's error, not on stderr.
        self.assertRegex(answers["gone"]["error"],
                         r"ssh exited with status 255: ssh: connect to host 127.0.0.1 port "
                         r"\d+: Connection refused$")
        self.assertNotIn("Connection refused", hosts.stderr)
        table = self.d.ctl("hosts", env=env, check=False)
        self.assertRegex(table.stdout, r"(?m)^build +ssh://\S+ +up +\S+ +running +\d+/1 +\S*demo")
        self.assertRegex(table.stdout, r"(?m)^gone +ssh://\S+ +down +- +- +- +lost the connection")

        # Every host's loops in one list (here local and build are the same daemon).
        fleet = self.d.ctl("--json", "list", "--all-hosts", env=env, check=False)
        self.assertEqual(fleet.returncode, 3, fleet.stderr)
        listed = json.loads(fleet.stdout)
        self.assertEqual(sorted((l["host"], l["id"]) for l in listed["loops"]),
                         [("build", loop["id"]), ("local", loop["id"])])
        self.assertEqual([u["host"] for u in listed["unreachable"]], ["gone"])
        self.assertIn("ralphctl: gone (ssh://127.0.0.1:", fleet.stderr)
        fleet_table = self.d.ctl("list", "--all-hosts", env=env, check=False)
        self.assertRegex(fleet_table.stdout, r"(?m)^HOST +ID +NAME +STATE")
        self.assertRegex(fleet_table.stdout,
                         r"(?m)^build +build:%d +it-loop +exhausted" % loop["id"])
        # The qualified id takes a command to the loop's host.
        shown = self.d.ctl("--json", "show", "build:%d" % loop["id"], env=env, check=False)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertEqual(json.loads(shown.stdout)["loop"]["id"], loop["id"])
        tail = self.d.ctl("tail", "build:%d" % loop["id"], env=env, check=False)
        self.assertEqual((tail.returncode, tail.stdout), (0, "── iteration 1 ──\nhi\n"), tail.stderr)
        gone = self.d.ctl("cancel", "gone:%d" % loop["id"], env=env, check=False)
        self.assertEqual(gone.returncode, 3, gone.stderr)
        mixed = self.d.ctl("tail", "build:1", "local:1", env=env, check=False)
        self.assertEqual(mixed.returncode, 2)
        self.assertIn("loops of two hosts (build, local) in one command", mixed.stderr)

        unknown = self.d.ctl("--host", "nowhere", "list", env=env, check=False)
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("no host named 'nowhere' (known: local, build, gone)", unknown.stderr)
        write_text(hosts_file, "build\n")
        broken = self.d.ctl("hosts", env=env, check=False)
        self.assertEqual(broken.returncode, 2)
        self.assertIn("hosts:1: expected NAME ADDRESS", broken.stderr)

    def test_web_and_doctor_of_a_remote_host(self):
        # web: the ssh -L command to run here for the host's socket, which works as printed.
        web = self.remote("web")
        self.assertEqual(web.returncode, 0, web.stderr)
        self.assertIn("ralphd on %s serves no TCP" % self.server.address, web.stdout)
        command = web.stdout.rstrip("\n").rsplit("\n", 1)[-1].split()
        user = self.server.address[len("ssh://"):].split("@")[0]
        self.assertEqual(command, self.server.ssh_command.split() + [
            "-N", "-L", "7177:" + self.d.socket, "-p", str(self.server.port), "-l", user,
            "127.0.0.1"])
        port = free_tcp_port()
        command[command.index("-L") + 1] = "%d:%s" % (port, self.d.socket)
        forward = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        self.addCleanup(forward.wait)
        self.addCleanup(forward.terminate)
        status, body = wait_until(lambda: dashboard_through(port), 10, "the forwarded port")
        self.assertEqual(status, 200)
        self.assertIn(b"<html", body)
        # A host whose ralphd listens on its own loopback: the URL, and how to forward its port.
        tcp = free_tcp_port()
        listening = self.daemon(extra_args=["--listen", "127.0.0.1:%d" % tcp])
        server = self.ssh_server(listening, BUILD_CLIENT + ":/usr/bin:/bin")
        url = self.remote("web", server=server)
        self.assertEqual(url.returncode, 0, url.stderr)
        self.assertRegex(url.stdout, r"^http://127\.0\.0\.1:%d/login\?token=\w+\n$" % tcp)
        self.assertIn("that address is %s's own; forward it to this machine first" % server.address,
                      url.stderr)
        self.assertIn(" -N -L %d:localhost:%d -p %d -l %s 127.0.0.1\n" % (tcp, tcp, server.port,
                                                                         user), url.stderr)

        # doctor: the host's own ralphctl checks the host.
        doctor = self.remote("--json", "doctor")
        checks = json.loads(doctor.stdout)
        self.assertEqual(doctor.returncode, 0 if checks["ok"] else 1, doctor.stderr)
        daemon = next(c for c in checks["checks"] if c["check"] == "daemon")
        self.assertEqual(daemon["status"], "ok")
        self.assertIn("(pid %d) answers on %s" % (self.d.pid, self.d.socket), daemon["detail"])
        table = self.remote("doctor")
        self.assertTrue(table.stdout.startswith(self.server.address + ", checked there by its "
                                                "ralphctl:\n"), table.stdout)
        bare = self.ssh_server(self.d, "/usr/bin:/bin")
        missing = self.remote("doctor", server=bare)
        self.assertEqual(missing.returncode, 3, missing.stderr)
        self.assertIn("cannot run `ralphctl doctor` on 127.0.0.1: ssh exited with status 127",
                      missing.stderr)

    def test_ssh_failures_exit_3_with_ssh_s_message(self):
        # A key the server does not accept.
        self.server.write_client_config("other_key")
        refused = self.remote("list")
        self.assertEqual(refused.returncode, 3, refused.stderr)
        self.assertIn("Permission denied", refused.stderr)
        self.assertIn("ssh exited with status 255", refused.stderr)
        self.server.write_client_config("client_key")

        # A host where ralphctl is not on PATH.
        bare = self.ssh_server(self.d, "/usr/bin:/bin")
        missing = self.remote("list", server=bare)
        self.assertEqual(missing.returncode, 3, missing.stderr)
        self.assertIn("ralphctl", missing.stderr)
        self.assertIn("not found", missing.stderr)

        # The remote daemon is down: the remote ralphctl says so, through ssh.
        self.d.stop()
        down = self.remote("list")
        self.assertEqual(down.returncode, 3, down.stderr)
        self.assertIn("ralphd is not running", down.stderr)
        self.assertIn("ssh exited with status 3", down.stderr)

        # An address ssh would take for an option is refused before anything runs.
        bad = self.d.ctl("--host", "ssh://-oProxyCommand=touch", "list", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("is not a user or host name", bad.stderr)


if __name__ == "__main__":
    main()
