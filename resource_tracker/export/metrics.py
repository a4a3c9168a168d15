"""What the exporters send: every metric derived from the column registry, in one table.

Each registry column (resource_tracker/registry.py) becomes one exported metric. Its name,
unit and instrument kind follow from the column (``unit``, ``fold``), and where the
OpenTelemetry semantic conventions define the quantity, :data:`SEMCONV` (the one mapping
table) gives the convention's name, unit and attributes. Values are converted to base units
(bytes, seconds): KiB, MiB and GB columns are scaled here, nowhere else.

- OTLP names: the semantic-convention name where one exists, else
  ``resource_tracker.<table>.<column>``.
- Prometheus names: ``resource_tracker_<table>_<column>`` with the base-unit suffix
  (``_bytes``, ``_seconds``, ``_cores``, ``_joules``, ``_watts``), ``_total`` for the
  cumulative counters (``resource_tracker_system_gpu_energy_joules_total``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from .. import _core
from ..names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from ..registry import COLUMNS, Column

OTLP_PREFIX = "resource_tracker"
PROMETHEUS_PREFIX = "resource_tracker"

#: registry unit -> (factor to the base unit, UCUM unit for OTLP, Prometheus name suffix)
UNITS: Dict[str, Tuple[float, str, str]] = {
    "KiB": (1024.0, "By", "bytes"),
    "MiB": (1024.0 * 1024.0, "By", "bytes"),
    "GB": (1e9, "By", "bytes"),
    "B": (1.0, "By", "bytes"),
    "s": (1.0, "s", "seconds"),
    "cores": (1.0, "{cpu}", "cores"),
    "GPUs": (1.0, "{gpu}", ""),
    "processes": (1.0, "{process}", ""),
    "J": (1.0, "J", "joules"),
    "W": (1.0, "W", "watts"),
    "": (1.0, "1", ""),
}

#: columns that are keys or time, not measurements: never exported as metrics
NOT_METRICS = frozenset({("process", "timestamp"), ("process", "pid"), ("system", "timestamp")})


@dataclass(frozen=True)
class SemConv:
    """An OpenTelemetry semantic convention for one column.

    ``per_cpu``: the convention's value is ours divided by the number of CPUs (utilization,
    unit ``1``, from our CPU usage in cores). ``instrument``: the convention's instrument
    (``counter``, ``updowncounter`` or ``gauge``); empty: from the column's fold.
    """

    name: str
    unit: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    per_cpu: bool = False
    instrument: str = ""


UPDOWN = "updowncounter"

# The one mapping table: registry column -> OpenTelemetry semantic convention (v1.45 names;
# tests/export checks each name against the opentelemetry-semantic-conventions package).
SEMCONV: Dict[Tuple[str, str], SemConv] = {
    ("process", "utime"): SemConv("process.cpu.time", "s", {"cpu.mode": "user"}),
    ("process", "stime"): SemConv("process.cpu.time", "s", {"cpu.mode": "system"}),
    ("process", "cpu_usage"): SemConv("process.cpu.utilization", "1", per_cpu=True),
    ("process", "memory"): SemConv("process.memory.usage", "By", instrument=UPDOWN),
    ("process", "read_bytes"): SemConv("process.disk.io", "By", {"disk.io.direction": "read"}),
    ("process", "write_bytes"): SemConv("process.disk.io", "By", {"disk.io.direction": "write"}),
    ("system", "processes"): SemConv("system.process.count", "{process}", instrument=UPDOWN),
    ("system", "utime"): SemConv("system.cpu.time", "s", {"cpu.mode": "user"}),
    ("system", "stime"): SemConv("system.cpu.time", "s", {"cpu.mode": "system"}),
    ("system", "cpu_usage"): SemConv("system.cpu.utilization", "1", per_cpu=True),
    ("system", "memory_free"): SemConv(
        "system.memory.usage", "By", {"system.memory.state": "free"}, instrument=UPDOWN
    ),
    ("system", "memory_used"): SemConv(
        "system.memory.usage", "By", {"system.memory.state": "used"}, instrument=UPDOWN
    ),
    ("system", "memory_buffers"): SemConv(
        "system.memory.usage", "By", {"system.memory.state": "buffers"}, instrument=UPDOWN
    ),
    ("system", "memory_cached"): SemConv(
        "system.memory.usage", "By", {"system.memory.state": "cached"}, instrument=UPDOWN
    ),
    ("system", "disk_read_bytes"): SemConv("system.disk.io", "By", {"disk.io.direction": "read"}),
    ("system", "disk_write_bytes"): SemConv("system.disk.io", "By", {"disk.io.direction": "write"}),
    ("system", "disk_space_total_gb"): SemConv("system.filesystem.limit", "By", instrument=UPDOWN),
    ("system", "disk_space_used_gb"): SemConv(
        "system.filesystem.usage", "By", {"system.filesystem.state": "used"}, instrument=UPDOWN
    ),
    ("system", "disk_space_free_gb"): SemConv(
        "system.filesystem.usage", "By", {"system.filesystem.state": "free"}, instrument=UPDOWN
    ),
    ("system", "net_recv_bytes"): SemConv(
        "system.network.io", "By", {"network.io.direction": "receive"}
    ),
    ("system", "net_sent_bytes"): SemConv(
        "system.network.io", "By", {"network.io.direction": "transmit"}
    ),
    # the hardware conventions: one component each (all packages, all DIMMs, all GPUs)
    ("system", "cpu_energy_j"): SemConv("hw.energy", "J", {"hw.type": "cpu", "hw.id": "rapl"}),
    ("system", "dram_energy_j"): SemConv("hw.energy", "J", {"hw.type": "memory", "hw.id": "rapl"}),
    ("system", "gpu_energy_j"): SemConv("hw.energy", "J", {"hw.type": "gpu", "hw.id": "nvml"}),
}


@dataclass(frozen=True)
class ExportedMetric:
    """One registry column as the exporters send it.

    ``kind``: ``counter`` (cumulative total of an interval amount: the column's fold is
    ``sum``) or ``gauge`` (the value now). ``scale``: factor from the column's unit to the
    base unit.
    """

    column: Column
    kind: str
    scale: float
    otlp_name: str
    otlp_unit: str
    otlp_attributes: Mapping[str, str]
    otlp_instrument: str
    per_cpu: bool
    prometheus_name: str

    @property
    def key(self) -> str:
        return self.column.key


def _prometheus_name(col: Column, suffix: str, counter: bool) -> str:
    base = col.name
    for unit_word in ("_gb", "_bytes", "_j", "_w"):
        if base.endswith(unit_word):
            base = base[: -len(unit_word)]
    name = f"{PROMETHEUS_PREFIX}_{col.table}_{base}"
    if suffix:
        name += "_" + suffix
    return name + ("_total" if counter else "")


def _exported(col: Column) -> ExportedMetric:
    scale, ucum, suffix = UNITS.get(col.unit, (1.0, "1", ""))
    counter = col.fold == "sum"
    conv = SEMCONV.get((col.table, col.name))
    return ExportedMetric(
        column=col,
        kind="counter" if counter else "gauge",
        scale=scale,
        otlp_name=conv.name if conv else f"{OTLP_PREFIX}.{col.table}.{col.name}",
        otlp_unit=conv.unit if conv else ucum,
        otlp_attributes=dict(conv.attributes) if conv else {},
        otlp_instrument=(conv and conv.instrument) or ("counter" if counter else "gauge"),
        per_cpu=bool(conv and conv.per_cpu),
        prometheus_name=_prometheus_name(col, suffix, counter),
    )


#: Every exported metric, in registry order.
EXPORTED: Tuple[ExportedMetric, ...] = tuple(
    _exported(c) for c in COLUMNS if (c.table, c.name) not in NOT_METRICS
)


def exported(tables: Iterable[str] = ("process", "system")) -> Tuple[ExportedMetric, ...]:
    """The exported metrics of the given tables."""
    wanted = set(tables)
    return tuple(m for m in EXPORTED if m.column.table in wanted)


def cpu_count(table: str) -> int:
    """CPUs a utilization is relative to: those the process may run on (process table) or
    all of the machine's (system table)."""
    if table == "process" and hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def fold_rows(
    table: str, rows: Mapping[str, List[float]], previous_time: Optional[float]
) -> Dict[str, float]:
    """One point from the new rows of one table, folded by the C sampler's own rule
    (``_core.fold_rows``, csrc/row_rules.c: each column's registry fold).

    ``rows``: {column name: values} (the rows sampled since the last point, oldest first).
    Returns {column name: value in the column's own unit}: ``latest`` the last value,
    ``peak`` the highest, ``sum`` the sum, ``rate`` the CPU seconds over the time covered
    (from ``previous_time``, the timestamp of the last row of the previous point; the last
    row's value when that is unknown), over at least one clock tick and at most the CPUs of
    :func:`cpu_count`, as the stored rows' CPU usage.
    """
    times = rows.get("timestamp") or []
    if not times:
        return {}
    names = PROCESS_COLUMNS if table == "process" else SYSTEM_COLUMNS
    absent = [0.0] * len(times)
    table_rows = list(zip(*(rows.get(name, absent) for name in names)))
    covered = times[-1] - previous_time if previous_time is not None else 0.0
    folded = _core.fold_rows(table, table_rows, covered, float(cpu_count(table)))
    return {name: value for name, value in zip(names, folded) if name in rows}


#: the stats() fields the run summary exports, and the word each gets in a metric name
SUMMARY_FIELDS = (("max", "peak"), ("mean", "mean"), ("sum", "total"))


def summary_metric(col: Column, stat: str) -> Tuple[str, str, float]:
    """(Prometheus name, OTLP name, scale) of a run-summary figure of a stats column:
    e.g. process_memory's max is ``resource_tracker_run_process_memory_peak_bytes``."""
    word = dict(SUMMARY_FIELDS)[stat]
    scale, _, suffix = UNITS.get(col.unit, (1.0, "1", ""))
    base = _prometheus_name(col, "", False).replace(
        f"{PROMETHEUS_PREFIX}_", f"{PROMETHEUS_PREFIX}_run_", 1
    )
    prom = f"{base}_{word}" + (f"_{suffix}" if suffix else "")
    return prom, f"{OTLP_PREFIX}.run.{col.table}.{col.name}.{word}", scale


#: The run's findings (resource_tracker.insights), counted by kind and severity:
#: (Prometheus name, OTLP name).
INSIGHTS = ("resource_tracker_run_insights", f"{OTLP_PREFIX}.run.insights")

#: recommend_resources() key -> (Prometheus name, OTLP name, OTLP unit, scale to base unit)
RECOMMENDATION = {
    "cpu": (
        "resource_tracker_recommended_cpu_cores",
        "resource_tracker.recommended.cpu",
        "{cpu}",
        1.0,
    ),
    "memory": (
        "resource_tracker_recommended_memory_bytes",
        "resource_tracker.recommended.memory",
        "By",
        1024.0 * 1024.0,
    ),
    "gpu": ("resource_tracker_recommended_gpu", "resource_tracker.recommended.gpu", "{gpu}", 1.0),
    "vram": (
        "resource_tracker_recommended_vram_bytes",
        "resource_tracker.recommended.vram",
        "By",
        1024.0 * 1024.0,
    ),
}


#: What the run asked and the limits it ran under (the ask the insights judge: the
#: integration's request, e.g. Metaflow's @resources, else the container's cgroup limits; the
#: cgroup's figures): key of the summary's ``sizing`` -> (Prometheus name, OTLP name, OTLP
#: unit, scale to the base unit, description). The Prometheus rules (docs/prometheus/) and
#: the dashboard's Prometheus source read these.
SIZING = {
    "asked_cpu": ("resource_tracker_run_asked_cpu_cores", "resource_tracker.run.asked.cpu",
                  "{cpu}", 1.0, "CPU cores the run asked for"),
    "asked_memory": ("resource_tracker_run_asked_memory_bytes",
                     "resource_tracker.run.asked.memory", "By", 1024.0 * 1024.0,
                     "Memory the run asked for"),
    "asked_gpu": ("resource_tracker_run_asked_gpu", "resource_tracker.run.asked.gpu", "{gpu}",
                  1.0, "GPUs the run asked for"),
    "limit_cpu": ("resource_tracker_run_limit_cpu_cores", "resource_tracker.run.limit.cpu",
                  "{cpu}", 1.0, "The container's CPU limit (cgroup)"),
    "limit_memory": ("resource_tracker_run_limit_memory_bytes",
                     "resource_tracker.run.limit.memory", "By", 1024.0 * 1024.0,
                     "The container's memory limit (cgroup)"),
    "oom_kills": ("resource_tracker_run_oom_kills", "resource_tracker.run.oom_kills",
                  "{kill}", 1.0, "Processes the kernel killed for lack of memory (cgroup)"),
    "cpu_throttled_share": ("resource_tracker_run_cpu_throttled_ratio",
                            "resource_tracker.run.cpu.throttled", "1", 1.0,
                            "Share of the run the CPU was throttled (cgroup)"),
}  # fmt: skip


#: The SIZING keys the live gauges carry too (what the run has while it runs: a run killed
#: before its summary leaves them), under :func:`live_metric` 's names.
LIVE_SIZING = ("asked_cpu", "asked_memory", "limit_cpu", "limit_memory", "oom_kills")
#: The live gauge of the seconds between two live pushes (a run that missed two is stopped).
EXPORT_PERIOD = ("resource_tracker_export_period_seconds", "Seconds between two live pushes")


def live_metric(key: str) -> str:
    """The live gauge's name of a SIZING key: the run summary's name without ``run_``
    (``resource_tracker_limit_memory_bytes``)."""
    return SIZING[key][0].replace(f"{PROMETHEUS_PREFIX}_run_", f"{PROMETHEUS_PREFIX}_", 1)


#: The units of the tuning figures: kind -> (Prometheus name suffix, OTLP unit, scale from the
#: record's unit to the base unit).
_TUNING_UNITS = {
    "mib": ("_bytes", "By", 1024.0 * 1024.0),
    "cores": ("_cores", "{cpu}", 1.0),
    "seconds": ("_seconds", "s", 1.0),
    "ratio": ("_ratio", "1", 1.0),
    "count": ("", "1", 1.0),
}
#: The figures of a tuned step's tuning pushed with its run summary: (key, name part, kind).
#: A key is a field of the run's tuning record (``tuning.run_record``; ``asked.cpu``: a field
#: of its ``asked`` part) or, after ``settings.``, of the step's tuning settings (the
#: ``tuning_input`` its run kept: the ask in the step's code, the guardrails, the runs read,
#: the CPU step).
_TUNING_FIELDS = (
    ("memory_peak_mib", "memory_peak", "mib"),
    ("cpu_p90", "cpu_p90", "cores"),
    ("cpu_mean", "cpu_mean", "cores"),
    ("cpu_wait_mean", "cpu_wait_mean", "cores"),
    ("gpu_peak", "gpu_peak", "count"),
    ("machine_cores", "machine", "cores"),
    ("oom_kills", "oom_kills", "count"),
    ("throttled_share", "cpu_throttled", "ratio"),
    ("throttled_s", "cpu_throttled", "seconds"),
    ("throttled_cores", "cpu_throttled", "cores"),
    ("asked.cpu", "asked_cpu", "cores"),
    ("asked.memory", "asked_memory", "mib"),
    ("asked.gpu", "asked_gpu", "count"),
    ("limits.cpu", "limit_cpu", "cores"),
    ("limits.memory", "limit_memory", "mib"),
    ("settings.asked.cpu", "code_asked_cpu", "cores"),
    ("settings.asked.memory", "code_asked_memory", "mib"),
    ("settings.asked.gpu", "code_asked_gpu", "count"),
    ("settings.bounds.min_cpu", "min_cpu", "cores"),
    ("settings.bounds.max_cpu", "max_cpu", "cores"),
    ("settings.bounds.min_memory", "min_memory", "mib"),
    ("settings.bounds.max_memory", "max_memory", "mib"),
    ("settings.bounds.min_gpu", "min_gpu", "count"),
    ("settings.bounds.max_gpu", "max_gpu", "count"),
    ("settings.runs", "runs", "count"),
    ("settings.cpu_step", "cpu_step", "cores"),
)
#: A tuned step's tuning, pushed with its run summary so that ``dashboard --prometheus``
#: tunes over the records and settings the card reads (``tuning.step_tuning``, one answer):
#: key (:data:`_TUNING_FIELDS`) -> (Prometheus name, OTLP name, OTLP unit, scale to the base
#: unit).
TUNING = {
    key: (
        f"{PROMETHEUS_PREFIX}_run_tuning_{part}{_TUNING_UNITS[kind][0]}",
        f"{OTLP_PREFIX}.run.tuning.{part}" + (f".{kind}" if part == "cpu_throttled" else ""),
        _TUNING_UNITS[kind][1],
        _TUNING_UNITS[kind][2],
    )
    for key, part, kind in _TUNING_FIELDS
}
#: The gauge (value 1) whose ``code`` label is the fingerprint of the tuned step's code
#: (``tuning.code_fingerprint``): the runs of its current code are weighed over older code.
TUNING_CODE = ("resource_tracker_run_tuning_info", "The tuned step's code fingerprint (label code)")
