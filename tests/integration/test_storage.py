"""Storage faults are a state, not a crash: on a full disk or a read-only state directory (any
part of it: the output, the prompts, the attempts) ralphd is degraded (running agents go on, no
attempt starts and no loop fails for it, reads and gc work, `daemon status` and `doctor` say why
and what to do, the log says it once) and is itself again, by itself, once it can write. A state
directory removed or moved away is said at once, and no loop is accepted that would be lost. ralph's state lives on a small tmpfs of its own here, which the tests fill, free and
remount read-only."""

import os
import sqlite3
import subprocess
import tempfile
import time

from harness import (DaemonTestCase, FakePeer, Receiver, RpcError, SmallDisk, agent_command, all_pids,
                     main, make_workspace, pattern_bytes, proc_cmdline, process_name, read_bytes,
                     require_root, wait_until, write_text)

FULL_MESSAGE = "cannot write ralph's state"


class StorageFaultTest(DaemonTestCase):

    def setUp(self):
        require_root("to mount a small tmpfs for ralph's state")
        self.disk = None
        self.read_only_dirs = []
        # Registered first, so it runs after the daemon's own cleanups have stopped it.
        self.addCleanup(self.unmount)
        # The workspaces (and the agents' own copies of their output) are elsewhere, and so are
        # ralphd's socket and log.
        self.workspaces = tempfile.mkdtemp(prefix="ralph-storage-ws-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.workspaces])

    def daemon_on_tmpfs(self, size="24m", hosts=None, **daemon_args):
        """A ralphd whose state directory (database, output, attempts) is a tmpfs of `size`;
        `hosts`: its hosts file."""
        d = self.new_daemon_unstarted(**daemon_args)
        if hosts:
            write_text(os.path.join(d.config_dir, "ralph", "hosts"), hosts)
        self.disk = SmallDisk(os.path.dirname(d.db), size)
        return d.start()

    def unmount(self):
        self.restore_writes()
        if self.disk:
            self.disk.unmount()

    def read_only(self, directory):
        """Makes `directory` read-only for what opens a file in it from now on: a read-only bind
        mount of it on itself (as root, a mode would not stop ralphd)."""
        subprocess.run(["mount", "--bind", directory, directory], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", directory], check=True)
        self.read_only_dirs.append(directory)

    def restore_writes(self):
        while self.read_only_dirs:
            subprocess.run(["umount", self.read_only_dirs.pop()], check=True)

    def storage(self, d):
        return d.call("daemon.info")["storage"]

    def wait_storage(self, d, state, timeout=15):
        return wait_until(lambda: self.storage(d)["state"] == state and self.storage(d), timeout,
                          "ralphd's storage to be %s" % state)

    def assert_refused_as_storage(self, d, workspace):
        with self.assertRaises(RpcError) as refused:
            d.submit(workspace, agent_command("count-to-complete.sh", "1"))
        self.assertEqual(refused.exception.code, -32009)
        self.assertIn("cannot write its state", refused.exception.message)

    def assert_intact(self, d):
        with sqlite3.connect(d.db) as db:
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchall(), [("ok",)])

    def test_a_full_disk_degrades_ralphd_and_freeing_space_loses_nothing(self):
        d = self.daemon_on_tmpfs()
        flooding = make_workspace(self.workspaces, "flood")
        waiting = make_workspace(self.workspaces, "queued")
        loop = d.submit(flooding, agent_command("flood-copy.py", "8", "0.5"), max_iterations=1)
        d.running_attempt(loop["id"])
        queued = d.submit(waiting, agent_command("count-to-complete.sh", "1"), max_iterations=1)
        self.assertEqual(d.get(queued["id"])["state"], "queued", "one loop runs at a time")
        own = os.path.join(flooding, ".own-output")
        wait_until(lambda: os.path.exists(own) and os.path.getsize(own) > 0, 10,
                   "the agent to start writing")
        self.disk.fill()
        written_before_full = os.path.getsize(own)

        # A write fails (the submit's): ralphd is degraded, and says why and what to do.
        self.assert_refused_as_storage(d, make_workspace(self.workspaces, "refused"))
        storage = self.wait_storage(d, "degraded")
        self.assertIn("full", storage["cause"])
        self.assertIn("free space", storage["fix"])
        # A dry run says it starts no loop now (submit --host auto passes it over).
        room = d.call("loop.submit", {"workspace": make_workspace(self.workspaces, "dry"),
                                      "agent": "command", "command": "true",
                                      "dry_run": True})["capacity"]
        self.assertEqual((room["free_slots"], room["scheduler_held"]), (0, True))
        self.assertIn("ralph cannot write its state: ", room["scheduler_held_reason"])
        status = d.ctl("daemon", "status").stdout
        self.assertIn("storage", status)
        self.assertIn("degraded", status)
        self.assertIn("ralphctl gc", status)
        doctor = d.ctl_json("doctor", check=False)
        database = [c for c in doctor["checks"] if c["check"] == "database"][0]
        self.assertEqual(database["status"], "fail")
        self.assertIn("free space", database["fix"])
        top = d.ctl("top", "--once").stdout
        self.assertIn("storage degraded", top)
        self.assertIn("free space", top)
        # Reads go on; the queued loop says what it waits for.
        self.assertIn("waits until ralph can write its state",
                      d.get(queued["id"])["stop_reason"])
        self.assertEqual(len(d.call("loop.list", {})["loops"]), 2)
        # The agent goes on: its own copy grows while the disk is full.
        wait_until(lambda: os.path.getsize(own) > written_before_full, 10,
                   "the agent to go on writing")
        time.sleep(1)
        self.assertEqual(d.get(queued["id"])["state"], "queued", "no attempt starts")

        self.disk.free()
        self.wait_storage(d, "ok")
        d.wait_state(loop["id"], "completed", timeout=60)
        d.wait_state(queued["id"], "completed", timeout=30)
        attempts = d.attempts(loop["id"])
        self.assertEqual(len(attempts), 1)
        self.assertEqual((attempts[0]["termination"], attempts[0]["exit_code"]), ("exited", 0))
        self.assertEqual(d.output(loop["id"]), read_bytes(own),
                         "every byte the agent wrote while the disk was full is stored")
        # Said once: later refusals are counted, not logged.
        self.assertEqual(d.log_text().count(FULL_MESSAGE), 1, d.log_text())
        self.assertIn("can be written again", d.log_text())
        d.stop()
        self.assert_intact(d)

    def test_a_peers_hold_on_a_full_disk_ends_the_link_until_it_can_be_stored(self):
        peer = FakePeer(self.workspaces)
        self.addCleanup(peer.close)
        d = self.daemon_on_tmpfs(hosts="evil ssh://evil\n", extra_args=("--peer", "evil"),
                                 env={"RALPH_SSH_COMMAND": peer.ssh_command})

        def evil():
            return d.call("daemon.info")["peers"][0]

        ws, _ = peer.link()
        wait_until(lambda: evil()["linked"], 10, "ralphd linked to its peer")
        self.disk.fill()
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        hold = {"agent": "claude", "account": "default", "until": until, "reason": "usage limit"}
        ws.send_json({"jsonrpc": "2.0", "method": "agent.held", "params": hold})

        # The hold cannot be stored: ralphd is degraded, and the link ends saying why.
        self.wait_storage(d, "degraded")
        ended = wait_until(lambda: not evil()["linked"] and evil(), 10, "the link to end")
        self.assertIn("full", ended["error"])
        self.assertIn("peer evil: not linked: ", d.log_text())
        self.assertEqual(d.call("budget.get")["holds"], [])
        ws.close()

        # Room again: the next link's exchange brings the hold again, and it is stored.
        self.disk.free()
        self.wait_storage(d, "ok")
        again, _ = peer.link(holds=[hold])
        held = wait_until(lambda: d.call("budget.get")["holds"], 10, "the hold to be stored")
        self.assertEqual([(h["agent"], h["origin"]) for h in held], [("claude", "evil")])
        self.assertTrue(evil()["linked"])
        again.close()

    def test_a_notification_the_full_disk_kept_in_the_outbox_goes_once_there_is_room(self):
        # The receiver takes the notification, but the disk fills before its answer: ralphd
        # cannot take it out of the outbox. It is not posted again while the disk is full (a
        # phone would ring at every try), and it leaves the outbox within seconds once there is
        # room, not after the longest backoff (5 minutes: a night's seed found it).
        def fill_once(post):
            if len(receiver.received()) == 1:
                self.disk.fill()

        receiver = Receiver(before_answer=fill_once)
        self.addCleanup(receiver.stop)
        d = self.daemon_on_tmpfs(extra_args=("--notify", receiver.url("/hook")))
        loop = d.submit(make_workspace(self.workspaces, "noted"),
                        agent_command("count-to-complete.sh", "1"), max_iterations=1)
        d.wait_state(loop["id"], "completed", timeout=30)
        first = wait_until(receiver.received, 15, "the notification to be posted")[0]
        time.sleep(2)
        self.disk.free()

        def outbox():
            with sqlite3.connect(d.db) as db:
                return db.execute("SELECT count(*) FROM notifications").fetchone()[0]

        wait_until(lambda: outbox() == 0, 10, "the outbox to be delivered")
        ids = [p["body"]["id"] for p in receiver.received()]
        self.assertEqual(ids.count(first["body"]["id"]), 1, ids)
        self.assertIn("notifications: ", d.log_text())

    def test_output_whose_journal_the_disk_refuses_waits_for_it_and_keeps_its_claim(self):
        # The shims' journals on a disk of their own, full, while the output's has room: the
        # output waits for its journal records, so ralphd reads it as the agent's stdout and sees
        # the claim of completion in it; also when the agent leaves a process behind, which its
        # shim ends (found by the night simulation, test_night.py: a sandboxed judge).
        d = self.daemon_on_tmpfs()
        journals = SmallDisk(os.path.join(os.path.dirname(d.db), "attempts"), "1m")
        self.addCleanup(journals.unmount)
        ws = make_workspace(self.workspaces, "claim")
        agent = os.path.join(ws, "claim-when-told.sh")
        write_text(agent, "#!/bin/sh\nwhile [ ! -e .go ]; do sleep 0.05; done\n"
                          "echo 'All done.'\necho '<promise>COMPLETE</promise>'\n"
                          "sleep 60 > /dev/null 2>&1 &\ntouch .done\n")
        os.chmod(agent, 0o755)
        loop = d.submit(ws, agent, max_iterations=1)
        d.running_attempt(loop["id"])
        journals.fill()
        write_text(os.path.join(ws, ".go"), "")
        wait_until(lambda: os.path.exists(os.path.join(ws, ".done")), 10, "the agent's answer")
        time.sleep(1)
        self.assertEqual(d.get(loop["id"])["state"], "running", "the shim waits for room")
        journals.free()
        final = d.wait_state(loop["id"], ("completed", "exhausted"), timeout=30)
        self.assertEqual(final["state"], "completed", final["stop_reason"])
        d.stop()
        with sqlite3.connect(d.db) as db:
            streams = db.execute("SELECT DISTINCT stream FROM output_chunks").fetchall()
        self.assertEqual(streams, [("stdout",)])
        self.assert_intact(d)

    def test_a_flood_on_a_full_disk_holds_64_mib_and_counts_what_it_loses(self):
        # 80 MiB while the disk is full: the shim holds the first 64 MiB (its memory stays
        # bounded), loses the rest and says so; what is stored is exactly the start of the flood.
        total = 80 << 20
        d = self.daemon_on_tmpfs(size="160m")
        ws = make_workspace(self.workspaces, "hostile")
        agent = os.path.join(ws, "flood-when-told.sh")
        write_text(agent, "#!/bin/sh\nwhile [ ! -e .go ]; do sleep 0.05; done\n"
                          "%s %d\ntouch .flooded\n" % (agent_command("flood.sh"), total))
        os.chmod(agent, 0o755)
        loop = d.submit(ws, agent, max_iterations=1)
        d.running_attempt(loop["id"])
        self.disk.fill()
        write_text(os.path.join(ws, ".go"), "")
        wait_until(lambda: os.path.exists(os.path.join(ws, ".flooded")), 60,
                   "the agent to flood")
        shims = [pid for pid in all_pids() if process_name(pid) == "ralph-shim"
                 and d.root in proc_cmdline(pid)]
        self.assertEqual(len(shims), 1)
        with open("/proc/%d/status" % shims[0]) as f:
            rss_kib = int([line for line in f if line.startswith("VmRSS:")][0].split()[1])
        # 64 MiB held, and room for the program and the sanitizers' own memory: never a second
        # copy of what it holds. (That it holds no more than 64 MiB, the stored output shows.)
        self.assertLess(rss_kib, 112 << 10, "the shim holds one copy of at most 64 MiB")
        self.assertEqual(d.get(loop["id"])["state"], "running", "the shim waits for room")

        self.disk.free()
        d.wait_state(loop["id"], "exhausted", timeout=60)  # one iteration, no completion signal
        self.assertEqual(d.attempts(loop["id"])[0]["exit_code"], 0)
        stored = d.output(loop["id"])
        self.assertGreaterEqual(len(stored), 64 << 20)
        self.assertLess(len(stored), total)
        self.assertEqual(stored, pattern_bytes(len(stored)), "no byte lost before the limit")
        lost = [e["text"] for e in d.call("loop.events", {"id": loop["id"]})["events"]
                if e["kind"] == "refused" and "were lost" in e["text"]]
        self.assertEqual(len(lost), 1, lost)
        self.assertTrue(lost[0].startswith("%d bytes of the agent's output were lost"
                                           % (total - len(stored))), lost[0])
        d.stop()
        self.assert_intact(d)

    def test_ralphd_starts_degraded_on_a_full_disk_and_gc_frees_it(self):
        d = self.daemon_on_tmpfs()
        old = make_workspace(self.workspaces, "old")
        # 8 MiB of output to free later.
        done = d.submit(old, agent_command("flood-copy.py", "8", "0"), max_iterations=1)
        d.wait_state(done["id"], "completed", timeout=60)
        d.stop()
        self.disk.fill()

        d.start()
        storage = self.wait_storage(d, "degraded", timeout=5)
        self.assertIn("free space", storage["fix"])
        self.assertEqual(d.get(done["id"])["state"], "completed")
        # gc cannot change the database, but removes the output files all the same...
        time.sleep(1.1)
        gc = d.ctl("gc", "--older-than", "1s", check=False)
        self.assertEqual(gc.returncode, 1, gc.stdout + gc.stderr)
        self.assertIn("output files of 1 loop(s) were removed", gc.stderr)
        # ... which frees the disk: ralphd is itself again, and the next gc removes the rows.
        self.wait_storage(d, "ok")
        removed = d.ctl_json("gc", "--older-than", "1s")
        self.assertEqual(removed["loop_ids"], [done["id"]])
        ws = make_workspace(self.workspaces, "after")
        after = d.submit(ws, agent_command("count-to-complete.sh", "1"), max_iterations=1)
        d.wait_state(after["id"], "completed", timeout=30)
        d.stop()
        self.assert_intact(d)

    def test_read_only_output_and_attempt_directories_degrade_ralphd_until_writable(self):
        d = self.daemon_on_tmpfs()
        slow = make_workspace(self.workspaces, "slow")
        loop = d.submit(slow, agent_command("slow-counter.sh", "2", "2", "4096"),
                        max_iterations=2)
        d.running_attempt(loop["id"])
        # Read-only from now on for whatever opens a file there (the running agent's shim has its
        # output file open already, and writes on).
        state = os.path.dirname(d.db)
        for name in ("output", "attempts"):
            self.read_only(os.path.join(state, name))
        storage = self.wait_storage(d, "degraded", timeout=20)
        self.assertIn("Read-only file system", storage["cause"])
        self.assertIn("writable", storage["fix"])
        started = [a for a in d.attempts(loop["id"]) if a.get("pid")]
        self.assertEqual(len(started), 1, "no agent of the second iteration starts")
        # No flood of errors while it lasts (probes every 2 s).
        lines = len(d.log_text().splitlines())
        time.sleep(3)
        self.assertLessEqual(len(d.log_text().splitlines()), lines + 1, d.log_text())
        self.restore_writes()
        self.wait_storage(d, "ok")
        final = d.wait_state(loop["id"], "completed", timeout=30)
        self.assertEqual(final["iterations"], 2)
        output = d.output(loop["id"])
        self.assertIn(b"iteration 1 of 2 finished", output)
        self.assertIn(b"iteration 2 of 2 finished", output)
        d.stop()
        self.assert_intact(d)

    def test_a_read_only_prompts_or_output_directory_degrades_ralphd_and_fails_no_loop(self):
        d = self.daemon_on_tmpfs()
        state = os.path.dirname(d.db)
        ws = make_workspace(self.workspaces, "slow")
        loop = d.submit(ws, agent_command("slow-counter.sh", "3", "1"), max_iterations=3)
        for iteration, name in ((1, "prompts"), (2, "output")):
            wait_until(lambda: d.get(loop["id"])["iterations"] == iteration - 1 and
                       [a for a in d.attempts(loop["id"]) if a["termination"] == "running"],
                       20, "iteration %d to run" % iteration)
            # The next attempt cannot write its prompt, or its shim its output file.
            self.read_only(os.path.join(state, name))
            storage = self.wait_storage(d, "degraded", timeout=20)
            self.assertIn("Read-only file system", storage["cause"])
            self.assertIn(name, storage["cause"])
            self.assertIn("writable", storage["fix"])
            self.assertIn(d.get(loop["id"])["state"], ("running", "waiting", "queued"))
            self.assertIn("degraded", d.ctl("daemon", "status").stdout)
            self.restore_writes()
            self.wait_storage(d, "ok")
        final = d.wait_state(loop["id"], "completed", timeout=30)
        self.assertEqual(final["iterations"], 3)
        self.assertFalse([a for a in d.attempts(loop["id"]) if a["termination"] == "spawn_failed"])
        d.stop()
        self.assert_intact(d)

    def test_a_removed_state_directory_is_said_and_takes_no_loop_it_would_lose(self):
        d = self.daemon()
        state = os.path.dirname(d.db)
        ws = make_workspace(self.workspaces, "running")
        loop = d.submit(ws, agent_command("slow-counter.sh", "2", "1"), max_iterations=2)
        d.running_attempt(loop["id"])
        # Moved away: lost; moved back: ralphd is itself again, nothing lost.
        os.rename(state, state + ".away")
        wait_until(lambda: "is no longer there" in self.storage(d)["cause"], 5, "the move seen")
        os.rename(state + ".away", state)
        self.wait_storage(d, "ok")
        # Removed: said at once, and a new loop is refused rather than accepted and lost.
        subprocess.run(["rm", "-rf", state], check=True)
        storage = wait_until(lambda: "is no longer there" in self.storage(d)["cause"] and
                             self.storage(d), 5, "the removal seen")
        self.assertIn("ralph's state directory was removed or moved", storage["cause"])
        self.assertIn("put ralph's state directory back", storage["fix"])
        with self.assertRaises(RpcError) as refused:
            d.submit(make_workspace(self.workspaces, "new"), agent_command("count-to-complete.sh",
                                                                           "1"))
        self.assertEqual(refused.exception.code, -32009)
        self.assertIn("is no longer there", refused.exception.message)
        status = d.ctl("daemon", "status").stdout
        self.assertIn("degraded", status)
        self.assertIn("ralphctl daemon stop", status)
        # The running loop does not fail for it: its next iteration waits.
        time.sleep(2.5)
        self.assertNotEqual(d.get(loop["id"])["state"], "failed")
        # Said once each time: when moved away, when removed.
        self.assertEqual(d.log_text().count("ralph's state is lost"), 2, d.log_text())
        # A new start makes a new state directory, which works.
        d.stop()
        d.start()
        self.assertEqual(self.storage(d)["state"], "ok")
        after = d.submit(make_workspace(self.workspaces, "after"),
                         agent_command("count-to-complete.sh", "1"), max_iterations=1)
        d.wait_state(after["id"], "completed", timeout=30)


if __name__ == "__main__":
    main()
