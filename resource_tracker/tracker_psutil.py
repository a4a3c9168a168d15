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

from ._readings import make_readers

__all__ = ["get_process_stats", "get_system_stats"]

get_process_stats, get_system_stats = make_readers("psutil", __name__)
