#!/usr/bin/env python3
"""Fake `claude -p --output-format stream-json` whose run has a long silence, for the inactivity
timeout tests. Installed (symlinked) as `claude` on the daemon's PATH; reads the prompt on stdin.

FAKE_SILENCE=SECONDS (default 2.5) and FAKE_SILENT_WHILE:
  tool  (default) the silence is while a tool call awaits its result: an assistant tool_use
        line, SECONDS of nothing, then the tool_result and a successful result that signals
        completion (<promise>COMPLETE</promise>);
  idle  the silence comes before anything else, with no tool call pending (a hang), then the
        same lines.
"""
import json
import os
import sys
import time

if "--version" in sys.argv[1:]:
    print("claude 9.9.9 (ralph claude-slow-tool)")
    sys.exit(0)

sys.stdin.read()
silence = float(os.environ.get("FAKE_SILENCE", "2.5"))
idle = os.environ.get("FAKE_SILENT_WHILE", "tool") == "idle"


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


if idle:
    time.sleep(silence)
emit({"type": "system", "subtype": "init", "session_id": "slow-tool", "model": "fake"})
emit({"type": "assistant", "message": {"content": [
    {"type": "text", "text": "Running the test suite."},
    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make test"}}]}})
if not idle:
    time.sleep(silence)
emit({"type": "user", "message": {"content": [
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "all tests passed"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
      "result": "The tests pass.\n<promise>COMPLETE</promise>", "total_cost_usd": 0.001,
      "usage": {"input_tokens": 10, "output_tokens": 5}})
