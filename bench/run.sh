#!/usr/bin/env bash
# ralph benchmarks (issue 2's speed and memory goals). Builds nothing: run scripts/build.sh
# first, or point RALPH_BUILD at another meson build directory. Each benchmark starts its own
# ralphd in a temporary XDG tree and compares against a baseline measured in the same run on the
# same machine. Prints one result line per goal.
#   bench/run.sh [flood|submit|iterations|git_iterations|idle|list|latency|tails|snapshots]...
#   (default: all but snapshots, which needs `ninja -C build bench/snapshot_bench` first)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RALPH_BUILD:-$root/build}
ralphd="$build/daemon/ralphd"
ralphctl="$build/client/ralphctl"
[[ -x $ralphd && -x $ralphctl ]] || { echo "bench: build first (scripts/build.sh)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/ralph-bench-XXXXXX)
daemon_pid=
cleanup() {
    # SIGINT: ralphd ends its agents (SIGTERM would leave them running under their shims).
    [[ -n $daemon_pid ]] && kill -INT "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

export XDG_RUNTIME_DIR="$tmp/run" XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/config"
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
export RALPH_SOCKET="$XDG_RUNTIME_DIR/ralph/ralphd.sock"
workspace="$tmp/ws"
mkdir -p "$workspace"

now_ns() { date +%s%N; }
ms_since() { echo $((($(now_ns) - $1) / 1000000)); }

start_daemon() {
    "$ralphd" --log-level warn "$@" 2>>"$tmp/ralphd.log" &
    daemon_pid=$!
    for _ in $(seq 100); do "$ralphctl" daemon status >/dev/null 2>&1 && return; sleep 0.05; done
    echo "bench: ralphd did not start" >&2; cat "$tmp/ralphd.log" >&2; exit 1
}
stop_daemon() {
    "$ralphctl" daemon stop >/dev/null 2>&1 || true
    wait "$daemon_pid" 2>/dev/null || true
    daemon_pid=
}
# Milliseconds between an attempt's start and end, as recorded by ralphd.
attempt_ms() {
    "$ralphctl" --json show "$1" | python3 -c '
import json, sys, datetime
def t(s): return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
a = json.load(sys.stdin)["attempts"][0]
print(round((t(a["ended_at"]) - t(a["started_at"])) * 1000))'
}

bench_flood() {
    local bytes=$((200 << 20)) runs=5
    # The agent: writes 200 MiB of text lines as fast as it can.
    local agent="bash -c 'yes \"ralph flood line: the quick brown fox jumps over the lazy dog 0123456789\" | head -c $bytes'"
    local base_best=999999 ralph_best=999999 quiet_best=999999
    start_daemon
    for _ in $(seq $runs); do
        # Every timed run starts with nothing left to write back: the output files of ralph's
        # runs stay (they are the loops' output), and the page cache writing them out during the
        # next runs would slow those down, not the plain file's, which was removed unwritten.
        sync
        local t0; t0=$(now_ns)
        bash -c "yes 'ralph flood line: the quick brown fox jumps over the lazy dog 0123456789' | head -c $bytes" >"$tmp/plain.out"
        local base; base=$(ms_since "$t0")
        ((base < base_best)) && base_best=$base
        sync; rm -f "$tmp/plain.out"

        # "submitted loop ID (...)": no python starting up next to the agent.
        local id; id=$("$ralphctl" submit --workspace "$workspace" --command "$agent" -m 1 --delay 0 "flood" |
            awk 'NR == 1 { print $3 }')
        "$ralphctl" tail -f "$id" >/dev/null || true   # a live tail client the whole time
        local ralph; ralph=$(attempt_ms "$id")
        ((ralph < ralph_best)) && ralph_best=$ralph
        local stored; stored=$("$ralphctl" --json show "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["loop"]["output_bytes"])')
        [[ $stored == "$bytes" ]] || { echo "bench: flood stored $stored bytes, expected $bytes" >&2; exit 1; }

        # The same without a tail client: the cost of persisting alone.
        sync
        id=$("$ralphctl" submit --workspace "$workspace" --command "$agent" -m 1 --delay 0 --wait "flood" 2>/dev/null |
            awk 'NR == 1 { print $3 }') || true
        local quiet; quiet=$(attempt_ms "$id")
        ((quiet < quiet_best)) && quiet_best=$quiet
    done
    stop_daemon
    echo "flood 200 MiB: plain file ${base_best} ms, through ralphd + live tail ${ralph_best} ms, slowdown $(python3 -c "print(f'{($ralph_best/$base_best-1)*100:.1f}%')") (goal < 20%); through ralphd without a tail ${quiet_best} ms ($(python3 -c "print(f'{($quiet_best/$base_best-1)*100:+.1f}%')"))"
}

bench_submit() {
    local n=100
    # A server of our own, started by the first `tsp true`. (`tsp -K` here would start one only
    # to kill it, and the next call could reach it while it dies: "Error calling recv_msg".)
    export TS_SOCKET="$tmp/tsp.sock" TS_MAXFINISHED=1000 TMPDIR="$tmp"
    local t0; t0=$(now_ns)
    for _ in $(seq $n); do tsp true >/dev/null; done
    local tsp_ms; tsp_ms=$(ms_since "$t0")
    tsp -K >/dev/null 2>&1 || true

    # The client's part alone: the same submits with no daemon to answer them (ralphctl parses
    # its command line, builds the request, finds no socket and exits 3).
    t0=$(now_ns)
    for i in $(seq $n); do
        "$ralphctl" --socket "$tmp/no-daemon.sock" submit --workspace "$workspace" --command true -m 1 \
            --delay 0 "job $i" >/dev/null 2>&1 && { echo "bench: a submit without a daemon succeeded" >&2; exit 1; }
    done
    local alone_ms; alone_ms=$(ms_since "$t0")

    start_daemon --max-concurrent 1
    t0=$(now_ns)
    for i in $(seq $n); do
        "$ralphctl" submit --workspace "$workspace" --command true -m 1 --delay 0 "job $i" >/dev/null
    done
    local ralph_ms; ralph_ms=$(ms_since "$t0")
    stop_daemon
    echo "submit x$n: tsp ${tsp_ms} ms, ralphctl ${ralph_ms} ms (goal: ralphctl <= tsp); ralphctl with no daemon to answer ${alone_ms} ms"
}

# One loop of $2 iterations of /bin/true in workspace $1 (`submit --wait`, no python in the
# measured time): prints its milliseconds.
time_loop_of_true() {
    local workspace=$1 n=$2
    local t0; t0=$(now_ns)
    # --stall-after 0: /bin/true changes nothing, which would stop the loop as stalled.
    local id; id=$("$ralphctl" submit --workspace "$workspace" --command /bin/true -m "$n" --delay 0 \
        --stall-after 0 --wait "iterate" 2>/dev/null | awk 'NR == 1 { print $3 }') || true
    local ms; ms=$(ms_since "$t0")
    local done_n; done_n=$("$ralphctl" --json show "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["loop"]["iterations"])')
    [[ $done_n == "$n" ]] || { echo "bench: the loop ran $done_n iterations, expected $n" >&2; exit 1; }
    echo "$ms"
}

bench_iterations() {
    local n=300
    local t0; t0=$(now_ns)
    for _ in $(seq $n); do /bin/true; done
    local bash_ms; bash_ms=$(ms_since "$t0")

    start_daemon
    local ralph_ms; ralph_ms=$(time_loop_of_true "$workspace" $n)
    stop_daemon
    echo "iterations x$n of /bin/true: bash loop ${bash_ms} ms, ralphd ${ralph_ms} ms, ratio $(python3 -c "print(f'{$ralph_ms/$bash_ms:.2f}')") (goal <= 1.5)"
}

# A new git repository $1 (under $tmp) of $2 committed files of 40 lines each, in 20 directories.
make_git_repo() {
    local repo=$1 files=$2
    [[ $repo == "$tmp"/* && ! -e $repo ]] || { echo "bench: make_git_repo '$repo'?" >&2; exit 1; }
    python3 - "$repo" "$files" <<'EOF'
import os, sys
repo, files = sys.argv[1], int(sys.argv[2])
for i in range(1, files + 1):
    os.makedirs(f"{repo}/dir{i % 20}", exist_ok=True)
    with open(f"{repo}/dir{i % 20}/file{i}.c", "w") as f:
        f.writelines(f"file {i} line {line}: some source text to diff\n" for line in range(1, 41))
EOF
    git -C "$repo" init -q
    git -C "$repo" add -A
    git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m files
}

# The same loop in a git workspace of 300 committed files: each iteration snapshots the work
# tree and compares it with the previous snapshot.
bench_git_iterations() {
    local n=300 repo="$tmp/git-ws"
    make_git_repo "$repo" 300

    start_daemon
    local ralph_ms; ralph_ms=$(time_loop_of_true "$repo" $n)
    stop_daemon
    echo "iterations x$n of /bin/true in a git workspace of 300 files: ralphd ${ralph_ms} ms, $(python3 -c "print(f'{$ralph_ms/$n:.2f}')") ms per iteration"
}

# The workspace's git work alone, without a daemon: bench/snapshot_bench.cpp (not built by
# default: ninja -C build bench/snapshot_bench).
bench_snapshots() {
    local program="$build/bench/snapshot_bench"
    [[ -x $program ]] || { echo "bench: build it first: ninja -C $build bench/snapshot_bench" >&2; exit 2; }
    "$program" 300 200
}

# Sockets ralphd holds open (its listener and its clients' connections).
socket_count() { find "/proc/$daemon_pid/fd" -lname 'socket:*' 2>/dev/null | wc -l; }

# One attempt of an agent flooding BYTES, with no watcher (TAILS 0) or with TAILS live `tail -f`
# clients attached before it starts; prints its time as ralphd recorded it, in ms. Both kinds of
# run take the same path, the tails alone differing: the scheduler paused, the loop submitted by
# a `submit --wait` that stays to wait for its end (nothing polls beside the agent), the tails
# connected, the scheduler resumed. The first tail is checked to have received every byte; the
# others are ended once the attempt is recorded.
#   flood_with_tails AGENT BYTES TAILS
flood_with_tails() {
    local agent=$1 bytes=$2 tails=$3
    sync
    "$ralphctl" scheduler pause >/dev/null
    # (Its exit status is the loop's outcome, "exhausted": 1.)
    { "$ralphctl" submit --workspace "$workspace" --command "$agent" -m 1 --delay 0 --wait \
        "flood" 2>/dev/null || true; } >"$tmp/flood.submit" &
    local waiter=$! id=
    for _ in $(seq 200); do
        id=$(awk 'NR == 1 { print $3 }' "$tmp/flood.submit")
        [[ -n $id ]] && break
        sleep 0.02
    done
    [[ -n $id ]] || { echo "bench: the flood was not submitted" >&2; exit 1; }
    local sockets; sockets=$(socket_count) pids=()
    if ((tails > 0)); then
        { "$ralphctl" tail -f "$id" 2>>"$tmp/tails.err" || true; } | cksum >"$tmp/tail.cksum" &
        pids+=($!)
        for _ in $(seq $((tails - 1))); do
            "$ralphctl" tail -f "$id" >/dev/null 2>>"$tmp/tails.err" &
            pids+=($!)
        done
        for _ in $(seq 200); do (($(socket_count) >= sockets + tails)) && break; sleep 0.02; done
        (($(socket_count) >= sockets + tails)) || { echo "bench: the tails did not connect" >&2; exit 1; }
        sleep 0.2 # their loop.tail requests, sent right after connecting
    fi
    "$ralphctl" scheduler resume >/dev/null
    wait "$waiter"
    # Once the attempt is recorded the others have served their purpose: their catching up
    # (each tail is paced while the loop runs) would take most of the benchmark's time.
    ((tails > 1)) && kill "${pids[@]:1}" 2>/dev/null
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    local stored; stored=$("$ralphctl" --json show "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["loop"]["output_bytes"])')
    [[ $stored == "$bytes" ]] || { echo "bench: tails stored $stored bytes, expected $bytes" >&2; exit 1; }
    if ((tails > 0)); then
        # The loop's output file as ralph stored it: byte count and CRC must match the tail's.
        local want; want=$(cksum <"$XDG_STATE_HOME/ralph/output/$id.log")
        [[ $(cat "$tmp/tail.cksum") == "$want" ]] || {
            echo "bench: a live tail received '$(cat "$tmp/tail.cksum")' (CRC, bytes), the stored output is '$want'" >&2
            exit 1
        }
    fi
    attempt_ms "$id"
}

# An agent flooding 100 MiB with no watcher and with 20 live tails, best of 3 rounds each.
bench_tails() {
    local bytes=$((100 << 20)) runs=3 tails=20
    local agent="bash -c 'yes \"ralph flood line: the quick brown fox jumps over the lazy dog 0123456789\" | head -c $bytes'"
    local quiet_best=999999 tails_best=999999
    start_daemon
    for _ in $(seq $runs); do
        local quiet; quiet=$(flood_with_tails "$agent" $bytes 0)
        ((quiet < quiet_best)) && quiet_best=$quiet
        local ralph; ralph=$(flood_with_tails "$agent" $bytes $tails)
        ((ralph < tails_best)) && tails_best=$ralph
    done
    stop_daemon
    python3 -c "
q, t, mib = $quiet_best, $tails_best, $bytes / 2**20
print(f'tails, agent flooding {mib:.0f} MiB: no watcher {q} ms ({mib / q * 1000:.0f} MiB/s), $tails live tails -f {t} ms ({mib / t * 1000:.0f} MiB/s), throughput ratio {q / t:.2f} (goal >= 0.8)')"
}

# API calls straight over the socket while 50 agents run and while they are being started
# (bench/api_latency.py says how): daemon.info, loop.list, loop.submit of a plain directory and of
# a git repository of 1,000 files (its first loop's workspace), each submitted loop queued (its
# workspace is busy) and cancelled.
bench_latency() {
    local dir="$tmp/latency"
    make_git_repo "$dir/git" 1000
    start_daemon --max-concurrent 50
    python3 "$root/bench/api_latency.py" "$RALPH_SOCKET" "$dir" --loops 50 --samples 200 \
        --git-repo "$dir/git"
    stop_daemon
}

bench_idle() {
    start_daemon
    sleep 1
    local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$daemon_pid/status")
    stop_daemon
    echo "idle RSS: $((rss / 1024)) MiB ($rss KiB) (goal < 20 MiB)"
}

bench_list() {
    local n=10000 runs=20
    # A history of exactly n loops, not counting the other benchmarks' loops.
    export XDG_STATE_HOME="$tmp/list-state"
    start_daemon
    "$ralphctl" submit --workspace "$workspace" --command true -m 1 --delay 0 --wait "seed" >/dev/null || true  # exhausted: exit 1
    stop_daemon
    # Clone the finished loop into a history of 10,000 (faster than 10,000 submissions).
    sqlite3 "$XDG_STATE_HOME/ralph/ralph.db" "
        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $n - 1)
        INSERT INTO loops (name, workspace, agent, max_iterations, min_iterations, priority, spec,
            state, stop_reason, iterations, attempts, retries, created_at, started_at, finished_at,
            updated_at, resume_at, output_bytes)
        SELECT name || '-' || i, workspace, agent, max_iterations, min_iterations, priority, spec,
            state, stop_reason, iterations, attempts, retries, created_at, started_at, finished_at,
            updated_at, resume_at, output_bytes FROM loops, k WHERE loops.id = 1;"
    start_daemon
    local count; count=$("$ralphctl" --json list --all | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["loops"]))')
    [[ $count == "$n" ]] || { echo "bench: expected $n loops, got $count" >&2; exit 1; }
    local best=999999
    for _ in $(seq $runs); do
        local t0; t0=$(now_ns)
        "$ralphctl" list >/dev/null
        local ms; ms=$(ms_since "$t0")
        ((ms < best)) && best=$ms
    done
    local t0; t0=$(now_ns)
    for _ in $(seq $runs); do "$ralphctl" list >/dev/null; done
    local mean=$(( $(ms_since "$t0") / runs ))
    t0=$(now_ns)
    for _ in $(seq $runs); do "$ralphctl" list --all >/dev/null; done
    local all_mean=$(( $(ms_since "$t0") / runs ))
    stop_daemon
    echo "list with $n loops: best ${best} ms, mean ${mean} ms over $runs runs (goal < 50 ms); list --all (all $n rows): mean ${all_mean} ms"
}

benches=("$@")
[[ ${#benches[@]} -gt 0 ]] || benches=(flood submit iterations git_iterations idle list latency tails)
for b in "${benches[@]}"; do "bench_$b"; done
