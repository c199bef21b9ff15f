#!/usr/bin/env bash
# Builds ralph: installs the dependencies, configures meson and runs ninja. Idempotent.
#   scripts/build.sh                → build/
#   scripts/build.sh --sanitizers   → build-asan/ (AddressSanitizer + UBSan, with Clang: it builds
#                                     the sanitized code in a fraction of GCC's time, and so
#                                     checks that Clang builds ralph warning-free; a directory set
#                                     up before with GCC keeps GCC)
#   scripts/build.sh --release      → build-release/ (buildtype release, what packagers build; no
#                                     tests)
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
            compiler=(CC=clang CXX=clang++)
            ;;
        --release)
            dir=build-release
            options=(--buildtype=release -Dsanitizers=false -Dtests=false)
            ;;
        --demo)
            targets=(daemon/ralphd client/ralphctl demo/ralph-demo-agent)
            ;;
        -h | --help)
            echo "usage: scripts/build.sh [--sanitizers | --release] [--demo]"
            exit 0
            ;;
        *)
            echo "build.sh: unknown argument '$arg' (usage: scripts/build.sh [--sanitizers | --release] [--demo])" >&2
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
