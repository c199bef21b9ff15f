#!/usr/bin/env bash
# clang-format (the repository's .clang-format) over every C++ file git knows.
#   scripts/format.sh           → formats them in place
#   scripts/format.sh --check   → changes nothing; lists the files that differ and exits 1
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

mode=fix
case ${1:-} in
    "") ;;
    --check) mode=check ;;
    *)
        echo "format.sh: unknown argument '$1' (usage: scripts/format.sh [--check])" >&2
        exit 2
        ;;
esac

mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [[ $mode == fix ]]; then
    clang-format -i "${files[@]}"
    exit 0
fi
differ=()
for file in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$file" >/dev/null 2>&1; then differ+=("$file"); fi
done
if ((${#differ[@]} > 0)); then
    echo "format.sh: not formatted with clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${differ[@]}" >&2
    exit 1
fi
echo "format.sh: ${#files[@]} files formatted" >&2
