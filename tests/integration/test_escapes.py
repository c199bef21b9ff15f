"""What others wrote is shown safely: text that comes from an agent (its final answer, summary,
feedback, the version it prints), a peer (a hold's reason and origin) and so a loop's stop reason
reaches the terminal with its control characters escaped — "\\x1b", "\\x07", "\\n" shown as
text — in every command that prints it: show, list, top, budget, report, agents, tail's rendered
view and tail -f's waiting line. `--json` and `tail --raw` give the bytes as they are."""

import json
import os
import time

from harness import (DaemonTestCase, FakePeer, fake_agent_bin, main, make_workspace, scripted,
                     wait_until, write_text)

# Writes the clipboard (OSC 52), sets the window title (OSC 0), clears the screen (CSI 2J) and
# rings the bell: what a terminal would do if these bytes reached it.
EVIL = "\x1b]52;c;cHduZWQ=\x07\x1b]0;owned\x07\x1b[2J\x9b31m"
# As ralphctl shows it.
SHOWN = "\\x1b]52;c;cHduZWQ=\\x07\\x1b]0;owned\\x07\\x1b[2J\\u009b31m"


def iso(epoch_s):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))


class EscapesTest(DaemonTestCase):

    def assertEscaped(self, what, text, expected=SHOWN):
        """No control character but newlines reached `text`; the hostile bytes show escaped."""
        controls = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0]
        self.assertEqual(controls, [], "%s printed control characters: %r" % (what, text))
        self.assertIn(expected, text, "%s: %r" % (what, text))

    def test_an_agents_answer_summary_and_feedback_are_printed_escaped_everywhere(self):
        d = self.new_daemon_unstarted()
        # A "claude" on the daemon's PATH whose --version prints the sequences too.
        bin_dir = os.path.join(d.root, "evil-bin")
        os.makedirs(bin_dir)
        write_text(os.path.join(bin_dir, "claude"),
                   "#!/bin/sh\nprintf 'claude 1.0 %s\\n'\n" % EVIL.replace("\\", "\\\\")
                   .replace("\x1b", "\\033").replace("\x07", "\\007").replace("\x9b", "\\302\\233"))
        os.chmod(os.path.join(bin_dir, "claude"), 0o755)
        d.env["PATH"] = bin_dir + ":" + d.env["PATH"]
        d.start()
        ws = d.workspace()
        answer = ("Done " + EVIL + "\\n<ralph-feedback>\\nscore: 3/10\\nsummary: fixed "
                  + EVIL + "\\nnext steps: more " + EVIL + "\\n</ralph-feedback>")
        loop = d.submit(ws, scripted("say=" + answer, "promise"), name="evil-answer",
                        max_iterations=1)
        d.wait_state(loop["id"], "completed", timeout=30)
        attempt = d.call("loop.iterations", {"id": loop["id"]})["attempts"][0]
        self.assertIn(EVIL, attempt["summary"], "the stored summary is the agent's bytes")

        show = d.ctl("show", loop["id"]).stdout
        self.assertEscaped("show", show)
        self.assertIn("feedback 3/10 fixed " + SHOWN, show)
        self.assertIn("next steps: more " + SHOWN, show)
        self.assertEscaped("tail", d.ctl("tail", loop["id"]).stdout)
        self.assertIn(EVIL.encode(), d.ctl("tail", "--raw", loop["id"], text=False).stdout,
                      "tail --raw is the bytes")
        self.assertEscaped("top --once", d.ctl("top", "--once", loop["id"]).stdout)
        self.assertEscaped("agents", d.ctl("agents").stdout)
        shown = json.loads(d.ctl("--json", "show", loop["id"]).stdout)
        self.assertIn(EVIL, shown["attempts"][0]["summary"], "--json keeps the text exact")

    def test_a_peers_hold_and_the_stop_reason_it_makes_are_printed_escaped_everywhere(self):
        d = self.new_daemon_unstarted(extra_args=("--host-name", "a", "--peer", "evil"))
        peer = FakePeer(d.root)
        self.addCleanup(peer.close)
        write_text(os.path.join(d.config_dir, "ralph", "hosts"), "evil ssh://evil\n")
        d.env["RALPH_SSH_COMMAND"] = peer.ssh_command
        d.env["PATH"] = fake_agent_bin(d.root) + ":" + d.env["PATH"]
        d.start()
        reason = "usage limit\nreached " + EVIL
        link, _ = peer.link(holds=[{"agent": "claude", "account": "default", "until": iso(time.time() + 3600),
                          "reason": reason, "origin": "evil" + EVIL}])
        self.addCleanup(link.close)
        wait_until(lambda: d.call("budget.get")["holds"], 10, "the peer's hold")
        loop = d.submit(make_workspace(d.work_dir, "held"), "", agent="claude", name="held")
        waiting = d.wait_state(loop["id"], "waiting", timeout=20)
        self.assertIn(reason, waiting["stop_reason"])

        budget = d.ctl("budget").stdout
        self.assertEscaped("budget", budget, "usage limit\\nreached " + SHOWN)
        self.assertNotIn("usage limit\nreached", budget, "the reason's newline is shown as \\n")
        for args in (("show", loop["id"]), ("list",), ("top", "--once"), ("report",)):
            out = d.ctl(*args).stdout
            self.assertEscaped(" ".join(map(str, args)), out, "usage limit\\nreached")
            self.assertNotIn("usage limit\nreached", out)
        # tail -f says why the loop waits, on stderr, escaped too.
        line = d.ctl_first_stderr_line("tail", "-f", loop["id"])
        self.assertEscaped("tail -f's waiting line", line, "usage limit\\nreached " + SHOWN)


if __name__ == "__main__":
    main()
