"""Stand-ins for the model servers the real agent CLIs talk to (test_real_cli.py): HTTP servers on
127.0.0.1 that answer each model request with a scripted answer in the API's own streaming shape
and record every request (method, path, headers, body), so that a test checks what the user's
configuration made the CLI send. Standard library only, written like harness.Receiver.

- ResponsesServer: the OpenAI Responses API as codex calls it, `POST {base_url}/responses`
  answered with server-sent events (response.created, response.output_item.done carrying the
  assistant's message, response.completed with the usage).
- GeminiServer: the Gemini API as gemini-cli calls it,
  `POST {base}/v1beta/models/MODEL:streamGenerateContent?alt=sse` answered with server-sent
  events (candidates with the text, then usageMetadata), and `:generateContent` and
  `:countTokens` for the side requests the CLI may make.

The n-th model request gets answers[n] (the last one again when there are more requests), with
the usage usage(n): distinct per request, so that a test can check the tokens ralph recorded
are the server's."""

import http.server
import json
import threading


def usage(n):
    """The (input, output) tokens the servers report for model request n (0-based)."""
    return 1000 + 100 * n, 20 + n


class ModelServer:
    """The common part: a threaded HTTP server on 127.0.0.1 recording every request as a dict
    (method, path, headers, body as JSON or None) and answering it with respond()."""

    def __init__(self, test, answers):
        self.answers = list(answers)
        self.requests = []
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_request(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length) if length else b""
                try:
                    parsed = json.loads(body) if body else None
                except ValueError:
                    parsed = None
                request = {"method": self.command, "path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body": parsed}
                with server.lock:
                    if server.is_model_request(request):
                        request["n"] = len(server.model_requests_locked())
                    server.requests.append(request)
                status, content_type, payload = server.respond(request)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = handle_request

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        test.addCleanup(self.server.server_close)
        test.addCleanup(self.server.shutdown)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def model_requests(self):
        """The requests that asked the model for an answer, in order."""
        with self.lock:
            return self.model_requests_locked()

    def model_requests_locked(self):
        return [r for r in self.requests if "n" in r]

    def next_answer(self, request):
        """(n, text) for a model request: its index among them and its scripted answer."""
        n = request["n"]
        return n, self.answers[min(n, len(self.answers) - 1)]

    def respond(self, request):
        raise NotImplementedError

    def is_model_request(self, request):
        raise NotImplementedError


def sse(events):
    """Server-sent events: (event name or None, JSON data) pairs."""
    out = ""
    for name, data in events:
        if name:
            out += "event: %s\n" % name
        out += "data: %s\n\n" % json.dumps(data)
    return out.encode()


class ResponsesServer(ModelServer):
    """The OpenAI Responses API, for codex with `base_url = server.url + "/v1"` (codex posts to
    {base_url}/responses)."""

    def is_model_request(self, request):
        return request["method"] == "POST" and request["path"].split("?")[0].endswith("/responses")

    def respond(self, request):
        if not self.is_model_request(request):
            return 404, "application/json", b'{"error":{"message":"not here"}}'
        n, text = self.next_answer(request)
        input_tokens, output_tokens = usage(n)
        response_id = "resp_%d" % n
        return 200, "text/event-stream", sse([
            ("response.created", {"type": "response.created", "response": {"id": response_id}}),
            ("response.output_item.done", {
                "type": "response.output_item.done",
                "item": {"type": "message", "role": "assistant", "id": "msg_%d" % n,
                         "content": [{"type": "output_text", "text": text}]}}),
            ("response.completed", {
                "type": "response.completed",
                "response": {"id": response_id, "usage": {
                    "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": output_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": input_tokens + output_tokens}}}),
        ])


class GeminiServer(ModelServer):
    """The Gemini API, for gemini-cli with GOOGLE_GEMINI_BASE_URL = server.url."""

    def is_model_request(self, request):
        return ":streamGenerateContent" in request["path"]

    def respond(self, request):
        path = request["path"]
        if ":countTokens" in path:
            return 200, "application/json", json.dumps({"totalTokens": 10}).encode()
        if ":generateContent" in path:
            # A side request (gemini-cli's own checks): a plain answer, not counted.
            return 200, "application/json", json.dumps(self.candidate("{}", 0)).encode()
        if not self.is_model_request(request):
            return 404, "application/json", b'{"error":{"code":404,"message":"not here"}}'
        n, text = self.next_answer(request)
        # The text in two chunks, the usage with the last, as the API streams it.
        half = len(text) // 2
        first = {"candidates": [{"content": {"role": "model", "parts": [{"text": text[:half]}]},
                                 "index": 0}]}
        return 200, "text/event-stream", sse([(None, first),
                                              (None, self.candidate(text[half:], n))])

    @staticmethod
    def candidate(text, n):
        input_tokens, output_tokens = usage(n)
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": input_tokens,
                                  "candidatesTokenCount": output_tokens,
                                  "totalTokenCount": input_tokens + output_tokens},
                "modelVersion": "gemini-2.5-pro"}
