#!/usr/bin/env python3
"""A fake agent CLI that replays recorded runs, for the integration tests.

Installed (symlinked) under the names of the real CLIs: claude, codex, opencode, gemini, aider,
kiro-cli. The name it was called by picks the agent; under any other name (a copy of it that a
`command` loop runs, harness.command_agent) it replays tests/agents/streams/command/, plain text
as a program of the user's own writes it. The scenario is the Nth name of the
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
variables it got), "scenario", "resets_at" (what RESETS_AT became), "loop", "iteration",
"attempt", "kind" (ralph's RALPH_* variables), "env" (the names of all its variables)} as a JSON
line to $FAKE_AGENT_LOG if set (a relative path is in its current directory). With $FAKE_WRITES
set, a run of the loop's work appends "run N" to that file in the current directory (a change for
progress and diffs).
With $FAKE_PLANT set to PATH=TEXT, a run of the loop's work writes TEXT to PATH (relative to the
current directory), as a worker that tries to steer its judge would.

A judge (RALPH_ATTEMPT_KIND=judge), which may not write its current directory, takes its
scenarios from $FAKE_JUDGE_SCRIPT, counts its runs in $FAKE_JUDGE_LOG.runs and logs to
$FAKE_JUDGE_LOG (put both where the judge may write, e.g. under ~/.claude; without
$FAKE_JUDGE_LOG it counts nothing and always plays the script's first name); its log lines also
list its current directory ("listing") and say whether it could write there ("wrote"), which
the scenario "judge-edit" tries (then replays judge-accept); "judge-slow" logs, then sleeps
$FAKE_JUDGE_SLEEP seconds (default 10: outlasting a restart of ralphd), then replays
judge-accept.
"judge-obey" does what the first line of its prompt says, as a model follows its instructions:
judge-accept when the line has ACCEPT, else judge-reject (the built-in prompt's first line is
"# Review: is this work done?").
A run that cannot write where it counts its runs (its workspace, or a judge's log directory) for
another reason than a full disk says so on stderr and exits 98.
`--version` prints "<name> 9.9.9 (ralph replay)".
"""
import errno
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
# The exit status of a run that cannot write where it counts its runs: its workspace (a worker)
# or its home directory (a judge), which ralph must leave it writable (a full disk aside).
CANNOT_WRITE = 98
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


CLI_NAMES = {"claude": "claude", "codex": "codex", "opencode": "opencode", "gemini": "gemini",
             "aider": "aider", "kiro-cli": "kiro"}


def agent_name():
    return CLI_NAMES.get(os.path.basename(sys.argv[0]), "command")


def is_judge():
    return os.environ.get("RALPH_ATTEMPT_KIND") == "judge"


def next_scenario():
    if is_judge():
        names = [s for s in os.environ.get("FAKE_JUDGE_SCRIPT", "judge-accept").split(",") if s]
        log = os.environ.get("FAKE_JUDGE_LOG")
        if not log:
            return names[0], 1
        counter = log + ".runs"
    else:
        names = [s for s in os.environ.get("FAKE_AGENT_SCRIPT", "ralph-iter1").split(",") if s]
        counter = ".fake-agent-runs"
    runs = 0
    if os.path.exists(counter):
        with open(counter) as f:
            runs = int(f.read().strip() or 0)
    try:
        with open(counter, "w") as f:
            f.write(str(runs + 1))
    except OSError as e:
        if e.errno == errno.ENOSPC:  # the disk's doing, not a sandbox's
            raise
        sys.stderr.write("replay-agent: cannot write %s: %s\n" % (counter, e.strerror))
        sys.exit(CANNOT_WRITE)
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
    resets_at = os.environ.get("FAKE_RESETS_AT", str(int(time.time()) + 2))
    record = {"argv": sys.argv, "stdin": stdin_text, "cwd": os.getcwd(),
              "tmpdir": os.environ.get("TMPDIR", ""),
              "api_keys": sorted(k for k in os.environ if k.endswith("_API_KEY")),
              "scenario": scenario, "resets_at": resets_at,
              "loop": os.environ.get("RALPH_LOOP_ID"), "iteration": os.environ.get("RALPH_ITERATION"),
              "attempt": os.environ.get("RALPH_ATTEMPT"), "kind": os.environ.get("RALPH_ATTEMPT_KIND"),
              "env": sorted(os.environ)}
    if is_judge():
        record["listing"] = sorted(os.listdir("."))
    if scenario == "judge-edit":
        record["wrote"] = try_to_write("judge-was-here.txt")
        scenario = "judge-accept"
    if os.environ.get("FAKE_WRITES") and not is_judge():
        with open(os.environ["FAKE_WRITES"], "a") as f:
            f.write("run %d\n" % run)
    if os.environ.get("FAKE_PLANT") and not is_judge():
        path, text = os.environ["FAKE_PLANT"].split("=", 1)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")
    log = os.environ.get("FAKE_JUDGE_LOG" if is_judge() else "FAKE_AGENT_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(record) + "\n")
    if scenario == "judge-obey":
        first_line = prompt_received(stdin_text).split("\n", 1)[0]
        scenario = "judge-accept" if "ACCEPT" in first_line else "judge-reject"
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
    stdout = read(base + ext).replace(b"RESETS_AT", resets_at.encode())
    for placeholder, value in replacements.items():
        stdout = stdout.replace(placeholder, value)
    write_in_pieces(prefix + stdout)
    sys.stderr.buffer.write(read(base + ".stderr"))
    sys.stderr.flush()
    return int(read(base + ".rc", b"0").strip() or 0)


if __name__ == "__main__":
    sys.exit(main())
