"""The code profile of a command's other Python processes: ``resource-tracker run --code``.

The CLI makes a private directory holding a ``sitecustomize.py`` and puts it first on the
command's ``PYTHONPATH`` (``prepare``). Every Python process of the command that can import
this package then runs the same stack sampler on itself (``start``), also in the children it
forks (multiprocessing's fork workers) and in multiprocessing's spawn workers, and writes its
record to ``<pid>.json`` in that directory as it exits. The CLI reads them back
(``cli/code_records.py``) into the tracker (the snapshot's ``code_profile.processes``),
merged by function in its views.

A child that cannot load it (another Python, an old one, ``-I``, ``-S``, a broken import)
runs as before: the ``sitecustomize.py`` catches everything, and then loads the
``sitecustomize`` it shadows, if any.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import tempfile
from typing import Any, Dict, Tuple

from . import settings

AGENT_DIR = "RESOURCE_TRACKER_CODE_AGENT_DIR"
#: the record columns an agent keeps of its own process table (the attribution's)
COLUMNS = ("timestamp", "utime", "stime", "memory", "gpu_usage")

SITECUSTOMIZE = """\
# resource-tracker's code profile agent (resource-tracker run --code). Never breaks a run.
try:
    import resource_tracker.code_agent as _rt_agent
    _rt_agent.start(%(interval)r)
except Exception:
    pass
try:  # then the sitecustomize this one shadows, if any
    import os as _rt_os, sys as _rt_sys
    from importlib.machinery import PathFinder as _rt_finder
    _rt_here = _rt_os.path.dirname(_rt_os.path.abspath(__file__))
    _rt_path = [p for p in _rt_sys.path if _rt_os.path.abspath(p or ".") != _rt_here]
    _rt_spec = _rt_finder.find_spec("sitecustomize", _rt_path)
    if _rt_spec is not None and _rt_spec.origin and _rt_spec.origin.endswith(".py"):
        with open(_rt_spec.origin) as _rt_file:
            exec(compile(_rt_file.read(), _rt_spec.origin, "exec"), globals())
except Exception:
    pass
"""


def prepare(interval: float) -> Tuple[Dict[str, str], str]:
    """A private directory with the agent's ``sitecustomize.py``, and the command's
    environment that loads it: ``(env, directory)`` (``cli/code_records.collect`` reads the
    records and removes it)."""
    directory = tempfile.mkdtemp(prefix="resource-tracker-code-")
    with open(os.path.join(directory, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write(SITECUSTOMIZE % {"interval": float(interval)})
    path = settings.foreign("PYTHONPATH")
    changes = {"PYTHONPATH": directory + (os.pathsep + path if path else ""), AGENT_DIR: directory}
    return settings.child_environment(changes), directory


# -- in the command's Python processes --------------------------------------------------------

_agent: Dict[str, Any] = {}


def start(interval: float) -> None:
    """Starts the agent in this process (from the sitecustomize), when the CLI asked for it."""
    directory = settings.get(AGENT_DIR)
    if not directory or not os.path.isdir(directory):
        return
    _begin(directory, interval)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: _begin(directory, interval, forked=True))
    if "--multiprocessing-fork" in sys.argv:  # a spawn worker: it ends with os._exit
        _on_multiprocessing_exit()


def _begin(directory: str, interval: float, forked: bool = False) -> None:
    """A tracker of this process alone, recording its stacks; its record written at exit."""
    from .tracker import ResourceTracker

    tracker = ResourceTracker(
        interval=interval, children=False, track_system=False, discover_server=False,
        discover_cloud=False, code_profile=True,
    )  # fmt: skip
    _agent.update(tracker=tracker, pid=os.getpid(), directory=directory, written=False)
    atexit.register(write)
    if forked and "multiprocessing.util" in sys.modules:  # a fork worker: os._exit too
        from multiprocessing import util

        util.register_after_fork(_agent_key, lambda _: _on_multiprocessing_exit())


class _Key:
    """An object that lives as long as the process (multiprocessing's after-fork registry
    holds it weakly)."""


_agent_key = _Key()


def _on_multiprocessing_exit() -> None:
    """A multiprocessing worker ends with os._exit (no atexit), after its finalizers, or by
    SIGTERM (Pool.terminate(), Pool's ``with`` block): the record is written at both; the
    signal then takes its default course (the same exit status as without the agent)."""
    import signal
    from multiprocessing import util

    util.Finalize(None, write, exitpriority=-100)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:

        def on_term(signum: int, frame: Any) -> None:
            if _agent.get("writing"):  # the worker's own exit is writing: it ends after that
                _agent["term_pending"] = True
                return
            write()
            _terminate()

        signal.signal(signal.SIGTERM, on_term)


def _terminate() -> None:
    """SIGTERM's default course, as without the agent."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def write() -> None:
    """Stops this process's agent tracker and writes its record (once, in its own process)."""
    if _agent.get("written") or _agent.get("pid") != os.getpid():
        return
    _agent["written"] = _agent["writing"] = True
    try:
        _write_record(_agent["tracker"], _agent["directory"])
    finally:
        _agent["writing"] = False
    if _agent.get("term_pending"):
        _terminate()


def _write_record(tracker: Any, directory: str) -> None:
    tracker.stop()
    record = tracker._code_record()
    if not record or record.get("status") != "recorded":
        return
    columns = tracker._table_columns("process")
    record = dict(
        record,
        pid=os.getpid(),
        command=list(sys.argv)[:20],
        start_time=tracker.start_time,
        columns={name: [float(v) for v in columns[name]] for name in COLUMNS},
    )
    path = os.path.join(directory, f"{os.getpid()}.json")
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f, separators=(",", ":"))
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # a full disk, a removed directory: this process's profile is lost, not the run
