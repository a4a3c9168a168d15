"""The dashboard's run record: one run of one step (or job), whatever store it came from.

Every source (``_metaflow.load_metaflow``, ``_snapshots.load_snapshots``,
``_prometheus.load_prometheus``) returns a :class:`Loaded`: the :class:`RunRecord` s it
could read and one line per run it skipped (a source never raises on one bad run). The
fleet table, the trends, the anomalies, the page, ``--check`` and ``--json`` are computed
from the records alone.

Units: memory and VRAM in MiB, CPU in cores, times in unix seconds, durations in seconds,
money in US dollars. ``None`` means unknown (never 0).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Tuple

__all__ = ["RunRecord", "Loaded", "STATUSES", "SOURCES", "check_figures", "MAX_FIGURE"]

#: A run's status: finished, failed (an exception), killed (no final record: SIGKILL, OOM).
STATUSES = ("ok", "failed", "killed")
#: Where a record came from.
SOURCES = ("metaflow", "prometheus", "runs")
#: The largest figure a record takes, in its unit (2**53: past it a float64 no longer holds
#: every whole number; 8 PiB of memory, 285 million years): a larger one (1.797e308) overflows
#: the money and the page's sums, it is no measurement.
MAX_FIGURE = 2.0**53
#: The figures that are counts: whole numbers (an ``oom_kills`` of 5e-324 is no kill).
COUNTS = ("oom_kills", "failed")


def check_figures(figures: Mapping[str, Any]) -> None:
    """ValueError naming the first figure that is no measurement: an infinity or one above
    :data:`MAX_FIGURE`, a subnormal one (5e-324: not a count, not a size), a count that is not
    whole. None and NaN (unknown) pass, and so does what is no number."""
    for name, value in figures.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            continue
        if not abs(value) <= MAX_FIGURE:
            raise ValueError(f"{name} is out of range ({value:g}; at most 2**53)")
        if 0 < abs(value) < sys.float_info.min:
            raise ValueError(f"{name} is subnormal ({value:g}): no measured figure")
        if name in COUNTS and not float(value).is_integer():
            raise ValueError(f"{name} is not a whole count ({value:g})")


@dataclass(frozen=True)
class RunRecord:
    """One run of one step or job.

    ``step`` is the group key ("Flow/step" for Metaflow, the job name otherwise);
    ``run_id`` names the run in its store (Metaflow "Flow/123/step/4", a snapshot's file
    name, a push id). ``ask`` is what the run asked (``cpu`` cores, ``memory_mib``,
    ``gpu``; empty when unknown); ``limit_memory_mib`` / ``limit_cpu_cores`` the cgroup
    limits it had, if known. ``labels``: extra labels (flow, step, run, job, host, ...).
    ``records``: the run's tuning records as its store keeps them (``tuning.run_record``'s,
    its attempts newest first; empty: made from the figures, :meth:`tuning_record`);
    ``tuning_settings``: the step's tuning settings the run stored (``tuning_input``: the
    ask in its code, its guardrails), read by ``tuning.step_tuning``.
    """

    step: str
    run_id: str
    started: float
    duration_s: float
    status: str
    source: str
    peak_memory_mib: Optional[float] = None
    mean_cpu_cores: Optional[float] = None
    peak_cpu_cores: Optional[float] = None
    p90_cpu_cores: Optional[float] = None
    peak_gpu_count: Optional[float] = None
    peak_vram_mib: Optional[float] = None
    cost_usd: Optional[float] = None
    ask: Mapping[str, float] = field(default_factory=dict)
    limit_memory_mib: Optional[float] = None
    limit_cpu_cores: Optional[float] = None
    oom_kills: float = 0.0
    throttled_share: float = 0.0
    machine_cores: Optional[float] = None
    labels: Mapping[str, str] = field(default_factory=dict)
    records: Tuple[Mapping[str, Any], ...] = ()
    tuning_settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Its figures checked (check_figures: ValueError, the source skips the run with a
        line)."""
        values = [getattr(self, name) for name in _FIGURES] + list(self.ask.values())
        if not all(v is None or _PLAIN_MIN <= abs(v) <= MAX_FIGURE or v == 0 for v in values):
            check_figures({name: getattr(self, name) for name in _FIGURES})
            check_figures({f"ask {key}": value for key, value in self.ask.items()})

    def change_metrics(self) -> Dict[str, float]:
        """The figures ``insights.changed`` compares (the names of ``run_metrics``)."""
        values = {
            "memory_peak_mib": self.peak_memory_mib,
            "cpu_mean_cores": self.mean_cpu_cores,
            "duration_s": self.duration_s,
            "vram_peak_mib": self.peak_vram_mib,
            "gpu_peak": self.peak_gpu_count,
        }
        return {k: float(v) for k, v in values.items() if v is not None}

    def tuning_records(self) -> List[Mapping[str, Any]]:
        """The records ``tuning.step_tuning`` reads of this run (attempts newest first)."""
        return list(self.records) or [self.tuning_record()]

    def tuning_record(self) -> Dict[str, Any]:
        """The record ``tuning.tune_resources`` reads (the shape of ``tuning.run_record``)."""
        cpu = self.p90_cpu_cores if self.p90_cpu_cores is not None else self.mean_cpu_cores
        return {
            "version": 1,
            "run": self.run_id,
            "status": self.status,
            "memory_peak_mib": self.peak_memory_mib,
            "cpu_p90": cpu,
            "gpu_peak": self.peak_gpu_count,
            "system_cpu_p90": None,
            "machine_cores": self.machine_cores,
            "asked": {
                "cpu": self.ask.get("cpu"),
                "memory": self.ask.get("memory_mib"),
                "gpu": self.ask.get("gpu"),
            },
            "limits": {"cpu": self.limit_cpu_cores, "memory": self.limit_memory_mib},
            "oom_kills": self.oom_kills,
            "throttled_share": self.throttled_share,
            "updated": self.started + self.duration_s,
            "measured": self.peak_memory_mib is not None or self.mean_cpu_cores is not None,
        }


#: The smallest normal float: what lies between it and 0 is subnormal.
_PLAIN_MIN = sys.float_info.min
#: The number fields of a RunRecord.
_FIGURES = tuple(f.name for f in fields(RunRecord) if f.type in ("float", "Optional[float]"))


@dataclass
class Loaded:
    """What a source read: its records (any order) and one line per run it skipped."""

    records: List[RunRecord] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)

    def extend(self, other: Loaded) -> None:
        self.records.extend(other.records)
        self.skipped.extend(other.skipped)
