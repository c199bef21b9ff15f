"""The web dashboard in a real headless Chromium (Debian's chromium, driven by puppeteer-core).

This file starts ralphd on TCP (--listen) with the replay agents on its PATH, then runs
tests/browser/dashboard_test.mjs, which logs in with the token and checks, through the pages:
a loop submitted by ralphctl appearing and changing state without a reload, a loop's output
arriving live with its raw view byte-exact, a structured stream rendered as `ralphctl tail`
renders it with a line per iteration, an iteration's diff, why a loop waits and until when,
a running loop's output first with its attempt's time ticking, cancel asking first and then
ending the agent's process group, the report (problems first, every timeline row named, a
colour for usage limits, no empty chart; the charts' data against history.report and
budget.get), every page at 1280 and 390 px wide (nothing outside the window, no word split
across lines, the actions in sight), no console error, and the page kept when ralphd stops.
Screenshots (desktop and 390 px wide) go to RALPH_ARTIFACTS (the build's
tests/integration/screenshots), from which the README's are copied.

Needs /usr/bin/chromium and tests/browser/node_modules (scripts/test.sh runs `npm ci` there):
without them the test fails, saying so.
"""

import os
import shutil
import subprocess

from harness import (DaemonTestCase, fake_agent_bin, free_tcp_port, main, make_workspace,
                     read_text, scaled)

HERE = os.path.dirname(os.path.abspath(__file__))
BROWSER = os.path.join(HERE, "..", "browser")
CHROMIUM = "/usr/bin/chromium"


class DashboardTest(DaemonTestCase):

    def test_the_dashboard_in_chromium(self):
        node = shutil.which("node")
        self.assertTrue(node and os.access(CHROMIUM, os.X_OK),
                        "the browser tests need node and %s (scripts/install-deps.sh)" % CHROMIUM)
        self.assertTrue(os.path.isdir(os.path.join(BROWSER, "node_modules", "puppeteer-core")),
                        "run `npm ci --prefix tests/browser` (scripts/test.sh does)")
        port = free_tcp_port()
        d = self.new_daemon_unstarted(extra_args=["--listen", "127.0.0.1:%d" % port])
        d.env["PATH"] = fake_agent_bin(d.root) + ":" + d.env["PATH"]
        d.start()
        root = d.work_dir
        token = read_text(os.path.join(os.path.dirname(d.db), "web-token")).strip()
        artifacts = os.environ.get("RALPH_ARTIFACTS") or os.path.join(root, "screenshots")
        os.makedirs(artifacts, exist_ok=True)
        env = d.ctl_env({
            "RALPH_DASHBOARD": "http://127.0.0.1:%d" % port,
            "RALPH_TOKEN": token,
            "RALPH_CHROMIUM": CHROMIUM,
            "RALPH_WORKSPACES": ",".join(make_workspace(root, "ws%d" % i) for i in range(6)),
            "RALPH_ARTIFACTS": artifacts,
            "RALPH_TEST_TIMEOUT_SCALE": str(scaled(1)),
        })
        proc = subprocess.run([node, os.path.join(BROWSER, "dashboard_test.mjs")], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=scaled(100), cwd=root)
        print(proc.stdout)
        self.assertEqual(proc.returncode, 0,
                         "dashboard_test.mjs failed:\n%s\n%s\nralphd's log:\n%s"
                         % (proc.stdout, proc.stderr, d.log_text()[-6000:]))
        for name in ("%s-%s.png" % (page, device) for page in ("loops", "loop", "running", "report")
                     for device in ("desktop", "phone")):
            self.assertGreater(os.path.getsize(os.path.join(artifacts, name)), 10000, name)


if __name__ == "__main__":
    main()
