"""The folders' dependencies (ARCHITECTURE.md, Layout): what each folder includes of the others
has no cycle, and the shared layers (common/, proto/) depend on neither program. Reads the
#include lines of the sources; standard library only."""

import os
import re
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """daemon/loop/x.cpp → daemon/loop; common/x.hpp → common. A file at the top of daemon/ is
    its own node (daemon/clock.hpp is used everywhere, daemon.cpp uses everything): the stem."""
    parts = path.split("/")
    if parts[0] == "daemon":
        return "/".join(parts[:2]) if len(parts) > 2 else "daemon/" + parts[1].split(".")[0]
    return parts[0]


def folder_graph():
    """{folder: {folders it includes}} over common/, proto/, daemon/*, client/."""
    graph = {}
    for top in ("common", "proto", "daemon", "client"):
        for directory, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.relpath(os.path.join(directory, name), ROOT)
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    text = f.read()
                source = folder_of(path)
                graph.setdefault(source, set())
                for included in INCLUDE.findall(text):
                    if not included.startswith(("common/", "proto/", "daemon/", "client/")):
                        continue
                    target = folder_of(included)
                    if target != source:
                        graph[source].add(target)
    return graph


def find_cycle(graph):
    """A list of folders forming a cycle, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


class LayoutTest(unittest.TestCase):

    def test_the_folders_include_each_other_without_a_cycle(self):
        graph = folder_graph()
        self.assertIn("daemon/loop", graph)
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, "folders that include each other: " + " → ".join(cycle or []))

    def test_the_shared_layers_depend_on_neither_program(self):
        graph = folder_graph()
        for shared in ("common", "proto"):
            programs = {f for f in graph.get(shared, ()) if f.startswith(("daemon", "client"))}
            self.assertEqual(programs, set(), "%s includes %s" % (shared, programs))

    def test_a_cycle_is_found(self):
        self.assertEqual(find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}), ["a", "b", "c", "a"])
        self.assertIsNone(find_cycle({"a": {"b"}, "b": {"c"}}))


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]])
