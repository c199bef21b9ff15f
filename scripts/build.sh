#!/usr/bin/env bash
# Builds ralph: installs the dependencies, configures meson and runs ninja. Idempotent.
#   scripts/build.sh                → build/
#   scripts/build.sh --sanitizers   → build-asan/ (AddressSanitizer + UBSan)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=build
options=(-Dsanitizers=false -Dtests=true)
for arg in "$@"; do
    case $arg in
        --sanitizers)
            dir=build-asan
            options=(-Dsanitizers=true -Dtests=true)
            ;;
        -h | --help)
            echo "usage: scripts/build.sh [--sanitizers]"
            exit 0
            ;;
        *)
            echo "build.sh: unknown argument '$arg' (usage: scripts/build.sh [--sanitizers])" >&2
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
    meson setup "$dir" "${options[@]}"
fi
ninja -C "$dir"
