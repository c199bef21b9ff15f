#!/usr/bin/env bash
# Fake agent that behaves badly when stopped: it ignores SIGTERM (and so do its children, which
# inherit the ignored disposition) and leaves a child and a grandchild running in its process
# group. Only SIGKILL to the whole group ends it. Pids go to files in the workspace:
#   .agent.pid (this script), .child.pid (a bash), .grandchild.pid (a sleep under that bash).
set -u
trap '' TERM
echo "$$" >.agent.pid
bash -c 'sleep 1000 & echo "$!" >.grandchild.pid.tmp; mv .grandchild.pid.tmp .grandchild.pid; wait' &
echo "$!" >.child.pid
echo "ignore-term-with-grandchild: running, SIGTERM ignored"
while :; do
    sleep 1000
done
