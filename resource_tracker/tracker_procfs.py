"""``get_process_stats()`` / ``get_system_stats()`` as the original package's
``resource_tracker.tracker_procfs`` offered them, read by this package's C procfs sampler.

Each call is one reading (see ``resource_tracker._readings`` for what the counters count
from). For tracking over time use ResourceTracker, PidTracker or SystemTracker.
"""

from __future__ import annotations

from ._readings import make_readers

__all__ = ["get_process_stats", "get_system_stats"]

get_process_stats, get_system_stats = make_readers("procfs", __name__)
