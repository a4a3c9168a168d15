"""Tuned resource requests from a step's history (``@track_resources(tune=True)``, its card,
artifact and export, and ``resource-tracker recommend --metaflow``). Pure: the history is
passed in. :func:`tune_resources` is the one rule; everything that shows a tuned
``@resources(...)`` calls it.

Each earlier run is a *record* (:func:`run_record`): its peak memory, its CPU at the 90th
percentile of the sampling intervals, its GPUs, what it *had* (the cgroup limit when the
kernel enforced one, else the ask it ran with), its OOM kills and CPU throttling, and its
status (``ok``, ``failed``, or ``killed``: the run left a live record and no final one, as a
SIGKILL or the OOM killer leaves it). A run's ``stats()`` dict is turned into a record.

The rule (per resource, from at most the newest runs the caller passes):

- memory: the highest peak of the runs (failed and killed ones included) + 20%, rounded up
  as :meth:`recommend_resources` rounds; after an OOM kill (a kill counted by the cgroup,
  or a killed run) at least 1.5 x what that run *had*, so the run after a kill asks more
  than the ask that failed, and the floor stays while that run is in the history (once,
  not again on every later run);
- CPU: the 90th percentile of each run's per-interval usage (the busy part of a run, not
  its mean), the highest over the runs, in whole cores (0.1 core of tolerance), at least
  1; a run throttled by its CPU limit (more than 10% of its periods, for a second at least:
  ``insights.was_throttled``) counts as needing a
  core more than it had, and a run *starved* by the machine (system CPU at the machine's
  cores while the step used less than it could have: what it had, at most the machine's
  cores) counts as needing that much: it never lowers the ask below what it could get;
- GPUs: the highest number in use;
- with fewer than :data:`MIN_RUNS` finished runs a value is only raised (to what a run was
  seen to need), never lowered; with enough, it may go down, by at most half of what the
  newest run had per run;
- last, the guardrails ``min_*`` / ``max_*`` (``@track_resources(min_memory=...)``).

Nothing is added to an ask: every figure is relative to what a run used or had, so tuned
runs of an unchanged workload keep the same ask (no compounding). Odd values (text, None,
infinities, NaN, sizes beyond :data:`PLAUSIBLE`) are left out with a note, never raised.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import formatting as fmt
from ._artifact_types import TuningResult
from .insights import was_throttled

__all__ = [
    "MIN_RUNS",
    "OOM_RAISE",
    "MEMORY_MARGIN",
    "BOUND_NAMES",
    "Tuning",
    "tune_resources",
    "run_record",
    "as_record",
    "check_bounds",
    "resources_line",
    "RULE_TEXT",
]

#: The fewest finished earlier runs a tuning may lower a value from.
MIN_RUNS = 3
#: What an OOM kill multiplies the memory the run had by.
OOM_RAISE = 1.5
#: The margin over the highest memory peak.
MEMORY_MARGIN = 1.2
#: A tuned value goes down by at most this share of what the newest run had.
STEP_DOWN = 0.5
#: Cores of tolerance before the CPU percentile is rounded up to the next whole core.
CPU_TOLERANCE = 0.1
#: A machine at this share of its cores is saturated (a run on it may be starved).
SATURATED_SHARE = 0.9
#: The largest value taken as a size (cores, MiB, GPUs); beyond it a value is not a size.
PLAUSIBLE = {"cpu": 4096.0, "memory": 64.0 * 1024 * 1024, "gpu": 64.0}
#: Units the values are given in, for the change lines.
UNITS = {"cpu": "", "memory": " MiB", "gpu": ""}
RESOURCES = ("cpu", "memory", "gpu")
#: The guardrail names (``@track_resources(min_memory=...)``).
BOUND_NAMES = tuple(f"{side}_{k}" for k in RESOURCES for side in ("min", "max"))
#: One line: why the tuned request may differ from ``recommend_resources()``.
RULE_TEXT = (
    "tuned by @track_resources: CPU covers the 90th percentile of the busy intervals "
    "(recommend_resources() uses the mean), memory the highest peak + 20% of the runs "
    "including failed and killed ones, raised 1.5x over what a run had after an OOM kill"
)


# -- reading values from outside ----------------------------------------------------------


def _size(
    value: Any, key: str, notes: Optional[List[str]] = None, what: str = ""
) -> Optional[float]:
    """A finite, non-negative, plausible number of ``key`` (cores, MiB, GPUs), or None
    (with a note saying what was wrong, when ``notes`` is given and the value was set)."""
    if value is None or value == "":
        return None
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if math.isfinite(number) and 0 <= number <= PLAUSIBLE[key]:
        return number
    if notes is not None:
        unit = {"cpu": "cores", "memory": "MiB", "gpu": "GPUs"}[key]
        notes.append(
            f"{what or key} {str(value)[:40]!r} ignored: not a number of {unit} "
            f"between 0 and {PLAUSIBLE[key]:.0f}"
        )
    return None


def _count(value: Any) -> float:
    """A counter from outside (``3``, ``"0"``): a finite number >= 0, else 0."""
    try:
        number = float(value) if not isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number > 0 else 0.0


def _field(stats: Mapping[str, Any], key: str, fld: str) -> Optional[float]:
    entry = stats.get(key)
    value = entry.get(fld) if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def check_bounds(bounds: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    """The guardrails ``{"min_memory": MiB, "max_cpu": cores, ...}`` as numbers (None and
    unset ones left out); ValueError naming a bad one (the decorator's attributes)."""
    out: Dict[str, float] = {}
    for name, value in (bounds or {}).items():
        if name not in BOUND_NAMES:
            raise ValueError(f"unknown tuning bound {name!r} (one of {', '.join(BOUND_NAMES)})")
        if value is None or value == "":
            continue
        notes: List[str] = []
        number = _size(value, name.split("_", 1)[1], notes, name)
        if number is None:
            raise ValueError(f"@track_resources({name}=...): {notes[0]}")
        out[name] = number
    for key in RESOURCES:
        low, high = out.get(f"min_{key}"), out.get(f"max_{key}")
        if low is not None and high is not None and low > high:
            raise ValueError(f"@track_resources: min_{key}={low:g} is above max_{key}={high:g}")
    return out


# -- one run's record ---------------------------------------------------------------------


def _cgroup_part(cgroup: Any) -> Dict[str, Any]:
    """Limits, OOM kills and the throttled share from ``stats()['cgroup']``."""
    cg = cgroup if isinstance(cgroup, Mapping) else {}
    periods, hit = _count(cg.get("cpu_periods")), _count(cg.get("cpu_throttled_periods"))
    return {
        "limits": {
            "cpu": _size(cg.get("cpu_limit_cores"), "cpu"),
            "memory": _size(cg.get("memory_limit_mib"), "memory"),
        },
        "oom_kills": _count(cg.get("oom_kills")),
        "throttled_share": hit / periods if periods else 0.0,
        "throttled_s": cg.get("cpu_throttled_seconds"),  # None: unknown
    }


def run_record(
    stats: Mapping[str, Any],
    asked: Optional[Mapping[str, Any]] = None,
    machine_cores: Any = None,
    status: str = "ok",
) -> Dict[str, Any]:
    """The record of one run from its ``stats()``: what tuning needs of it (the module's
    docstring). ``asked``: the request it ran with (``cpu``, ``memory`` MiB, ``gpu``);
    ``machine_cores``: the machine's cores (to tell a starved run)."""
    from ._run_data import has_measurements, with_kernel_peak
    from .registry import column, stat_columns

    by_resource = {c.resource: c.key for c in stat_columns("process") if c.resource}
    stats = with_kernel_peak(dict(stats)) if isinstance(stats, Mapping) else {}
    memory = _field(stats, by_resource["memory"], "max")
    cpu_key = by_resource["cpu"]
    cpu = _field(stats, cpu_key, "p90")
    record: Dict[str, Any] = {
        "version": 1,
        "status": status,
        "memory_peak_mib": None if memory is None else memory / 1024,
        "cpu_p90": cpu if cpu is not None else _field(stats, cpu_key, "mean"),
        "gpu_peak": _field(stats, column("process", "gpu_utilized").key, "max"),
        "system_cpu_p90": _field(stats, column("system", "cpu_usage").key, "p90"),
        "machine_cores": _size(machine_cores, "cpu"),
        "asked": {k: _size((asked or {}).get(k), k) for k in RESOURCES},
        "updated": time.time(),
        "measured": has_measurements(stats),
    }
    record.update(_cgroup_part(stats.get("cgroup")))
    record["starved"] = _starved(record)  # marked; the rule reads the figures themselves
    return record


def as_record(run: Any) -> Optional[Dict[str, Any]]:
    """A record as it is, a ``stats()`` dict as a record, anything else None; None too for
    a run whose tracked process was never visible (nothing was measured)."""
    from ._run_data import has_measurements

    if not isinstance(run, Mapping) or not run:
        return None
    if "version" in run and "status" in run:
        return dict(run) if run.get("measured", True) else None
    if "timestamp" in run or "process_memory" in run:
        return run_record(run) if has_measurements(run) else None
    return None


def _had(record: Mapping[str, Any], key: str) -> Optional[float]:
    """What a run had of ``key``: its cgroup limit, else its ask."""
    limit = _size((record.get("limits") or {}).get(key), key) if key != "gpu" else None
    return limit if limit is not None else _size((record.get("asked") or {}).get(key), key)


def _could_have(record: Mapping[str, Any]) -> Optional[float]:
    """The cores a run could have used: what it had, at most the machine's cores."""
    had, cores = _had(record, "cpu"), _size(record.get("machine_cores"), "cpu")
    if had is None:
        return cores
    return min(had, cores) if cores else had


def _starved(record: Mapping[str, Any]) -> bool:
    """The machine was saturated (system CPU at its cores) while the step used half a core
    or more below what it could have: the run's CPU says what it got, not what it
    needed."""
    cores, system = _size(record.get("machine_cores"), "cpu"), record.get("system_cpu_p90")
    system = _size(system, "cpu")
    if not cores or system is None or system < SATURATED_SHARE * cores:
        return False
    could, used = _could_have(record), _size(record.get("cpu_p90"), "cpu")
    return could is not None and (used is None or used < could - 0.5)


# -- the rule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tuning:
    """The tuned request: ``resources`` (``cpu``, ``memory`` MiB, ``gpu``; empty when nothing
    is tuned), one line per change (``"memory 16000 -> 1024 MiB from 5 runs"``), ``note``:
    what raised or held a value, or why nothing changed; ``why``: the one line on how this
    rule differs from ``recommend_resources()``; ``basis``: the figures per resource."""

    runs: int
    resources: Dict[str, int] = field(default_factory=dict)
    changes: List[str] = field(default_factory=list)
    note: str = ""
    why: str = RULE_TEXT
    basis: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> TuningResult:
        return {
            "runs": self.runs,
            "resources": dict(self.resources),
            "changes": list(self.changes),
            "note": self.note,
            "why": self.why,
            "basis": dict(self.basis),
        }


def _memory_need(records: Sequence[Mapping[str, Any]], notes: List[str]) -> Tuple[float, float]:
    """(highest peak + margin, OOM floor) in MiB (0 when unknown)."""
    need = floor = 0.0
    for r in records:
        peak = _size(r.get("memory_peak_mib"), "memory", notes, f"run {r.get('run', '?')} peak")
        if peak is not None:
            need = max(need, peak * MEMORY_MARGIN)
        killed = r.get("status") == "killed" or _count(r.get("oom_kills")) > 0
        if killed:
            had = _had(r, "memory")
            base = had if had is not None else (peak or 0.0)
            floor = max(floor, base * OOM_RAISE, (peak or 0.0) * MEMORY_MARGIN)
            what = (
                "was killed (taken as an OOM kill)"
                if r.get("status") == "killed"
                else ("had an OOM kill")
            )
            notes.append(f"run {r.get('run', '?')} {what} at {base:.0f} MiB: memory at least "
                         f"{OOM_RAISE:g}x that")  # fmt: skip
    return need, floor


def _cpu_need(records: Sequence[Mapping[str, Any]], notes: List[str]) -> float:
    """The cores the runs were seen to need (0 when unknown)."""
    need = 0.0
    for r in records:
        used = _size(r.get("cpu_p90"), "cpu", notes, f"run {r.get('run', '?')} CPU")
        had = _had(r, "cpu")
        value = used or 0.0
        if _starved(r):
            value = max(value, _could_have(r) or 0.0)
            notes.append(f"run {r.get('run', '?')} was starved by a saturated machine: "
                         "its CPU does not lower the ask")  # fmt: skip
        if was_throttled(r.get("throttled_share"), r.get("throttled_s")) and had is not None:
            value = max(value, math.floor(had) + 1.0)
            notes.append(f"run {r.get('run', '?')} was throttled at {had:g} cores: "
                         f"CPU at least {math.floor(had) + 1:g}")  # fmt: skip
        need = max(need, value)
    return need


def _values(
    records: Sequence[Mapping[str, Any]], asked: Mapping[str, float], notes: List[str]
) -> Dict[str, float]:
    """Each resource before the guardrails: see the module's docstring."""
    finished = [r for r in records if r.get("status") in ("ok", "failed")]
    may_lower = len(finished) >= MIN_RUNS
    mem_need, oom_floor = _memory_need(records, notes)
    cpu_need = _cpu_need(records, notes)
    gpu_need = max((_size(r.get("gpu_peak"), "gpu") or 0.0 for r in records), default=0.0)
    raw = {
        "cpu": max(1.0, float(math.ceil(cpu_need - CPU_TOLERANCE))) if cpu_need else 0.0,
        "memory": max(mem_need, oom_floor),
        "gpu": float(math.ceil(gpu_need - 0.2)) if gpu_need > 0.2 else 0.0,
    }
    newest = records[0] if records else {}
    out: Dict[str, float] = {}
    for key in RESOURCES:
        value = raw[key]
        if not may_lower:  # too little history: only raise what is asked (or after a kill)
            forced = key == "memory" and oom_floor > 0
            value = max(value, asked.get(key) or 0.0) if key in asked or forced else 0.0
        else:
            had = _had(newest, key)
            value = max(value, STEP_DOWN * had) if had else value
        if value > 0:
            out[key] = value
    return out


def _rounded(key: str, value: float, asked: Mapping[str, float]) -> int:
    """Whole numbers, rounded up; memory rounded as the recommender rounds, except an ask
    kept as it is."""
    from . import _core

    if key == "memory" and value != asked.get(key):
        return int(_core.round_memory_mib(min(value, PLAUSIBLE["memory"])))
    return int(math.ceil(value - 1e-9))


def _bounded(values: Dict[str, int], bounds: Mapping[str, float], notes: List[str]) -> None:
    for key in list(values):
        low, high = bounds.get(f"min_{key}"), bounds.get(f"max_{key}")
        if low is not None and values[key] < low:
            values[key] = int(math.ceil(low))
        if high is not None and values[key] > high:
            notes.append(f"{key} held at max_{key}={high:g} (the runs needed {values[key]})")
            values[key] = int(math.floor(high)) or values[key]


def tune_resources(
    runs: Sequence[Any],
    asked: Optional[Mapping[str, Any]] = None,
    bounds: Optional[Mapping[str, Any]] = None,
) -> Tuning:
    """The request for the step's next run.

    Args:
        runs: its earlier runs, newest first: records (:func:`run_record`, also of failed
            and killed runs) or ``stats()`` dicts (taken as successful runs).
        asked: what the step's code asks (``cpu``, ``memory`` MiB, ``gpu``; values may be
            text or odd: they are checked): kept where the history is too short to lower it.
        bounds: the guardrails (``min_memory``, ``max_cpu``, ...), see :func:`check_bounds`.
    """
    notes: List[str] = []
    records = [r for r in (as_record(run) for run in runs or ()) if r is not None]
    if asked is not None and not isinstance(asked, Mapping):
        notes.append(f"asked {str(asked)[:40]!r} ignored: not a set of resources")
        asked = None
    sizes = {k: _size((asked or {}).get(k), k, notes, f"asked {k}") for k in RESOURCES}
    ask = {k: v for k, v in sizes.items() if v}
    try:
        limits = check_bounds(bounds)
    except ValueError as exc:
        notes.append(f"bounds ignored: {exc}")
        limits = {}
    if not records:
        return Tuning(0, note="not tuned: no earlier run with resource data")
    values = {k: _rounded(k, v, ask) for k, v in _values(records, ask, notes).items()}
    _bounded(values, limits, notes)
    finished = sum(r.get("status") in ("ok", "failed") for r in records)
    changes = []
    for key, value in values.items():
        before = ask.get(key)
        if before is None or before != value:
            was = "unset" if before is None else f"{before:g}"
            runs = fmt.plural(len(records), "run")
            changes.append(f"{key} {was} -> {value}{UNITS[key]} from {runs}")
    if finished < MIN_RUNS:
        notes.append(f"{fmt.plural(finished, 'finished earlier run')}: values only raised, "
                     f"lowered from {MIN_RUNS}")  # fmt: skip
    note = "; ".join(dict.fromkeys(notes)) or (
        "" if changes else f"no change: the request fits {fmt.plural(len(records), 'run')}"
    )
    basis = {"records": len(records), "finished": finished, "bounds": limits}
    return Tuning(len(records), values, changes, note, RULE_TEXT, basis)


def resources_line(values: Optional[Mapping[str, Any]]) -> str:
    """``@resources(cpu=2, memory=1024)``: whole numbers, rounded up (a request below what
    was measured is never printed); None or no value: a sentence saying so."""
    parts = []
    for key in RESOURCES:
        value = _size((values or {}).get(key), key)
        if value:
            parts.append(f"{key}={int(math.ceil(value - 1e-9))}")
    if not parts:
        return "nothing (no @resources, @kubernetes or @batch)"
    return f"@resources({', '.join(parts)})"


def limit_runs(records: Sequence[Mapping[str, Any]], runs: Any) -> List[Dict[str, Any]]:
    """The records of the newest ``runs`` distinct runs (all their attempts), in order."""
    try:
        n = max(1, int(runs))
    except (TypeError, ValueError):
        n = 5
    seen: List[str] = []
    kept = []
    for record in records:
        run = str(record.get("run", id(record)))
        if run not in seen:
            if len(seen) >= n:
                break
            seen.append(run)
        kept.append(dict(record))
    return kept


def machine_cores(server_info: Any) -> Optional[float]:
    """The machine's cores from ``server_info`` (``vcpus``), for telling a starved run."""
    return _size((server_info or {}).get("vcpus") if isinstance(server_info, Mapping) else None,
                 "cpu")  # fmt: skip


def next_tuning(
    extra: Mapping[str, Any], stats: Mapping[str, Any], server_info: Any
) -> Optional[Tuning]:
    """The tuned request of the step's next run, from this run (its ``stats()``, the ask it
    ran with) and the earlier runs' records the integration attached
    (``extra['tuning_input']``: ``records``, ``asked``, ``bounds``, ``runs``, ``run``);
    None when the run is not tuned."""
    given = extra.get("tuning_input") if isinstance(extra, Mapping) else None
    if not isinstance(given, Mapping):
        return None
    status = "failed" if extra.get("step_failed") else "ok"
    this = run_record(stats or {}, extra.get("resources_asked"), machine_cores(server_info), status)
    this["run"] = str(given.get("run") or "this run")
    records = [this] + [r for r in given.get("records") or () if isinstance(r, Mapping)]
    return tune_resources(limit_runs(records, given.get("runs")), given.get("asked"),
                          given.get("bounds"))  # fmt: skip
