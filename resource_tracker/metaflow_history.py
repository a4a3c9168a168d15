"""Earlier runs of a Metaflow step, read with the Metaflow client: their stats (the
``@track_resources`` artifact) and tuning records (kept in the datastore beside each attempt),
for the decorator's history, ``resource-tracker recommend --metaflow`` and the dashboard.

Part of the library, not of the Metaflow extension: the command line and the dashboard read
history without importing the plug-in. Metaflow itself is imported only when a function
here is called (the client, the datastore). The lookup runs in a background thread that
the decorator waits for only up to a deadline: a slow or broken metadata service, a missing
artifact or an artifact in an older format reduce the history (with a note in
``historical_stats['notes']``), they never fail the step.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

from ._background import tracker_thread
from .formatting import plural
from .rounding import DOCUMENTED_PAIRS
from .summary import METAFLOW_HISTORY_KEYS, history_values
from .tuning import run_record

if TYPE_CHECKING:
    from metaflow.client import Run, Task
    from metaflow.datastore import FlowDataStore

    from ._artifact_types import HistoricalStats

#: ``ResourceTracker.stats()`` of an earlier run (as stored in its artifact)
Stats = Dict[str, Any]
#: A tuning record (``resource_tracker.tuning.run_record`` plus ``status``, ``final``,
#: ``run``, ``attempt``): JSON values, read back from the datastore.
Record = Dict[str, Any]
#: The name of an attempt's record in its task datastore (``<attempt>.<name>.json``).
RECORD_NAME = "resource_tracker_record"

STAT_KEYS = ("process_cpu_usage", "process_memory", "timestamp")


def stats_from_artifact(data: object) -> Optional[Stats]:
    """The stats() dict of an earlier run's artifact, or None.

    Current artifacts keep it in ``detailed_stats``; earlier versions of this extension kept
    it in ``stats``; artifacts with only the documented summary in ``stats`` (cpu_usage,
    memory_usage, gpu_*, duration: also the original package's) are converted.
    """
    if not isinstance(data, dict):
        return None
    for key in ("detailed_stats", "stats"):
        stats = data.get(key)
        if isinstance(stats, dict) and all(isinstance(stats.get(k), dict) for k in STAT_KEYS):
            return stats
    stats = data.get("stats")
    if not isinstance(stats, dict):
        return None
    if isinstance(stats.get("cpu_usage"), dict) and isinstance(stats.get("memory_usage"), dict):
        return _from_legacy(stats)
    return None


def _from_legacy(stats: Dict[str, Any]) -> Stats:
    """Legacy artifacts (stats with cpu_usage, memory_usage, gpu_*, duration) as stats()."""

    def pair(name: str) -> Dict[str, float]:
        value = stats.get(name) or {}
        return {"mean": float(value.get("mean", 0.0)), "max": float(value.get("max", 0.0))}

    converted: Stats = {key: pair(name) for name, key in DOCUMENTED_PAIRS.items()}
    converted["timestamp"] = {"duration": float(stats.get("duration") or 0.0), "samples": 0}
    return converted


def artifact_record(data: Dict[str, Any], status: str) -> Optional[Record]:
    """A tuning record made from an artifact (runs of versions that kept no record)."""
    stats = stats_from_artifact(data)
    if stats is None:
        return None
    extra = ((data.get("tracker") or {}).get("extra")) or {}
    cores = (data.get("server_info") or {}).get("vcpus")
    return run_record(stats, extra.get("resources_asked"), cores, status)


def run_records(task: Task, data: object) -> List[Record]:
    """The tuning records of a client Task (its attempts, newest first): the records kept
    in the datastore, else one made from its artifact."""
    try:
        records = task_records(task)
    except Exception:  # an older datastore, no permission: the artifact still tells
        records = []
    if not records and isinstance(data, dict):
        record = artifact_record(data, "failed" if data.get("step_failed") else "ok")
        records = [dict(record, run=task.path_components[1])] if record else []
    return records


class HistoryLookup:
    """Collects earlier runs' stats in a daemon thread; result() waits at most until a deadline.

    Args:
        flow_name, step_name, artifact_name: what to look for.
        current_run_id: the running run (skipped).
        max_runs: how many earlier successful runs to use (newest first).
        timeout: seconds the whole lookup may take, counted from start().
        max_scanned: runs to look at at most (failed or unrelated runs included).
    """

    def __init__(
        self,
        flow_name: str,
        step_name: str,
        artifact_name: str,
        current_run_id: object,
        max_runs: int = 5,
        timeout: float = 10.0,
        max_scanned: int = 50,
    ) -> None:
        self.flow_name = flow_name
        self.step_name = step_name
        self.artifact_name = artifact_name
        self.current_run_id = str(current_run_id)
        self.max_runs = int(max_runs)
        self.timeout = float(timeout)
        self.max_scanned = int(max_scanned)
        self.stats: List[Stats] = []
        # tuning records of earlier runs, failed and killed ones too
        self.records: List[Record] = []
        self.record_runs = 0
        self.notes: List[str] = []
        self.runs: List[str] = []
        self.started: List[float] = []  # the runs' creation times (epoch s): their frequency
        self.cpu_seconds: Optional[float] = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._deadline: Optional[float] = None
        self._thread: Optional[threading.Thread] = None

    def start(self) -> HistoryLookup:
        """Start the lookup in the background (returns at once)."""
        self._deadline = time.monotonic() + self.timeout
        self._thread = threading.Thread(
            target=tracker_thread(self._run), name="resource-tracker-history", daemon=True
        )
        self._thread.start()
        return self

    def _note(self, text: str) -> None:
        with self._lock:
            self.notes.append(text)

    def _run(self) -> None:
        began = time.thread_time()
        try:
            self._collect()
        except Exception as exc:  # anything from the client: less history, never a failure
            self._note(f"history lookup failed: {type(exc).__name__}: {exc}")
        finally:
            # this thread runs in the task process: its CPU time is part of what the tracker
            # sees, so it is reported (typically a few tens of ms)
            self.cpu_seconds = time.thread_time() - began
            self._done.set()

    def _collect(self) -> None:
        from metaflow import Flow

        scanned = 0
        for run in Flow(self.flow_name).runs():
            if self.record_runs >= self.max_runs:
                return
            if self._deadline is not None and time.monotonic() > self._deadline:
                self._note(f"history lookup stopped at its {self.timeout:g} s limit")
                return
            scanned += 1
            if scanned > self.max_scanned:
                self._note(f"history lookup stopped after {self.max_scanned} runs")
                return
            try:
                self._use_run(run)
            except Exception as exc:
                self._note(f"run {run.id} skipped: {type(exc).__name__}: {exc}")

    def _use_run(self, run: Run) -> None:
        if str(run.id) == self.current_run_id or self.step_name not in run:
            return
        task = run[self.step_name].task
        if task is None:
            return
        successful = run.successful
        data = task[self.artifact_name].data if self.artifact_name in task else None
        records = run_records(task, data)
        if records:
            with self._lock:
                self.records.extend(records)
                self.record_runs += 1
        if not successful or len(self.stats) >= self.max_runs:
            return
        if data is None:
            self._note(f"run {run.id} skipped: no {self.artifact_name} artifact")
            return
        stats = stats_from_artifact(data)
        if stats is None:
            if isinstance(data, dict) and data.get("stats") is None and data.get("error"):
                self._note(f"run {run.id} skipped: no data ({data['error']})")
            else:
                self._note(f"run {run.id} skipped: {self.artifact_name} in an unknown format")
            return
        created = getattr(run, "created_at", None)
        with self._lock:
            self.stats.append(stats)
            self.runs.append(str(run.id))
            if created is not None and hasattr(created, "timestamp"):
                self.started.append(created.timestamp())

    def tuning_records(self) -> List[Record]:
        """The tuning records found by the deadline (newest first)."""
        self.result()
        with self._lock:
            return list(self.records)

    def result(self) -> Tuple[List[Stats], List[str], List[str]]:
        """(list of stats dicts, notes, run ids): what was found by the deadline."""
        remaining = self._deadline - time.monotonic() if self._deadline else 0.0
        if not self._done.wait(max(0.0, remaining)):
            self._note(
                f"history lookup did not finish within {self.timeout:g} s: "
                f"using the {plural(len(self.stats), 'run')} found so far"
            )
        with self._lock:
            return list(self.stats), list(self.notes), list(self.runs)


def summarize_history(
    stats_list: List[Stats], notes: Iterable[str] = (), runs: Iterable[str] = ()
) -> HistoricalStats:
    """historical_stats for the artifact: the earlier runs by the one history rule
    (``resource_tracker.summary.history_values``: mean of the means, highest of the peaks),
    under the documented keys and rounded as the seeds show them (2 decimals; memory in
    whole KiB). Its values are None without history."""
    values = history_values(stats_list) if stats_list else {}

    def figure(name: str) -> Optional[float]:
        if not stats_list:
            return None
        key, field = METAFLOW_HISTORY_KEYS[name]
        value = (values.get(key) or {}).get(field) or 0.0
        return round(value, 0 if name == "max_memory_max" else 2) + 0.0

    return {
        "available": bool(stats_list),
        "runs_analyzed": len(stats_list),
        "avg_cpu_mean": figure("avg_cpu_mean"),
        "max_memory_max": figure("max_memory_max"),
        "avg_gpu_mean": figure("avg_gpu_mean"),
        "max_vram_max": figure("max_vram_max"),
        "max_gpu_count": figure("max_gpu_count"),
        "avg_duration": figure("avg_duration"),
        "runs": list(runs),
        "notes": list(notes),
    }


def _flow_datastore(task: Task) -> Optional[FlowDataStore]:
    """The FlowDataStore holding a client Task's data (from its metadata)."""
    from metaflow.client.filecache import FileCache
    from metaflow.datastore import FlowDataStore

    meta = task.metadata_dict
    ds_type, ds_root = meta.get("ds-type"), meta.get("ds-root")
    if not ds_type or not ds_root:
        return None
    storage = FileCache._get_datastore_storage_impl(ds_type)
    return FlowDataStore(
        flow_name=task.path_components[0], environment=None, storage_impl=storage,
        ds_root=ds_root,
    )  # fmt: skip


def read_record(
    flow_datastore: FlowDataStore, run_id: str, step: str, task_id: str, attempt: int
) -> Optional[Record]:
    """The stored record of one attempt (``killed`` when it never became final), or None."""
    ds = flow_datastore.get_task_datastore(
        str(run_id), step, str(task_id), attempt=int(attempt), mode="r", allow_not_done=True
    )
    if not ds.has_metadata(RECORD_NAME):
        return None
    stored = ds.load_metadata([RECORD_NAME]).get(RECORD_NAME)
    if not isinstance(stored, dict):
        return None
    record: Record = dict(stored, run=str(run_id), attempt=int(attempt))
    if not record.get("final"):
        record["status"] = "killed"
    return record


def task_records(
    task: Task,
    below_attempt: Optional[int] = None,
    flow_datastore: Optional[FlowDataStore] = None,
) -> List[Record]:
    """The records of a client Task's attempts, newest first (those before
    ``below_attempt`` only, when given)."""
    flow_datastore = flow_datastore or _flow_datastore(task)
    if flow_datastore is None:
        return []
    run_id, step, task_id = task.path_components[1:4]
    last = task.current_attempt if below_attempt is None else below_attempt - 1
    found: List[Record] = []
    for attempt in range(int(last), -1, -1):
        record = read_record(flow_datastore, run_id, step, task_id, attempt)
        if record is not None:
            found.append(record)
    return found
