"""ralphctl as a user meets it: exit codes (0 completed, 1 exhausted/failed, 130 cancelled,
2 usage, 3 no daemon), --json shapes with schema_version, daemon status/stop, doctor,
--idempotency-key."""

import json
import os
import re
import select
import shutil
import socket
import subprocess

from harness import (RALPHCTL, RALPHD, DaemonTestCase, agent_command, main, scaled, wait_until)


class CliTest(DaemonTestCase):

    def assertNoDaemonMessage(self, proc):
        self.assertEqual(proc.returncode, 3, proc)
        self.assertRegex(proc.stderr, re.compile("not running", re.I))
        self.assertIn("ralphd", proc.stderr, "the hint says how to start the daemon")
        self.assertEqual(proc.stdout, "", "diagnostics go to stderr")

    def test_without_a_daemon_ralphctl_exits_3_with_a_hint_how_to_start_it(self):
        d = self.new_daemon_unstarted()  # temp dirs only: nothing listens on d.socket
        self.assertNoDaemonMessage(d.ctl("list", check=False))
        self.assertNoDaemonMessage(d.ctl("show", "1", check=False))
        self.assertNotEqual(d.ctl("daemon", "status", check=False).returncode, 0)

        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(d.socket)  # a socket file nobody listens on
        stale.close()
        self.assertNoDaemonMessage(d.ctl("list", check=False))

    def test_submit_wait_exits_0_when_completed_and_1_when_exhausted_or_failed(self):
        d = self.daemon()
        completed = d.ctl("submit", "--workspace", d.workspace(), "--name", "ok",
                          "--command", agent_command("count-to-complete.sh", 2),
                          "--delay", "0s", "--wait", "Two steps", check=False)
        self.assertEqual(completed.returncode, 0, completed)
        self.assertEqual(d.find_loop("ok")["state"], "completed")

        exhausted = d.ctl("submit", "--workspace", d.workspace(), "--name", "exhausted",
                          "--command", agent_command("never-complete.sh"), "-m", "2",
                          "--delay", "0s", "--wait", "Endless", check=False)
        self.assertEqual(exhausted.returncode, 1, exhausted)
        self.assertEqual(d.find_loop("exhausted")["state"], "exhausted")

        failed = d.ctl("submit", "--workspace", d.workspace(), "--name", "failed",
                       "--command", agent_command("fail.sh", 2), "--retries", "0",
                       "--delay", "0s", "--wait", "Broken", check=False)
        self.assertEqual(failed.returncode, 1, failed)
        self.assertEqual(d.find_loop("failed")["state"], "failed")

        # tail -f of a finished loop ends at once with the same exit codes.
        for name, code in (("ok", 0), ("exhausted", 1), ("failed", 1)):
            proc = d.ctl("tail", "-f", d.find_loop(name)["id"], check=False, timeout=30)
            self.assertEqual(proc.returncode, code, (name, proc))

    def test_submit_wait_exits_130_when_the_loop_is_cancelled(self):
        d = self.daemon()
        waiter = d.ctl_popen("submit", "--workspace", d.workspace(), "--name", "to-cancel",
                             "--command", agent_command("sleep.sh", 60), "--delay", "0s",
                             "--wait", "Wait for me")
        try:
            loop = wait_until(lambda: d.find_loop("to-cancel"), 20, "the submitted loop")
            d.wait_state(loop["id"], "running", timeout=20)
            cancelled = d.ctl_json("cancel", loop["id"])
            self.assertEqual(cancelled["loop"]["id"], loop["id"])
            rc = waiter.wait(timeout=scaled(30))
            self.assertEqual(rc, 130, waiter.stderr.read())
        finally:
            waiter.kill()
            waiter.wait()
            waiter.stdout.close()
            waiter.stderr.close()
        self.assertEqual(d.get(loop["id"])["state"], "cancelled")
        self.assertEqual(d.ctl("tail", "-f", loop["id"], check=False).returncode, 130)

    def test_list_shows_every_unfinished_loop_and_the_50_latest_ended_and_all_with_all(self):
        d = self.daemon(extra_args=["--max-concurrent", "2"])
        old_running = d.submit(d.workspace("long"), agent_command("sleep.sh", 60), max_iterations=1)
        d.wait_state(old_running["id"], "running", timeout=10)
        quick = d.workspace("quick")
        ids = [d.submit(quick, "true", max_iterations=1)["id"] for _ in range(55)]
        d.wait_state(ids[-1], "exhausted", timeout=60)

        shown = [row["id"] for row in d.ctl_json("list")["loops"]]
        self.assertEqual(shown, sorted(ids[-50:], reverse=True) + [old_running["id"]],
                         "the 50 latest ended loops, and the older one still running")
        table = d.ctl("list").stdout.splitlines()
        self.assertEqual(len(table), 1 + 51, "header and 51 rows")
        everything = [row["id"] for row in d.ctl_json("list", "--all")["loops"]]
        self.assertEqual(everything, sorted(ids + [old_running["id"]], reverse=True))
        d.ctl("cancel", old_running["id"])

    def test_json_outputs_carry_schema_version_1_and_wrap_their_objects(self):
        d = self.daemon()
        ws = d.workspace()
        submitted = d.ctl_json("submit", "--workspace", ws, "--name", "json",
                               "--command", agent_command("count-to-complete.sh", 1),
                               "--delay", "0s", "-m", "5", "-n", "1", "-p", "COMPLETE",
                               "--timeout", "30s", "JSON please")
        loop = submitted["loop"]
        for field in ("id", "name", "state", "workspace", "agent", "iterations",
                      "max_iterations", "min_iterations", "created_at", "started_at",
                      "finished_at", "stop_reason"):
            self.assertIn(field, loop)
        self.assertEqual((loop["name"], loop["agent"], loop["max_iterations"]),
                         ("json", "command", 5))
        d.wait_state(loop["id"], "completed", timeout=20)

        listed = d.ctl_json("list")
        self.assertEqual([l["id"] for l in listed["loops"]], [loop["id"]])
        self.assertEqual(listed["loops"][0]["state"], "completed")

        shown = d.ctl_json("show", loop["id"])
        self.assertEqual(shown["loop"]["id"], loop["id"])
        self.assertEqual(len(shown["attempts"]), 1)
        self.assertEqual(shown["attempts"][0]["loop_id"], loop["id"])

        other = d.ctl_json("submit", "--workspace", d.workspace(), "--name", "cancel-me",
                           "--command", agent_command("sleep.sh", 60), "-m", "1",
                           "--delay", "0s", "Sleep")
        cancelled = d.ctl_json("cancel", other["loop"]["id"])
        self.assertEqual(cancelled["loop"]["id"], other["loop"]["id"])
        d.wait_state(other["loop"]["id"], "cancelled", timeout=20)

        human = d.ctl("list").stdout
        self.assertIn("json", human)
        self.assertIn("completed", human)

    def test_a_submit_with_the_idempotency_key_of_an_earlier_loop_creates_nothing(self):
        d = self.daemon()
        ws = d.workspace()
        submit = ("submit", "--workspace", ws, "--command", agent_command("sleep.sh", 60), "-m", "1",
                  "--delay", "0s", "--idempotency-key", "nightly-2026-11-23")
        first = d.ctl_json(*submit, "Once only")
        loop_id = first["loop"]["id"]
        self.assertTrue(first["created"], first)
        self.assertEqual(first["loop"]["idempotency_key"], "nightly-2026-11-23")

        # A script retrying: the same loop, whatever else it sends, and a word on stderr.
        again = d.ctl(*submit, "--name", "other", "Another prompt")
        self.assertIn("submitted loop %d " % loop_id, again.stdout)
        self.assertIn("idempotency key 'nightly-2026-11-23' already", again.stderr)
        retried = d.ctl_json(*submit, "Once only")
        self.assertEqual((retried["created"], retried["loop"]["id"]), (False, loop_id), retried)
        self.assertEqual(len(retried["warnings"]), 1, retried)

        # Many at once with a new key: exactly one loop.
        race = ("submit", "--workspace", d.workspace("race"), "--command", "true", "-m", "1",
                "--delay", "0s", "--idempotency-key", "race", "Racing")
        racing = [d.ctl_popen("--json", *race) for _ in range(6)]
        answers = [json.loads(p.communicate(timeout=scaled(30))[0]) for p in racing]
        self.assertEqual(len({a["loop"]["id"] for a in answers}), 1, answers)
        self.assertEqual(sorted(a["created"] for a in answers), [False] * 5 + [True], answers)

        # The key is kept across a restart and after the loop ended, even once its workspace is
        # gone (the retry is not checked again).
        d.ctl("cancel", loop_id)
        d.wait_state(loop_id, "cancelled", timeout=20)
        d.restart()
        shutil.rmtree(ws)
        after = d.call("loop.submit", {"workspace": "/nonexistent/ralph", "agent": "command",
                                       "command": "true", "idempotency_key": "nightly-2026-11-23"})
        self.assertEqual((after["created"], after["id"], after["state"]),
                         (False, loop_id, "cancelled"), after)

        # Without a key, or with another one, loops are created as always.
        ws2 = d.workspace("ws2")
        plain = [d.ctl_json("submit", "--workspace", ws2, "--command", "true", "-m", "1",
                            "--delay", "0s", "Plain")["loop"]["id"] for _ in range(2)]
        self.assertEqual(len(set(plain) | {loop_id}), 3, plain)
        self.assertEqual(len(d.call("loop.list", {})["loops"]), 4)  # first, race, 2 plain

        too_long = d.ctl("submit", "--workspace", ws2, "--command", "true",
                         "--idempotency-key", "k" * 257, check=False)
        self.assertEqual(too_long.returncode, 1, too_long)
        self.assertIn("params.idempotency_key: at most 256 bytes", too_long.stderr)

    def test_doctor_says_what_fails_and_what_to_fix(self):
        d = self.new_daemon_unstarted(env={"USER": "ralph-doctor-test"})

        def checks(expect_exit):
            proc = d.ctl("--json", "doctor", check=False)
            self.assertEqual(proc.returncode, expect_exit, proc)
            out = json.loads(proc.stdout)
            self.assertEqual(out["ok"], expect_exit == 0, out)
            return {c["check"]: c for c in out["checks"]}

        down = checks(1)
        self.assertEqual(down["daemon"]["status"], "fail")
        self.assertIn("not running", down["daemon"]["detail"])
        self.assertIn("systemctl --user start ralphd", down["daemon"]["fix"])
        self.assertEqual(down["linger"]["status"], "warn")
        self.assertEqual(down["linger"]["fix"], "loginctl enable-linger ralph-doctor-test")

        units = os.path.join(d.config_dir, "systemd", "user")
        os.makedirs(units)
        with open(os.path.join(units, "ralphd.service"), "w") as f:
            f.write("[Service]\nExecStart=ralphd\n")
        d.start()
        up = checks(0)
        for name in ("daemon", "socket", "database", "service", "agent demo"):
            self.assertEqual(up[name]["status"], "ok", up[name])
        self.assertIn("0700", up["socket"]["detail"])
        self.assertIn("free", up["database"]["detail"])
        self.assertEqual(up["service"]["detail"], os.path.join(units, "ralphd.service"))
        # Where `meson install` with --prefix ~/.local puts it ($XDG_DATA_HOME/systemd/user,
        # which the user manager searches) counts too.
        data_units = os.path.join(d.home, ".local", "share", "systemd", "user")
        os.makedirs(data_units)
        shutil.move(os.path.join(units, "ralphd.service"), data_units)
        self.assertEqual(checks(0)["service"]["detail"],
                         os.path.join(data_units, "ralphd.service"))
        shutil.move(os.path.join(data_units, "ralphd.service"), units)
        self.assertIn("ralph-demo-agent 0.1.0", up["agent demo"]["detail"])  # its --version
        self.assertNotIn("agent command", up, "the command agent has no program of its own")
        missing = [c for name, c in up.items() if name.startswith("agent ") and c["status"] != "ok"]
        for check in missing:  # the real agent CLIs are not installed here
            self.assertEqual(check["status"], "warn", check)
            self.assertIn("--agent-binary", check["fix"])

        # A socket directory others can enter fails, with the command that fixes it.
        socket_dir = os.path.dirname(d.socket)
        os.chmod(socket_dir, 0o755)
        try:
            loose = checks(1)
        finally:
            os.chmod(socket_dir, 0o700)
        self.assertEqual(loose["socket"]["status"], "fail", loose["socket"])
        self.assertEqual(loose["socket"]["fix"], "chmod 700 " + socket_dir)

        human = d.ctl("doctor")
        self.assertRegex(human.stdout, r"ok +daemon +ralphd ")
        self.assertRegex(human.stdout, r"warn +linger ")
        self.assertIn("\nfix linger: loginctl enable-linger ralph-doctor-test\n", human.stdout)

    def test_completion_scripts_complete_commands_options_and_values(self):
        d = self.new_daemon_unstarted()  # completion needs no daemon
        ws = d.workspace("completion-ws")
        scripts = {}
        for shell in ("bash", "zsh", "fish"):
            scripts[shell] = os.path.join(d.root, "completion." + shell)
            with open(scripts[shell], "w") as f:
                f.write(d.ctl("completion", shell).stdout)

        def bash(*words):
            # As bash-completion calls it: the words of the line, the cursor on the last one.
            proc = subprocess.run(
                ["bash", "-c", 'source "$1"; shift; COMP_WORDS=("$@"); '
                 'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ralphctl; echo "${COMPREPLY[*]}"',
                 "bash", scripts["bash"], "ralphctl", *words],
                capture_output=True, text=True, timeout=scaled(30), check=True)
            return proc.stdout.split()

        def zsh(*words):
            # zsh's compadd and _files stand in for the completion system: what would be offered.
            proc = subprocess.run(
                ["zsh", "-c", 'compadd() { [[ $1 == -- ]] && shift; local w; '
                 'for w in "$@"; do [[ $w == ${words[CURRENT]}* ]] && print -r -- $w; done }; '
                 '_files() { print -r -- "(files $*)" }; source "$1" >/dev/null; shift; '
                 'words=("$@"); CURRENT=$#words; _ralphctl',
                 "zsh", scripts["zsh"], "ralphctl", *words],
                capture_output=True, text=True, timeout=scaled(30))
            return proc.stdout.split()

        def fish(line):
            proc = subprocess.run(
                ["fish", "-c", "source $argv[1]; complete -C $argv[2] | string split -f1 \\t",
                 scripts["fish"], line],
                capture_output=True, text=True, timeout=scaled(30), check=True)
            return sorted(proc.stdout.split())

        self.assertEqual(bash("su"), ["submit"])
        self.assertEqual(sorted(bash("submit", "--max-")),
                         ["--max-cost", "--max-iterations", "--max-tokens"])
        self.assertEqual(bash("--socket", "/x", "daemon", ""), ["start", "status", "stop"])
        self.assertEqual(bash("submit", "-m", "3", "--idem"), ["--idempotency-key"])
        self.assertEqual(bash("submit", "--workspace", ws[:-3]), [ws])   # --workspace: a directory
        self.assertEqual(bash("submit", "-m", ""), [])                    # a number: nothing
        self.assertIn("--json", bash("list", "--j"), "global options stand after the command")

        self.assertEqual(zsh("su"), ["submit"])
        self.assertEqual(sorted(zsh("submit", "--max-")),
                         ["--max-cost", "--max-iterations", "--max-tokens"])
        self.assertEqual(zsh("scheduler", "p"), ["pause"])
        self.assertEqual(zsh("submit", "--workspace", ""), ["(files", "-/)"])

        self.assertEqual(fish("ralphctl su"), ["submit"])
        self.assertEqual(fish("ralphctl submit --max-"),
                         ["--max-cost", "--max-iterations", "--max-tokens"])
        self.assertEqual(fish("ralphctl daemon "), ["start", "status", "stop"])

    def test_manual_pages_list_every_command_and_option(self):
        d = self.new_daemon_unstarted()
        page = d.ctl("man-page").stdout
        self.assertTrue(page.startswith(".TH RALPHCTL 1 "), page[:80])
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS",
                        "ENVIRONMENT", "SEE ALSO"):
            self.assertIn(".SH " + section + "\n", page)
        for command in ("submit PROMPT", "list", "tail ID", "daemon status", "scheduler set",
                        "doctor", "completion SHELL"):
            self.assertIn('.SS "ralphctl %s"\n' % command, page)
        for flag in ("\\-\\-max\\-iterations", "\\-\\-idempotency\\-key", "\\-\\-json"):
            self.assertIn(flag, page)
        self.assertNotIn("man\\-page", page, "the hidden command stays hidden")
        self.assertNotIn("man-page", d.ctl("--help").stdout)

        daemon_page = subprocess.run([RALPHD, "--man-page"], capture_output=True, text=True,
                                     check=True, timeout=scaled(30)).stdout
        self.assertTrue(daemon_page.startswith(".TH RALPHD 1 "), daemon_page[:80])
        for text in (".SH OPTIONS\n", "\\-\\-kill\\-grace", "\\-\\-max\\-concurrent",
                     ".SH SIGNALS\n", ".SH FILES\n"):
            self.assertIn(text, daemon_page)
        self.assertNotIn("man\\-page", daemon_page)

    def test_mcp_serves_tools_that_submit_watch_and_cancel_loops(self):
        d = self.daemon()
        mcp = subprocess.Popen([RALPHCTL, "mcp"], env=d.ctl_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(mcp.kill)

        def send(message):
            mcp.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
            mcp.stdin.flush()

        def receive():
            ready, _, _ = select.select([mcp.stdout], [], [], scaled(30))
            self.assertTrue(ready, "ralphctl mcp did not answer")
            return json.loads(mcp.stdout.readline())

        def call(tool, **arguments):
            send({"jsonrpc": "2.0", "id": tool, "method": "tools/call",
                  "params": {"name": tool, "arguments": arguments}})
            answer = receive()
            self.assertEqual(answer["id"], tool, answer)
            content = answer["result"]["content"]
            self.assertEqual([c["type"] for c in content], ["text"], answer)
            return answer["result"]["isError"], content[0]["text"]

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}})
        init = receive()["result"]
        self.assertEqual((init["protocolVersion"], init["serverInfo"]["name"]), ("2024-11-05", "ralph"))
        self.assertIn("tools", init["capabilities"])
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # no answer to this
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = receive()
        self.assertEqual(listed["id"], 2, "the notification got no answer")
        tools = {t["name"]: t for t in listed["result"]["tools"]}
        self.assertEqual(sorted(tools), ["ralph_cancel", "ralph_get", "ralph_list", "ralph_output",
                                         "ralph_submit"])
        self.assertEqual(tools["ralph_submit"]["inputSchema"]["required"], ["workspace"])

        failed, text = call("ralph_submit", workspace=d.workspace(), name="via-mcp",
                            command=agent_command("count-to-complete.sh", 2), delay_s=0)
        self.assertFalse(failed, text)
        loop_id = json.loads(text)["id"]
        d.wait_state(loop_id, "completed", timeout=30)
        failed, text = call("ralph_get", id=loop_id)
        self.assertEqual((failed, json.loads(text)["state"]), (False, "completed"))
        failed, text = call("ralph_output", id=loop_id, last_lines=3)
        self.assertFalse(failed)
        self.assertIn("<promise>COMPLETE</promise>", text)
        failed, text = call("ralph_list")
        self.assertEqual([l["name"] for l in json.loads(text)["loops"]], ["via-mcp"])

        failed, text = call("ralph_submit", workspace=d.workspace("sleepy"),
                            command=agent_command("sleep.sh", 60), delay_s=0)
        sleeper = json.loads(text)["id"]
        d.wait_state(sleeper, "running", timeout=20)
        self.assertFalse(call("ralph_cancel", id=sleeper)[0])
        d.wait_state(sleeper, "cancelled", timeout=20)

        # What goes wrong is told: by ralphd as a tool error, by the protocol as JSON-RPC errors.
        self.assertEqual(call("ralph_get", id=999), (True, "no loop with id 999"))
        send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
              "params": {"name": "rm_rf", "arguments": {}}})
        self.assertEqual(receive()["error"]["code"], -32602)
        send("this is not JSON")
        self.assertEqual(receive(), {"jsonrpc": "2.0", "id": None,
                                     "error": {"code": -32700, "message": "Parse error"}})
        send({"jsonrpc": "2.0", "id": 8, "method": "resources/list"})
        self.assertEqual(receive()["error"]["code"], -32601)

        out, err = mcp.communicate(timeout=scaled(10))  # closes stdin: its end ends ralphctl mcp
        self.assertEqual((mcp.returncode, out), (0, ""), err)

    def test_usage_errors_exit_2(self):
        d = self.daemon()
        self.assertEqual(d.ctl("no-such-command", check=False).returncode, 2)
        self.assertEqual(d.ctl("submit", "--workspace", d.workspace(), "-m", "many", "x",
                               check=False).returncode, 2)
        self.assertEqual(d.ctl("show", check=False).returncode, 2)

    def test_the_command_is_found_among_the_global_options_and_help_lists_every_command(self):
        # ralphctl builds only the options of the command it runs: the command word has to be
        # found past --socket's value, whatever the order of the global options.
        d = self.daemon()
        env = {"RALPH_SOCKET": "/nonexistent/ralphd.sock"}
        for args in (["--socket", d.socket, "--json", "list"],
                     ["--json", "--socket", d.socket, "list"],
                     ["--socket=" + d.socket, "list", "--json"],
                     ["list", "--socket", d.socket, "--json"]):
            proc = d.ctl(*args, env=env)
            self.assertEqual(json.loads(proc.stdout)["schema_version"], 1, args)
        # A socket path that is also a command's name is still the socket.
        proc = d.ctl("--socket", "show", "daemon", "status", env=env, check=False)
        self.assertEqual(proc.returncode, 3, proc)
        self.assertIn("cannot connect to show", proc.stderr)

        helped = d.ctl("--help").stdout
        for command in ("submit", "list", "show", "tail", "cancel", "pause", "resume", "merge", "pr", "daemon",
                        "agents", "steer", "init", "scheduler", "budget", "report", "gc", "doctor",
                        "mcp", "completion"):
            self.assertRegex(helped, re.compile(r"^\s+%s\s" % command, re.M), command)
        self.assertIn("--follow", d.ctl("submit", "--help").stdout)
        for word in ("cancel", "pause", "resume", "merge", "pr"):
            self.assertIn("Loop id", d.ctl(word, "--help").stdout, word)
        unknown = d.ctl("sbumit", "x", check=False)
        self.assertEqual(unknown.returncode, 2, unknown)

    def test_daemon_status_succeeds_and_daemon_stop_makes_ralphd_exit_0(self):
        d = self.daemon()
        status = d.ctl("daemon", "status")
        self.assertIn(str(d.pid), status.stdout + status.stderr)
        d.ctl("daemon", "stop")
        self.assertEqual(d.proc.wait(timeout=scaled(20)), 0, d.log_text())


if __name__ == "__main__":
    main()
