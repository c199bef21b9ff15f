#!/usr/bin/env bash
# Fake agent that reports environment variables: "NAME=value" for each NAME given that is set,
# "NAME is unset" for the others.
set -u
for name in "$@"; do
    if [[ -v $name ]]; then
        printf '%s=%s\n' "$name" "${!name}"
    else
        printf '%s is unset\n' "$name"
    fi
done
exit 0
