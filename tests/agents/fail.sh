#!/usr/bin/env bash
# Fake agent that fails: exits with CODE (on stderr: "fail.sh: run K failing with CODE").
# With TIMES, only its first TIMES runs fail; later runs succeed and signal completion
# ("fail.sh: run K succeeding\n<promise>COMPLETE</promise>\n" on stdout).
set -u
code=${1:?usage: fail.sh CODE [TIMES]}
times=${2:-}
count=0
[[ -f .fail ]] && count=$(<.fail)
count=$((count + 1))
echo "$count" >.fail
if [[ -z $times ]] || ((count <= times)); then
    echo "fail.sh: run $count failing with $code" >&2
    exit "$code"
fi
echo "fail.sh: run $count succeeding"
echo "<promise>COMPLETE</promise>"
exit 0
