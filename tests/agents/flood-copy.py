#!/usr/bin/env python3
"""Fake agent that floods for a while and keeps its own copy of what it wrote.

    flood-copy.py MIB PAUSE [EXIT]

Writes MIB mebibytes of numbered lines to stdout, 64 KiB at a time, pausing PAUSE seconds after
each MiB, then "<promise>COMPLETE</promise>"; each piece goes to .own-output before stdout, so
that file holds exactly the bytes it sent. Exits with EXIT (default 0) once the last byte is
written. Its pid goes to .flood.pid first, and .flood.done appears when it is about to exit."""

import os
import sys
import time

mib = int(sys.argv[1])
pause = float(sys.argv[2])
code = int(sys.argv[3]) if len(sys.argv) > 3 else 0

with open(".flood.pid", "w") as f:
    f.write(str(os.getpid()))
out = sys.stdout.buffer
line = 0
with open(".own-output", "wb", buffering=0) as own:
    for _ in range(mib):
        for _ in range(16):
            lines = []
            for _ in range(1024):
                lines.append(b"flood-copy line %09d ....................................\n" % line)
                line += 1
            piece = b"".join(lines)
            own.write(piece)
            out.write(piece)
            out.flush()
        time.sleep(pause)
    final = b"<promise>COMPLETE</promise>\n"
    own.write(final)
    out.write(final)
    out.flush()
open(".flood.done", "w").close()
sys.exit(code)
