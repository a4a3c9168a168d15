"""resource_tracker: track the resources a workload uses and find the server it needs.

Quick start::

    from resource_tracker import ResourceTracker

    tracker = ResourceTracker()
    # your compute-heavy code
    tracker.stop()
    tracker.report().browse()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from . import _core
from ._version import __version__

if _core.__version__ != __version__:  # a stale build would give wrong columns or crash
    raise ImportError(
        f"resource_tracker {__version__} found its C core at version {_core.__version__}: "
        "rebuild it (pip install -e . or make build)"
    )

from .tracker import ResourceTracker  # noqa: E402

if TYPE_CHECKING:
    from .csv_trackers import PidTracker, SystemTracker
    from .tiny_data_frame import TinyDataFrame

#: The public names loaded on first use (PEP 562): a tracker needs none of them, and each
#: module costs the import its compile time and memory. ``from resource_tracker import X``
#: works for them as for the others.
_LAZY = ("PidTracker", "SystemTracker", "TinyDataFrame")


def __getattr__(name: str) -> Any:
    if name in ("PidTracker", "SystemTracker"):
        from . import csv_trackers as module
    elif name == "TinyDataFrame":
        from . import tiny_data_frame as module  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value  # once: later lookups find it directly
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


def get_server_info(pid: Optional[int] = None) -> Dict[str, Any]:
    """CPUs, memory, GPUs, OS and container limits of this machine (see server_info.py)."""
    from .server_info import get_server_info as _get

    return _get(pid=pid)


def get_cloud_info(timeout: float = 2.0) -> Dict[str, Any]:
    """Cloud vendor, instance type and region ('unknown' where not found), and the
    discovery_time in seconds; no network request unless local evidence points at a cloud."""
    from .cloud import get_cloud_info as _get

    return _get(timeout=timeout)


__all__ = [
    "ResourceTracker",
    "TinyDataFrame",
    "PidTracker",
    "SystemTracker",
    "get_server_info",
    "get_cloud_info",
    "__version__",
]
