#!/usr/bin/env bash
# Fake agent whose processes try to outlive it. It starts two sleepers that ignore SIGTERM and
# keep the agent's stdout open: one in a session (and process group) of its own (setsid), one
# double-forked (an orphan, in the agent's group). Their pids go to .escaped-setsid.pid and
# .escaped-fork.pid. Then, by MODE:
#   exit       prints the completion promise and exits 0 at once (the sleepers still hold stdout)
#   wait       sleeps until it is ended
#   kill-shim  kills its parent (its ralph-shim) with SIGKILL, then sleeps until it is ended
set -u
mode=${1:?usage: escape-artist.sh exit|wait|kill-shim}
setsid bash -c 'trap "" TERM; echo $$ >.escaped-setsid.pid.tmp; mv .escaped-setsid.pid.tmp .escaped-setsid.pid; exec sleep 1000' &
( (
    trap '' TERM
    echo "$BASHPID" >.escaped-fork.pid.tmp
    mv .escaped-fork.pid.tmp .escaped-fork.pid
    exec sleep 1000
) & )
while [[ ! -f .escaped-setsid.pid || ! -f .escaped-fork.pid ]]; do sleep 0.02; done
echo "escape-artist: two sleepers escaped"
if [[ $mode == exit ]]; then
    echo "<promise>COMPLETE</promise>"
    exit 0
fi
if [[ $mode == kill-shim ]]; then
    kill -KILL "$PPID"
fi
while :; do sleep 1000; done
