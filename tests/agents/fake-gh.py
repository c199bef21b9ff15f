#!/usr/bin/env python3
"""A fake GitHub CLI for the tests of `--pr` and `ralphctl pr`: `gh pr create --NAME=VALUE...`
appends {"argv", "options" (NAME: VALUE), "cwd", "body"} as a JSON line to $FAKE_GH_LOG and
prints the URL of pull request N (N = its line number), as gh does; while the file $FAKE_GH_LOG.fail exists it prints an error of
gh's to stderr and exits 1 instead. Anything else: exit 1."""
import json
import os
import sys


def main():
    args = sys.argv[1:]
    if args[:2] != ["pr", "create"]:
        print("fake gh: only 'gh pr create' is known", file=sys.stderr)
        return 1
    log = os.environ["FAKE_GH_LOG"]
    if os.path.exists(log + ".fail"):
        print("pull request create failed: GraphQL: No commits between main and the branch",
              file=sys.stderr)
        return 1
    options = dict(arg[2:].split("=", 1) for arg in args[2:] if arg.startswith("--") and "=" in arg)
    body = options.get("body", "")
    with open(log, "a") as f:
        f.write(json.dumps({"argv": args, "options": options, "cwd": os.getcwd(),
                            "body": body}) + "\n")
    with open(log) as f:
        number = sum(1 for _ in f)
    print("Creating pull request for branch into main\n")
    print("https://github.com/example/repo/pull/%d" % number)
    return 0


if __name__ == "__main__":
    sys.exit(main())
