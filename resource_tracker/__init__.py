"""resource_tracker: track the resources a workload uses and find the server it needs.

Quick start::

    from resource_tracker import ResourceTracker

    tracker = ResourceTracker()
    # your compute-heavy code
    tracker.stop()
    tracker.report().browse()
"""

from . import _core
from ._version import __version__

if _core.__version__ != __version__:  # a stale build would give wrong columns or crash
    raise ImportError(
        f"resource_tracker {__version__} found its C core at version {_core.__version__}: "
        "rebuild it (pip install -e . or make build)"
    )

from .csv_trackers import PidTracker, SystemTracker  # noqa: E402
from .tiny_data_frame import TinyDataFrame  # noqa: E402
from .tracker import ResourceTracker  # noqa: E402

__all__ = ["ResourceTracker", "TinyDataFrame", "PidTracker", "SystemTracker", "__version__"]
