"""Who is exporting: the host, the tracked process and, inside a Metaflow task, its ids.

The same identity becomes the OpenTelemetry resource attributes and the Prometheus labels
(:data:`METAFLOW_FIELDS` names both for each Metaflow id).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, Optional, Union

from .._identity import DEFAULT_JOB, _command_line, _read_proc_file, metaflow_current

if TYPE_CHECKING:
    from typing import Protocol

    from ..sampler_protocol import Sampler

    class ExportedRun(Protocol):
        """What the export reads of the tracker it streams (a ResourceTracker): who runs
        (pid, command line, job name), which tables are kept, the sampler the rows come
        from, the interval and the stop time."""

        @property
        def pid(self) -> int: ...
        @property
        def command(self) -> Optional[str]: ...
        @property
        def job(self) -> str: ...
        @property
        def interval(self) -> float: ...
        @property
        def track_processes(self) -> bool: ...
        @property
        def track_system(self) -> bool: ...
        @property
        def stop_time(self) -> Optional[float]: ...
        @property
        def _sampler(self) -> Sampler: ...


#: Metaflow id -> (Prometheus label, OpenTelemetry resource attribute, metaflow.current field);
#: ``attempt`` (0 first, then one more per ``@retry``): each attempt is a run of its own
#: (its own Pushgateway group: a killed attempt is not replaced by the next one)
METAFLOW_FIELDS = (
    ("flow", "metaflow.flow_name", "flow_name"),
    ("run_id", "metaflow.run_id", "run_id"),
    ("step", "metaflow.step_name", "step_name"),
    ("task_id", "metaflow.task_id", "task_id"),
    ("attempt", "metaflow.retry_count", "retry_count"),
)


@dataclass(frozen=True)
class Identity:
    """host_name, pid; executable: the name of the program run (argv[0]'s base name);
    command_line: the whole command line when the user opted in to send it, else None;
    job: the run's job name (the tracker's ``job``: Prometheus's ``job`` label)."""

    host_name: str
    pid: int
    executable: str
    command_line: Optional[str] = None
    metaflow: Dict[str, str] = field(default_factory=dict)  # Prometheus label -> id
    job: str = DEFAULT_JOB

    def resource_attributes(self) -> Dict[str, Union[str, int]]:
        """The OpenTelemetry resource attributes (semantic-convention names)."""
        attributes: Dict[str, Union[str, int]] = {
            "host.name": self.host_name,
            "process.pid": self.pid,
            "process.executable.name": self.executable,
            "resource_tracker.job": self.job,
        }
        if self.command_line is not None:
            attributes["process.command_line"] = self.command_line
        for label, attribute, _ in METAFLOW_FIELDS:
            if label in self.metaflow:
                attributes[attribute] = self.metaflow[label]
        return attributes


def metaflow_ids() -> Dict[str, str]:
    """The ids of the Metaflow task this process runs ({} outside a Metaflow task).

    Only when Metaflow is already imported (a task always has it): never imports it."""
    current = metaflow_current()
    try:
        if current is None:
            return {}
        ids = {label: getattr(current, name, None) for label, _, name in METAFLOW_FIELDS}
    except Exception:  # a Metaflow without these fields: no ids
        return {}
    return {label: str(value) for label, value in ids.items() if value is not None}


def identity_of(tracker: ExportedRun, command_line: bool = False) -> Identity:
    """The identity of a tracker's run in this process (the command line read again when
    the tracker saw none: a child caught before its exec). ``command_line``: send it whole
    (the user's opt-in: arguments may hold secrets), else only the executable's name."""
    command = str(tracker.command or _command_line(tracker.pid) or "")
    return Identity(
        host_name=socket.gethostname(),
        pid=int(tracker.pid),
        executable=_executable(tracker.pid, command),
        command_line=command if command_line else None,
        metaflow=metaflow_ids(),
        job=str(getattr(tracker, "job", None) or DEFAULT_JOB),
    )


def _executable(pid: int, command: str) -> str:
    """The executable's name, as the semantic conventions ask: the base name of
    /proc/<pid>/exe's target, else of argv[0] (another user's process), else of the
    command's first word."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        pass
    try:
        raw = _read_proc_file(f"/proc/{pid}/cmdline")
        argv0 = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        argv0 = ""
    argv0 = argv0 or (command.split() or [""])[0]
    return os.path.basename(argv0)
