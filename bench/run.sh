#!/usr/bin/env bash
# ralph benchmarks (issue 2's speed and memory goals). Builds nothing: run scripts/build.sh
# first, or point RALPH_BUILD at another meson build directory. Each benchmark starts its own
# ralphd in a temporary XDG tree and compares against a baseline measured in the same run on the
# same machine. Prints one result line per goal.
#   bench/run.sh [flood|submit|iterations|git_iterations|idle|list|latency|tails|snapshots|
#                 scale|scale_quick|ssh_list|ssh_all_hosts|ssh_tail]...
#   (default: all but snapshots, which needs `ninja -C build bench/snapshot_bench` first, the
#   scale ones (15 and 2 minutes), and the ssh ones, which run sshd as the integration tests do:
#   as root, with Debian's openssh-server)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RALPH_BUILD:-$root/build}
ralphd="$build/daemon/ralphd"
ralphctl="$build/client/ralphctl"
[[ -x $ralphd && -x $ralphctl ]] || { echo "bench: build first (scripts/build.sh)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/ralph-bench-XXXXXX)
daemon_pid=
# The ssh benchmarks' hosts (start_ssh_host): each's socket, the pids of its ralphd and sshd.
declare -A host_socket host_daemon host_sshd
host_sshds=() # their bench/sshd.py processes
host_relays=() # the bench/delay_relay.py processes of add_delayed_config
cleanup() {
    # SIGINT: ralphd ends its agents (SIGTERM would leave them running under their shims).
    [[ -n $daemon_pid ]] && kill -INT "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    stop_ssh_hosts
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
        { "$ralphctl" tail -f --raw "$id" 2>>"$tmp/tails.err" || true; } | cksum >"$tmp/tail.cksum" &
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

# ralph at a year's size (bench/scale.py says how): a history of 100,000 loops and 1,000,000
# attempts against one day of it and an empty database (every API method, the start-up, gc), and
# 10,000 loops queued against none. scale_quick: 10,000 loops over 36.5 days, 2,000 queued.
bench_scale() { python3 "$root/bench/scale.py" "$build" "$tmp/scale"; }
bench_scale_quick() { python3 "$root/bench/scale.py" "$build" "$tmp/scale" --quick; }

# ---- Several machines: remote daemons over ssh (client/ssh_dial.hpp)

# A "remote" host NAME on this machine: a ralphd of its own (XDG tree $tmp/NAME) behind an sshd
# of its own, the integration tests' (bench/sshd.py: harness.SshServer, keys made for it), whose
# sessions run this build's ralphctl; its Host block is added to the ssh configuration
# $tmp/ssh_config, so that ssh://NAME reaches it. host_socket[NAME]: its daemon's socket;
# host_daemon[NAME]: its ralphd's pid; host_sshd[NAME]: bench/sshd.py's, the ancestor of all
# of its sshd's processes.
start_ssh_host() {
    local name=$1 dir="$tmp/$1"
    rm -rf "$dir" "$tmp"/*.times # an earlier benchmark's: its host's loops and files, its times
    mkdir -p "$dir/run" "$dir/state" "$dir/config"
    chmod 700 "$dir/run"
    host_socket[$name]="$dir/run/ralph/ralphd.sock"
    XDG_RUNTIME_DIR="$dir/run" XDG_STATE_HOME="$dir/state" XDG_CONFIG_HOME="$dir/config" \
        RALPH_SOCKET= "$ralphd" --log-level warn 2>>"$tmp/$name.log" &
    host_daemon[$name]=$!
    python3 "$root/bench/sshd.py" "$dir" "$name" "$build/client:/usr/bin:/bin" \
        "${host_socket[$name]}" $$ >"$dir/host_block" 2>>"$tmp/$name.log" &
    host_sshd[$name]=$! host_sshds+=($!)
    for _ in $(seq 200); do
        [[ -s $dir/sshd.pid ]] && on_host "$name" "$ralphctl" daemon status >/dev/null 2>&1 && break
        sleep 0.05
    done
    on_host "$name" "$ralphctl" daemon status >/dev/null 2>&1 && [[ -s $dir/sshd.pid ]] ||
        { echo "bench: host $name did not start" >&2; cat "$tmp/$name.log" >&2; exit 1; }
    cat "$dir/host_block" >>"$tmp/ssh_config"
}
# Runs "$@" against host NAME's daemon directly (its socket).
on_host() { RALPH_SOCKET=${host_socket[$1]} "${@:2}"; }
stop_ssh_hosts() {
    local pid control
    for pid in "${host_daemon[@]}"; do kill -INT "$pid" 2>/dev/null; done
    ((${#host_sshds[@]} + ${#host_relays[@]} > 0)) &&
        kill -TERM "${host_sshds[@]}" "${host_relays[@]}" 2>/dev/null
    for pid in "${host_daemon[@]}" "${host_sshds[@]}" "${host_relays[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    host_daemon=() host_sshd=() host_sshds=() host_relays=()
    # The ControlMaster processes (ControlPersist): each ends when told through its socket.
    for control in "$tmp"/cm-*; do
        [[ -S $control ]] && ssh -o ControlPath="$control" -O exit any >/dev/null 2>&1
    done
    rm -f "$tmp"/ssh_config*
}
# Configuration $1 (default ssh_config) with ssh's connection sharing, as $1_cm: the first ssh to
# a host stays as its master (ControlPersist), the next ones run their session over its
# connection.
write_control_master_config() {
    local config=${1:-ssh_config}
    { echo "ControlMaster auto"; echo "ControlPath $tmp/cm-%C"; echo "ControlPersist 600"
      cat "$tmp/$config"; } >"$tmp/${config}_cm"
}
# What a network between the client and its hosts adds, and this machine's loopback has not:
# milliseconds each byte takes each way (a round trip of twice that). Hosts on a LAN are at a
# fraction of one; cloud machines in one region at a few; across a continent at 20-40.
network_delay_ms=10
# ssh_config_delay: the hosts $@ of ssh_config reached through a bench/delay_relay.py each, which
# delivers every byte network_delay_ms late each way; ssh checks the host key as the host's own.
add_delayed_config() {
    local name port relay_port
    for name in "$@"; do
        port=$(sed -n 's/^ *Port //p' "$tmp/$name/host_block")
        python3 "$root/bench/delay_relay.py" "$port" "$network_delay_ms" $$ >"$tmp/$name.relay" &
        host_relays+=($!)
        for _ in $(seq 100); do [[ -s $tmp/$name.relay ]] && break; sleep 0.05; done
        relay_port=$(head -1 "$tmp/$name.relay")
        [[ -n $relay_port ]] || { echo "bench: the delay relay of $name did not start" >&2; exit 1; }
        sed -e "s/^\( *\)Port $port\$/\1Port $relay_port\n\1HostKeyAlias [127.0.0.1]:$port/" \
            "$tmp/$name/host_block" >>"$tmp/ssh_config_delay"
    done
}
# The pid of the ControlMaster of host $2 in configuration $1 ("" without one).
control_master() { { ssh -F "$1" -O check "$2" 2>&1 || true; } | sed -n 's/.*(pid=\([0-9]*\)).*/\1/p'; }
# N loops of /bin/true run to their end on host NAME (what `list` then shows).
seed_loops() {
    local name=$1 n=$2
    for i in $(seq $((n - 1))); do
        on_host "$name" "$ralphctl" submit --workspace "$workspace" --command true -m 1 --delay 0 \
            "seed $i" >/dev/null
    done
    on_host "$name" "$ralphctl" submit --workspace "$workspace" --command true -m 1 --delay 0 \
        --wait "seed $n" >/dev/null 2>&1 || true # exhausted: exit 1
}

# Sets $ticks to the CPU time, in clock ticks, that the processes "$@" and all their descendants
# have used so far (/proc/PID/stat: utime, stime, and cutime, cstime of the children they reaped;
# a process that ended counts as a zombie until its parent reaps it into its own), and $family
# to the pids of those descendants.
cpu_ticks() {
    # (cat goes on past the processes that end meanwhile, and then fails.)
    read -r ticks family < <({ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v roots=" $* " '
        { pid = $1; rest = $0; sub(/^.*\) /, "", rest); split(rest, f, " ")
          parent[pid] = f[2]; used[pid] = f[12] + f[13] + f[14] + f[15] }
        END {
            for (pid in used) {
                for (p = pid; p != "" && p > 1; p = parent[p])
                    if (index(roots, " " p " ")) {
                        total += used[pid]
                        if (p != pid) family = family "," pid
                        break
                    }
            }
            print total + 0, family ""
        }')
}
# CPU seen by time_run: "client" is what this shell's children used (ralphctl and the ssh it
# started, or ssh) and the processes $client_pids (a ControlMaster, which does the client's
# crypto), "server" the processes $server_pids with their descendants (an sshd listener with its
# connections' processes, a ralphd).
client_pids=() server_pids=()
client_ticks() {
    local stat own pid
    read -r -a stat <"/proc/$$/stat"
    own=$((stat[15] + stat[16]))
    # A ControlMaster's own (it is nobody's child here): no process started to read it.
    for pid in "${client_pids[@]}"; do
        read -r -a stat <"/proc/$pid/stat"
        own=$((own + stat[13] + stat[14] + stat[15] + stat[16]))
    done
    ticks=$own
}
server_ticks() { ticks=0 family=; ((${#server_pids[@]} == 0)) || cpu_ticks "${server_pids[@]}"; }
sorted_pids() { tr ',' '\n' <<<"$1" | sort -n | tr '\n' ' '; }
# Runs "$@", its output to /dev/null, and appends to the file $times its milliseconds (bash's own
# clock: no process started to read it) and the client's and the server's CPU ticks.
time_run() {
    local ticks family c0 s0 t0 t1 before
    # The server's first, then the client's: the processes that read the server's are this
    # shell's children, not to be counted as the client's.
    server_ticks; s0=$ticks before=$(sorted_pids "$family")
    client_ticks; c0=$ticks
    t0=${EPOCHREALTIME/./}
    "$@" >/dev/null || { echo "bench: '$*' failed" >&2; exit 1; }
    t1=${EPOCHREALTIME/./}
    client_ticks; local c1=$ticks
    # The server's processes of this run end after its client: wait until they have (at most 5 s).
    for _ in $(seq 100); do
        server_ticks
        [[ $(sorted_pids "$family") == "$before" ]] && break
        sleep 0.05
    done
    local s1=$ticks
    printf '%d.%03d %d %d\n' $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000)) $((c1 - c0)) $((s1 - s0)) >>"$times"
}
# Of the runs in file $1: "MEDIAN P90 CLIENT SERVER": the median and the 90th percentile (nearest
# rank) of their times, and the CPU each took on average on the client's and the server's side;
# all in ms.
run_stats() {
    python3 -c '
import math, os, sys
rows = [line.split() for line in open(sys.argv[1])]
v = sorted(float(r[0]) for r in rows)
rank = lambda p: v[max(0, math.ceil(p * len(v)) - 1)]
tick = 1000 / os.sysconf("SC_CLK_TCK")
cpu = lambda i: sum(int(r[i]) for r in rows) * tick / len(rows)
print(f"{rank(0.5):.1f} {rank(0.9):.1f} {cpu(1):.1f} {cpu(2):.1f}")' "$1"
}
# "median M ms, p90 P ms (CPU: client C ms, server S ms)" of file $1.
stats_text() {
    local m p c s
    read -r m p c s < <(run_stats "$1")
    echo "median $m ms, p90 $p ms (CPU: client $c ms, server $s ms)"
}
median_ms() { local m rest; read -r m rest < <(run_stats "$1"); echo "$m"; }
calc() { python3 -c "print($1)"; }
config_label() {
    local label="without ControlMaster"
    [[ $1 == *_cm ]] && label="with ControlMaster"
    [[ $1 == *delay* ]] && label+=", $network_delay_ms ms added each way (bench/delay_relay.py)"
    echo "$label"
}
end_ssh_bench() {
    unset RALPH_SSH_COMMAND
    client_pids=() server_pids=()
    stop_ssh_hosts
}
# ssh as ralphctl starts it (client/ssh_dial.cpp: BatchMode, no terminal), configuration $1.
ssh_as_ralphctl() { ssh -F "$1" -o BatchMode=yes -T "${@:2}"; }
# `ssh HOST true` to each host of $2... at once, configuration $1.
ssh_true_at_once() {
    local name pids=()
    for name in "${@:2}"; do ssh_as_ralphctl "$1" "$name" true & pids+=($!); done
    wait "${pids[@]}"
}

# `ralphctl --host ssh://… list` against `ssh HOST true`, the two run alternately, 40 of each;
# without ControlMaster, then with it.
bench_ssh_list() {
    local n=40 times config
    start_ssh_host h1
    seed_loops h1 20
    write_control_master_config
    server_pids=("${host_sshd[h1]}" "${host_daemon[h1]}")
    for config in ssh_config ssh_config_cm; do
        export RALPH_SSH_COMMAND="ssh -F $tmp/$config"
        # Once untimed: the first connection (with ControlMaster: the master is made here).
        ssh_as_ralphctl "$tmp/$config" h1 true
        client_pids=($(control_master "$tmp/$config" h1))
        local count; count=$("$ralphctl" --host ssh://h1 --json list |
            python3 -c 'import json,sys; print(len(json.load(sys.stdin)["loops"]))')
        [[ $count == 20 ]] || { echo "bench: list over ssh showed $count loops, not 20" >&2; exit 1; }
        for _ in $(seq $n); do
            times="$tmp/$config.ssh.times" time_run ssh_as_ralphctl "$tmp/$config" h1 true
            times="$tmp/$config.list.times" time_run "$ralphctl" --host ssh://h1 list
        done
        echo "ssh_list, $(config_label "$config"), $n runs each: ssh HOST true $(stats_text "$tmp/$config.ssh.times"); ralphctl --host ssh://HOST list (20 loops) $(stats_text "$tmp/$config.list.times"); ralph adds $(calc "f'{$(median_ms "$tmp/$config.list.times") - $(median_ms "$tmp/$config.ssh.times"):.1f}'") ms (medians)"
    done
    end_ssh_bench
}

# `ralphctl list --all-hosts` over three hosts (each its own ralphd and sshd, named in the hosts
# file; `local`, always in it, is an idle ralphd on the Unix socket) against the slowest single
# host's `ralphctl --host NAME list`, and against ssh's own cost of three hosts at once (three
# `ssh HOST true` started together); each round runs the five commands one after the other, 20
# rounds; without ControlMaster, then with it; then both again with the hosts behind a network's
# delay (add_delayed_config): the hosts are this machine's processes, on its two cores, where
# remote hosts have CPUs of their own and a network between them and the client.
bench_ssh_all_hosts() {
    local n=20 times config name
    local names=(h1 h2 h3)
    start_daemon
    mkdir -p "$XDG_CONFIG_HOME/ralph"
    for name in "${names[@]}"; do
        start_ssh_host "$name"
        seed_loops "$name" 20
        echo "$name ssh://$name" >>"$XDG_CONFIG_HOME/ralph/hosts"
        server_pids+=("${host_sshd[$name]}" "${host_daemon[$name]}")
    done
    write_control_master_config
    add_delayed_config "${names[@]}"
    write_control_master_config ssh_config_delay
    for config in ssh_config ssh_config_cm ssh_config_delay ssh_config_delay_cm; do
        export RALPH_SSH_COMMAND="ssh -F $tmp/$config"
        "$ralphctl" list --all-hosts >/dev/null # once untimed (the ControlMasters are made here)
        client_pids=()
        for name in "${names[@]}"; do client_pids+=($(control_master "$tmp/$config" "$name")); done
        local count; count=$("$ralphctl" --json list --all-hosts |
            python3 -c 'import json,sys; print(len(json.load(sys.stdin)["loops"]))')
        [[ $count == 60 ]] || { echo "bench: list --all-hosts showed $count loops, not 60" >&2; exit 1; }
        for _ in $(seq $n); do
            for name in "${names[@]}"; do
                times="$tmp/$config.$name.times" time_run "$ralphctl" --host "$name" list
            done
            times="$tmp/$config.all.times" time_run "$ralphctl" list --all-hosts
            times="$tmp/$config.sshes.times" time_run ssh_true_at_once "$tmp/$config" "${names[@]}"
        done
        local slowest=0 singles=""
        for name in "${names[@]}"; do
            local m; m=$(median_ms "$tmp/$config.$name.times")
            singles+="$name $m ms, "
            slowest=$(calc "max($slowest, $m)")
        done
        local all; all=$(median_ms "$tmp/$config.all.times")
        echo "ssh_all_hosts, $(config_label "$config"), $n rounds: --host NAME list, medians: ${singles}h1 in full $(stats_text "$tmp/$config.h1.times"); list --all-hosts (3 hosts and local, 60 loops) $(stats_text "$tmp/$config.all.times"): $(calc "f'{$all / $slowest:.2f}'")x the slowest host (goal <= 1.2); ssh HOST true to the 3 at once $(stats_text "$tmp/$config.sshes.times"): list --all-hosts $(calc "f'{$all / $(median_ms "$tmp/$config.sshes.times"):.2f}'")x ssh's own"
    done
    end_ssh_bench
    stop_daemon
    rm -f "$XDG_CONFIG_HOME/ralph/hosts"
}

# `ralphctl --host ssh://… tail -f --raw` of a finished loop whose output is 100 MiB against
# `ssh HOST cat` of its stored output file, alternately, 5 of each, with ControlMaster (the
# transfer is measured, not the handshake); both byte counts checked each time, and once the
# bytes themselves (CRC) against the file.
bench_ssh_tail() {
    local bytes=$((100 << 20)) runs=5 times
    local agent="bash -c 'yes \"ralph flood line: the quick brown fox jumps over the lazy dog 0123456789\" | head -c $bytes'"
    start_ssh_host h1
    write_control_master_config
    local config="$tmp/ssh_config_cm"
    export RALPH_SSH_COMMAND="ssh -F $config"
    local id; id=$(on_host h1 "$ralphctl" submit --workspace "$workspace" --command "$agent" -m 1 \
        --delay 0 --wait "flood" 2>/dev/null | awk 'NR == 1 { print $3 }') || true
    local file="$tmp/h1/state/ralph/output/$id.log"
    [[ $(stat -c %s "$file") == "$bytes" ]] || { echo "bench: the flood stored $(stat -c %s "$file") bytes, not $bytes" >&2; exit 1; }
    local want; want=$(cksum <"$file")
    ssh_as_ralphctl "$config" h1 true # the master
    client_pids=($(control_master "$config" h1)) server_pids=("${host_sshd[h1]}" "${host_daemon[h1]}")
    [[ $(ssh_as_ralphctl "$config" h1 cat "$file" | cksum) == "$want" ]] ||
        { echo "bench: ssh cat did not bring the file's bytes" >&2; exit 1; }
    [[ $("$ralphctl" --host ssh://h1 tail -f --raw "$id" 2>/dev/null | cksum) == "$want" ]] ||
        { echo "bench: tail -f --raw over ssh did not bring the file's bytes" >&2; exit 1; }
    # "$@" | wc -c must count $bytes (the tail's "loop N exhausted" goes to $tmp/tail.err).
    counted() {
        local got; got=$("$@" 2>>"$tmp/tail.err" | wc -c)
        [[ $got == "$bytes" ]] || { echo "bench: '$*' gave $got bytes" >&2; return 1; }
    }
    for _ in $(seq $runs); do
        times="$tmp/tail.cat.times" time_run counted ssh_as_ralphctl "$config" h1 cat "$file"
        times="$tmp/tail.tail.times" time_run counted "$ralphctl" --host ssh://h1 tail -f --raw "$id"
    done
    end_ssh_bench
    local cat_ms tail_ms; cat_ms=$(median_ms "$tmp/tail.cat.times") tail_ms=$(median_ms "$tmp/tail.tail.times")
    local mib=$((bytes >> 20))
    echo "ssh_tail, $mib MiB, $runs runs each: ssh HOST cat FILE $(stats_text "$tmp/tail.cat.times"), $(calc "f'{$mib / $cat_ms * 1000:.0f}'") MiB/s; ralphctl --host ssh://HOST tail -f --raw $(stats_text "$tmp/tail.tail.times"), $(calc "f'{$mib / $tail_ms * 1000:.0f}'") MiB/s: throughput ratio $(calc "f'{$cat_ms / $tail_ms:.2f}'") (goal >= 0.8)"
}

benches=("$@")
[[ ${#benches[@]} -gt 0 ]] || benches=(flood submit iterations git_iterations idle list latency tails)
for b in "${benches[@]}"; do "bench_$b"; done
