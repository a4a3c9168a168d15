#!/usr/bin/env python3
"""The C core's file graph: no circle between the files of csrc/.

A file A depends on a file B when A names a function or global that B defines (not
``static``): the link-time graph a reader follows from a call to its definition. The
graph has no circle (``module.c`` registers the binding files; a binding file never calls
back into ``module.c``); helpers both sides need live in a third file or a header
(``static inline``).

Usage: ``python tools/check_c_deps.py [--root DIR]``; exit status 1 and one line per circle
(``a.c -> b.c -> a.c``, with the names that make each arrow) when there is one.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Set

# The repository's style puts a definition's name at the start of its line, its return type
# on the line above: "int\nrt_add_object(PyObject *module, ...)\n{". A global: "type name =".
DEFINITION = re.compile(r"^([A-Za-z_]\w*)\s*\(", re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def _code(path: Path) -> str:
    """The file without its comments and string literals (names there are not uses)."""
    return STRING.sub('""', COMMENT.sub(" ", path.read_text(encoding="utf-8")))


def defined_names(code: str) -> Set[str]:
    """The functions the file defines for other files (a definition not marked static)."""
    names = set()
    for match in DEFINITION.finditer(code):
        line_start = match.start()
        above = code[max(0, line_start - 200) : line_start]
        previous = above.rstrip("\n").rsplit("\n", 1)[-1]
        body_follows = re.match(r"[^;{]*\)\s*\{", code[match.start() : match.start() + 600], re.S)
        if body_follows and not re.match(r"\s*static\b", previous):
            names.add(match.group(1))
    return names


def file_graph(root: Path) -> Dict[str, Dict[str, Set[str]]]:
    """{file: {file it depends on: the names that make the arrow}} over root/csrc/*.c."""
    codes = {p.name: _code(p) for p in sorted((root / "csrc").glob("*.c"))}
    owner = {name: f for f, code in codes.items() for name in defined_names(code)}
    graph: Dict[str, Dict[str, Set[str]]] = {f: {} for f in codes}
    for f, code in codes.items():
        for word in set(WORD.findall(code)):
            g = owner.get(word)
            if g is not None and g != f:
                graph[f].setdefault(g, set()).add(word)
    return graph


def circles(graph: Dict[str, Dict[str, Set[str]]]) -> List[List[str]]:
    """One path per circle found by a depth-first walk (each back edge closes one)."""
    found: List[List[str]] = []
    state: Dict[str, int] = {}  # 1: on the path, 2: done
    path: List[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return found


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    graph = file_graph(args.root)
    bad = circles(graph)
    for loop in bad:
        arrows = [f"{a} -> {b} ({', '.join(sorted(graph[a][b]))})" for a, b in zip(loop, loop[1:])]
        print("C file circle: " + "; ".join(arrows), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
