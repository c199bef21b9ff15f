#!/usr/bin/env bash
# Fake agent that floods stdout as fast as it can with exactly BYTES bytes of a fixed pattern:
# the line "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n" repeated, cut at
# BYTES (tests/integration/harness.py pattern_bytes() makes the same bytes).
set -u
bytes=${1:?usage: flood.sh BYTES}
# yes's diagnostics (EPIPE when head has enough) must not end up in the agent's output.
yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ 2>/dev/null | head -c "$bytes"
exit 0
