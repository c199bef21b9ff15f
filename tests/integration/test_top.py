"""ralphctl top: the dashboard driven on a pseudo-terminal like a person at a keyboard (rows,
the selected loop's output, keys that cancel, pause, resume and quit, the terminal given back),
and its one-frame forms (--once, stdout not a terminal, --json)."""

import termios

from harness import DaemonTestCase, Screen, agent_command, main

class TopTest(DaemonTestCase):

    def screen(self, d, *args):
        screen = Screen(d, *args)
        self.addCleanup(screen.close)
        return screen

    def assertTerminalGivenBack(self, screen):
        """The alternate screen left and the cursor shown, after the last frame drawn."""
        given_back = screen.raw.rfind(b"\x1b[?25h\x1b[?1049l")
        self.assertGreater(given_back, screen.raw.rfind(b"\x1b[H"), screen.raw[-200:])
        # The line discipline is back too: the slave echoes and edits lines again.
        attributes = termios.tcgetattr(screen.fd)
        self.assertTrue(attributes[3] & termios.ECHO and attributes[3] & termios.ICANON)
        self.assertTrue(attributes[3] & termios.ISIG)
        return screen.text(given_back)

    def test_the_dashboard_shows_the_loops_and_its_keys_cancel_pause_resume_and_quit(self):
        d = self.daemon()
        ws = d.workspace()
        # Both in one workspace: the second waits in the queue while the first runs.
        first = d.submit(ws, agent_command("slow-counter.sh", 5, 60), name="first-loop")
        d.wait_output_contains(first["id"], b"iteration 1 of 5 started")
        second = d.submit(ws, agent_command("slow-counter.sh", 5, 60), name="second-loop")

        screen = self.screen(d, "--interval", "0.2")
        # The header, both rows, and the running loop selected with its output below.
        shown = screen.wait_for("scheduler 1 of 1 running", "first-loop", "second-loop",
                                "slow-counter: iteration 1 of 5 started", "q quit")
        self.assertRegex(shown, r"%d\s+first-loop\s+running\s+0/10" % first["id"])
        self.assertRegex(shown, r"%d\s+second-loop\s+queued\s+0/10" % second["id"])
        self.assertIn("── loop %d first-loop" % first["id"], shown)

        # c asks first; any key but y keeps the loop running.
        screen.press(b"c")
        screen.wait_for("cancel loop %d (running)? y: cancel it" % first["id"])
        screen.press(b"n")
        screen.wait_for("loop %d not cancelled" % first["id"])
        self.assertEqual(d.get(first["id"])["state"], "running")
        # c, then y, cancels it: its agent is ended, and the second loop gets to run.
        screen.press(b"c")
        screen.wait_for("cancel loop %d (running)?" % first["id"])
        screen.press(b"y")
        screen.wait_for("cancel loop %d: now" % first["id"])
        d.wait_state(first["id"], ["cancelled"])
        d.wait_output_contains(second["id"], b"iteration 2 of 5 started")
        # Both rows, whichever frame shows them last (a frame may be read in halves).
        shown = screen.wait_for("second-loop  running", "first-loop   cancelled")
        self.assertRegex(shown, r"%d\s+first-loop\s+cancelled" % first["id"])

        # The selection stayed on the cancelled loop, now below the running one: ↑ selects the
        # running loop, whose output shows; p pauses it, r puts it back in the queue.
        screen.press(b"\x1b[A")
        screen.wait_for("── loop %d second-loop" % second["id"], "iteration 2 of 5 started")
        screen.press(b"p")
        screen.wait_for("pause loop %d: now" % second["id"])
        d.wait_state(second["id"], ["paused"])
        screen.wait_for("second-loop  paused")
        screen.press(b"r")
        screen.wait_for("resume loop %d: now" % second["id"])
        d.wait_state(second["id"], ["queued", "running"])
        # j and k move too; pressing past the ends stays on the last and first rows.
        screen.press(b"jjjk")
        screen.wait_for("── loop %d second-loop" % second["id"])

        screen.press(b"q")
        self.assertEqual(screen.wait_exit(), 0)
        self.assertTerminalGivenBack(screen)

        # Ctrl-C is a key like q: top ends cleanly and gives the terminal back.
        again = self.screen(d, "--interval", "0.2")
        again.wait_for("second-loop")
        again.press(b"\x03")
        self.assertEqual(again.wait_exit(), 0)
        self.assertTerminalGivenBack(again)
        d.call("loop.cancel", {"id": second["id"]})

    def test_states_are_coloured_unless_no_color_is_set(self):
        d = self.daemon()
        done = d.submit(d.workspace(), agent_command("count-to-complete.sh", 1), name="done")
        d.wait_state(done["id"], "completed")
        running = d.submit(d.workspace(), agent_command("sleep.sh", 60), name="runs")
        d.wait_state(running["id"], "running")

        # Cyan for running, green for completed. The harness sets NO_COLOR for every ralphctl:
        # taken away, the states are coloured; with it, not.
        for env, coloured in (({"NO_COLOR": None}, True), ({"NO_COLOR": "1"}, False)):
            screen = Screen(d, "--interval", "0.2", env=env)
            self.addCleanup(screen.close)
            screen.wait_for("runs", "done", "q quit")
            for sequence in (b"\x1b[36mrunning\x1b[0m", b"\x1b[32mcompleted\x1b[0m"):
                self.assertEqual(sequence in screen.raw, coloured, (env, screen.raw))
            screen.press(b"q")
            self.assertEqual(screen.wait_exit(), 0)
        d.call("loop.cancel", {"id": running["id"]})

    def test_a_daemon_that_goes_away_ends_top_with_exit_3_and_the_terminal_given_back(self):
        d = self.daemon()
        screen = self.screen(d, "--interval", "0.2")
        screen.wait_for("no loops yet")
        d.stop()
        self.assertEqual(screen.wait_exit(), 3)
        after = self.assertTerminalGivenBack(screen)
        self.assertIn("ralphctl: lost the connection to ralphd", after, "the error, on the normal screen")

    def test_once_or_without_a_terminal_top_prints_one_plain_frame(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("count-to-complete.sh", 1), name="done-loop")
        d.wait_state(loop["id"], ["completed"])

        for args in (["top", "--once"], ["top"]):  # stdout is a pipe here
            frame = d.ctl(*args).stdout
            self.assertNotIn("\x1b", frame, "no control sequences outside a terminal")
            self.assertIn("scheduler 0 of 1 running", frame)
            self.assertRegex(frame, r"%d\s+done-loop\s+completed\s+1/10" % loop["id"])
            self.assertIn("── loop %d done-loop" % loop["id"], frame)
            self.assertIn("last attempt: iteration 1 exited", frame)
            self.assertIn("<promise>COMPLETE</promise>", frame, "the loop's output")

        snapshot = d.ctl_json("top")
        self.assertEqual([l["id"] for l in snapshot["loops"]], [loop["id"]])
        self.assertEqual(snapshot["loops"][0]["state"], "completed")
        self.assertIn("max_concurrent", snapshot["scheduler"])
        self.assertEqual(snapshot["daemon"]["loops_by_state"], {"completed": 1})

        bad = d.ctl("top", "--interval", "0", check=False)
        self.assertEqual(bad.returncode, 2, bad)

    def test_without_a_daemon_top_exits_3(self):
        d = self.new_daemon_unstarted()
        proc = d.ctl("top", "--once", check=False)
        self.assertEqual(proc.returncode, 3, proc)
        self.assertIn("not running", proc.stderr)


if __name__ == "__main__":
    main()
