"""What a sampler is: the one interface ResourceTracker and the CSV trackers drive.

Three classes implement :class:`Sampler`:

- ``_core.Sampler``: the C sampler (a thread reading procfs that never takes the GIL);
- ``psutil_sampler.PsutilSampler``: the same rules on psutil, where procfs is missing;
- :class:`StoredRun`: a finished run read back from a snapshot (``from_snapshot``/``loads``).

A sampler fills two tables, ``process`` and ``system``, whose columns are the registry's
(:mod:`resource_tracker.registry`), in its order; ``columns(table)`` hands each column over
as a buffer of native float64 values. This module also holds what the two Python samplers
share with the C one: the tick schedule (:func:`next_tick`) and the constants of the last,
partial interval.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from . import _core
from .names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from .sampler_protocol import RowSampler, Sampler

__all__ = [
    "Sampler",
    "RowSampler",
    "StoredRun",
    "TABLES",
    "FOLD_SHARE",
    "FOLD_MIN_SECONDS",
    "FINAL_MIN_SECONDS",
    "STOP_TIMEOUT",
    "next_tick",
    "table_columns",
]

#: The two tables a sampler fills.
TABLES: Tuple[str, str] = ("process", "system")

# The last, partial interval (when stop() comes between two ticks): csrc/schedule.h's rules.
#: A final reading this much of an interval long or shorter is folded into the previous row;
FOLD_SHARE: float = _core.FOLD_SHARE
#: so is one this short (seconds) whatever the interval: too short to measure CPU time in
#: clock ticks (10 ms);
FOLD_MIN_SECONDS: float = _core.FOLD_MIN_SECONDS
#: and a final reading closer than this (seconds) to the last one is not taken at all (by a
#: reader without a last reading: the C sampler's re-reads idle members' io, and is taken).
FINAL_MIN_SECONDS: float = _core.FINAL_MIN_SECONDS
#: Seconds stop() waits for the sampler thread at most (the C sampler's value where built).
STOP_TIMEOUT: float = float(getattr(_core, "STOP_TIMEOUT", 2.0))


def table_columns(table: str) -> Tuple[str, ...]:
    """The column names of ``table`` ('process' or 'system'); ValueError for another."""
    if table == "process":
        return PROCESS_COLUMNS
    if table == "system":
        return SYSTEM_COLUMNS
    raise ValueError(f"table must be 'process' or 'system', got {table!r}")


def next_tick(start: float, previous: float, now: float, interval: float) -> float:
    """The next tick of the grid ``start + k * interval`` (monotonic seconds).

    The tick after ``previous``; when that one has passed already (a reading took longer
    than an interval) the first tick after ``now``: a late sampler skips ahead on the grid
    and never bunches readings to catch up. The C sampler's own rule (csrc/schedule.c)."""
    return _core.next_tick(start, previous, now, interval)


def _float64(col: Any) -> Any:
    """col as a float64 buffer (itself when it is one)."""
    if isinstance(col, memoryview) and col.format == "d":
        return col
    if isinstance(col, array) and col.typecode == "d":
        return col
    return array("d", col)


class StoredRun:
    """A finished run held in memory (from a snapshot): a :class:`Sampler`, read-only.

    Args:
        process, system: the two tables (TinyDataFrames with the registry's columns).
        start_time, stop_time: seconds since the epoch (0.0: unknown).
        interval: seconds between the samples.
        data_quality: the stored ``data_quality()`` dict, given back as it was.
        memory_hwm: the stored high-water mark (KiB; 0: unknown).
    """

    state = "stopped"
    cpu_seconds = 0.0
    rows_dropped = io_denied = pss_denied = 0.0

    def __init__(
        self,
        process: Any,
        system: Any,
        start_time: float,
        stop_time: float,
        interval: float,
        data_quality: Optional[Dict[str, Any]] = None,
        memory_hwm: float = 0.0,
    ) -> None:
        self._tables: Mapping[str, Any] = {"process": process, "system": system}
        self.data_quality = data_quality
        self.start_time = start_time
        self.stop_time = stop_time
        self.interval = interval
        self.memory_hwm = memory_hwm
        self.gpus: List[Dict[str, Any]] = []  # the stored per-GPU series (_gpu_series.py)

    def gpu_devices(self) -> List[Dict[str, Any]]:
        """The stored per-GPU series ([] when the snapshot has none)."""
        return self.gpus

    @property
    def n_samples(self) -> int:
        return max(len(self._tables["process"]), len(self._tables["system"]))

    def columns(self, table: str) -> List[bytes]:
        names = table_columns(table)
        df = self._tables[table]
        if len(df) == 0:
            return [b""] * len(names)
        return [array("d", df.column_array(n)).tobytes() for n in names]

    def column_views(self, table: str) -> List[Any]:
        """The stored columns themselves (float64 buffers, no copy), in the registry's order;
        an empty column for one the snapshot lacks."""
        names = table_columns(table)
        df = self._tables[table]
        return [_float64(df.column_array(n)) if n in df else array("d") for n in names]

    def start(self) -> None:
        raise RuntimeError("a tracker loaded from a snapshot cannot be started; create a new one")

    def stop(self) -> None:
        pass

    def wait(self, n: int, timeout: float) -> bool:
        return self.n_samples >= n


if TYPE_CHECKING:  # mypy proves the two samplers are what this module says they are (psutil's:
    # psutil_sampler.py, below this module)

    def _implementations(c: _core.Sampler, stored: StoredRun) -> Tuple[RowSampler, Sampler]:
        return c, stored
