"""The run summary the exporters push at the end: an adapter over the tracker.

Everything the final push needs comes through :func:`run_summary`, from the package's run
summary (resource_tracker.summary), in this one place.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, Mapping, Optional, Tuple

from ..cgroup_usage import oom_kills_at
from ..insights import throttled_share
from ..registry import stat_columns
from ..summary import _asked, build_summary
from ..tuning import this_run
from .metrics import TUNING

if TYPE_CHECKING:
    from typing import TypeGuard

    from ..insights import Insight
    from .context import ExportedRun


@dataclass(frozen=True)
class RunSummary:
    """duration (s), end time (s since the epoch), failed (None: not known), and per stats
    key the figures (mean/max/sum, in the column's unit); recommendation as
    ``recommend_resources()`` gives it (memory and vram in MiB); insights: how many findings
    of each (kind, severity) the run summary has (resource_tracker.insights); tuning: a tuned
    step's tuning record and settings (the keys of metrics.TUNING, the known ones) and
    tuning_code, the fingerprint of its code."""

    duration: float
    end_time: float
    failed: Optional[bool]
    figures: Dict[str, Dict[str, float]] = field(default_factory=dict)
    recommendation: Dict[str, float] = field(default_factory=dict)
    insights: Dict[Tuple[str, str], int] = field(default_factory=dict)
    sizing: Dict[str, float] = field(default_factory=dict)
    tuning: Dict[str, float] = field(default_factory=dict)
    tuning_code: Optional[str] = None


def run_summary(
    tracker: ExportedRun, failed: Optional[bool] = None, lookup_seconds: float = 0.0
) -> RunSummary:
    """The figures of the final push, taken from the package's run summary
    (resource_tracker.summary.build_summary). ``lookup_seconds`` > 0: the catalog is asked
    for at most that long, so that the findings priced by cost (over-provisioned, split
    advice) are the ones the report and the Metaflow card show; 0 or a slower catalog: the
    findings unpriced."""
    summary = build_summary(
        tracker, lookup_server=lookup_seconds > 0, server_timeout=max(lookup_seconds, 0.0)
    )
    stats: Mapping[str, Any] = summary.stats or {}
    figures = {}
    for col in stat_columns():
        entry = stats.get(col.key)
        if isinstance(entry, dict):
            figures[col.key] = {
                k: float(v) for k, v in entry.items() if k in ("mean", "max", "sum") and _num(v)
            }
    recommendation = {k: float(v) for k, v in (summary.resources or {}).items() if _num(v)}
    tuned = this_run(getattr(tracker, "extra", None) or {}, stats,
                     getattr(tracker, "server_info", None))  # fmt: skip
    return RunSummary(
        duration=float(summary.duration or 0.0),
        end_time=float(tracker.stop_time or time.time()),
        failed=failed,
        figures=figures,
        recommendation=recommendation,
        insights=insight_counts(summary.insights),
        sizing=sizing(tracker, stats, summary.duration),
        tuning=tuning_figures(*tuned) if tuned else {},
        tuning_code=_code(tuned[1].get("code")) if tuned else None,
    )


def tuning_figures(record: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, float]:
    """The figures of a tuned run's record and its step's settings under the keys of
    metrics.TUNING (``asked.cpu``, ``settings.bounds.min_memory``; the numbers only)."""
    found = {}
    for key in TUNING:
        value: Any = {"settings": settings, **record}
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if _num(value) and math.isfinite(value):
            found[key] = float(value)
    return found


def _code(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value.isprintable() and len(value) <= 80 else None


def sizing(
    tracker: ExportedRun, stats: Mapping[str, Any], duration: Optional[float]
) -> Dict[str, float]:
    """What the run asked (as the insights judge it) and its cgroup figures (the keys of
    metrics.SIZING; the known ones)."""
    asked = _asked(tracker, stats) or {}
    cgroup = stats.get("cgroup")
    cgroup = cgroup if isinstance(cgroup, dict) else {}
    values = {
        "asked_cpu": asked.get("cpu"),
        "asked_memory": asked.get("memory"),
        "asked_gpu": asked.get("gpu"),
        "limit_cpu": cgroup.get("cpu_limit_cores"),
        "limit_memory": cgroup.get("memory_limit_mib"),
        "oom_kills": cgroup.get("oom_kills"),
        "cpu_throttled_share": (throttled_share(cgroup, duration) or (None,))[0],
    }
    return {k: float(v) for k, v in values.items() if _num(v)}


def live_sizing(tracker: ExportedRun) -> Dict[str, float]:
    """What the run has while it runs (the keys of metrics.LIVE_SIZING, the known ones): its
    ask as :func:`sizing` judges it, its cgroup's limits (the start reading) and the OOM
    kills its cgroup counted since the start. One file read (the OOM counter): the export's
    reader thread calls it once a period, never the job's."""
    start = getattr(tracker, "_cgroup_start", None)
    start = start if isinstance(start, dict) else {}
    asked = _asked(tracker, {"cgroup": start}) or {}
    values = {
        "asked_cpu": asked.get("cpu"),
        "asked_memory": asked.get("memory"),
        "limit_cpu": start.get("cpu_limit_cores"),
        "limit_memory": start.get("memory_limit_mib"),
    }
    before = start.get("oom_kills")
    if _num(before):
        now = oom_kills_at(getattr(tracker, "_cgroup_place", None))
        values["oom_kills"] = max(0.0, now - before) if now is not None else None
    return {k: float(v) for k, v in values.items() if _num(v)}


def insight_counts(insights: Optional[Iterable[Insight]]) -> Dict[Tuple[str, str], int]:
    """How many findings of each (kind, severity)."""
    counts: Dict[Tuple[str, str], int] = {}
    for insight in insights or ():
        key = (str(insight.kind), str(insight.severity))
        counts[key] = counts.get(key, 0) + 1
    return counts


def _num(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
