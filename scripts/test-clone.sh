#!/usr/bin/env bash
# Runs the suites whose agents run sandboxed (judge, security) from a fresh clone of this tree
# under /tmp with spaces in its path, against the binaries of build/ (scripts/test.sh builds
# them): the sandbox's private /tmp hides all of /tmp but the programs it runs, and every path
# ralph builds must survive a space. The test daemons' directories get a space too (TMPDIR).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
clone="/tmp/ralph clone $$"
tmp="/tmp/ralph tmp $$"
trap 'rm -rf "$clone" "$tmp"' EXIT
git clone --quiet "$root" "$clone"
mkdir -p "$tmp"
for suite in judge security; do
    echo "test-clone: $suite from '$clone'" >&2
    TMPDIR=$tmp RALPHD=$root/build/daemon/ralphd RALPHCTL=$root/build/client/ralphctl \
        PYTHONDONTWRITEBYTECODE=1 python3 "$clone/tests/integration/test_$suite.py"
done
