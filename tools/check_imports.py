#!/usr/bin/env python3
"""The import graph of the package: no cycle, and no arrow back up a layer.

Every import counts: at module level, inside a function, under ``if TYPE_CHECKING:``
(an ``ast`` walk of every ``Import`` and ``ImportFrom`` node, relative imports resolved;
``from pkg import name`` where ``name`` is a submodule is an import of that submodule).
No module of ``resource_tracker`` imports the Metaflow extension (``metaflow_extensions``):
the library does not depend on its own plug-in. Each module belongs to one layer of
``LAYERS`` (the one table of them; docs/architecture.md shows it and
``tests/core/test_core_imports_graph.py`` keeps the two equal). A module may import its own
layer and the layers below it; the imports of one layer form no cycle.

Usage: ``python tools/check_imports.py [--root DIR] [--table]``; exit status 1 and one line
per offending import (``file:line: a -> b``) when the graph breaks a rule.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

PACKAGES = ("resource_tracker", "metaflow_extensions")
#: The Metaflow extension: it imports the library, never the other way round.
PLUGIN = "metaflow_extensions"

# From the top down: a module may import only its own layer and those below it. A name
# ending in ".*" stands for a package and every module in it; the longest match wins.
LAYERS: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    (
        "command line",
        "the `resource-tracker` commands, the dashboard they serve, the Metaflow extension",
        (
            "resource_tracker.__main__",
            "resource_tracker.cli.*",
            "resource_tracker.dashboard.*",
            "metaflow_extensions.*",
        ),
    ),
    (
        "facade",
        "the public names, the ResourceTracker facade, its supervision and compat modules",
        (
            "resource_tracker",
            "resource_tracker.tracker",
            "resource_tracker._display",
            "resource_tracker.supervise",
            "resource_tracker._launch",
            "resource_tracker._results",
            "resource_tracker._adopt",
            "resource_tracker._code",
            "resource_tracker._readings",
            "resource_tracker.tracker_procfs",
            "resource_tracker.tracker_psutil",
            "resource_tracker.helpers",
            "resource_tracker.keeper",
            "resource_tracker.tiny_bars",
            "resource_tracker.dummy_workloads",
            "resource_tracker.csv_trackers",
            "resource_tracker.code_agent",
        ),
    ),
    (
        "views",
        "the HTML report, the exporters, the command line's summary lines",
        (
            "resource_tracker.report.*",
            "resource_tracker.export.*",
            "resource_tracker.cli.summary",
        ),
    ),
    (
        "analysis",
        "the run summary, insights, tuning, the catalog, the code view",
        (
            "resource_tracker.summary",
            "resource_tracker.insights",
            "resource_tracker.tuning",
            "resource_tracker.catalog.*",
            "resource_tracker.code_view",
            "resource_tracker.cloud",
            "resource_tracker.server_info",
            "resource_tracker.metaflow_history",
        ),
    ),
    (
        "run data",
        "a run's tables, statistics, snapshot codec and code-profile tables, live or stored",
        (
            "resource_tracker._run_data",
            "resource_tracker._energy",
            "resource_tracker._tracked",
            "resource_tracker.code_profile",
            "resource_tracker._stored",
            "resource_tracker._gpu_series",
        ),
    ),
    (
        "readers",
        "the samplers, the cgroup readers, what identifies the tracked process",
        (
            "resource_tracker._identity",
            "resource_tracker.sampling",
            "resource_tracker.sampler_protocol",
            "resource_tracker.psutil_sampler",
            "resource_tracker.cgroup_usage",
            "resource_tracker._cgroup_fs",
            "resource_tracker._cgroup_limits",
            "resource_tracker._cgroup_read",
            "resource_tracker._cgroup_v1",
            "resource_tracker._tree_cgroup",
            "resource_tracker._background",
            "resource_tracker._code_agent_child",
        ),
    ),
    (
        "foundations",
        "settings, the column registry, formatting, TinyDataFrame",
        (
            "resource_tracker.settings",
            "resource_tracker.registry",
            "resource_tracker.names",
            "resource_tracker.formatting",
            "resource_tracker.tiny_data_frame",
            "resource_tracker.rounding",
            "resource_tracker._renamed",
            "resource_tracker._text",
            "resource_tracker._regular_file",
            "resource_tracker._version",
            "resource_tracker.results_types",
            "resource_tracker._artifact_types",
        ),
    ),
    (
        "C core",
        "the `_core` binding of the C core (imports nothing of the package)",
        ("resource_tracker._core",),
    ),
)


class Edge(NamedTuple):
    """One import: ``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int


def module_files(root: Path) -> Dict[str, Path]:
    """Every module of the packages under ``root`` (stubs of binary modules included)."""
    modules: Dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py*")):
            if path.suffix not in (".py", ".pyi") or "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules.setdefault(".".join(parts), path)
    return modules


def _resolve_base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``from <base> import ...`` names (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    base = ".".join(parts[:keep])
    return f"{base}.{node.module}" if node.module else base


def _known(name: str, modules: Set[str]) -> Optional[str]:
    """The most specific module of ours that ``name`` is or lies in, or None."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(module: str, is_package: bool, node: ast.AST, modules: Set[str]) -> Iterator[str]:
    """The modules of ours that one import statement loads by name."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            found = _known(alias.name, modules)
            if found:
                yield found
    elif isinstance(node, ast.ImportFrom):
        base = _resolve_base(module, is_package, node)
        for alias in node.names:
            found = _known(f"{base}.{alias.name}", modules)
            if found:
                yield found


def import_edges(root: Path) -> Tuple[Dict[str, Path], List[Edge]]:
    """The modules under ``root`` and every import between two of them."""
    files = module_files(root)
    names = set(files)
    edges: List[Edge] = []
    for module, path in files.items():
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        rel = str(path.relative_to(root))
        for node in ast.walk(tree):
            for target in _targets(module, is_package, node, names):
                edge = Edge(module, target, rel, getattr(node, "lineno", 0))
                if target != module and edge not in edges:
                    edges.append(edge)
    return files, edges


def layer_of(module: str) -> Optional[int]:
    """The index of the layer ``module`` belongs to (0 is the top), or None if unassigned."""
    best: Optional[Tuple[int, int]] = None
    for index, (_, _, members) in enumerate(LAYERS):
        for pattern in members:
            if pattern.endswith(".*"):
                package = pattern[:-2]
                hit = module == package or module.startswith(package + ".")
                length = len(package)
            else:
                hit, length = module == pattern, len(pattern) + 1
            if hit and (best is None or length > best[1]):
                best = (index, length)
    return best[0] if best else None


def _cycles(edges: Sequence[Edge]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph: Dict[str, List[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge.target)
        graph.setdefault(edge.target, [])
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def problems(root: Path) -> List[str]:
    """Every broken rule of the graph under ``root``, one line each (empty: all is well)."""
    files, edges = import_edges(root)
    lines: List[str] = []
    for module in sorted(files):
        if layer_of(module) is None:
            lines.append(f"{files[module]}: {module} is in no layer of tools/check_imports.py")
    for edge in edges:
        src, dst = layer_of(edge.source), layer_of(edge.target)
        if src is not None and dst is not None and dst < src:
            lines.append(
                f"{edge.path}:{edge.line}: {edge.source} ({LAYERS[src][0]}) imports "
                f"{edge.target} ({LAYERS[dst][0]}), a layer above it"
            )
    for edge in edges:
        if edge.source.startswith("resource_tracker") and edge.target.startswith(PLUGIN):
            lines.append(
                f"{edge.path}:{edge.line}: {edge.source} imports {edge.target}: the library "
                "never imports its own Metaflow plug-in (the plug-in imports the library)"
            )
    for component in _cycles(edges):
        members = set(component)
        lines.append(f"import cycle of {len(component)} modules: {', '.join(component)}")
        for edge in edges:
            if edge.source in members and edge.target in members:
                lines.append(f"  {edge.path}:{edge.line}: {edge.source} -> {edge.target}")
    return lines


def layer_table() -> str:
    """The layers as the Markdown table docs/architecture.md carries."""
    rows = ["| layer | what | modules |", "|---|---|---|"]
    for name, what, members in LAYERS:
        listed = ", ".join(f"`{member}`" for member in members)
        rows.append(f"| {name} | {what} | {listed} |")
    return "\n".join(rows) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Check the graph (or print the layer table); 1 when a rule is broken."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--table", action="store_true", help="print the layer table")
    args = parser.parse_args(argv)
    if args.table:
        sys.stdout.write(layer_table())
        return 0
    found = problems(args.root)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
