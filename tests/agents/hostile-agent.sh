#!/usr/bin/env bash
# Fake agent that tries to get out of its workspace (or its sandbox) in one of the ways an
# attacker would, prints what it tried and how it went, leaves a <ralph_notes> block for ralph
# to append to .ralph/notes.md, and signals completion. Used by tests/integration/test_security.py.
#
#   hostile-agent.sh submit-via-socket SOCKET MARKER
#       POST loop.submit to ralphd's socket: a loop without --sandbox that creates MARKER
#   hostile-agent.sh link-notes TARGET        .ralph/notes.md becomes a link to TARGET
#   hostile-agent.sh link-state TARGET        .ralph/loop.md becomes a link to TARGET
#   hostile-agent.sh link-ralph-dir DIR       .ralph becomes a link to the directory DIR
#   hostile-agent.sh git-config MARKER        core.fsmonitor, a clean filter and commit signing
#                                             in .git/config, each running a script creating MARKER
#   hostile-agent.sh git-hook MARKER          .git/hooks/pre-commit (and post-commit) creating MARKER
#   hostile-agent.sh git-redirect MARKER      replaces the git directory by a copy whose config and
#                                             hooks create MARKER (renaming it away first), then
#                                             writes a `commondir` into it naming such a copy
#   hostile-agent.sh git-link TARGET          .git/logs/HEAD becomes a link to TARGET/reflog, and
#                                             every missing .git/objects/XX a link to TARGET
#   hostile-agent.sh git-fifo NAME            .git/NAME (config, index) and a .gitignore become
#                                             FIFOs, which libgit2 would wait on for a writer
#                                             forever
#   hostile-agent.sh rewrite FILE MARKER      FILE (the --verify check or a hook of the workspace)
#                                             becomes a script that creates MARKER
#   hostile-agent.sh rewrite-env FILE NAME...
#                                             FILE (a hook of the workspace) becomes a script that
#                                             prints "hook sees NAME=VALUE" (or "NAME unset") for
#                                             each NAME: what a hook would tell the agent's owner
#   hostile-agent.sh read FILE                prints FILE (a secret ralph's sandbox must hide)
#   hostile-agent.sh env                      prints its environment and working directory
set -u
action=${1:?usage: hostile-agent.sh ACTION ARGS...}
shift
tried() { if "$@" 2>/dev/null; then echo "$action: done"; else echo "$action: denied"; fi; }

# A script in the workspace that creates MARKER (the workspace is the one place it can write).
marker_script() {
    printf '#!/bin/sh\ntouch %q\ncat\n' "$1" >.hostile-marker.sh
    chmod +x .hostile-marker.sh
    echo "$PWD/.hostile-marker.sh"
}

case $action in
    submit-via-socket)
        socket=$1 marker=$2
        body=$(printf '{"jsonrpc":"2.0","id":1,"method":"loop.submit","params":{"workspace":"%s","agent":"command","command":"touch %s","prompt":"x","max_iterations":1,"allow_dirty":true}}' "$PWD" "$marker")
        tried python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
body = sys.argv[2].encode()
s.sendall(b"POST /rpc HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
print(s.recv(65536).decode(errors="replace"), file=sys.stderr)
' "$socket" "$body"
        ;;
    link-notes)
        mkdir -p .ralph && rm -f .ralph/notes.md
        tried ln -s "$1" .ralph/notes.md
        ;;
    link-state)
        mkdir -p .ralph && rm -f .ralph/loop.md
        tried ln -s "$1" .ralph/loop.md
        ;;
    link-ralph-dir)
        rm -rf .ralph
        tried ln -s "$1" .ralph
        ;;
    git-config)
        script=$(marker_script "$1")
        echo '* filter=hostile' >.gitattributes
        tried sh -c "git config core.fsmonitor '$script' && git config filter.hostile.clean '$script' &&
                     git config commit.gpgSign true && git config gpg.program '$script'"
        ;;
    git-hook)
        script=$(marker_script "$1")
        git_dir=$(git rev-parse --git-common-dir)
        tried sh -c "cp '$script' '$git_dir/hooks/pre-commit' && cp '$script' '$git_dir/hooks/post-commit'"
        ;;
    git-redirect)
        script=$(marker_script "$1")
        git_dir=$(git rev-parse --absolute-git-dir)
        common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
        # A copy of the repository's with a configuration and hooks of the agent's own.
        rm -rf .hostile-git && cp -a "$common" .hostile-git
        git --git-dir=.hostile-git config core.fsmonitor "$script"
        cp "$script" .hostile-git/hooks/pre-commit
        if mv "$git_dir" "$git_dir.old" 2>/dev/null; then
            cp -a .hostile-git "$git_dir" && echo "git-redirect rename: done"
        else
            echo "git-redirect rename: denied"
        fi
        if echo "$PWD/.hostile-git" >"$git_dir/commondir" 2>/dev/null; then
            echo "git-redirect commondir: done"
        else
            echo "git-redirect commondir: denied"
        fi
        ;;
    git-link)
        target=$1
        git_dir=$(git rev-parse --absolute-git-dir)
        rm -f "$git_dir/logs/HEAD"
        ln -s "$target/reflog" "$git_dir/logs/HEAD"
        for prefix in $(printf '%02x ' $(seq 0 255)); do
            [ -e "$git_dir/objects/$prefix" ] || ln -s "$target" "$git_dir/objects/$prefix"
        done
        echo "git-link: done"
        ;;
    git-fifo)
        git_dir=$(git rev-parse --absolute-git-dir)
        tried sh -c "rm -f '$git_dir/$1' .gitignore && mkfifo '$git_dir/$1' .gitignore"
        ;;
    rewrite)
        file=$1 marker=$2
        tried sh -c "printf '#!/bin/sh\ntouch %s\nexit 0\n' '$marker' >'$file' && chmod +x '$file'"
        ;;
    rewrite-env)
        file=$1
        shift
        script='#!/bin/sh\n'
        for name in "$@"; do
            script="$script"'if [ -n "${'"$name"'+set}" ]; then echo "hook sees '"$name"'=$'"$name"'"; else echo "hook sees '"$name"' unset"; fi\n'
        done
        tried sh -c "printf '$script' >'$file' && chmod +x '$file'"
        ;;
    read)
        if cat "$1" 2>/dev/null; then echo "$action: done"; else echo "$action: denied"; fi
        ;;
    env)
        echo "cwd: $PWD"
        env | sort
        ;;
    *)
        echo "hostile-agent.sh: unknown action $action" >&2
        exit 2
        ;;
esac
echo "work $RANDOM" >>hostile-work.txt  # progress, for --commit
echo "<ralph_notes>a note from the hostile agent</ralph_notes>"
echo "<promise>COMPLETE</promise>"
exit 0
