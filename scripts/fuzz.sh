#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with Clang in build-fuzz/ and runs each for SECONDS
# (default 60) from a seed corpus made of the repository's fixtures (tests/fuzz/make-corpus.py).
# Exits non-zero when a target finds a crash, a leak, a timeout or runs out of memory, and prints
# the command that reproduces it. Idempotent: the corpora and logs live in a temporary directory,
# removed after a clean run and kept after a failure (for the reproducers).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

usage="usage: scripts/fuzz.sh [SECONDS]"
seconds=${1:-60}
case $seconds in
    -h | --help)
        echo "$usage"
        exit 0
        ;;
esac
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]] || (($# > 1)); then
    echo "fuzz.sh: SECONDS must be a positive number ($usage)" >&2
    exit 2
fi

"$root/scripts/install-deps.sh"

dir=build-fuzz
options=(-Dfuzzing=true -Dtests=false)
if [[ -f $dir/meson-private/coredata.dat ]]; then
    meson setup --reconfigure "$dir" "${options[@]}"
else
    # A directory without meson's state is a setup that failed half-way: start it afresh.
    rm -rf "$dir"
    CC=clang CXX=clang++ meson setup "$dir" "${options[@]}"
fi
targets=(fuzz_jsonrpc fuzz_agent_stream fuzz_tags fuzz_config)
ninja -C "$dir" "${targets[@]/#/tests/fuzz/}"

work=$(mktemp -d "${TMPDIR:-/tmp}/ralph-fuzz.XXXXXX")
python3 tests/fuzz/make-corpus.py "$work/corpus"

failed=0
for target in "${targets[@]}"; do
    echo "fuzz.sh: $target for ${seconds}s" >&2
    artifacts="$work/artifacts/$target"
    mkdir -p "$artifacts"
    # -timeout: an input taking longer is a failure (the parsers must be linear);
    # -rss_limit_mb: so is memory beyond that.
    if "$dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -dict="tests/fuzz/$target.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
        "$work/corpus/$target" >"$work/$target.log" 2>&1; then
        grep -E '^Done|average_exec_per_sec|new_units_added' "$work/$target.log" |
            sed "s/^/fuzz.sh: $target: /" >&2
        continue
    fi
    failed=1
    tail -n 60 "$work/$target.log" >&2
    for reproducer in "$artifacts"/*; do
        [[ -e $reproducer ]] || continue
        echo "fuzz.sh: $target FAILED; reproduce with: $dir/tests/fuzz/$target $reproducer" >&2
    done
    echo "fuzz.sh: $target's whole log: $work/$target.log" >&2
done

if ((failed)); then
    echo "fuzz.sh: kept $work for the reproducers" >&2
    exit 1
fi
rm -rf "$work"
echo "fuzz.sh: every target ran ${seconds}s without a failure" >&2
