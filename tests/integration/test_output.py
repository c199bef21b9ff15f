"""Agent output: every byte of a 50 MiB flood is persisted while the daemon stays responsive;
`ralphctl tail` clients attached at different times see identical full output; `tail -n`,
`--from-offset`; and loop.tail over a WebSocket session (output, then the final loop.state), its
bytes in binary messages too."""

import base64
import json
import os
import subprocess
import tempfile
import threading
import time

from harness import (DaemonTestCase, RpcError, agent_command, count_to_complete_output, main,
                     pattern_bytes, scaled, slow_counter_output)


def first_difference(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


class OutputTest(DaemonTestCase):

    def assertSameBytes(self, got, expected, what):
        if got != expected:
            at = first_difference(got, expected)
            self.fail("%s: %d bytes instead of %d, first difference at byte %s: %r vs %r"
                      % (what, len(got), len(expected), at, got[at:at + 40],
                         expected[at:at + 40]))

    def test_an_agent_flooding_50_mib_has_every_byte_stored_while_the_daemon_keeps_answering(self):
        d = self.daemon()
        ws = d.workspace()
        size = 50 * 1024 * 1024
        latencies, errors = [], []
        stop = threading.Event()

        def probe():
            while not stop.is_set():
                started = time.monotonic()
                try:
                    d.call("daemon.info", timeout=60)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
                    return
                latencies.append(time.monotonic() - started)
                time.sleep(0.01)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        try:
            loop = d.submit(ws, agent_command("flood.sh", size), max_iterations=1)
            final = d.wait_state(loop["id"], "exhausted", timeout=90)
        finally:
            stop.set()
            prober.join(timeout=scaled(60))
        self.assertEqual(errors, [])
        self.assertTrue(latencies)
        self.assertLess(max(latencies), scaled(2.0),
                        "daemon.info took %.2f s during the flood" % max(latencies))

        self.assertEqual(final["output_bytes"], size)
        attempts = d.attempts(loop["id"])
        self.assertEqual(len(attempts), 1)
        self.assertEqual(attempts[0]["termination"], "exited")
        self.assertEqual(attempts[0]["output_end"] - attempts[0]["output_start"], size)

        expected = pattern_bytes(size)
        self.assertSameBytes(d.output(loop["id"]), expected, "loop.output")
        # The rendered view: a plain-text agent's bytes after the line naming its iteration.
        tail = d.ctl("tail", loop["id"], text=False, timeout=90).stdout
        self.assertSameBytes(tail, "── iteration 1 ──\n".encode() + expected, "ralphctl tail")

    def test_two_tail_clients_attached_at_different_times_get_identical_full_output(self):
        d = self.daemon()
        ws = d.workspace()
        block = 200000
        loop = d.submit(ws, agent_command("slow-counter.sh", 3, "0.5", block), max_iterations=5)
        expected = b"".join(slow_counter_output(k, 3, block) for k in (1, 2, 3))

        files = [tempfile.TemporaryFile(dir=d.root) for _ in range(4)]
        clients = []
        try:
            # --raw: the bytes exactly as the agent wrote them (no iteration lines).
            clients.append(d.ctl_popen("tail", "-f", "--raw", loop["id"], stdout=files[0],
                                       stderr=files[1]))
            # The second client comes when part of the output is already persisted.
            d.wait_output_contains(loop["id"], b"slow-counter: iteration 1 of 3 finished\n")
            clients.append(d.ctl_popen("tail", "-f", "--raw", loop["id"], stdout=files[2],
                                       stderr=files[3]))
            codes = [c.wait(timeout=scaled(60)) for c in clients]
            contents = []
            for f in files:
                f.seek(0)
                contents.append(f.read())
        finally:
            for c in clients:
                c.kill()
                c.wait()
            for f in files:
                f.close()
        first, second = contents[0], contents[2]
        self.assertEqual(codes, [0, 0], "stderr: %r / %r" % (contents[1], contents[3]))

        self.assertEqual(d.get(loop["id"])["state"], "completed")
        self.assertSameBytes(d.output(loop["id"]), expected, "loop.output")
        self.assertSameBytes(first, expected, "tail -f attached at submit")
        self.assertSameBytes(second, expected, "tail -f attached later")

    def test_tail_prints_the_last_lines_or_resumes_from_a_byte_offset(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("count-to-complete.sh", 3))
        d.wait_state(loop["id"], "completed", timeout=30)
        full = count_to_complete_output(3, 3)
        self.assertEqual(d.ctl("tail", "--raw", loop["id"], text=False).stdout, full)
        self.assertEqual(d.ctl("tail", "--raw", "-n", "2", loop["id"], text=False).stdout,
                         b"count-to-complete: run 3 of 3\n<promise>COMPLETE</promise>\n")
        offset = len(b"count-to-complete: run 1 of 3\n") + 5
        self.assertEqual(
            d.ctl("tail", "--raw", "--from-offset", offset, loop["id"], text=False).stdout,
            full[offset:])
        # Rendered, the last lines come after the line naming their iteration.
        self.assertEqual(d.ctl("tail", "-n", "2", loop["id"], text=False).stdout,
                         "── iteration 3 ──\n".encode() +
                         b"count-to-complete: run 3 of 3\n<promise>COMPLETE</promise>\n")
        page = d.call("loop.output", {"id": loop["id"], "last_lines": 1})
        self.assertEqual(page["data"], "<promise>COMPLETE</promise>\n")
        self.assertEqual(page["offset"], len(full) - len(b"<promise>COMPLETE</promise>\n"))
        self.assertEqual(page["end_offset"], len(full))
        self.assertEqual(page["state"], "completed")
        self.assertTrue(page["final"])

    def test_tails_far_behind_a_running_loop_share_one_pace_and_catch_up_without_gaps(self):
        # While the loop runs, the tails more than a chunk behind get at most a 64 KiB chunk per
        # 16 ms in all, whatever their number (the agent's throughput comes first): two tails
        # 2 MiB behind take together at least a second (64 chunks, the first of each not held
        # back: 62 × 16 ms), where a pace per tail would take half that and no pace a few tens
        # of milliseconds. (A lower bound: a slow machine only makes it longer.)
        d = self.daemon()
        ws = d.workspace()
        size = 2 * 1024 * 1024
        loop = d.submit(ws, agent_command("slow-counter.sh", 1, "4", size), max_iterations=1)
        started = slow_counter_output(1, 1, size, finished=False)
        deadline = time.monotonic() + scaled(30)
        while d.call("loop.get", {"id": loop["id"]})["output_bytes"] < len(started):
            self.assertLess(time.monotonic(), deadline, "the agent did not write its output")
            time.sleep(0.02)

        tails = [d.ctl_popen("tail", "-f", "--raw", loop["id"], stderr=subprocess.DEVNULL)
                 for _ in range(2)]
        got = [b"", b""]
        done_at = [None, None]
        subscribed = time.monotonic()

        def read_started(k):
            while len(got[k]) < len(started):
                piece = tails[k].stdout.read1(1 << 20)
                if not piece:
                    return  # checked below: it must have all of it
                got[k] += piece
            done_at[k] = time.monotonic()

        readers = [threading.Thread(target=read_started, args=(k,)) for k in range(2)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout=scaled(30))
        self.assertTrue(all(done_at), "a tail -f ended before the output already written")
        paced_for = max(done_at) - subscribed
        self.assertEqual(d.call("loop.get", {"id": loop["id"]})["state"], "running")
        self.assertGreaterEqual(paced_for, 0.95,
                                "2 × 2 MiB behind a running loop came faster than one pace")

        for k, tail in enumerate(tails):
            got[k] += tail.stdout.read()  # the rest, once the agent prints it and ends
            self.assertEqual(tail.wait(timeout=scaled(30)), 0)
            self.assertSameBytes(got[k], slow_counter_output(1, 1, size), "paced tail -f")

    def test_loop_tail_over_a_websocket_streams_output_then_the_final_state(self):
        d = self.daemon()
        ws = d.workspace()
        loop = d.submit(ws, agent_command("slow-counter.sh", 2, "0.3", 100000), max_iterations=5)
        expected = b"".join(slow_counter_output(k, 2, 100000) for k in (1, 2))

        got, result, final, messages = b"", None, None, 0
        with d.websocket(timeout=30) as session:
            session.send_json({"jsonrpc": "2.0", "id": 7, "method": "loop.tail",
                               "params": {"id": loop["id"], "offset": 0, "encoding": "base64"}})
            deadline = time.monotonic() + scaled(60)
            while final is None:
                self.assertLess(time.monotonic(), deadline, "no final loop.state")
                message = session.recv_json()
                self.assertIsNotNone(message, "the session closed before the final loop.state")
                messages += 1
                if message.get("id") == 7:
                    self.assertNotIn("error", message)
                    result = message["result"]
                    self.assertEqual(result["id"], loop["id"])
                    self.assertEqual(result["offset"], 0)
                    continue
                params = message.get("params", {})
                self.assertEqual(params.get("id"), loop["id"], message)
                if message.get("method") == "loop.output":
                    self.assertEqual(params["encoding"], "base64")
                    self.assertEqual(params["offset"], len(got), "no gap, no duplicate")
                    chunk = base64.b64decode(params["data"])
                    self.assertEqual(len(chunk), params["length"])
                    got += chunk
                elif message.get("method") == "loop.state":
                    if params.get("final"):
                        final = params
                else:
                    self.fail("unexpected message %r" % message)
        self.assertIsNotNone(result, "loop.tail got no result")
        # Each message in one frame (one write): a 64 KiB chunk cut into frames of 4 KiB woke a
        # client 22 times.
        self.assertEqual(session.data_frames, messages)
        self.assertGreater(len(got), 65536)
        self.assertEqual(final["state"], "completed")
        self.assertEqual(final["iterations"], 2)
        self.assertSameBytes(got, expected, "loop.tail notifications")

    def test_loop_tail_in_the_binary_encoding_sends_the_bytes_themselves_in_binary_messages(self):
        d = self.daemon()
        ws = d.workspace()
        # Every byte value, invalid UTF-8 and NULs included, over several 64 KiB notifications.
        expected = os.urandom(200000)
        with open(os.path.join(ws, "bytes.bin"), "wb") as f:
            f.write(expected)
        loop = d.submit(ws, "cat bytes.bin", max_iterations=1)

        got, final = b"", None
        with d.websocket(timeout=30) as session:
            session.send_json({"jsonrpc": "2.0", "id": 7, "method": "loop.tail",
                               "params": {"id": loop["id"], "encoding": "binary"}})
            deadline = time.monotonic() + scaled(60)
            while final is None:
                self.assertLess(time.monotonic(), deadline, "no final loop.state")
                received = session.recv_message()
                self.assertIsNotNone(received, "the session closed before the final loop.state")
                binary, payload = received
                if not binary:  # the result and loop.state: JSON text messages
                    message = json.loads(payload)
                    self.assertNotIn("error", message)
                    if message.get("method") == "loop.state" and message["params"]["final"]:
                        final = message["params"]
                    continue
                header, newline, data = payload.partition(b"\n")
                self.assertEqual(newline, b"\n", "a binary message is JSON text, newline, bytes")
                message = json.loads(header)
                self.assertEqual(message["method"], "loop.output")
                params = message["params"]
                self.assertEqual((params["encoding"], params["data"]), ("binary", ""))
                self.assertEqual(params["offset"], len(got), "no gap, no duplicate")
                self.assertEqual(len(data), params["length"])
                got += data
        self.assertEqual(final["state"], "exhausted")
        self.assertSameBytes(got, expected, "binary loop.output messages")

        # Only a WebSocket session can carry binary messages: loop.output refuses the encoding.
        with self.assertRaises(RpcError) as refused:
            d.call("loop.output", {"id": loop["id"], "encoding": "binary"})
        self.assertEqual(refused.exception.code, -32602)
        self.assertIn("loop.tail", refused.exception.message)


if __name__ == "__main__":
    main()
