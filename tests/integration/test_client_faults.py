"""ralphctl facing a ralphd that breaks the protocol, played by the test (harness.FakeDaemon: a
socket the test serves, the real ralphctl pointed at it).

`tail -f` takes a loop's output as binary WebSocket messages: a loop.output notification's JSON
text, a newline, then its `length` bytes. A message whose bytes are not `length` long, or without
the newline after its JSON text, ends the command with exit 1 and an error naming the fault, and
none of its bytes are printed: what was printed is the output before it, exactly.
"""

import json

from harness import DaemonTestCase, FakeDaemon, main, scaled

LOOP = 7


def output_text(offset, length):
    """The JSON text of a binary loop.output notification of LOOP (no newline in it)."""
    return json.dumps({"jsonrpc": "2.0", "method": "loop.output",
                       "params": {"id": LOOP, "offset": offset, "length": length, "data": "",
                                  "encoding": "binary", "format": "text"}}).encode()


class TailFaultTest(DaemonTestCase):

    def setUp(self):
        self.d = self.new_daemon_unstarted()  # its directories and ralphctl's environment only
        self.fake = FakeDaemon(self.d.root)
        self.addCleanup(self.fake.close)

    def tail_receiving(self, bad_message):
        """`ralphctl tail -f LOOP` against the fake daemon, sent a good piece of output ("good\\n")
        and then `bad_message`, a binary message; its exit code, stdout and stderr."""
        proc = self.d.ctl_popen("tail", "-f", LOOP, env={"RALPH_SOCKET": self.fake.socket_path})
        with self.fake.accept() as ws:
            request = ws.recv_json()
            self.assertEqual((request["method"], request["params"]["encoding"]),
                             ("loop.tail", "binary"))
            ws.send_json({"jsonrpc": "2.0", "id": request["id"],
                          "result": {"id": LOOP, "offset": 0, "state": "running"}})
            ws.send_binary(output_text(0, 5) + b"\ngood\n")
            ws.send_binary(bad_message)
            stdout, stderr = proc.communicate(timeout=scaled(10))
        return proc.returncode, stdout.decode(), stderr.decode()

    def test_a_binary_output_whose_bytes_are_not_its_length_ends_tail_with_an_error(self):
        code, stdout, stderr = self.tail_receiving(output_text(5, 10) + b"\nshort")
        self.assertEqual(code, 1, stderr)
        self.assertIn("ralphd at %s sent 5 bytes of loop %d's output in a loop.output "
                      "notification of length 10" % (self.fake.socket_path, LOOP), stderr)
        self.assertEqual(stdout, "good\n")

    def test_a_binary_output_without_the_newline_after_its_json_ends_tail_with_an_error(self):
        # The bytes right after the JSON text: without a newline, and with one among them.
        for bytes_ in (b"nonl!", b"bad\n!"):
            with self.subTest(bytes=bytes_):
                code, stdout, stderr = self.tail_receiving(output_text(5, 5) + bytes_)
                self.assertEqual(code, 1, stderr)
                self.assertIn("ralphd at %s sent a binary message without a newline after its "
                              "JSON text" % self.fake.socket_path, stderr)
                self.assertEqual(stdout, "good\n")


if __name__ == "__main__":
    main()
