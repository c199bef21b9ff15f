#!/usr/bin/env bash
# Fake agent that takes its time: counts its runs in a workspace file, and per run prints
#   "slow-counter: iteration K of N started\n"
#   BYTES bytes of the flood.sh pattern (none when BYTES is 0)
#   ... sleeps SLEEP seconds (FIRST_SLEEP on its first run, when given) ...
#   "slow-counter: iteration K of N finished\n"
#   "<promise>COMPLETE</promise>\n"            (only when K >= N)
# Its pid goes to .slow-counter.pid before it prints anything.
# tests/integration/harness.py slow_counter_output() makes the same bytes.
set -u
n=${1:?usage: slow-counter.sh N SLEEP [BYTES] [FIRST_SLEEP]}
pause=${2:?usage: slow-counter.sh N SLEEP [BYTES] [FIRST_SLEEP]}
bytes=${3:-0}
first_pause=${4:-$pause}
count=0
[[ -f .slow-counter ]] && count=$(<.slow-counter)
count=$((count + 1))
echo "$count" >.slow-counter
echo "$$" >.slow-counter.pid
echo "slow-counter: iteration $count of $n started"
if ((bytes > 0)); then
    yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ 2>/dev/null | head -c "$bytes"
fi
if ((count == 1)); then sleep "$first_pause"; else sleep "$pause"; fi
echo "slow-counter: iteration $count of $n finished"
if ((count >= n)); then
    echo "<promise>COMPLETE</promise>"
fi
exit 0
