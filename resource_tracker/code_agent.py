"""The code profile of a command's other Python processes: ``resource-tracker run --code``.

The CLI makes a private directory holding a ``sitecustomize.py`` and puts it first on the
command's ``PYTHONPATH`` (``prepare``). Every Python process of the command whose interpreter
can load this package's C core then runs the agent (``_code_agent_child``, loaded by its path
with the C core, nothing else of the package): a stack sampler of its own process, also in the
children it forks (multiprocessing's fork workers) and in multiprocessing's spawn workers,
that writes its record to ``<pid>.json`` in that directory as it exits. ``collect`` reads them
into the tracker (the snapshot's ``code_profile.processes``), merged by function in its views.

A child that cannot load it (another Python, ``-I``, ``-S``, a broken file) runs as before:
the ``sitecustomize.py`` catches everything. Then it runs the command's own
``sitecustomize``, if any, as Python would: imported from the rest of ``sys.path`` (its own
``__file__``, ``sys.modules["sitecustomize"]``), its errors reported by ``site`` ("Error in
sitecustomize; set PYTHONVERBOSE for traceback:").
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any, Dict, List, Set, Tuple

from . import _code_agent_child, _core, settings

AGENT_DIR = "RESOURCE_TRACKER_CODE_AGENT_DIR"
MAX_RECORD_BYTES = 64 << 20  # a process's record larger than this is not read

#: Python 2 and 3 syntax: any interpreter of the command compiles it (and may fail to run it)
SITECUSTOMIZE = """\
# resource-tracker's code profile agent (resource-tracker run --code). Never breaks a run.
import sys as _rt_sys
try:
    from importlib.machinery import SourceFileLoader as _rt_loader
    _rt_agent = type(_rt_sys)("_resource_tracker_agent")
    _rt_agent.__file__ = %(agent)r
    _rt_loader(_rt_agent.__name__, %(agent)r).exec_module(_rt_agent)
    _rt_sys.modules[_rt_agent.__name__] = _rt_agent
    _rt_agent.start(__file__, %(core)r, %(interval)r, %(nvml)r)
except Exception:
    pass
_rt_own = None
try:  # then the sitecustomize this one shadows, if any, as site.py would run it
    import os as _rt_os
    _rt_here = _rt_os.path.dirname(_rt_os.path.abspath(__file__))
    _rt_sys.path[:] = [p for p in _rt_sys.path if _rt_os.path.abspath(p or ".") != _rt_here]
    _rt_own = _rt_sys.modules.pop(__name__)
except Exception:
    pass
if _rt_own is not None:
    try:
        import sitecustomize  # its errors go to site.py, which reports them as without us
    except ImportError as _rt_error:
        if getattr(_rt_error, "name", None) != "sitecustomize":
            raise
        _rt_sys.modules[__name__] = _rt_own  # there is none: this one stays
"""


def prepare(interval: float) -> Tuple[Dict[str, str], str]:
    """A private directory with the agent's ``sitecustomize.py``, and the command's
    environment that loads it: ``(env, directory)``. Remove the directory with collect()."""
    directory = tempfile.mkdtemp(prefix="resource-tracker-code-")
    with open(os.path.join(directory, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write(
            SITECUSTOMIZE
            % {
                "agent": _code_agent_child.AGENT_FILE,
                "core": os.path.abspath(_core.__file__ or ""),
                "interval": float(interval),
                "nvml": settings.get("RESOURCE_TRACKER_NVML_LIBRARY"),
            }
        )
    path = settings.foreign("PYTHONPATH")
    changes = {"PYTHONPATH": directory + (os.pathsep + path if path else ""), AGENT_DIR: directory}
    return settings.child_environment(changes), directory


def collect(tracker: Any, directory: str) -> List[Dict[str, Any]]:
    """Reads the agents' records into the tracker (``code_profile.processes``) and removes the
    directory: the records read (a record that cannot be read is skipped)."""
    from .code_profile import validate_record

    records = []
    agent_files = {_code_agent_child.AGENT_FILE, os.path.join(directory, "sitecustomize.py")}
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError:
        names = []
    for name in names:
        try:
            path = os.path.join(directory, name)
            if os.path.getsize(path) > MAX_RECORD_BYTES:
                continue
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
            if isinstance(record, dict) and record.get("version") == 1:
                records.append(_workload_only(validate_record(record), agent_files))
        except (OSError, ValueError):
            continue
    shutil.rmtree(directory, ignore_errors=True)
    tracker._code_processes = records
    tracker.__dict__.pop("_code_stored", None)  # read again, with them
    return records


def _workload_only(record: Dict[str, Any], agent_files: Set[str]) -> Dict[str, Any]:
    """The record without the samples taken while the agent itself ran (a stack with a frame
    of ``agent_files``: the agent starting, in a fork child too): the agent's work is not
    the workload's. Its ids stay as they are (frames and stacks are kept)."""
    frames, stacks = record.get("frames") or [], record.get("stacks") or []
    agent: List[bool] = []  # per stack: a frame of the agent on it (a parent precedes its children)
    for parent, frame in stacks:
        agent.append(frames[frame][1] in agent_files or (parent >= 0 and agent[parent]))
    record["samples"] = [s for s in record.get("samples") or [] if not agent[s[2]]]
    return record
