"""Who is exporting: the host, the tracked process and, inside a Metaflow task, its ids.

The same identity becomes the OpenTelemetry resource attributes and the Prometheus labels
(:data:`METAFLOW_FIELDS` names both for each Metaflow id).
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, field
from typing import Dict

#: Metaflow id -> (Prometheus label, OpenTelemetry resource attribute, metaflow.current field)
METAFLOW_FIELDS = (
    ("flow", "metaflow.flow_name", "flow_name"),
    ("run_id", "metaflow.run_id", "run_id"),
    ("step", "metaflow.step_name", "step_name"),
    ("task_id", "metaflow.task_id", "task_id"),
)


@dataclass(frozen=True)
class Identity:
    host_name: str
    pid: int
    command_line: str
    metaflow: Dict[str, str] = field(default_factory=dict)  # Prometheus label -> id

    def resource_attributes(self) -> Dict[str, object]:
        """The OpenTelemetry resource attributes (semantic-convention names)."""
        attributes: Dict[str, object] = {
            "host.name": self.host_name,
            "process.pid": self.pid,
            "process.command_line": self.command_line,
        }
        for label, attribute, _ in METAFLOW_FIELDS:
            if label in self.metaflow:
                attributes[attribute] = self.metaflow[label]
        return attributes


def metaflow_ids() -> Dict[str, str]:
    """The ids of the Metaflow task this process runs ({} outside a Metaflow task).

    Only when Metaflow is already imported (a task always has it): never imports it."""
    module = sys.modules.get("metaflow")
    current = getattr(module, "current", None) if module is not None else None
    try:
        if current is None or not current.is_running_flow:
            return {}
        ids = {label: getattr(current, name, None) for label, _, name in METAFLOW_FIELDS}
    except Exception:  # a Metaflow without these fields: no ids
        return {}
    return {label: str(value) for label, value in ids.items() if value is not None}


def identity_of(tracker) -> Identity:
    """The identity of a tracker's run in this process (the command line read again when
    the tracker saw none: a child caught before its exec)."""
    from .._launch import _command_line

    return Identity(
        host_name=socket.gethostname(),
        pid=int(tracker.pid),
        command_line=str(tracker.command or _command_line(tracker.pid) or ""),
        metaflow=metaflow_ids(),
    )
