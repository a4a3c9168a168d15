"""Who a run is and what bounds it: the bounds and checks of a tracker's interval and pid,
the default job name, the stored form's name and version, the tracked process's command line
and start, and the Metaflow task the process runs in. A module of the readers' layer, so that
the samplers, the stored runs and the views read these facts without importing the
:class:`~resource_tracker.tracker.ResourceTracker` facade (``_launch`` and ``tracker``
re-export them).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from . import _core

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
#: The name and version of the stored form of a run (snapshot(), dumps(), the artifact).
SNAPSHOT_FORMAT = "resource-tracker-snapshot"
SNAPSHOT_VERSION = 1
#: The most of a procfs file (a command line, a stat line) read: the C readers' cap.
MAX_PROC_FILE_BYTES = 16 * 1024 * 1024


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


def _read_proc_file(path: str) -> bytes:
    """The whole of a procfs file (at most 16 MiB), opened, read and closed by the C core
    with the interpreter lock held: start() runs beside the program's other threads, one of
    which may close every descriptor and open its own at the number being read (a Python
    os.close would close it). OSError when it cannot be read."""
    data = _core.read_regular_file(path, MAX_PROC_FILE_BYTES)
    if data is None:
        raise OSError(f"{path}: not read")
    return data


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


def metaflow_current() -> Any:
    """Metaflow's ``current`` while this process runs a Metaflow task, else None. Only when
    Metaflow is already imported (a task always has it): never imports it."""
    module = sys.modules.get("metaflow")
    current = getattr(module, "current", None) if module is not None else None
    try:
        return current if current is not None and current.is_running_flow else None
    except Exception:  # a Metaflow without this field
        return None
