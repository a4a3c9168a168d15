"""The code profile agents' records read back from their directory (``code_agent`` made it;
every Python process of ``run --code``'s command, or of a code-profiled tracker's workers,
writes ``<pid>.json`` there as it exits).

The directory is written by the command's processes, so what is in it is outside input: only
regular files are read (a FIFO or a device named ``*.json`` is refused unopened:
``_regular_file.read_regular``), each up to :data:`MAX_RECORD_BYTES`, parsed strictly (no
NaN, no overflowing number, nesting bounded) and checked as the run's snapshot will hold it
(``code_profile.validate_agent_record``: ids in range, stack chains no deeper than a capture
makes them, its columns). A record that cannot be read is skipped with one line saying why;
the others are kept. The samples an agent took of its own start are left out
(:func:`workload_only`).
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict, List, Set, Tuple

from ._code_agent_child import AGENT_FILE
from ._regular_file import read_regular
from ._stored import strict_json
from ._text import one_line
from .code_profile import validate_agent_record

#: A process's record larger than this is not read (bytes).
MAX_RECORD_BYTES = 64 << 20
#: The record format an agent writes (``code_agent._write_record``).
RECORD_VERSION = 1


def read_record(path: str) -> Dict[str, Any]:
    """The checked record of one agent's file; OSError or ValueError saying why not."""
    text = read_regular(path, MAX_RECORD_BYTES).decode("utf-8")
    record = strict_json(text)
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        raise ValueError("not an agent's record (no version 1)")
    return validate_agent_record(record)


def read_records(directory: str, remove: bool = False) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The records of the ``*.json`` files of directory (by name), and one printable line per
    file skipped (``NAME: why``); ``remove``: each file removed once read."""
    records: List[Dict[str, Any]] = []
    skipped: List[str] = []
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError:
        names = []
    for name in names:
        try:
            records.append(read_record(os.path.join(directory, name)))
        except (OSError, ValueError) as exc:  # UnicodeDecodeError among them
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            skipped.append(one_line(f"{name}: {why}", 300))
        if remove:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
    return records, skipped


def collect(tracker: Any, directory: str) -> List[str]:
    """Reads the agents' records into the tracker (``code_profile.processes``) and removes the
    directory: one line per record skipped."""
    records, skipped = take(directory)
    shutil.rmtree(directory, ignore_errors=True)
    attach(tracker, records)
    return skipped


def take(directory: str, since: float = 0.0) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The agents' records in directory, each file removed once read, without the samples of
    the agents' own work (:func:`workload_only`) and without the records of processes that
    started before ``since`` (seconds since the epoch: another tracker's workers); one line
    per record skipped."""
    records, skipped = read_records(directory, remove=True)
    agent_files = {AGENT_FILE, os.path.join(directory, "sitecustomize.py")}
    kept = [r for r in records if since <= 0 or float(r.get("start_time") or 0.0) >= since]
    return [workload_only(record, agent_files) for record in kept], skipped


def attach(tracker: Any, records: List[Dict[str, Any]]) -> None:
    """The records as the tracker's agent processes (``code_profile.processes``)."""
    tracker._code_processes = records
    tracker.__dict__.pop("_code_stored", None)  # read again, with them


def workload_only(record: Dict[str, Any], agent_files: Set[str]) -> Dict[str, Any]:
    """The record without the samples taken while the agent itself ran (a stack with a frame
    of ``agent_files``: the agent starting, in a fork child too): the agent's work is not
    the workload's. Its ids stay as they are (frames and stacks are kept); the record is
    a checked one (``read_record``: ids in range, a parent before its children)."""
    frames, stacks = record.get("frames") or [], record.get("stacks") or []
    agent: List[bool] = []  # per stack: a frame of the agent on it
    for parent, frame in stacks:
        agent.append(frames[frame][1] in agent_files or (parent >= 0 and agent[parent]))
    record["samples"] = [s for s in record.get("samples") or [] if not agent[s[2]]]
    return record
