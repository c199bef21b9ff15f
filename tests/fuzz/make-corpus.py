#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into OUT/<target>/ from the repository's own test
data: the recorded agent streams (tests/fixtures/agents, tests/agents/streams), the examples of
the JSON-RPC specification (tests/fixtures/jsonrpc-spec-vectors.json), the requests of
proto/API.md, and configuration files as the agent CLIs' users write them. Each seed is in its target's input layout (tests/fuzz/fuzz_input.hpp): settings
bytes first, then sections separated by SECTION.

Usage: make-corpus.py OUT        (each OUT/<target> is emptied first)
Standard-library Python 3 only; the corpora are generated, never committed."""

import hashlib
import json
import os
import shutil
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SECTION = b"\n--fuzz-section--\n"  # fuzz_input.hpp's section_marker
# fuzz_agent_stream's first byte: the index of the format in this list.
FORMATS = ["claude", "codex", "opencode", "gemini", "text"]
# Every recorded run got this prompt (tests/fixtures/agents/README.md).
PROMPT = (b"You are running inside a ralph loop. Work through the task list in this repository. "
          b"When every task is done, reply with <promise>COMPLETE</promise>.")
PIECES = [bytes(8), bytes([1, 2, 3, 4, 5, 6, 7, 8])]  # two ways of cutting each seed


def recordings():
    """(format, stdout, stderr) of every recorded or hand-made agent run."""
    for base in (os.path.join(ROOT, "tests", "fixtures", "agents"),
                 os.path.join(ROOT, "tests", "agents", "streams")):
        for agent in sorted(os.listdir(base)):
            folder = os.path.join(base, agent)
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                stem, ext = os.path.splitext(name)
                if ext not in (".jsonl", ".txt"):
                    continue
                with open(os.path.join(folder, name), "rb") as f:
                    out = f.read().replace(b"RESETS_AT", b"1790000000")
                err = b""
                if os.path.exists(os.path.join(folder, stem + ".stderr")):
                    with open(os.path.join(folder, stem + ".stderr"), "rb") as f:
                        err = f.read()
                yield (agent if agent in FORMATS else "text"), out, err


def json_request_bodies():
    """The request bodies of the specification's examples and of proto/API.md (`--> ...`)."""
    with open(os.path.join(ROOT, "tests", "fixtures", "jsonrpc-spec-vectors.json")) as f:
        for vector in json.load(f):
            yield vector["request"].encode()
    with open(os.path.join(ROOT, "proto", "API.md"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("--> ") and line[4:5] in ("{", "["):
                yield line[4:].rstrip("\n").encode()


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)


def answer_texts():
    """What agents wrote: the text of the plain-text runs, and every longer string of the JSON
    lines (final answers, tool input and output, the echoed prompt)."""
    for fmt, out, _ in recordings():
        if fmt == "text":
            yield out
            continue
        for line in out.splitlines():
            try:
                for text in strings_in(json.loads(line)):
                    if len(text) >= 20:
                        yield text.encode()
            except ValueError:
                pass


# Answers in the shapes loop_memory.hpp documents, for the tags the recordings do not use.
TAG_EXAMPLES = [
    b"Done.\n<ralph_notes>\nThe tests live in tests/; run make check.\n</ralph_notes>\n",
    b"<ralph-feedback>\n<score>7</score>\n<summary>Parser done</summary>\n"
    b"<next_steps>Write the tests</next_steps>\n</ralph-feedback>",
    b"<ralph_feedback>\nscore: 8.5/10\n- **Next steps:** polish\n  - docs\nblockers: none\n"
    b"</ralph_feedback>",
    b"All done.\n<ralph_status>COMPLETED</ralph_status>",
    b"# Backlog\n- [x] parse\n- [ ] test\n1. [X] ship\n```\n- [ ] not counted\n```\n",
]


# Configuration files as the agent CLIs' users write them (daemon/agents/config_text), each with
# a value for the reading-back checks.
CONFIG_EXAMPLES = [
    (b'model_provider = "gw"\n[model_providers.gw]\nbase_url = "https://llm.example.com/v1"\n'
     b'env_key = "MYGATEWAY_KEY"\nenv_http_headers = { "X-Team" = "TEAM_TOKEN" }\n'
     b'query_params = { api-version = "2025-04-01-preview" }\n[mcp_servers.docs]\n'
     b'args = ["-y", """multi\nline"""]\nenv_vars = ["A",\n  "B", # c\n]\n'
     b"[[profiles.x]]\ninstructions = \'\'\'\n[not.a.table]\n\'\'\'\nwhen = 1979-05-27 07:32:00\n",
     b"caf\xc3\xa9 \"quoted\" \\ \x01"),
    (b'{"provider": {"gw": {"options": {"apiKey": "{env:GW_KEY}"}}}, // {env:IN_COMMENT}\n}',
     b"GW_KEY"),
    (b'{"mcpServers": {"x": {"headers": {"Authorization": "Bearer ${TOKEN:-none} $OTHER"}}}}',
     b"TOKEN"),
    (b"# aider\nexport AZURE_API_KEY=${VAULT_KEY}\nBASE='${KEPT}'\nmodel: azure/gpt-4o # c\n"
     b"env-file: 'secrets.env'\n", b"model"),
]


def write(folder, seeds):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for seed in seeds:
        name = hashlib.sha1(seed).hexdigest()
        with open(os.path.join(folder, name), "wb") as f:
            f.write(seed)


def http_post(body):
    return (b"POST /rpc HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


# Integers at the edges of what the typed handlers hold (int64), for the mutations to cross.
EDGE_BODIES = [
    b'{"jsonrpc":"2.0","id":9223372036854775807,"method":"loop.submit","params":'
    b'{"workspace":"/w","max_iterations":9223372036854775807,"priority":-9223372036854775808}}',
    b'{"jsonrpc":"2.0","id":1,"method":"loop.output","params":{"id":9223372036854775807,'
    b'"offset":0,"max_bytes":4194304}}',
]


GATE_TOKEN = b"0123456789abcdef" * 4  # fuzz_jsonrpc.cpp's known_token


def jsonrpc_seeds():
    bodies = list(json_request_bodies()) + EDGE_BODIES
    for body in bodies:
        for pieces in PIECES:
            yield b"\x00" + pieces + body           # the body in a well-formed POST /rpc
            yield b"\x01" + pieces + http_post(body)  # the raw connection
    info = b'{"jsonrpc":"2.0","id":1,"method":"daemon.info"}'
    raw = [
        http_post(info) + http_post(bodies[0]),  # two requests on one connection
        b"POST /rpc HTTP/1.1\r\nHost: ralph\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(info), info),
        b"POST /rpc HTTP/1.1\r\nHost: ralph\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
        % len(info) + info,
        b"POST /rpc HTTP/1.0\r\nContent-Length: %d\r\n\r\n" % len(info) + info,
        b"GET /rpc HTTP/1.1\r\nHost: ralph\r\n\r\n",
        b"GET /rpc HTTP/1.1\r\nHost: ralph\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        b"DELETE /other?x=1 HTTP/1.1\r\nHost: ralph\r\nContent-Length: 0\r\n\r\n",
        # The web gate's ways in (fuzz_jsonrpc's gate listens on 7177 with the token below).
        b"GET /login?token=%s HTTP/1.1\r\nHost: 127.0.0.1:7177\r\n\r\n" % GATE_TOKEN,
        b"POST /rpc HTTP/1.1\r\nHost: [::1]:7177\r\nOrigin: http://[::1]:7177\r\n"
        b"Cookie: a=b; ralph_token=%s\r\nContent-Length: %d\r\n\r\n" % (GATE_TOKEN, len(info))
        + info,
        b"POST /rpc HTTP/1.1\r\nHost: localhost:7177\r\nAuthorization: Bearer %s\r\n"
        b"Content-Length: %d\r\n\r\n" % (GATE_TOKEN, len(info)) + info,
    ]
    for connection in raw:
        yield b"\x01" + PIECES[1] + connection


def agent_stream_seeds():
    for fmt, out, err in recordings():
        for pieces in PIECES:
            yield (bytes([FORMATS.index(fmt)]) + pieces + b"\x00"  # stderr not repeated
                   + out + SECTION + err + SECTION + PROMPT)


def tags_seeds():
    for text in list(answer_texts()) + TAG_EXAMPLES:
        yield b"\x00" + text + SECTION + b"COMPLETE" + SECTION + b"ralph_status"  # no repeat


def config_seeds():
    for text, value in CONFIG_EXAMPLES:
        yield text + SECTION + value


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: make-corpus.py OUT\n")
        return 2
    out = sys.argv[1]
    for target, seeds in (("fuzz_jsonrpc", jsonrpc_seeds()),
                          ("fuzz_agent_stream", agent_stream_seeds()),
                          ("fuzz_tags", tags_seeds()),
                          ("fuzz_config", config_seeds())):
        seeds = set(seeds)
        write(os.path.join(out, target), seeds)
        print("make-corpus: %d seeds in %s" % (len(seeds), os.path.join(out, target)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
