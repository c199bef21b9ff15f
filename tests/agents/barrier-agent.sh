#!/usr/bin/env bash
# Fake agent for the worktree tests. Marks its loop as started (BARRIER/started/ID), waits until
# N loops have, so that it succeeds only if N loops run at the same time, then until the test
# creates BARRIER/release (so that the test sees them all running); gives up after 20 s each.
# Then it commits a file of its own and signals completion.
#   output: "barrier-agent: loop ID in DIR on BRANCH", then "<promise>COMPLETE</promise>"
set -u
barrier=${1:?usage: barrier-agent.sh BARRIER N}
n=${2:?usage: barrier-agent.sh BARRIER N}
mkdir -p "$barrier/started"
touch "$barrier/started/$RALPH_LOOP_ID"
waited=0
until (($(ls "$barrier/started" | wc -l) >= n)) && [[ -e $barrier/release ]]; do
    if ((waited++ >= 400)); then
        echo "barrier-agent: $(ls "$barrier/started" | wc -l) of $n loops running at once," \
            "release: $(test -e "$barrier/release" && echo yes || echo no)" >&2
        exit 1
    fi
    sleep 0.1
done
echo "work of loop $RALPH_LOOP_ID" >"work-$RALPH_LOOP_ID.txt"
git add "work-$RALPH_LOOP_ID.txt"
git -c user.name=agent -c user.email=agent@ralph.invalid -c commit.gpgsign=false \
    commit -q -m "loop $RALPH_LOOP_ID" -- "work-$RALPH_LOOP_ID.txt"
echo "barrier-agent: loop $RALPH_LOOP_ID in $PWD on $(git rev-parse --abbrev-ref HEAD)"
echo "<promise>COMPLETE</promise>"
