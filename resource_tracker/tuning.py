"""Tuned resource requests from a step's history (``@track_resources(tune=True)``; also the
``recommend --metaflow`` command). Pure: the history is passed in as ``stats()`` dicts.

The rule: at least :data:`MIN_RUNS` successful runs; the recommender's figures over them
(CPU: the mean of their means, rounded, at least 1; memory: the highest peak + 20%,
rounded up; GPUs: the highest peak), so never below the highest observed peak plus the
margin; memory raised by half over the larger of that and the current ask after an OOM kill
in any of them, CPU raised by one core over the larger of the two after a run throttled for
more than 10% of its CPU periods.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .insights import THROTTLE_RISK_SHARE

__all__ = ["MIN_RUNS", "Tuning", "tune_resources"]

#: The fewest successful earlier runs a tuning is made from.
MIN_RUNS = 3
#: What an OOM kill multiplies the memory by.
OOM_RAISE = 1.5
#: Units the values are given in, for the change lines.
UNITS = {"cpu": "", "memory": " MiB", "gpu": ""}


@dataclass(frozen=True)
class Tuning:
    """The tuned request: ``resources`` (``cpu``, ``memory`` MiB, ``gpu``; empty when
    nothing is tuned), one line per change (``"memory 16000 -> 1024 MiB from 5 runs"``),
    and ``note``: why nothing changed, or what raised a value."""

    runs: int
    resources: Dict[str, int] = field(default_factory=dict)
    changes: List[str] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {
            "runs": self.runs,
            "resources": dict(self.resources),
            "changes": list(self.changes),
            "note": self.note,
        }


def _cgroup_flags(runs: Sequence[Mapping[str, Any]]) -> Dict[str, bool]:
    oom = throttled = False
    for stats in runs:
        cg = stats.get("cgroup") if isinstance(stats, Mapping) else None
        if not isinstance(cg, Mapping):
            continue
        oom = oom or bool(cg.get("oom_kills"))
        periods, hit = cg.get("cpu_periods"), cg.get("cpu_throttled_periods")
        if periods and hit is not None and hit / periods > THROTTLE_RISK_SHARE:
            throttled = True
    return {"oom": oom, "throttled": throttled}


def tune_resources(
    runs: Sequence[Mapping[str, Any]], asked: Optional[Mapping[str, Any]] = None
) -> Tuning:
    """The request for the step from ``runs`` (its earlier successful runs' ``stats()``)
    against what it asks today (``asked``: ``cpu``, ``memory`` MiB, ``gpu``)."""
    from . import _core
    from ._run_data import has_measurements

    usable = [s for s in runs if isinstance(s, Mapping) and s and has_measurements(s)]
    n = len(usable)
    if n < MIN_RUNS:
        return Tuning(
            n,
            note=f"not tuned: {n} successful earlier run(s) with resource data, "
            f"at least {MIN_RUNS} are needed",
        )
    rec = _core.recommend(list(usable))
    asked = asked or {}
    tuned = {"cpu": int(rec["cpu"]), "memory": int(rec["memory"])}
    if rec.get("gpu"):
        tuned["gpu"] = int(rec["gpu"])
    flags, notes = _cgroup_flags(usable), []
    if flags["oom"]:
        base = max(tuned["memory"], float(asked.get("memory") or 0))
        tuned["memory"] = int(math.ceil(base * OOM_RAISE / 256) * 256)
        notes.append("memory raised by half after an OOM kill")
    if flags["throttled"]:
        tuned["cpu"] = int(max(tuned["cpu"], float(asked.get("cpu") or 0)) + 1)
        notes.append("CPU raised by one core after heavy throttling")
    changes = []
    for key, value in tuned.items():
        before = asked.get(key)
        if before is None or float(before) != value:
            was = "unset" if before is None else f"{float(before):g}"
            changes.append(f"{key} {was} -> {value}{UNITS[key]} from {n} runs")
    note = "; ".join(notes) or ("" if changes else f"no change: the request fits {n} runs")
    return Tuning(n, tuned, changes, note)
