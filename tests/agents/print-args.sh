#!/usr/bin/env bash
# Fake agent that records exactly how it was invoked, in files of the workspace (its cwd):
#   .args        every argument, each followed by a NUL byte (so empty arguments and arguments
#                with spaces or newlines are unambiguous)
#   .argfile.I   a copy of argument I (0-based) when it names a regular file (e.g. {prompt_file})
#   .stdin       everything read from stdin
#   .cwd         the working directory
# and prints one line per argument: "arg[I]=<VALUE>".
set -u
printf '%s\0' "$@" >.args.tmp
i=0
for arg in "$@"; do
    if [[ -f $arg ]]; then
        cp -- "$arg" ".argfile.$i"
    fi
    printf 'arg[%d]=<%s>\n' "$i" "$arg"
    i=$((i + 1))
done
cat >.stdin
pwd >.cwd
mv .args.tmp .args
exit 0
