"""Fails when a Python function in the package is longer than the limit (lines of its body,
docstring included). Run by `make lint`: `python tools/check_function_length.py [--max 60]`."""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys

ROOTS = ("resource_tracker", "metaflow_extensions")


def long_functions(root: pathlib.Path, limit: int) -> list[str]:
    """`path:line name (N lines)` for every function in root's .py files over limit lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{path}:{node.lineno} {node.name} ({length} lines)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max", type=int, default=60, help="longest function allowed")
    args = parser.parse_args(argv)
    found = [f for r in ROOTS for f in long_functions(pathlib.Path(r), args.max)]
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} function(s) over {args.max} lines: split them", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
