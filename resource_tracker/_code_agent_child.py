"""The code profile agent inside each Python process of ``resource-tracker run --code``.

The agent's ``sitecustomize.py`` (``code_agent.prepare``) loads this file by its path and
the C core by its path: nothing of the package is imported (its ``__init__`` alone costs more
than a bare interpreter's start), and this module imports only what a bare interpreter has
loaded already (``json`` at exit, when there is a record to write). A child costs its
interpreter a C sampler of its own process that records its stacks (``start``), and at exit
the record written to ``<pid>.json`` in the agent's directory (``write``); the CLI reads the
records with the full package (``code_agent.collect``).

The agent's own work is not the workload's: the stack capture stops before the exit work, and
the CLI drops the samples taken while the agent started (``AGENT_FILE`` on their stack).
"""

from __future__ import annotations

import _thread
import atexit
import os
import sys

TYPE_CHECKING = False  # typing is not imported here (its start-up cost); mypy takes it as True
if TYPE_CHECKING:
    from typing import Any, Dict

    from . import _core

#: the record columns an agent keeps of its own process table (the attribution's)
COLUMNS = ("timestamp", "utime", "stime", "memory", "gpu_usage")
#: this file, as the stack samples name it (``code_agent.collect`` drops their samples)
AGENT_FILE = os.path.abspath(__file__)

_agent: Dict[str, Any] = {}


def start(
    site_file: str,
    core_path: str,
    interval: float,
    nvml_library: str | None,
    amd_library: str | None = None,
) -> None:
    """Starts the agent in this process (from the agent's sitecustomize, ``site_file``), with
    the C core at ``core_path``. Nothing happens when this interpreter cannot load that core
    (another Python version or build) or the run is over (its directory removed)."""
    directory = os.path.dirname(os.path.abspath(site_file))
    if not os.path.isdir(directory):
        return
    core = _load_core(core_path)
    if core is None or not core.HAVE_PROCFS or core.stacks_unsupported() is not None:
        return
    _agent.update(
        core=core, directory=directory, interval=interval, nvml=nvml_library, amd=amd_library
    )
    _begin()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_begin_in_fork_child)
    if "--multiprocessing-fork" in sys.argv:  # a spawn worker: it ends with os._exit
        _on_multiprocessing_exit()


def _load_core(path: str) -> Any:
    """The C core at ``path``, loaded under its own name but not put in ``sys.modules`` (the
    command's own ``import resource_tracker`` loads its own); None when this interpreter's
    extension suffixes do not fit it."""
    from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, ModuleSpec

    if not path.endswith(tuple(EXTENSION_SUFFIXES)):
        return None
    loader = ExtensionFileLoader("resource_tracker._core", path)
    module = loader.create_module(ModuleSpec("resource_tracker._core", loader, origin=path))
    loader.exec_module(module)
    return module


def _begin(forked: bool = False) -> None:
    """A C sampler of this process alone that records its stacks; its record written at
    exit (once per process: a forked child starts its own). The GPU library (NVML, whose
    start can cost a GPU machine's process more than its whole run) is loaded at the first
    row: a process that ends before its first tick never loads it (AMD's library too)."""
    core = _agent["core"]
    sampler = core.Sampler(
        os.getpid(), _agent["interval"], children=False, track_system=False,
        nvml_library=_agent["nvml"], amd_library=_agent["amd"], gpu_from_first_row=True,
    )  # fmt: skip
    sampler.record_stacks(_main_ident())
    sampler.start()
    _agent.update(sampler=sampler, pid=os.getpid(), unwritten=True, lock=_thread.allocate_lock())
    atexit.register(write)
    if forked:
        _write_at_os_exit()
    if forked and "multiprocessing.util" in sys.modules:  # a fork worker: os._exit too
        from multiprocessing import util

        util.register_after_fork(_agent_key, lambda _: _on_multiprocessing_exit())


def _write_at_os_exit() -> None:
    """A forked child often ends with ``os._exit`` (no atexit): multiprocessing's fork
    workers, Metaflow's ``parallel_map``, a bare ``os.fork()``. In this child alone (a copy of
    its parent), ``os._exit`` writes the record first, then exits with the same status."""
    real_exit = _agent.setdefault("real_exit", os._exit)  # the interpreter's, in a grandchild too

    def _exit(status: int) -> None:
        try:
            write()
        finally:
            real_exit(status)

    os._exit = _exit  # type: ignore[assignment]


def _begin_in_fork_child() -> None:
    """The agent of a forked child; a child where it cannot start runs without it (no
    "Exception ignored" on the command's stderr), and so does one about to exec."""
    try:
        if _forked_to_exec():
            _agent["pid"] = None
            return
        _begin(forked=True)
    except Exception:
        _agent["pid"] = None  # the parent's sampler is not this process's: nothing to write


def _forked_to_exec() -> bool:
    """This fork is subprocess's with a ``preexec_fn`` (the fork hooks run there only then):
    the child execs next, no sampler is worth starting in it (under ``run --code`` a Python it
    execs loads the agent by its ``PYTHONPATH``)."""
    frame: Any = sys._getframe(1)
    for _ in range(4):  # the hooks' callers: this module's and _worker_agent's, then the fork's
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "_execute_child" and code.co_filename.endswith("subprocess.py"):
            return True
        frame = frame.f_back
    return False


def _main_ident() -> int:
    """The interpreter's main thread (as resource_tracker._code sees it)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        return int(threading.main_thread().ident or 0)
    return _thread.get_ident()


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
    # SIGTERM is answered from the C core's own thread (csrc/term_hook.h), not by a Python
    # handler: one that comes just before the worker blocks in its idle wait for a task would
    # run only when that wait ends, never, and Pool.terminate() would wait for ever.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        _agent["core"].term_hook(_answer_term)


def _answer_term() -> bool:
    """SIGTERM, from the agent's own thread: the record written (or, when the worker's own
    exit writes it, once that is done), then the signal's default course."""
    write()
    return True


def write() -> None:
    """Stops this process's sampler and writes its record (once, in its own process; from
    any thread: a second caller waits for the first one's record)."""
    if _agent.get("pid") != os.getpid():
        return
    with _agent["lock"]:
        if _agent.pop("unwritten", None) is None:
            return
        try:
            _write_record(_agent["core"], _agent["sampler"], _agent["directory"])
        except Exception:
            pass  # this process's profile is lost, not its exit (no "Exception ignored")


def _write_record(core: Any, sampler: _core.Sampler, directory: str) -> None:
    """The record of this process to ``<pid>.json``: nothing for a process whose stacks were
    never sampled (it ended before its first tick: nothing to attribute)."""
    core.stop_stacks()  # first: the exit work is not sampled
    sampler.stop()
    record = sampler.stacks()
    if not record or not record.get("samples"):
        return
    views = sampler.column_views("process")
    if views is None:  # not stopped (stop() gave up on its thread): no final rows to write
        return
    columns = dict(zip(core.PROCESS_COLUMNS, views))
    record.update(
        status="recorded",
        note=None,
        processes=[],
        pid=os.getpid(),
        command=list(sys.argv)[:20],
        start_time=sampler.start_time or None,
        columns={name: columns[name].tolist() for name in COLUMNS},
    )
    import json

    path = os.path.join(directory, f"{os.getpid()}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:  # a full disk: caught by write()
        json.dump(record, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)
