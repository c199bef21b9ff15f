#!/usr/bin/env bash
# Fake agent that hangs: prints one line, then sleeps SECONDS (a well-behaved process: SIGTERM
# ends it).
set -u
seconds=${1:?usage: sleep.sh SECONDS}
echo "sleep.sh: sleeping $seconds s"
exec sleep "$seconds"
