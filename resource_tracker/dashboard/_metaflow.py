"""``--metaflow FLOW [FLOW ...]``: the tracked steps of each flow's newest runs.

The Metaflow client in its default namespace reads the ``resource_tracker_data`` artifact
and the per-attempt tuning records of every step of the newest ``last`` runs: failed runs
(their artifact) and killed ones (a record that never became final) included. A step with
neither (not tracked) is not a run of a tracked step and is left out; a run that cannot be
read is skipped with one line saying why.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ..cli.recommend_metaflow import _made_by
from ..metaflow_history import (
    run_records,
    stats_from_artifact,
)
from ..tuning import machine_cores, record_problem
from ._model import Loaded, RunRecord
from ._snapshots import record_from


def load_metaflow(
    flows: Iterable[str], last: int, artifact: str = "resource_tracker_data"
) -> Loaded:
    """The runs of each flow (ValueError when Metaflow is missing or a flow is unknown)."""
    try:
        from metaflow import Flow
        from metaflow.exception import MetaflowNotFound
    except ImportError as exc:
        raise ValueError(f"--metaflow needs Metaflow installed ({exc})") from None
    loaded = Loaded()
    for name in flows:
        try:
            runs = Flow(name).runs()
        except MetaflowNotFound:
            raise ValueError(
                f"--metaflow: no Metaflow flow named {name!r} in this namespace (check the "
                "name and the metadata service, e.g. METAFLOW_DEFAULT_METADATA)"
            ) from None
        for count, run in enumerate(runs):
            if count >= last:
                break
            _load_run(loaded, run, artifact)
    return loaded


def _load_run(loaded: Loaded, run: Any, artifact: str) -> None:
    try:
        steps = list(run)
    except Exception as exc:  # a run the metadata service cannot list
        loaded.skipped.append(f"{run.pathspec}: {type(exc).__name__}: {exc}")
        return
    for step in steps:
        try:
            record = step_record(step, artifact)
        except Exception as exc:  # one unreadable step: the others still count
            loaded.skipped.append(f"{step.pathspec}: {type(exc).__name__}: {exc}")
            continue
        if record is not None:
            loaded.records.append(record)


def _created(obj: Any) -> Optional[float]:
    created = getattr(obj, "created_at", None)
    return created.timestamp() if created is not None and hasattr(created, "timestamp") else None


def step_record(step: Any, artifact: str) -> Optional[RunRecord]:
    """The record of a client Step's (first) task, None when it was not tracked."""
    task = step.task
    if task is None:
        return None
    data = task[artifact].data if artifact in task else None
    if data is not None and not (isinstance(data, dict) and _made_by(data, step.id, task.id)):
        data = None
    # a corrupt or forged record (issue 41) is left out, as tuning leaves it out
    records = [r for r in run_records(task, data) if record_problem(r) is None]
    if not records:
        return None
    newest = records[0]
    stats = (stats_from_artifact(data) if data is not None else None) or {}
    extra = ((data or {}).get("tracker") or {}).get("extra") or {}
    asked = newest.get("asked") or extra.get("resources_asked") or {}
    started = _created(task) or _created(step) or 0.0
    duration = None
    if not stats:  # killed: no artifact; the record's last write bounds the run
        duration = max(0.0, float(newest.get("updated") or started) - started)
    flow, run_id = task.path_components[0], task.path_components[1]
    labels = {"flow": flow, "run": run_id, "step": step.id, "task": task.id}
    return record_from(
        step=f"{flow}/{step.id}", run_id=task.pathspec, source="metaflow", stats=stats,
        tuning=newest, status=str(newest.get("status") or "ok"), asked=asked,
        cores=machine_cores((data or {}).get("server_info")), started=started, labels=labels,
        duration=duration, records=records, settings=extra.get("tuning_input"),
    )  # fmt: skip
