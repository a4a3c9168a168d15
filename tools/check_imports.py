#!/usr/bin/env python3
"""The import graph of the package: no cycle, no arrow back up a layer, and imports at the
top of their modules but for the heavy optional parts that ``LAZY`` names.

Every import counts: at module level, inside a function, under ``if TYPE_CHECKING:``
(an ``ast`` walk of every ``Import`` and ``ImportFrom`` node, relative imports resolved;
``from pkg import name`` where ``name`` is a submodule is an import of that submodule).
No module of ``resource_tracker`` imports the Metaflow extension (``metaflow_extensions``):
the library does not depend on its own plug-in. Each module belongs to one layer of
``LAYERS`` (the one table of them; docs/architecture.md shows it and
``tests/core/test_core_import_graph.py`` keeps the two equal). A module may import its own
layer and the layers below it; the imports of one layer form no cycle.

An import of a module of ours inside a function is allowed only by a rule of ``LAZY``: a
heavy optional part kept out of one of the ways in that must stay light (``import
resource_tracker``, ``import metaflow``, the command line's start), with the time it saves,
measured, and why. Any other is named (``file:line``) and belongs at the module's top; so
is one the module also makes at its top, and a rule that allows no import any more.

Usage: ``python tools/check_imports.py [--root DIR] [--table | --measure]``; exit status 1
and one line per offending import (``file:line: a -> b``) when the graph breaks a rule;
``--measure`` prints each rule's recorded saving beside what it measures now.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
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
            "resource_tracker._worker_agent",
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
            "resource_tracker._gpu_quality",
            "resource_tracker._tracked",
            "resource_tracker.code_profile",
            "resource_tracker._agent_records",
            "resource_tracker._stored",
            "resource_tracker._gpu_series",
            "resource_tracker._gpu_fit",
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


#: Three ways in that must stay light, and the modules each loads first. ``import
#: resource_tracker`` (what a tracker needs to construct, start and stop:
#: tests/core/test_core_import.py holds the same set), ``import metaflow`` (Metaflow imports
#: the plug-in's decorator and card with every flow and command, decorated or not) and the
#: command line (every command builds the parser from every command's module).
IMPORT_PATH = (
    "resource_tracker",
    "resource_tracker._background",
    "resource_tracker._code",
    "resource_tracker._code_agent_child",
    "resource_tracker._core",
    "resource_tracker._identity",
    "resource_tracker._launch",
    "resource_tracker._results",
    "resource_tracker._tracked",
    "resource_tracker._version",
    "resource_tracker._worker_agent",
    "resource_tracker.code_agent",
    "resource_tracker.settings",
    "resource_tracker.tracker",
)
METAFLOW_LOADS = (
    "metaflow_extensions.resource_tracker.plugins.track_resources_decorator",
    "metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card.tracked_resources_card",
)
COMMAND_LINE = ("resource_tracker.cli.*",)
#: What each group's figures are measured after (``--measure``): the way in already taken.
BASELINES = {
    "import path": "import resource_tracker",
    "command line": "from resource_tracker.cli import catalog, dashboard, recommend, report, "
    "run, stats, watch, parser",
    "metaflow": "import metaflow",
}


class LazyImport(NamedTuple):
    """A module of ours that ``importers`` may import inside a function (on first use)."""

    module: str  # a module, or a package and all inside it ("pkg.*")
    importers: Tuple[str, ...]  # the modules allowed to (patterns as in LAYERS; "*": any)
    baseline: str  # a key of BASELINES: what is loaded before it is measured
    saves_ms: float  # measured: ``python tools/check_imports.py --measure``
    why: str
    probe: str = ""  # the module measured, when not ``module`` (a package: its heavy part)


# Every import of a module of ours inside a function is one of these; any other import sits
# at the top of its module (a cycle it would make is a layering problem: move the shared
# piece down a layer). The figures: -X importtime, the best of 5 fresh interpreters, what
# importing the module adds after its baseline (load ~14 on 2 cores, 2026-12-07).
LAZY: Tuple[LazyImport, ...] = (
    # -- heavy optional parts: out of the ways in, and loaded by their package on first use
    LazyImport(
        "resource_tracker.report.*",
        IMPORT_PATH + COMMAND_LINE + ("resource_tracker.report.*",),
        "import path",
        273,
        "the HTML report (html, its charts' series and the summary): report() and `report` only",
    ),
    LazyImport(
        "resource_tracker.export.*",
        IMPORT_PATH + COMMAND_LINE + ("resource_tracker.export.*",),
        "import path",
        100,
        "OTLP and Pushgateway (http.client, urllib, ssl, email): only with an export target",
    ),
    LazyImport(
        "resource_tracker.catalog.*",
        IMPORT_PATH + COMMAND_LINE + ("resource_tracker.catalog.*", "resource_tracker.summary"),
        "import path",
        86,
        "the server catalog; its queries load sqlite3: only when servers or prices are asked "
        "(the summary's import of it is guarded: without it, 'catalog unavailable')",
        "resource_tracker.catalog._query",
    ),
    # -- kept out of `import resource_tracker` and a tracker's run (test_core_import.py)
    LazyImport(
        "resource_tracker._run_data",
        IMPORT_PATH,
        "import path",
        101,
        "a run's tables and statistics: on the first data method, not to start and stop",
    ),
    LazyImport(
        "resource_tracker._stored",
        IMPORT_PATH + COMMAND_LINE,
        "import path",
        88,
        "the snapshot codec (json): only to save or load a run",
    ),
    LazyImport(
        "resource_tracker._gpu_series",
        IMPORT_PATH,
        "import path",
        1.5,
        "the per-GPU series: only when they are asked",
    ),
    LazyImport(
        "resource_tracker._renamed",
        IMPORT_PATH,
        "import path",
        1.8,
        "the warnings of the 0.x names: only when an old name is used",
    ),
    LazyImport(
        "resource_tracker.code_profile",
        IMPORT_PATH,
        "import path",
        24,
        "the code profile's tables: only when code tracking is on and its results asked",
    ),
    LazyImport(
        "resource_tracker._agent_records",
        ("resource_tracker._worker_agent",),
        "import path",
        75,
        "the agents' record reader (json, the snapshot checks): only when a tracker's workers "
        "wrote a record",
    ),
    LazyImport(
        "resource_tracker.summary",
        IMPORT_PATH,
        "import path",
        118,
        "the run summary (insights, tuning, the code view): summary(), recommend_*()",
    ),
    LazyImport(
        "resource_tracker.server_info",
        IMPORT_PATH,
        "import path",
        6.8,
        "the machine's description: get_server_info() and the summary",
    ),
    LazyImport(
        "resource_tracker.cloud",
        IMPORT_PATH,
        "import path",
        1.5,
        "cloud discovery (threading): only when discover_cloud is on, after start()",
    ),
    LazyImport(
        "resource_tracker.psutil_sampler",
        IMPORT_PATH,
        "import path",
        15,
        "the psutil backend (and psutil): only when it is chosen",
    ),
    LazyImport(
        "resource_tracker._tree_cgroup",
        IMPORT_PATH,
        "import path",
        4.1,
        "the tree's own cgroup: read by the worker thread after start(), not by the import",
    ),
    LazyImport(
        "resource_tracker.cgroup_usage",
        IMPORT_PATH,
        "import path",
        3.1,
        "the cgroup readers: read by the worker thread after start(), not by the import",
    ),
    LazyImport(
        "resource_tracker._display",
        IMPORT_PATH,
        "import path",
        151,
        "the tracker's rich display (tuning, insights): only in a notebook",
    ),
    LazyImport(
        "resource_tracker.csv_trackers",
        ("resource_tracker",),
        "import path",
        12,
        "the 0.x PidTracker and SystemTracker: PEP 562, on first use of the name",
    ),
    LazyImport(
        "resource_tracker.tiny_data_frame",
        ("resource_tracker",),
        "import path",
        20,
        "TinyDataFrame: PEP 562, on first use of the name",
    ),
    LazyImport(
        "resource_tracker.supervise",
        IMPORT_PATH + COMMAND_LINE,
        "import path",
        27,
        "process supervision (subprocess, signal handling): run() and `run` only",
    ),
    # -- kept out of every command's start (the parser loads every command's module)
    LazyImport(
        "resource_tracker.dashboard.*",
        COMMAND_LINE,
        "command line",
        185,
        "the dashboard's pages and readers: `dashboard` only",
        "resource_tracker.dashboard._page",
    ),
    LazyImport(
        "resource_tracker.tuning",
        COMMAND_LINE,
        "command line",
        61,
        "the tuning rules: `recommend --metaflow` only",
    ),
    LazyImport(
        "resource_tracker.insights",
        COMMAND_LINE,
        "command line",
        26,
        "the findings and their prices: `recommend --metaflow` only",
    ),
    LazyImport(
        "resource_tracker.metaflow_history",
        COMMAND_LINE,
        "command line",
        119,
        "the reader of Metaflow runs (with the summary and tuning it builds on): "
        "`recommend --metaflow` only",
    ),
    LazyImport(
        "resource_tracker.code_agent",
        COMMAND_LINE,
        "command line",
        7.3,
        "the code agent's launcher: `run --code` only",
    ),
    LazyImport(
        "resource_tracker.cli.code_records",
        COMMAND_LINE,
        "command line",
        50,
        "the code agent's records: `run --code` only",
    ),
    LazyImport(
        "resource_tracker.cli.summary",
        COMMAND_LINE,
        "command line",
        48,
        "the summary lines (the code view): after a command has run, not to parse it",
    ),
    # -- kept out of `import metaflow`, which loads the plug-in's decorator and card
    LazyImport(
        "resource_tracker.*",
        METAFLOW_LOADS,
        "metaflow",
        17,
        "the library: when a step decorated with @track_resources runs, not in every flow",
    ),
    LazyImport(
        "metaflow_extensions.*",
        METAFLOW_LOADS,
        "metaflow",
        138,
        "the plug-in's live view, record and card: when a decorated step runs",
        "metaflow_extensions.resource_tracker.plugins.track_resources_record",
    ),
)


class Edge(NamedTuple):
    """One import: ``source`` imports ``target`` at ``path:line``; ``where``: at the module's
    ``top``, inside a ``function``, or for the type checker only (``typing``)."""

    source: str
    target: str
    path: str
    line: int
    where: str = "top"


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
        for node, where in _import_nodes(tree):
            for target in _targets(module, is_package, node, names):
                edge = Edge(module, target, rel, getattr(node, "lineno", 0), where)
                if target != module and edge not in edges:
                    edges.append(edge)
    return files, edges


def _import_nodes(tree: ast.AST) -> Iterator[Tuple[ast.AST, str]]:
    """Every import statement of ``tree`` and where it sits (see Edge.where)."""
    work: List[Tuple[ast.AST, str]] = [(tree, "top")]
    while work:
        node, where = work.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, where
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = "function"
        elif isinstance(node, ast.If) and where == "top" and "TYPE_CHECKING" in ast.dump(node.test):
            where = "typing"
        work.extend((child, where) for child in ast.iter_child_nodes(node))


def _matches(module: str, patterns: Sequence[str]) -> bool:
    """Whether ``module`` is one of ``patterns`` ("pkg.*": pkg and all inside; "*": any)."""
    for pattern in patterns:
        if pattern == "*" or module == pattern:
            return True
        if pattern.endswith(".*") and (module + ".").startswith(pattern[:-1]):
            return True
    return False


def lazy_rule(edge: Edge) -> Optional[LazyImport]:
    """The rule of LAZY that allows a function-level import, or None."""
    for rule in LAZY:
        if _matches(edge.target, (rule.module,)) and _matches(edge.source, rule.importers):
            return rule
    return None


def lazy_problems(edges: Sequence[Edge]) -> List[str]:
    """A function-level import no rule of LAZY allows, or one of a module its importer
    imports at its top anyway (it saves nothing)."""
    lines: List[str] = []
    on_top = {(edge.source, edge.target) for edge in edges if edge.where == "top"}
    for edge in sorted(edges, key=lambda edge: (edge.path, edge.line, edge.target)):
        if edge.where != "function":
            continue
        rule = lazy_rule(edge)
        if (edge.source, edge.target) in on_top:
            lines.append(
                f"{edge.path}:{edge.line}: {edge.source} imports {edge.target} inside a "
                "function and at its top: keep the top one"
            )
        elif rule is None:
            lines.append(
                f"{edge.path}:{edge.line}: {edge.source} imports {edge.target} inside a "
                "function: import it at the top of the module (or name it in LAZY of "
                "tools/check_imports.py with the time it saves)"
            )
    return lines


def stale_rules(root: Path) -> List[str]:
    """The rules of LAZY that allow no function-level import of the package under ``root``
    (a rule outlives its import: drop it)."""
    _, edges = import_edges(root)
    used = {lazy_rule(edge) for edge in edges if edge.where == "function"}
    return [
        f"tools/check_imports.py: LAZY's rule for {rule.module} allows no import: drop it"
        for rule in LAZY
        if rule not in used
    ]


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
    lines.extend(lazy_problems(edges))
    for component in _cycles(edges):
        members = set(component)
        lines.append(f"import cycle of {len(component)} modules: {', '.join(component)}")
        for edge in edges:
            if edge.source in members and edge.target in members:
                lines.append(f"  {edge.path}:{edge.line}: {edge.source} -> {edge.target}")
    return lines


def measure(rule: LazyImport, runs: int = 7) -> float:
    """What importing ``rule.probe`` or ``rule.module`` (a package: the package) costs after
    its baseline, in ms: the best of ``runs`` fresh interpreters (this one's), timed around
    the import statement."""
    module = rule.probe or (rule.module[:-2] if rule.module.endswith(".*") else rule.module)
    code = (
        f"{BASELINES[rule.baseline]}\nimport time\nstart = time.perf_counter()\n"
        f"import {module}\nprint((time.perf_counter() - start) * 1000)"
    )
    root = Path(__file__).resolve().parent.parent
    best = float("inf")
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
        )
        best = min(best, float(done.stdout.split()[-1]))
    return best


def measure_table() -> str:
    """Each rule of LAZY: its recorded saving beside what it measures here and now."""
    rows = [f"{'module':45} {'baseline':13} {'recorded':>9} {'measured':>9}"]
    for rule in LAZY:
        now = measure(rule)
        rows.append(f"{rule.module:45} {rule.baseline:13} {rule.saves_ms:9.1f} {now:9.1f}")
    return "\n".join(rows) + "\n"


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
    parser.add_argument(
        "--measure", action="store_true", help="measure what each lazy import saves (ms)"
    )
    args = parser.parse_args(argv)
    if args.table:
        sys.stdout.write(layer_table())
        return 0
    if args.measure:
        sys.stdout.write(measure_table())
        return 0
    found = problems(args.root) + stale_rules(args.root)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
