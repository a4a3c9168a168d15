"""What starting a :class:`~resource_tracker.tracker.ResourceTracker` takes: the checks of
its arguments, the choice of sampler (the C procfs one or psutil), the tracked command line,
the export settings and the cloud discovery job. (The names are importable from
``resource_tracker.tracker`` too.)
"""

from __future__ import annotations

import os
import sys

from . import _core, settings

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds): annotations only
if TYPE_CHECKING:
    from typing import Any, Optional

    from .sampler_protocol import RowSampler


#: The shortest and the longest interval between samples, seconds (both backends, the CLI and
#: the Metaflow decorator): a longer one would overflow the clock arithmetic of a timed wait.
#: (The C sampler holds the same values as _core.MIN_INTERVAL / _core.MAX_INTERVAL; a build
#: without it, HAVE_PROCFS False, samples with psutil under these.)
MIN_INTERVAL = 0.0001
MAX_INTERVAL = 86400.0
#: The job's name when none is given and the run is no Metaflow step (the name before jobs
#: had names: what the export called every run).
DEFAULT_JOB = "resource_tracker"
#: The largest process id Linux can give (pid_max is at most 2**22; this is the type's limit).
MAX_PID = 2**31 - 1


def _check_interval(interval: Any) -> float:
    """The interval as a float, or ValueError saying what is wrong."""
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise ValueError(f"interval must be a number of seconds, got {interval!r}; use e.g. 1.0")
    try:
        value = float(interval)
    except OverflowError:  # an int beyond any float
        value = float("inf")
    if not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise ValueError(
            f"interval must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} seconds "
            f"(one day), got {interval!r}; use e.g. 1.0"
        )
    return value


def _check_pid(pid: Any) -> int:
    """The pid to track (None: this process), or ValueError when there is no such process."""
    if pid is None:
        return os.getpid()
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= MAX_PID:
        raise ValueError(f"pid must be a positive process id (at most {MAX_PID}), got {pid!r}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise ValueError(f"no process with pid {pid}: start the workload first") from None
    except PermissionError:
        pass  # it exists, owned by someone else
    return pid


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
            adopted_by=adopted_by,
            **kwargs,
        )
    if method == "psutil":
        from .psutil_sampler import PsutilSampler

        return PsutilSampler(pid, interval, **kwargs)
    raise ValueError(f"method must be 'procfs' or 'psutil', got {method!r}")


def _read_proc_file(path: str) -> bytes:
    """The whole of a procfs file, read without a file object (3 system calls, not 10:
    start() reads the command line)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = [os.read(fd, 65536)]
        while parts[-1]:
            parts.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(parts)


def _process_start(pid: int) -> Optional[str]:
    """When pid started (field 22 of /proc/<pid>/stat, clock ticks since boot; psutil's
    creation time where there is no procfs), None when unreadable: with the pid, the
    process's identity (a pid alone may go to another process once its process exited)."""
    try:
        return _read_proc_file(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        try:
            import psutil

            return repr(psutil.Process(pid).create_time())
        except Exception:
            return None


def _command_line(pid: int) -> str:
    """The command line of pid as one string ('' when unreadable)."""
    try:
        raw = _read_proc_file(f"/proc/{pid}/cmdline")
    except OSError:
        try:
            import psutil

            return " ".join(psutil.Process(pid).cmdline())
        except Exception:
            return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")


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


def metaflow_current() -> Any:
    """Metaflow's ``current`` while this process runs a Metaflow task, else None. Only when
    Metaflow is already imported (a task always has it): never imports it."""
    module = sys.modules.get("metaflow")
    current = getattr(module, "current", None) if module is not None else None
    try:
        return current if current is not None and current.is_running_flow else None
    except Exception:  # a Metaflow without this field
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
        flow, step = current.flow_name, current.step_name  # type: ignore[union-attr]
    except Exception:  # no Metaflow task, or one without these fields
        return DEFAULT_JOB
    return f"{flow}/{step}" if flow and step else DEFAULT_JOB
