#!/usr/bin/env bash
# Installs everything ralph needs to build, test and benchmark on Debian 12 (bookworm).
# Idempotent: when every package is already installed it changes nothing and needs no root.
# Runs apt-get as root, or through sudo when not root.
set -euo pipefail

packages=(
    build-essential g++ pkg-config meson ninja-build cmake
    libboost-dev nlohmann-json3-dev libsqlitecpp-dev libsqlite3-dev libspdlog-dev libfmt-dev
    libcli11-dev doctest-dev libsystemd-dev libgit2-dev
    libssl-dev ca-certificates openssl  # HTTPS webhooks; the tests' own CA (openssl req)
    python3 git curl procps sqlite3
    systemd       # systemd-analyze, to check the unit files
    zsh fish      # to test ralphctl's completion scripts for them (bash is there already)
    bubblewrap    # submit --sandbox (bwrap)
    task-spooler  # the tsp baseline of the benchmarks
    clang libclang-rt-14-dev  # the libFuzzer targets of tests/fuzz (scripts/fuzz.sh), the Clang build
    clang-format  # scripts/format.sh --check in CI
    libjs-chart.js  # the dashboard's charts, built into ralphd
    chromium nodejs  # the dashboard's browser tests (puppeteer-core, from npm by scripts/test.sh)
    openssh-client openssh-server  # ralphctl --host ssh://; a real sshd in the tests
)

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ $status != "install ok installed" ]]; then
        missing+=("$pkg")
    fi
done

# npm comes with some builds of nodejs (NodeSource's) and is Debian's package `npm` otherwise.
if ! command -v npm >/dev/null 2>&1; then
    missing+=(npm)
fi

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages are installed" >&2
    exit 0
fi

if ((EUID == 0)); then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this script as root (or install sudo) to install them" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
