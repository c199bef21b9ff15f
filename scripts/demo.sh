#!/usr/bin/env bash
# The README's first command: builds ralph, starts ralphd in the background (unless one is
# already running), and runs the demo loop in a fresh git workspace, following its output
# until it completes. Idempotent: run it again and it reuses the running daemon.
# Exit status: that of `ralphctl submit --follow` (0 when the demo loop completed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

"$root/scripts/build.sh" --demo

ralphd="$root/build/daemon/ralphd"
ralphctl="$root/build/client/ralphctl"

log_dir="${XDG_STATE_HOME:-$HOME/.local/state}/ralph"
log_file="$log_dir/ralphd.log"

if "$ralphctl" daemon status >/dev/null 2>&1; then
    echo "demo: ralphd is already running" >&2
else
    mkdir -p "$log_dir"
    chmod 0700 "$log_dir"
    echo "demo: starting ralphd (log: $log_file)" >&2
    # Detached from this terminal (own session, no stdin), so it outlives the script.
    setsid "$ralphd" </dev/null >>"$log_file" 2>&1 &
    daemon_pid=$!
    for _ in $(seq 1 100); do
        if "$ralphctl" daemon status >/dev/null 2>&1; then
            break
        fi
        if ! kill -0 "$daemon_pid" 2>/dev/null; then
            echo "demo: ralphd exited at start; the end of $log_file:" >&2
            tail -n 20 "$log_file" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    if ! "$ralphctl" daemon status >/dev/null 2>&1; then
        echo "demo: ralphd does not answer after 10 s; the end of $log_file:" >&2
        tail -n 20 "$log_file" >&2 || true
        exit 1
    fi
fi

workspace=$(mktemp -d /tmp/ralph-demo-XXXX)
git -c init.defaultBranch=main -C "$workspace" init -q
echo "demo: workspace $workspace" >&2

status=0
"$ralphctl" submit --agent demo --workspace "$workspace" --name demo --delay 1s --follow \
    "Demo: make progress, one step per iteration" || status=$?

echo >&2
echo "demo: the loop's work is in $workspace (demo-progress.md)" >&2
"$ralphctl" daemon status >&2 || true
echo "demo: ralphd keeps running in the background (log: $log_file)." >&2
echo "demo: stop it with: $ralphctl daemon stop" >&2
exit "$status"
