"""``--runs DIR``: the saved ``resource-tracker.json`` snapshots of CLI (or library) runs.

Every ``*.json`` file under DIR (any depth; ``resource-tracker run --output DIR/NAME`` writes
``DIR/NAME/resource-tracker.json``) that is a resource-tracker snapshot becomes one
:class:`RunRecord`. The job name (the group key) is the snapshot's job (``run --job``), else
``extra["job"]``, else its label, else its command line. A file that cannot be read is
skipped with one line saying why.
"""

from __future__ import annotations

import os
from typing import Any, List, Mapping, Optional, Sequence

from .._identity import DEFAULT_JOB
from .._run_data import has_measurements
from ..cli.common import CliError, load_snapshot
from ..insights import run_metrics
from ..registry import stat_columns
from ..tuning import machine_cores, run_attempts, run_record
from ._model import Loaded, RunRecord

#: Files looked at, at most (a mistaken ``--runs /``: stop, and say so).
MAX_FILES = 100_000


def snapshot_files(folder: str) -> List[str]:
    """The ``*.json`` files under folder, sorted."""
    found: List[str] = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".json")]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def load_snapshots(folder: str) -> Loaded:
    """The runs saved under ``folder``; a missing folder is a ValueError (a bad argument),
    a bad file a skipped line."""
    if not os.path.isdir(folder):
        raise ValueError(f"--runs {folder}: not a directory (give the folder of saved runs)")
    loaded = Loaded()
    files = snapshot_files(folder)
    if len(files) >= MAX_FILES:
        loaded.skipped.append(f"{folder}: only the first {MAX_FILES} .json files were read")
    for path in files:
        name = os.path.relpath(path, folder)
        try:
            record = snapshot_record(load_snapshot(path), name)
        except CliError as exc:  # "cannot read PATH: why": the name once
            loaded.skipped.append(f"{name}: {str(exc).replace(f'cannot read {path}: ', '', 1)}")
            continue
        except ValueError as exc:  # a figure that is no measurement (RunRecord)
            loaded.skipped.append(f"{name}: {exc}")
            continue
        except Exception as exc:  # one odd snapshot: skip it, say why, read the others
            loaded.skipped.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if record is None:
            loaded.skipped.append(f"{name}: no measurement of the tracked process")
        else:
            loaded.records.append(record)
    return loaded


def job_name(tracker: Any) -> str:
    """The group key of a saved run: its job name (``resource-tracker run --job``,
    ``ResourceTracker(job=...)``), ``extra["job"]``, the label, else the command line."""
    import shlex

    extra = tracker.extra if isinstance(tracker.extra, Mapping) else {}
    job = getattr(tracker, "job", None)
    job = None if job == DEFAULT_JOB else job  # not named: the label or the command tells more
    for value in (job, extra.get("job"), tracker.label):
        if isinstance(value, str) and value.strip():
            return value.strip()[:120]
    command = tracker.command
    if isinstance(command, (list, tuple)):
        command = shlex.join(str(c) for c in command)
    return str(command or "unnamed job")[:120]


def _status(tracker: Any) -> str:
    extra = tracker.extra if isinstance(tracker.extra, Mapping) else {}
    if extra.get("step_failed") or extra.get("exit_status") not in (None, 0):
        return "failed"
    return "ok"


def snapshot_record(tracker: Any, name: str) -> Optional[RunRecord]:
    """The record of a loaded snapshot (None when nothing of the process was measured); a
    tuned Metaflow step's snapshot carries its tuning settings (``extra["tuning_input"]``)."""
    stats = tracker.stats()
    if not has_measurements(stats):
        return None
    cores = machine_cores(tracker.server_info)
    extra = tracker.extra if isinstance(tracker.extra, Mapping) else {}
    requested = extra.get("resources_asked")
    asked = requested if isinstance(requested, Mapping) else {}
    status = _status(tracker)
    settings = extra.get("tuning_input")
    tuning = run_record(stats, asked, cores, status)
    if isinstance(settings, Mapping) and isinstance(settings.get("code"), str):
        tuning["code"] = settings["code"]
    return record_from(
        step=job_name(tracker), run_id=name, source="runs", stats=stats, tuning=tuning,
        status=status, asked=asked, cores=cores, started=tracker.start_time,
        labels={"job": job_name(tracker), "file": name}, cost=_run_cost(tracker),
        records=run_attempts(dict(tuning, run=name), settings), settings=settings,
    )  # fmt: skip


def _run_cost(tracker: Any) -> Optional[float]:
    summary = getattr(tracker, "_summary", None)
    costs = getattr(getattr(summary, "server", None), "costs", None) if summary else None
    value = costs.get("run_cost_usd") if isinstance(costs, Mapping) else None
    return float(value) if isinstance(value, (int, float)) else None


def _stat(
    stats: Mapping[str, Any], key: Optional[str], fld: str, scale: float = 1.0
) -> Optional[float]:
    entry = stats.get(key) if key else None
    value = entry.get(fld) if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) * scale


def record_from(
    *, step: str, run_id: str, source: str, stats: Mapping[str, Any], tuning: Mapping[str, Any],
    status: str, asked: Mapping[str, Any], cores: Optional[float], started: Any,
    labels: Mapping[str, str], cost: Optional[float] = None, duration: Optional[float] = None,
    records: Sequence[Mapping[str, Any]] = (), settings: Any = None,
) -> RunRecord:  # fmt: skip
    """A RunRecord from a run's ``stats()`` (may be empty) and its tuning record (the
    ``tuning.run_record`` shape; the only figures of a killed Metaflow run)."""
    by = {c.resource: c.key for c in stat_columns("process") if c.resource}
    metrics = run_metrics(stats)
    limits = tuning.get("limits")
    limits = limits if isinstance(limits, Mapping) else {}
    ask = {"cpu": asked.get("cpu"), "memory_mib": asked.get("memory"), "gpu": asked.get("gpu")}
    if duration is None:
        duration = metrics.get("duration_s", 0.0)
    return RunRecord(
        step=step, run_id=run_id, started=float(started or 0.0), duration_s=float(duration),
        status=status, source=source,
        peak_memory_mib=tuning.get("memory_peak_mib", metrics.get("memory_peak_mib")),
        mean_cpu_cores=metrics.get("cpu_mean_cores", tuning.get("cpu_p90")),
        peak_cpu_cores=_stat(stats, by.get("cpu"), "max"),
        p90_cpu_cores=tuning.get("cpu_p90"),
        peak_gpu_count=tuning.get("gpu_peak", metrics.get("gpu_peak")),
        peak_vram_mib=metrics.get("vram_peak_mib"),
        cost_usd=cost,
        ask={k: float(v) for k, v in ask.items() if isinstance(v, (int, float)) and v > 0},
        limit_memory_mib=limits.get("memory"), limit_cpu_cores=limits.get("cpu"),
        oom_kills=float(tuning.get("oom_kills") or 0.0),
        throttled_share=float(tuning.get("throttled_share") or 0.0),
        machine_cores=cores, labels=dict(labels), records=tuple(records),
        tuning_settings=dict(settings) if isinstance(settings, Mapping) else {},
    )  # fmt: skip
