#!/usr/bin/env bash
# Builds ralph and runs every test suite (unit, integration, ...). The README's second command.
#   scripts/test.sh                 → tests of build/
#   scripts/test.sh --sanitizers    → tests of build-asan/ (ASan + UBSan)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=build
extra=()
for arg in "$@"; do
    case $arg in
        --sanitizers)
            dir=build-asan
            # Everything runs slower under the sanitizers.
            extra=(--timeout-multiplier 2)
            ;;
        -h | --help)
            echo "usage: scripts/test.sh [--sanitizers]"
            exit 0
            ;;
        *)
            echo "test.sh: unknown argument '$arg' (usage: scripts/test.sh [--sanitizers])" >&2
            exit 2
            ;;
    esac
done

"$root/scripts/build.sh" "$@"
# puppeteer-core for the dashboard's browser tests, as package-lock.json pins it (npm's registry).
browser="$root/tests/browser"
if [[ ! $browser/node_modules/.package-lock.json -nt $browser/package-lock.json ]]; then
    npm ci --prefix "$browser" --no-audit --no-fund --loglevel=error
fi
meson test -C "$dir" --print-errorlogs "${extra[@]}"
