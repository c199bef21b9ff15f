#!/usr/bin/env bash
# Fake agent for submit --sandbox: tries to write in its workspace, in OUTSIDE_DIR (outside the
# workspace) and in /tmp, and to commit in the workspace's git repository when there is one;
# prints one line per try ("workspace: ok", "outside: denied", ...), then the completion signal.
set -u
outside=${1:?usage: sandbox-probe.sh OUTSIDE_DIR}
try() { if "$@" 2>/dev/null; then echo ok; else echo denied; fi; }
echo "workspace: $(try sh -c 'echo x > probe-workspace.txt')"
echo "outside: $(try sh -c "echo x > '$outside/probe-outside.txt'")"
echo "tmp: $(try sh -c 'echo x > /tmp/ralph-sandbox-probe.txt')"
if [ -e .git ]; then
    echo "git: $(try git -c user.name=probe -c user.email=probe@example.com commit -q --allow-empty -m 'sandbox probe')"
fi
echo "<promise>COMPLETE</promise>"
