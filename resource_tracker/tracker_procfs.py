"""``get_process_stats()`` / ``get_system_stats()`` as the original package's
``resource_tracker.tracker_procfs`` offered them, read by this package's C procfs sampler.

Each call is one reading (see ``resource_tracker._readings`` for what the counters count
from). For tracking over time use ResourceTracker, PidTracker or SystemTracker.
"""

from __future__ import annotations

from ._readings import process_stats, system_stats

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds)
if TYPE_CHECKING:
    from typing import Dict, Set, Union

__all__ = ["get_process_stats", "get_system_stats"]


def get_process_stats(
    pid: int, children: bool = True
) -> Dict[str, Union[int, float, None, Set[int]]]:
    """One reading of a process (and its descendants when ``children``): timestamp, pid,
    children (live descendants; None without children), utime and stime (CPU seconds),
    memory_mib (PSS, MiB) and memory (KiB), disk_read_bytes / disk_write_bytes (also as
    read_bytes / write_bytes), gpu_usage, gpu_vram_mib (also gpu_vram) and gpu_utilized."""
    return process_stats("procfs", pid, children)


def get_system_stats() -> Dict[str, Union[int, float, Dict]]:  # type: ignore[type-arg]
    """One reading of the machine: timestamp, processes, utime, stime, memory_{free, used,
    buffers, cached, active, inactive}_mib (MiB; without _mib: KiB), disk_stats and
    disk_spaces (one entry, 'all'), net_recv_bytes, net_sent_bytes and the GPU figures."""
    return system_stats("procfs")
