#!/usr/bin/env bash
# The night simulation's long soak: ROUNDS scenarios of tests/integration/test_night.py, each from a
# fresh seed, on the build in build/ (or $BUILD). Prints each seed with its count of violations;
# a failing one is printed with its scenario and ralphd's logs, and replays with
#   RALPH_NIGHT_SEED=N meson test -C build night
#   scripts/night.sh [ROUNDS]   (default 50)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-50}
build=${BUILD:-$root/build}
case $rounds in
    '' | *[!0-9]*)
        echo "night.sh: ROUNDS must be a number (usage: scripts/night.sh [ROUNDS])" >&2
        exit 2
        ;;
esac
status=0
RALPH_NIGHT_ROUNDS=$rounds meson test -C "$build" night --timeout-multiplier 0 --print-errorlogs \
    || status=$?
grep -h '^night: seed' "$build/meson-logs/testlog.txt" || true
exit $status
