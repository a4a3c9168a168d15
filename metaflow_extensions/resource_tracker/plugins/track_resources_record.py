"""The tuning record of a step's attempt, kept in Metaflow's datastore while the step runs.

A run killed by SIGKILL (the OOM killer, a node lost) stores no artifact. So that tuning
still learns from it, @track_resources keeps a small JSON record beside the task's data:
``<attempt>.resource_tracker_record.json`` in the task's datastore folder (written with
``TaskDataStore.save_metadata``, the way Metaflow keeps its own per-attempt files; local
disk, S3, Azure or GCS alike). It holds what tuning needs (``resource_tracker.tuning.
run_record``: peak memory so far, CPU p90, what the attempt asked and the cgroup limits it
got, OOM kills and throttling) and is written when the attempt starts, again whenever the
memory peak grew by a tenth or the kernel counted an OOM kill or throttling (checked every
``RESOURCE_TRACKER_RECORD_CHECK_S`` seconds, 2 by default), at least every
:data:`HEARTBEAT_S` seconds, and a last time, ``final``, when the step ends (failed or
not). A record that is not final belongs to an attempt that was killed.

The next run reads the records of earlier runs and attempts (:func:`task_records`); a
``@retry`` attempt reads the earlier attempts of its own task.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple

from resource_tracker import settings
from resource_tracker._background import tracker_thread
from resource_tracker.insights import was_throttled
from resource_tracker.metaflow_history import (  # noqa: F401  (the reader, importable from here)
    RECORD_NAME,
    Record,
    read_record,
    task_records,
)
from resource_tracker.tuning import machine_cores as cores_of
from resource_tracker.tuning import run_record

if TYPE_CHECKING:
    from metaflow.datastore import TaskDataStore

    from resource_tracker import ResourceTracker

#: The setting holding the seconds between two checks of the figures (default 2).
CHECK_SETTING = "RESOURCE_TRACKER_RECORD_CHECK_S"
#: A record is written at least this often while the step runs.
HEARTBEAT_S = 60.0
#: A peak this much higher (share) than the recorded one is written at once.
PEAK_GROWTH = 0.1


def check_seconds() -> float:
    """Seconds between two checks of the figures (the setting, read when a writer starts)."""
    return float(settings.get(CHECK_SETTING))


def machine_cores(tracker: Optional[ResourceTracker]) -> Optional[float]:
    """The machine's cores (the tracker's ``server_info``), for telling a starved run."""
    return cores_of(getattr(tracker, "server_info", None) if tracker is not None else None)


def current_record(
    tracker: Optional[ResourceTracker], asked: Optional[Mapping[str, Any]], status: str
) -> Record:
    """The record of the run so far (or at its end) from the tracker's statistics (while
    the step runs they hold the cgroup's figures since the start: OOM kills, throttling,
    limits)."""
    stats: Mapping[str, Any] = tracker.stats() if tracker is not None else {}
    return run_record(stats, asked, machine_cores(tracker), status)


class RecordWriter:
    """Writes the attempt's record to the task datastore while the step runs (a daemon
    thread; a failing write is counted, never raised)."""

    def __init__(
        self,
        tracker: Optional[ResourceTracker],
        task_datastore: TaskDataStore,
        asked: Optional[Mapping[str, Any]],
        extra: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.tracker = tracker
        self.datastore = task_datastore
        self.asked = dict(asked or {})
        self.extra = dict(extra or {})
        self.writes = 0
        self.errors: List[str] = []
        self.check_s = check_seconds()
        self._written_peak: Optional[float] = None
        self._written_kills: Optional[Tuple[Any, bool]] = None
        self._written_at = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> RecordWriter:
        self.write("running")
        self._thread = threading.Thread(
            target=tracker_thread(self._loop), name="resource-tracker-record", daemon=True
        )
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.check_s):
            try:
                record = current_record(self.tracker, self.asked, "running")
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return
            if self._worth_writing(record):
                self.write("running", record)

    def _worth_writing(self, record: Mapping[str, Any]) -> bool:
        peak = record.get("memory_peak_mib") or 0.0
        grown = peak > (self._written_peak or 0.0) * (1 + PEAK_GROWTH)
        counters = _counters(record)
        due = time.monotonic() - self._written_at >= HEARTBEAT_S
        return grown or counters != self._written_kills or due

    def write(self, status: str, record: Optional[Mapping[str, Any]] = None) -> Optional[Record]:
        """Write the record now (``final`` when status is ``ok`` or ``failed``)."""
        with self._lock:
            try:
                if record is None:
                    record = current_record(self.tracker, self.asked, status)
                written = dict(record, status=status, final=status != "running", **self.extra)
                self.datastore.save_metadata({RECORD_NAME: written})
                self.writes += 1
                self._written_peak = written.get("memory_peak_mib") or 0.0
                self._written_kills = _counters(written)
                self._written_at = time.monotonic()
                return written
            except Exception as exc:  # a datastore that refuses: less history, no failure
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return None

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)


def _counters(record: Mapping[str, Any]) -> Tuple[Any, bool]:
    """What a new OOM kill or heavy throttling changes in a record: (kills, throttled)."""
    return record.get("oom_kills"), was_throttled(record.get("throttled_share"),
                                                  record.get("throttled_s"))  # fmt: skip
