"""One reading at a time, as the original package's ``tracker_procfs`` / ``tracker_psutil``
functions gave it (``get_process_stats(pid)``, ``get_system_stats()``), from this package's
samplers (the C procfs sampler or the psutil one).

A sampler is kept per process (and one for the machine) and read on each call, in the
caller's thread. Gauges (memory, children, GPUs, disk space) are the reading's; the
counters (CPU seconds, bytes read, written, received, sent) add up the amounts since the
first call for that process in this Python process: the original counted from the
process's start, so a single value differs, and the difference of two calls, which is
what a tracker makes of them, is the same.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Set, Tuple, Union

from ._identity import _check_pid
from ._launch import _new_sampler
from .names import PROCESS_COLUMNS, SYSTEM_COLUMNS

if TYPE_CHECKING:
    ProcessReader = Callable[..., Dict[str, Union[int, float, None, Set[int]]]]
    SystemReader = Callable[[], Dict[str, Union[int, float, Dict]]]  # type: ignore[type-arg]

#: Samplers kept at most (the oldest is dropped first).
MAX_KEPT = 32

#: Counters of each table: summed over the readings (the others are gauges).
_COUNTERS = {
    "process": ("utime", "stime", "read_bytes", "write_bytes"),
    "system": (
        "utime",
        "stime",
        "disk_read_bytes",
        "disk_write_bytes",
        "net_recv_bytes",
        "net_sent_bytes",
    ),
}

_lock = threading.Lock()
_kept: Dict[Tuple[Any, ...], Tuple[Any, Dict[str, float]]] = {}


def _sampler(key: Tuple[Any, ...]) -> Tuple[Any, Dict[str, float]]:
    """The kept sampler of key (method, table, pid, children) and its totals, made (with
    its baseline) on first use."""
    found = _kept.pop(key, None)  # re-inserted: the most recent last
    if found is None:
        method, table, pid, children = key
        sampler = _new_sampler(
            method,
            pid,
            1.0,
            children=children,
            track_processes=table == "process",
            track_system=table == "system",
        )
        sampler.sample_now()  # the baseline
        found = (sampler, dict.fromkeys(_COUNTERS[table], 0.0))
    if len(_kept) >= MAX_KEPT:
        _kept.pop(next(iter(_kept)))
    _kept[key] = found
    return found


def reading(method: str, table: str, pid: int, children: bool) -> Dict[str, float]:
    """One row of ``table`` ('process' or 'system') by name, with the counters summed since
    the first reading of the same key."""
    with _lock:
        sampler, totals = _sampler((method, table, pid, bool(children)))
        rows = sampler.sample_now()
    names = PROCESS_COLUMNS if table == "process" else SYSTEM_COLUMNS
    row = dict(zip(names, rows[0 if table == "process" else 1])) if rows else {}
    for name in totals:
        totals[name] += row.get(name, 0.0)
    row.update(totals)
    return row


def process_stats(method: str, pid: int, children: bool = True) -> Dict[str, Any]:
    """The original's get_process_stats() keys (both series' names) from one reading."""
    row = reading(method, "process", _check_pid(pid), children)
    kib, vram = row.get("memory", 0.0), row.get("gpu_vram", 0.0)
    return {
        "timestamp": row.get("timestamp"),
        "pid": int(row.get("pid", pid)),
        "children": int(row.get("children", 0)) if children else None,
        "utime": row["utime"],
        "stime": row["stime"],
        "memory_mib": kib / 1024,  # 0.5
        "memory": kib,  # 0.4: KiB
        "disk_read_bytes": int(row["read_bytes"]),  # 0.5
        "disk_write_bytes": int(row["write_bytes"]),
        "read_bytes": int(row["read_bytes"]),  # 0.4
        "write_bytes": int(row["write_bytes"]),
        "gpu_usage": row.get("gpu_usage", 0.0),
        "gpu_vram_mib": vram,  # 0.5
        "gpu_vram": vram,  # 0.4
        "gpu_utilized": int(row.get("gpu_utilized", 0)),
    }


_MEMORY = ("free", "used", "buffers", "cached", "active", "inactive")


def system_stats(method: str) -> Dict[str, Any]:
    """The original's get_system_stats() keys (both series' names) from one reading; the
    disks and file systems as one entry each, ``'all'`` (the sampler sums them)."""
    row = reading(method, "system", os.getpid(), False)
    out: Dict[str, Any] = {
        "timestamp": row.get("timestamp"),
        "processes": int(row.get("processes", 0)),
        "utime": row["utime"],
        "stime": row["stime"],
    }
    for part in _MEMORY:
        kib = row.get("memory_" + part, 0.0)
        out[f"memory_{part}_mib"] = kib / 1024  # 0.5
        out[f"memory_{part}"] = kib  # 0.4: KiB
    read, written = int(row["disk_read_bytes"]), int(row["disk_write_bytes"])
    space: List[int] = [
        int(row.get(f"disk_space_{part}_gb", 0.0) * 1e9) for part in ("total", "used", "free")
    ]
    out["disk_stats"] = {"all": {"read_bytes": read, "write_bytes": written}}
    out["disk_spaces"] = {"all": dict(zip(("total", "used", "free"), space))}
    out["net_recv_bytes"] = int(row["net_recv_bytes"])
    out["net_sent_bytes"] = int(row["net_sent_bytes"])
    out["gpu_usage"] = row.get("gpu_usage", 0.0)
    out["gpu_vram_mib"] = out["gpu_vram"] = row.get("gpu_vram", 0.0)
    out["gpu_utilized"] = int(row.get("gpu_utilized", 0))
    return out


def make_readers(method: str, module: str) -> Tuple[ProcessReader, SystemReader]:
    """The original's ``get_process_stats(pid, children=True)`` and ``get_system_stats()``
    (its signatures) reading with ``method`` ('procfs' or 'psutil'), as functions of
    ``module``."""

    def get_process_stats(
        pid: int, children: bool = True
    ) -> Dict[str, Union[int, float, None, Set[int]]]:
        """One reading of a process (and its descendants when ``children``): timestamp, pid,
        children (live descendants; None without children), utime and stime (CPU seconds),
        memory_mib (PSS, MiB) and memory (KiB), disk_read_bytes / disk_write_bytes (also as
        read_bytes / write_bytes), gpu_usage, gpu_vram_mib (also gpu_vram), gpu_utilized."""
        return process_stats(method, pid, children)

    def get_system_stats() -> Dict[str, Union[int, float, Dict]]:  # type: ignore[type-arg]
        """One reading of the machine: timestamp, processes, utime, stime, memory_{free,
        used, buffers, cached, active, inactive}_mib (MiB; without _mib: KiB), disk_stats and
        disk_spaces (one entry, 'all'), net_recv_bytes, net_sent_bytes, the GPU figures."""
        return system_stats(method)

    for func in (get_process_stats, get_system_stats):
        func.__module__, func.__qualname__ = module, func.__name__
    return get_process_stats, get_system_stats
