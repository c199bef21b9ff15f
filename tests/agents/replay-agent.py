#!/usr/bin/env python3
"""A fake agent CLI that replays recorded runs, for the integration tests.

Installed (symlinked) under the names of the real CLIs: claude, codex, opencode, gemini, aider,
kiro-cli. The name it was called by picks the agent; the scenario is the Nth name of the
comma-separated list in $FAKE_AGENT_SCRIPT, N being how many times a fake agent ran in the
current directory (counted in .fake-agent-runs; the last name repeats). A scenario is replayed
from tests/agents/streams/<agent>/ or else tests/fixtures/agents/<agent>/: its stdout
(.jsonl or .txt) is written in pieces of random size (lines split anywhere, as pipes do), its
.stderr to stderr, and it exits with its .rc. RESETS_AT in a stream becomes $FAKE_RESETS_AT
(epoch seconds; default now + 2).

Scenarios made up here: "hang" (one line, then silence forever), "huge-line" (a 20 MiB line,
then the ralph-iter1 run), "garbage" (random bytes, exit 0), "echo-prompt" (prints the prompt
it got, which contains the completion tag, then an answer without it).

Each reads its configuration as the real CLI does (agent_config.py): a codex model provider's
env_key, gemini's GOOGLE_GEMINI_BASE_URL (called), opencode's {env:NAME}, claude's apiKeyHelper,
aider's .env files and model; when that configuration asks for a variable the agent did not
get, the run replays the real CLI's failure instead of its scenario.

Every run appends {"argv", "stdin", "cwd", "tmpdir", "api_keys" (the names of the *_API_KEY
variables it got), "env" (the names of all its variables)} as a JSON line to $FAKE_AGENT_LOG if
set. With $FAKE_WRITES set, a run of the
loop's work appends "run N" to that file in the current directory (a change for progress and
diffs).

A judge (RALPH_ATTEMPT_KIND=judge), which may not write its current directory, takes its
scenarios from $FAKE_JUDGE_SCRIPT, counts its runs in $FAKE_JUDGE_LOG.runs and logs to
$FAKE_JUDGE_LOG (put both where the judge may write, e.g. under ~/.claude); its log lines also
list its current directory ("listing") and say whether it could write there ("wrote"), which
the scenario "judge-edit" tries (then replays judge-accept); "judge-slow" logs, then sleeps
$FAKE_JUDGE_SLEEP seconds (default 10: outlasting a restart of ralphd), then replays
judge-accept.
`--version` prints "<name> 9.9.9 (ralph replay)".
"""
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
import agent_config  # noqa: E402  (next to this file, wherever it is linked from)

STREAMS = os.path.join(HERE, "streams")
# tests/fixtures, or the copy next to the agent that a sandbox shows with it (harness.py's
# self_contained_agents).
FIXTURES = os.path.join(
    os.environ.get("RALPH_FIXTURES") or next(
        path for path in (os.path.join(HERE, "fixtures"), os.path.join(HERE, "..", "fixtures"))
        if os.path.isdir(path)),
    "agents")


def agent_name():
    name = os.path.basename(sys.argv[0])
    return "kiro" if name == "kiro-cli" else name


def is_judge():
    return os.environ.get("RALPH_ATTEMPT_KIND") == "judge"


def next_scenario():
    if is_judge():
        names = [s for s in os.environ.get("FAKE_JUDGE_SCRIPT", "judge-accept").split(",") if s]
        counter = os.environ["FAKE_JUDGE_LOG"] + ".runs"
    else:
        names = [s for s in os.environ.get("FAKE_AGENT_SCRIPT", "ralph-iter1").split(",") if s]
        counter = ".fake-agent-runs"
    runs = 0
    if os.path.exists(counter):
        with open(counter) as f:
            runs = int(f.read().strip() or 0)
    with open(counter, "w") as f:
        f.write(str(runs + 1))
    return names[min(runs, len(names) - 1)], runs + 1


def try_to_write(name):
    try:
        with open(name, "w") as f:
            f.write("the judge was here\n")
        return True
    except OSError:
        return False


def find_recording(agent, scenario):
    for base in (STREAMS, FIXTURES):
        for ext in (".jsonl", ".txt"):
            path = os.path.join(base, agent, scenario + ext)
            if os.path.exists(path):
                return path[: -len(ext)], ext
    sys.stderr.write("replay-agent: no recording %s/%s\n" % (agent, scenario))
    sys.exit(97)


def read(path, default=b""):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return default


def write_in_pieces(data):
    out = sys.stdout.buffer
    i = 0
    while i < len(data):
        n = random.randint(1, 4096)
        out.write(data[i:i + n])
        out.flush()
        i += n
        if random.random() < 0.05:
            time.sleep(0.002)


def prompt_received(stdin_text):
    """The prompt as the agent got it: stdin, --message-file, -p, or the last argument."""
    args = sys.argv[1:]
    if "--message-file" in args:
        return read(args[args.index("--message-file") + 1]).decode(errors="replace")
    if "-p" in args and args.index("-p") + 1 < len(args) and not args[args.index("-p") + 1].startswith("-"):
        return args[args.index("-p") + 1]
    if stdin_text:
        return stdin_text
    return args[-1] if args else ""


def main():
    name = os.path.basename(sys.argv[0])
    if "--version" in sys.argv[1:]:
        print("%s 9.9.9 (ralph replay)" % name)
        return 0
    stdin_text = "" if sys.stdin.isatty() else sys.stdin.read()
    agent = agent_name()
    scenario, run = next_scenario()
    record = {"argv": sys.argv, "stdin": stdin_text, "cwd": os.getcwd(),
              "tmpdir": os.environ.get("TMPDIR", ""),
              "api_keys": sorted(k for k in os.environ if k.endswith("_API_KEY")),
              "env": sorted(os.environ)}
    if is_judge():
        record["listing"] = sorted(os.listdir("."))
    if scenario == "judge-edit":
        record["wrote"] = try_to_write("judge-was-here.txt")
        scenario = "judge-accept"
    if os.environ.get("FAKE_WRITES") and not is_judge():
        with open(os.environ["FAKE_WRITES"], "a") as f:
            f.write("run %d\n" % run)
    log = os.environ.get("FAKE_JUDGE_LOG" if is_judge() else "FAKE_AGENT_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(record) + "\n")
    if scenario == "judge-slow":
        time.sleep(float(os.environ.get("FAKE_JUDGE_SLEEP", "10")))
        scenario = "judge-accept"
    if scenario == "hang":
        sys.stdout.write('{"type":"system","subtype":"init"}\n')
        sys.stdout.flush()
        while True:
            time.sleep(3600)
    if scenario == "garbage":
        write_in_pieces(bytes(random.getrandbits(8) for _ in range(100000)))
        return 0
    if scenario == "echo-prompt":
        write_in_pieces((prompt_received(stdin_text) + "\nNothing is finished yet.\n").encode())
        return 0
    replacements = {}
    failure = agent_config.configured_failure(agent, sys.argv[1:])
    if failure:
        scenario, replacements = failure
    prefix = b""
    if scenario == "huge-line":
        prefix = b"x" * (20 << 20) + b"\n"
        scenario = "ralph-iter1"
    base, ext = find_recording(agent, scenario)
    resets_at = os.environ.get("FAKE_RESETS_AT", str(int(time.time()) + 2))
    stdout = read(base + ext).replace(b"RESETS_AT", resets_at.encode())
    for placeholder, value in replacements.items():
        stdout = stdout.replace(placeholder, value)
    write_in_pieces(prefix + stdout)
    sys.stderr.buffer.write(read(base + ".stderr"))
    sys.stderr.flush()
    return int(read(base + ".rc", b"0").strip() or 0)


if __name__ == "__main__":
    sys.exit(main())
