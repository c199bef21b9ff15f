"""JSON-RPC 2.0 over HTTP on the real daemon: the examples of the specification
(tests/fixtures/jsonrpc-spec-vectors.json), malformed and oversize bodies, invalid params
and the documented application error codes, and requests over a WebSocket session: a burst of
100 loops ending at once reaches a subscriber that reads; one that does not read is dropped."""

import json
import os
import threading

from harness import (FIXTURES, TERMINAL_STATES, DaemonTestCase, RpcError, agent_command,
                     all_pids, main, post_raw_streaming, proc_cmdline, scaled, wait_until,
                     write_text)

# ralphd has none of the example methods (subtract, sum, get_data, ...), so where the
# specification expects a result, ralphd must answer "method not found" for the same id.
METHOD_NOT_FOUND = -32601


def expected_from_vector(response):
    """The vector's expected response with results of unknown methods turned into -32601."""
    def one(obj):
        if "result" in obj:
            return {"jsonrpc": "2.0", "id": obj["id"], "error": {"code": METHOD_NOT_FOUND}}
        return {"jsonrpc": "2.0", "id": obj["id"], "error": {"code": obj["error"]["code"]}}
    if response is None:
        return None
    if isinstance(response, list):
        return [one(r) for r in response]
    return one(response)


def normalized(obj, test):
    """{jsonrpc, id, error: {code}} of a response object, checking its shape."""
    test.assertIsInstance(obj, dict, obj)
    test.assertEqual(obj.get("jsonrpc"), "2.0", obj)
    test.assertIn("id", obj, "a response always has an id (null when unknown)")
    test.assertIn("error", obj, obj)
    test.assertNotIn("result", obj, "result and error never come together")
    test.assertIsInstance(obj["error"].get("code"), int, obj)
    test.assertIsInstance(obj["error"].get("message"), str, obj)
    test.assertTrue(obj["error"]["message"], obj)
    return {"jsonrpc": "2.0", "id": obj["id"], "error": {"code": obj["error"]["code"]}}


def sort_key(obj):
    return json.dumps(obj, sort_keys=True)


class JsonRpcTest(DaemonTestCase):

    def test_the_json_rpc_specification_examples_get_the_specified_responses_over_http(self):
        path = os.path.join(FIXTURES, "jsonrpc-spec-vectors.json")
        self.assertTrue(os.path.isfile(path), "missing fixture %s" % path)
        with open(path) as f:
            vectors = json.load(f)
        self.assertEqual(len(vectors), 15)
        d = self.daemon()
        for vector in vectors:
            with self.subTest(vector["name"]):
                status, headers, body = d.post_raw(vector["request"].encode())
                expected = expected_from_vector(vector["response"])
                if expected is None:
                    self.assertEqual(status, 204, body)
                    self.assertEqual(body, b"", "nothing is returned for notifications")
                    continue
                self.assertIn(status, (200, 400), body)
                self.assertTrue(headers.get("content-type", "").startswith("application/json"),
                                headers)
                got = json.loads(body)
                if isinstance(expected, list):
                    self.assertIsInstance(got, list, "a batch gets an array: %r" % got)
                    got = [normalized(r, self) for r in got]
                    if vector["response_order_insensitive"]:
                        got, expected = sorted(got, key=sort_key), sorted(expected, key=sort_key)
                    self.assertEqual(got, expected)
                else:
                    self.assertIsInstance(got, dict, "a single response object: %r" % got)
                    self.assertEqual(normalized(got, self), expected)
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)

    def test_malformed_json_gets_a_parse_error_and_the_daemon_goes_on(self):
        d = self.daemon()
        for body in (b'{"jsonrpc": "2.0", "method": "daemon.info", "id": 1',
                     b"\xff\xfe not json at all", b'{"jsonrpc": "2.0", "id": 1} trailing'):
            with self.subTest(body=body):
                status, _, reply = d.post_raw(body)
                self.assertIn(status, (200, 400))
                got = json.loads(reply)
                self.assertEqual(got["error"]["code"], -32700, got)
                self.assertIsNone(got["id"])
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)

    def test_a_2_mib_body_gets_http_413_and_the_daemon_still_answers(self):
        d = self.daemon()
        padding = b"x" * (2 << 20)
        body = (b'{"jsonrpc":"2.0","id":1,"method":"daemon.info","params":{"pad":"' + padding
                + b'"}}')
        status, _, _ = post_raw_streaming(d.socket, body)
        self.assertEqual(status, 413)
        self.assertEqual(d.call("daemon.info")["pid"], d.pid)
        self.assertTrue(d.running())

    def test_a_parameter_of_the_wrong_type_gets_invalid_params_naming_the_field(self):
        d = self.daemon()
        reply = d.rpc("loop.submit", {"workspace": d.workspace(), "command": "true",
                                      "max_iterations": "ten"})
        self.assertEqual(reply["error"]["code"], -32602, reply)
        self.assertIn("max_iterations", reply["error"]["message"])
        reply = d.rpc("loop.get", {})
        self.assertEqual(reply["error"]["code"], -32602, reply)
        self.assertIn("id", reply["error"]["message"])
        self.assertEqual(d.call("loop.list", {})["loops"], [], "nothing was submitted")

    def test_application_errors_carry_their_documented_codes(self):
        d = self.daemon()
        ws = d.workspace()
        cases = [
            ("loop.get", {"id": 4242}, -32001),
            ("loop.cancel", {"id": 4242}, -32001),
            ("loop.submit", {"workspace": "relative/dir", "command": "true"}, -32003),
            ("loop.submit", {"workspace": os.path.join(ws, "missing"), "command": "true"}, -32003),
            ("loop.submit", {"workspace": ws, "agent": "no-such-agent"}, -32004),
        ]
        for method, params, code in cases:
            with self.subTest(method=method, params=params):
                reply = d.rpc(method, params)
                self.assertEqual(reply.get("error", {}).get("code"), code, reply)
                self.assertTrue(reply["error"]["message"])

    def test_a_websocket_session_answers_requests_and_batches(self):
        d = self.daemon()
        with d.websocket() as session:
            session.send_json({"jsonrpc": "2.0", "id": "a", "method": "daemon.info"})
            reply = session.recv_json()
            self.assertEqual(reply["id"], "a")
            self.assertEqual(reply["result"]["pid"], d.pid)
            session.send_text('[{"jsonrpc":"2.0","id":1,"method":"loop.list","params":{}},'
                              '{"jsonrpc":"2.0","id":2,"method":"nope"}]')
            replies = sorted(session.recv_json(), key=lambda r: r["id"])
            self.assertEqual(replies[0]["result"]["loops"], [])
            self.assertEqual(replies[1]["error"]["code"], METHOD_NOT_FOUND)
            session.send_text("{oops")
            self.assertEqual(session.recv_json()["error"]["code"], -32700)

    def test_events_subscribe_announces_every_state_change_of_every_loop(self):
        d = self.daemon()
        with self.assertRaises(RpcError) as refused:
            d.call("events.subscribe")  # HTTP cannot carry notifications
        self.assertEqual(refused.exception.code, -32602)
        self.assertIn("WebSocket", refused.exception.message)

        with d.websocket() as events, d.websocket() as quiet:
            events.send_json({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe"})
            self.assertEqual(events.recv_json(), {"jsonrpc": "2.0", "id": 1,
                                                  "result": {"subscribed": True}})
            events.send_json({"jsonrpc": "2.0", "id": 2, "method": "events.subscribe"})
            self.assertEqual(events.recv_json()["error"]["code"], -32602, "only once a session")

            # Two iterations with a delay between them: queued, running, waiting, running, completed.
            ws = d.workspace()
            done = d.submit(ws, agent_command("count-to-complete.sh", 2), name="two-steps",
                            delay_s=0.3)
            changes = []
            while not changes or changes[-1]["state"] != "completed":
                message = events.recv_json()
                self.assertEqual(message["method"], "loop.changed", message)
                self.assertEqual(message["params"]["id"], done["id"])
                changes.append(message["params"])
            states = [c["state"] for c in changes]
            self.assertEqual([s for i, s in enumerate(states) if i == 0 or states[i - 1] != s],
                             ["queued", "running", "waiting", "running", "completed"])
            # Counters come as an attempt and then its iteration end, with no state change.
            first_wait = states.index("waiting")
            self.assertEqual([(c["state"], c["attempts"], c["iterations"])
                              for c in changes[first_wait - 2:first_wait]],
                             [("running", 1, 0), ("running", 1, 1)])
            self.assertEqual(changes[-1]["iterations"], 2)
            self.assertEqual(changes[-1]["name"], "two-steps")
            self.assertIsNotNone(changes[-1]["finished_at"])

            # Every loop, also one that never runs: a paused scheduler, then a cancel.
            d.call("scheduler.set", {"paused": True})
            waiting = d.submit(ws, agent_command("never-complete.sh"), name="never-runs")
            d.call("loop.cancel", {"id": waiting["id"]})
            states = [events.recv_json()["params"] for _ in range(2)]
            self.assertEqual([(c["id"], c["state"]) for c in states],
                             [(waiting["id"], "queued"), (waiting["id"], "cancelled")])

            # A session that did not subscribe heard none of it.
            quiet.send_json({"jsonrpc": "2.0", "id": 7, "method": "daemon.info"})
            self.assertEqual(quiet.recv_json()["id"], 7)


    def test_a_burst_of_100_loops_ending_at_once_reaches_a_subscriber_that_reads(self):
        d = self.daemon(extra_args=["--max-concurrent", "100"])
        gate = os.path.join(d.root, "gate")
        os.mkfifo(gate)
        agent = os.path.join(d.root, "wait-for-gate.sh")
        write_text(agent, "#!/bin/sh\nread line < %s\necho done\n" % gate)
        os.chmod(agent, 0o755)
        ended = {}
        closed = []

        def read_events(session):
            while len(ended) < 100:
                message = session.recv_json()
                if message is None:
                    closed.append(True)
                    return
                change = message.get("params", {})
                if change.get("state") in TERMINAL_STATES:
                    ended[change["id"]] = change["state"]

        with d.websocket() as events:
            events.send_json({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe"})
            self.assertIn("result", events.recv_json())
            reader = threading.Thread(target=read_events, args=(events,), daemon=True)
            reader.start()
            loops = []
            for i in range(100):
                workspace = os.path.join(d.work_dir, "loop-%d" % i)
                os.mkdir(workspace)
                loops.append(d.submit(workspace, agent, max_iterations=1)["id"])
            wait_until(lambda: sum(agent in proc_cmdline(pid) for pid in all_pids()) == 100,
                       60, "100 agents waiting at the gate")
            # All of them go at once.
            with open(gate, "wb") as opened:
                opened.write(b"go\n" * 100)
            reader.join(scaled(60))
            self.assertEqual(closed, [], "the subscriber was dropped")
            self.assertEqual(sorted(ended), sorted(loops))
            self.assertEqual(set(ended.values()), {"exhausted"})
        self.assertNotIn("is not reading", d.log_text())

    def test_a_session_that_does_not_read_is_dropped_at_its_bound(self):
        d = self.daemon()
        loop = d.submit(d.workspace(), agent_command("flood.sh", 1 << 20), max_iterations=1)
        d.wait_state(loop["id"], "exhausted")
        with d.websocket() as session:
            # 40 pages of 1 MiB asked for, none read: ralphd drops the session at 16 MiB queued.
            for i in range(40):
                session.send_json({"jsonrpc": "2.0", "id": i, "method": "loop.output",
                                   "params": {"id": loop["id"], "max_bytes": 1 << 20}})
            while session.recv_message() is not None:
                pass
        self.assertIn("WebSocket client is not reading", d.log_text())

if __name__ == "__main__":
    main()
