#!/usr/bin/env python3
"""Fake agent for the loop-memory tests: does, at each iteration, what its arguments say.

Every run first records what ralph gave it, under .ralph/agent/ in the workspace (its cwd;
.ralph/ is ralph's own directory, so none of this counts as a change to the workspace):
  prompt-N.md   the prompt it got on stdin (N = $RALPH_ITERATION; a retry overwrites it)
  loop-N.md     a copy of .ralph/loop.md as it was when the run started (if there was one)
  notes-N.md    a copy of .ralph/notes.md as it was when the run started (if there was one)

Then it runs its actions in order. Each argument is `[WHEN:]VERB[=ARG]`; WHEN selects the
iterations: `2` (only 2), `1,3`, `2-` (2 and later), `-2` (up to 2); no WHEN = every iteration.
In ARG, `{i}` is the iteration number and `\\n` a newline.
  say=TEXT            print TEXT (and a newline) on stdout
  err=TEXT            print TEXT on stderr
  note=TEXT           print <ralph_notes>TEXT</ralph_notes>
  promise[=PHRASE]    print <promise>PHRASE</promise> (default COMPLETE)
  write=FILE:TEXT     replace FILE with TEXT (creating directories)
  append=FILE:TEXT    append TEXT and a newline to FILE
  tick=FILE           check the first unchecked `- [ ]` box of FILE
  promise-if-done=FILE   print <promise>COMPLETE</promise> when FILE has no `- [ ]` left
  commit              git add -A and commit ("scripted-agent: iteration N")
  sleep=SECONDS       sleep
  wait=PATH           wait until PATH exists (at most 60 s; then exit 98)
  exit=CODE           exit now with CODE
"""
import os
import shutil
import subprocess
import sys
import time

ITERATION = int(os.environ.get("RALPH_ITERATION", "0") or 0)


def selected(when):
    if when is None:
        return True
    for part in when.split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            if (not low or ITERATION >= int(low)) and (not high or ITERATION <= int(high)):
                return True
        elif part and ITERATION == int(part):
            return True
    return False


def expand(text):
    return text.replace("{i}", str(ITERATION)).replace("\\n", "\n")


def record():
    os.makedirs(os.path.join(".ralph", "agent"), exist_ok=True)
    prompt = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
    with open(os.path.join(".ralph", "agent", "prompt-%d.md" % ITERATION), "wb") as f:
        f.write(prompt)
    for name in ("loop", "notes"):
        source = os.path.join(".ralph", name + ".md")
        if os.path.exists(source):
            shutil.copyfile(source, os.path.join(".ralph", "agent", "%s-%d.md" % (name, ITERATION)))


def tick(path):
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("- [ ]", "- [x]", 1))


def git(*args):
    subprocess.run(["git", "-c", "user.name=scripted agent", "-c", "user.email=agent@ralph.invalid",
                    "-c", "commit.gpgsign=false"] + list(args), check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def main():
    record()
    for action in sys.argv[1:]:
        when = None
        verb_part = action
        head = action.split("=", 1)[0]
        if ":" in head:
            when, verb_part = action.split(":", 1)
        if not selected(when):
            continue
        verb, _, arg = verb_part.partition("=")
        arg = expand(arg)
        if verb == "say":
            print(arg, flush=True)
        elif verb == "err":
            print(arg, file=sys.stderr, flush=True)
        elif verb == "note":
            print("<ralph_notes>%s</ralph_notes>" % arg, flush=True)
        elif verb == "promise":
            print("<promise>%s</promise>" % (arg or "COMPLETE"), flush=True)
        elif verb in ("write", "append"):
            path, _, text = arg.partition(":")
            if os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w" if verb == "write" else "a") as f:
                f.write(text if verb == "write" else text + "\n")
        elif verb == "tick":
            tick(arg)
        elif verb == "promise-if-done":
            with open(arg) as f:
                if "- [ ]" not in f.read():
                    print("<promise>COMPLETE</promise>", flush=True)
        elif verb == "commit":
            git("add", "-A")
            git("commit", "-q", "--allow-empty", "-m", "scripted-agent: iteration %d" % ITERATION)
        elif verb == "sleep":
            time.sleep(float(arg))
        elif verb == "wait":
            deadline = time.monotonic() + 60
            while not os.path.exists(arg):
                if time.monotonic() > deadline:
                    sys.exit(98)
                time.sleep(0.05)
        elif verb == "exit":
            sys.exit(int(arg))
        else:
            sys.stderr.write("scripted-agent: unknown action %r\n" % action)
            sys.exit(99)
    return 0


if __name__ == "__main__":
    sys.exit(main())
