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
# The tests' npm packages, as each package-lock.json pins them (npm's registry), once.
npm_ci() {
    local dir=$1
    shift
    if [[ ! $dir/node_modules/.package-lock.json -nt $dir/package-lock.json ]]; then
        npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error "$@"
    fi
}
# puppeteer-core for the dashboard's browser tests.
npm_ci "$root/tests/browser"
# The real codex and gemini CLIs for the real_cli suite. Without their install scripts: those
# build or download native modules (a keychain, a pty) that only interactive gemini uses.
npm_ci "$root/tests/agent-clis" --ignore-scripts
meson test -C "$dir" --print-errorlogs "${extra[@]}"
