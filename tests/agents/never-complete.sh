#!/usr/bin/env bash
# Fake agent: does a step of work and never signals completion.
#   output of run K: "never-complete: run K\n"
set -u
count=0
[[ -f .never-complete ]] && count=$(<.never-complete)
count=$((count + 1))
echo "$count" >.never-complete
echo "never-complete: run $count"
exit 0
