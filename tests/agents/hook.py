#!/usr/bin/env python3
"""Fake on-done hook for the hook tests (not an agent).

  hook.py record DIR   writes DIR/<RALPH_HOOK>-<RALPH_LOOP_ID>.json: the RALPH_* variables, its
                       cwd, pid, process group, and what its stdin is. A second run for the same
                       hook and loop writes ...json.2 (then .3, ...), so a test sees every run.
                       Then prints 15 lines on stdout and one on stderr.
  hook.py hang DIR     records like `record`, starts a child that sleeps too (same process
                       group), and sleeps forever.
  hook.py fail         prints a line on stderr and exits 3.
"""
import json
import os
import subprocess
import sys
import time


def record(directory):
    base = os.path.join(directory, "%s-%s.json" % (os.environ.get("RALPH_HOOK", "unknown"),
                                                   os.environ.get("RALPH_LOOP_ID", "unknown")))
    info = {
        "env": {k: v for k, v in os.environ.items() if k.startswith("RALPH_")},
        "cwd": os.getcwd(),
        "pid": os.getpid(),
        "pgid": os.getpgrp(),
        "stdin": os.path.realpath("/proc/self/fd/0"),
        "argv": sys.argv,
    }
    # Written whole, then linked to the first free name: readers never see half a file.
    tmp = "%s.%d.tmp" % (base, os.getpid())
    with open(tmp, "w") as f:
        json.dump(info, f)
    for n in range(1, 100):
        try:
            os.link(tmp, base if n == 1 else "%s.%d" % (base, n))
            break
        except FileExistsError:
            continue
    os.unlink(tmp)


def main():
    mode = sys.argv[1]
    if mode == "fail":
        print("hook.py: failing on purpose", file=sys.stderr)
        sys.exit(3)
    record(sys.argv[2])
    if mode == "hang":
        subprocess.Popen(["sleep", "1000"])
        while True:
            time.sleep(1000)
    for i in range(1, 16):
        print("hook.py: line %d of loop %s" % (i, os.environ.get("RALPH_LOOP_ID")))
    print("hook.py: on stderr", file=sys.stderr)


if __name__ == "__main__":
    main()
