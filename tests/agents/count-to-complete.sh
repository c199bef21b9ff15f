#!/usr/bin/env bash
# Fake agent: counts its runs in a file of the workspace (its cwd) and prints the completion
# signal from run N on (default 3).
#   output of run K: "count-to-complete: run K of N\n" and, when K >= N, "<promise>COMPLETE</promise>\n"
set -u
n=${1:-3}
count=0
[[ -f .count-to-complete ]] && count=$(<.count-to-complete)
count=$((count + 1))
echo "$count" >.count-to-complete
echo "count-to-complete: run $count of $n"
if ((count >= n)); then
    echo "<promise>COMPLETE</promise>"
fi
exit 0
