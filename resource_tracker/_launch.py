"""What starting a :class:`~resource_tracker.tracker.ResourceTracker` takes: the checks of
its arguments, the choice of sampler (the C procfs one or psutil), the tracked command line,
the export settings and the cloud discovery job. (The names are importable from
``resource_tracker.tracker`` too.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional

from . import _core, settings

# the checks and facts of _identity, importable from here (and from tracker) as before
from ._identity import (
    DEFAULT_JOB as DEFAULT_JOB,
)
from ._identity import (
    MAX_INTERVAL as MAX_INTERVAL,
)
from ._identity import (
    MAX_PID as MAX_PID,
)
from ._identity import (
    MIN_INTERVAL as MIN_INTERVAL,
)
from ._identity import (
    _check_interval as _check_interval,
)
from ._identity import (
    _check_pid as _check_pid,
)
from ._identity import (
    _command_line as _command_line,
)
from ._identity import (
    _process_start as _process_start,
)
from ._identity import (
    _read_proc_file as _read_proc_file,
)
from ._identity import (
    metaflow_current as metaflow_current,
)

if TYPE_CHECKING:
    from .sampler_protocol import RowSampler


def _default_method() -> str:
    """'procfs' on Linux (with the C core's procfs sampler), else 'psutil';
    RESOURCE_TRACKER_METHOD overrides."""
    forced: Optional[str] = settings.get("RESOURCE_TRACKER_METHOD")
    if forced:
        return forced
    return "procfs" if _core.HAVE_PROCFS and os.path.exists("/proc/self/stat") else "psutil"


def _new_sampler(
    method: str, pid: int, interval: float, adopted_by: int = 0, **kwargs: bool
) -> RowSampler:
    """The one engine choice: the C procfs sampler or the psutil one (both a
    ``sampling.Sampler``).

    kwargs: children, track_processes, track_system. adopted_by: a pid whose children count
    as the workload's too (the C sampler only; see ResourceTracker._adopt_children_of)."""
    if method == "procfs":
        if not _core.HAVE_PROCFS:
            raise ValueError(
                "method 'procfs' needs the Linux readers of the C core, and this build has none "
                "(a non-Linux platform or RESOURCE_TRACKER_PORTABLE=1): use method='psutil'"
            )
        return _core.Sampler(
            pid,
            interval,
            proc_root=settings.get("RESOURCE_TRACKER_PROCFS_ROOT"),
            sys_root=settings.get("RESOURCE_TRACKER_SYSFS_ROOT"),
            nvml_library=settings.get("RESOURCE_TRACKER_NVML_LIBRARY"),
            amd_library=settings.get("RESOURCE_TRACKER_AMD_SMI_LIBRARY"),
            adopted_by=adopted_by,
            discovery=settings.get("RESOURCE_TRACKER_CHILD_DISCOVERY"),
            **kwargs,
        )
    if method == "psutil":
        from .psutil_sampler import PsutilSampler

        return PsutilSampler(pid, interval, **kwargs)
    raise ValueError(f"method must be 'procfs' or 'psutil', got {method!r}")


def _export_settings(export: Any) -> Any:
    """The checked export settings (no targets: no export), read once at construction; None
    when export is off (the export package is not even imported: start() stays cheap)."""
    if _export_off(export):
        return None
    from .export import prepare_export

    return prepare_export(export)


def _export_off(export: Any) -> bool:
    """True when neither the argument nor RESOURCE_TRACKER_EXPORT names a target."""
    if export is None:
        return not settings.get("RESOURCE_TRACKER_EXPORT")
    if isinstance(export, str):
        return not export.strip(" ,")
    return isinstance(export, (list, tuple)) and not export


def _start_cloud_discovery() -> Any:
    """A background cloud discovery job, or a job answering None when it is unavailable."""
    try:
        from .cloud import start_discovery
    except ImportError:
        return _NoCloud()
    try:
        return start_discovery()
    except Exception:
        return _NoCloud()


class _NoCloud:
    def result(self, timeout: Optional[float] = None) -> None:
        return None


def _job_name(job: Any) -> str:
    """The run's job name: ``job`` (the argument), else RESOURCE_TRACKER_JOB, else
    ``flow/step`` inside a Metaflow task, else :data:`DEFAULT_JOB`; ValueError for a name
    that is not one (settings.parse_name: 1 to 200 printable characters)."""
    if job is not None:
        return str(settings.parse_name(job, "job"))
    named = settings.get("RESOURCE_TRACKER_JOB")
    if named:
        return str(named)
    current = metaflow_current()
    try:
        flow, step = current.flow_name, current.step_name
    except Exception:  # no Metaflow task, or one without these fields
        return DEFAULT_JOB
    return f"{flow}/{step}" if flow and step else DEFAULT_JOB
