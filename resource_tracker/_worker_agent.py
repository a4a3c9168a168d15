"""A code-profiled tracker's own workers: the Python processes that its process forks or
starts with multiprocessing while it runs (multiprocessing's fork, spawn and forkserver
workers, concurrent.futures' process pools, Metaflow's ``parallel_map``) record their stacks
with the agent of ``resource-tracker run --code`` (``_code_agent_child``), and the tracker
reads their records when it stops: their code is in its ``code_profile()``, report and card,
with the processes it ran in (docs/code_profile.md, "Workers of a tracker").

Nothing of the job's environment is changed (no variable, no ``PYTHONPATH``):

- a forked child starts the agent from a fork hook (``os.register_at_fork``, registered once
  a process, doing nothing while no tracker covers its workers);
- a spawned or forkserver worker is told by the process object it unpickles: while the
  tracker runs, this process's multiprocessing configuration (``current_process()._config``,
  which every new ``Process`` copies and sends to its child) holds a :class:`_Token`, whose
  unpickling in the child starts the agent there. It is set only when multiprocessing is
  loaded (a tracker started before it is loads it then: :func:`_when_multiprocessing_loads`)
  and taken out at ``stop()``.

The records go to a private directory, made once a process (the first code-profiled
tracker: ~0.1-0.4 ms of file-system work) and removed at interpreter exit. At stop the
records are read and removed (the reader, and ``json``, loaded only when a worker wrote
one); a record of a process that started before the tracker (another tracker's worker that
ended late) is not this tracker's.

One tracker at a time covers its process's workers (the first code-profiled one started); in a
process that an agent already covers (``run --code``'s command, a worker of a tracked
process), the agent that covers it covers its children too.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import time
from typing import Any, Dict, Optional, Tuple

from . import _code_agent_child, _core, code_agent, settings

#: this process's agent directory: ``directory`` and ``pid`` (the process that made it; a
#: forked child does not remove it)
_site: Dict[str, Any] = {}
#: the tracker covering its workers now: ``owner`` (its id), ``pid`` (its process), ``since``
#: (when it started), ``interval``; empty when none
_state: Dict[str, Any] = {}
#: the key of the token in multiprocessing's process configuration
TOKEN_KEY = "resource_tracker_code_agent"


def start(tracker: Any) -> None:
    """Covers the workers of ``tracker`` (code-profiled, of this process and its children)
    from now on; nothing when another tracker or an agent covers them already, or the
    directory cannot be made (the tracker then profiles its own process, as before)."""
    if _state or _covered_by_an_agent() or not hasattr(os, "register_at_fork"):
        return
    try:
        directory = _directory()
    except OSError:
        return
    _state.update(
        owner=id(tracker), pid=os.getpid(), since=_now_minus_one_tick(tracker),
        interval=float(tracker.interval), directory=directory,
    )  # fmt: skip
    _set_token()


def _covered_by_an_agent() -> bool:
    """This process runs the agent already (``run --code``'s command, a tracked worker)."""
    return _code_agent_child._agent.get("pid") == os.getpid() or bool(
        settings.raw(code_agent.AGENT_DIR)
    )


def _directory() -> str:
    """This process's agent directory (made, and the fork hook registered, at the first call;
    made again when it is gone, e.g. a cleaner of /tmp removed it)."""
    if _site.get("pid") != os.getpid() or not os.path.isdir(_site["directory"]):
        first = not _site
        _site.update(directory=code_agent.make_directory(), pid=os.getpid())
        if first:
            os.register_at_fork(after_in_child=_start_in_fork_child)
            atexit.register(_at_exit)
    return str(_site["directory"])


def _now_minus_one_tick(tracker: Any) -> float:
    """A time before any worker of the tracker started (its start, else now, less a tick)."""
    return float(getattr(tracker, "start_time", None) or time.time()) - float(tracker.interval)


def finish(tracker: Any) -> None:
    """Stops covering ``tracker``'s workers (in its own process; nothing for another): the
    token taken out, the workers' records read into the tracker and removed. A worker still
    running now is not in its profile."""
    if _state.get("owner") != id(tracker) or _state.get("pid") != os.getpid():
        return
    _clear_token()
    since, directory = _state["since"], _state["directory"]
    _state.clear()
    try:
        written = any(name.endswith(".json") for name in os.listdir(directory))
    except OSError:
        written = False
    if written:  # the reader (and json) is loaded only when a worker wrote a record
        from ._agent_records import attach, take

        records, _ = take(directory, since)
        attach(tracker, records)


# -- forked children ----------------------------------------------------------------------


def _start_in_fork_child() -> None:
    """In a forked child of a covered process (a grandchild too): the agent of this process,
    writing its record into the directory at exit (``_code_agent_child``). Never raises into
    the fork."""
    if not _state:
        return
    try:
        _agent_settings(_state["directory"], _state["interval"])
        _code_agent_child._begin_in_fork_child()
    except Exception:
        pass


def _agent_settings(directory: str, interval: float) -> None:
    """The agent of this process writes to directory, sampling every interval seconds (a
    multiprocessing worker at SIGTERM too: ``_code_agent_child._on_multiprocessing_exit``)."""
    _code_agent_child._agent.update(
        core=_core, directory=directory, interval=interval,
        nvml=settings.get("RESOURCE_TRACKER_NVML_LIBRARY"),
        amd=settings.get("RESOURCE_TRACKER_AMD_SMI_LIBRARY"),
    )  # fmt: skip


# -- spawned and forkserver workers ---------------------------------------------------------


class _Token:
    """Sent to a spawned or forkserver worker inside its process object (multiprocessing's
    process configuration): unpickled there, it starts the agent of that worker."""

    def __init__(self, directory: str, interval: float) -> None:
        self.directory, self.interval = directory, interval

    def __reduce__(self) -> Tuple[Any, Tuple[str, float]]:
        return (start_in_spawned_worker, (self.directory, self.interval))


def start_in_spawned_worker(directory: str, interval: float) -> _Token:
    """In a worker unpickling its process object (before it runs its target): the agent of
    this process, unless one runs here already or the directory is gone (the tracker's
    process has exited). Never raises into the unpickling."""
    from multiprocessing import util  # loaded: this worker is unpickling its process object

    token = _Token(directory, interval)
    if _code_agent_child._agent.get("pid") == os.getpid() or not os.path.isdir(directory):
        return token
    try:
        if not _core.HAVE_PROCFS or _core.stacks_unsupported() is not None:
            return token
        _agent_settings(directory, interval)
        _code_agent_child._begin()
        os.register_at_fork(after_in_child=_code_agent_child._begin_in_fork_child)
        # the worker's bootstrap clears multiprocessing's finalizers, then runs its after-fork
        # hooks: the record's finalizer is registered there (a forkserver worker ends with
        # os._exit, after its finalizers; a spawn worker at its atexit too)
        util.register_after_fork(
            _code_agent_child._agent_key, lambda _: _code_agent_child._on_multiprocessing_exit()
        )
    except Exception:
        _code_agent_child._agent["pid"] = None
    return token


def _process_config() -> Optional[Dict[str, Any]]:
    """multiprocessing's configuration of this process, None when it is not loaded."""
    process = sys.modules.get("multiprocessing.process")
    current = getattr(process, "_current_process", None)
    config = getattr(current, "_config", None)
    return config if isinstance(config, dict) else None


def _set_token() -> None:
    config = _process_config()
    if config is None:
        _when_multiprocessing_loads()
    elif _state:
        config[TOKEN_KEY] = _Token(_state["directory"], _state["interval"])


def _clear_token() -> None:
    config = _process_config()
    if config is not None:
        config.pop(TOKEN_KEY, None)
    _Loaded.remove()


class _Loaded:
    """A finder that only watches (it finds nothing): at the first import after
    ``multiprocessing.process`` has loaded (``multiprocessing`` imports its ``reduction``
    right after it, before any process can be made) the token is set. On ``sys.meta_path``
    from the start of a tracker that found multiprocessing not loaded until it loads or the
    tracker stops: one call a module imported meanwhile."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> None:
        if _process_config() is not None:
            cls.remove()
            _set_token()

    @classmethod
    def remove(cls) -> None:
        try:
            sys.meta_path.remove(cls)
        except ValueError:
            pass


def _when_multiprocessing_loads() -> None:
    if _Loaded not in sys.meta_path:
        sys.meta_path.insert(0, _Loaded)


def _at_exit() -> None:
    """This process's directory is removed as it exits (not by a forked child's exit)."""
    if _site.get("pid") == os.getpid():
        shutil.rmtree(_site["directory"], ignore_errors=True)
        _site.clear()
