"""``get_process_stats()`` / ``get_system_stats()`` as the original package's
``resource_tracker.tracker_psutil`` offered them, read by this package's psutil sampler
(the same keys as ``resource_tracker.tracker_procfs``; needs psutil).
"""

from __future__ import annotations

try:
    import psutil  # noqa: F401  (as the original: importing this module needs psutil)
except ImportError as exc:
    raise ImportError(
        "resource_tracker.tracker_psutil needs psutil: pip install psutil "
        "(or use resource_tracker.tracker_procfs, which needs none, on Linux)"
    ) from exc

from ._readings import process_stats, system_stats

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds)
if TYPE_CHECKING:
    from typing import Dict, Set, Union

__all__ = ["get_process_stats", "get_system_stats"]


def get_process_stats(
    pid: int, children: bool = True
) -> Dict[str, Union[int, float, None, Set[int]]]:
    """One reading of a process via psutil (keys: tracker_procfs.get_process_stats)."""
    return process_stats("psutil", pid, children)


def get_system_stats() -> Dict[str, Union[int, float, Dict]]:  # type: ignore[type-arg]
    """One reading of the machine via psutil (keys: tracker_procfs.get_system_stats)."""
    return system_stats("psutil")
