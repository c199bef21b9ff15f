#!/usr/bin/env bash
# Builds ralph: installs the dependencies, configures meson and runs ninja. Idempotent.
#   scripts/build.sh                → build/
#   scripts/build.sh --sanitizers   → build-asan/ (AddressSanitizer + UBSan)
#   scripts/build.sh --release      → build-release/ (buildtype release, what packagers build; no
#                                     tests)
#   scripts/build.sh --clang        → build-clang/ (Clang instead of GCC, with the unit tests)
#   scripts/build.sh --demo         → only ralphd (and its ralph-shim), ralphctl and ralph-demo-agent (the README's
#                                     first command; the tests build the rest later)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=build
options=(-Dsanitizers=false -Dtests=true)
compiler=()
targets=()
for arg in "$@"; do
    case $arg in
        --sanitizers)
            dir=build-asan
            options=(-Dsanitizers=true -Dtests=true)
            ;;
        --release)
            dir=build-release
            options=(--buildtype=release -Dsanitizers=false -Dtests=false)
            ;;
        --clang)
            dir=build-clang
            options=(-Dsanitizers=false -Dtests=true)
            compiler=(CC=clang CXX=clang++)
            ;;
        --demo)
            targets=(daemon/ralphd client/ralphctl demo/ralph-demo-agent)
            ;;
        -h | --help)
            echo "usage: scripts/build.sh [--sanitizers | --release | --clang] [--demo]"
            exit 0
            ;;
        *)
            echo "build.sh: unknown argument '$arg' (usage: scripts/build.sh [--sanitizers | --release | --clang] [--demo])" >&2
            exit 2
            ;;
    esac
done

"$root/scripts/install-deps.sh"

if [[ -f $dir/meson-private/coredata.dat ]]; then
    meson setup --reconfigure "$dir" "${options[@]}"
else
    # A directory without meson's state is a setup that failed half-way: start it afresh.
    rm -rf "$dir"
    env "${compiler[@]}" meson setup "$dir" "${options[@]}"
fi
ninja -C "$dir" "${targets[@]}"
