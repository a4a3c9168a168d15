"""The code profile of a command's other Python processes: ``resource-tracker run --code``.

The CLI makes a private directory holding a ``sitecustomize.py`` and puts it first on the
command's ``PYTHONPATH`` (``prepare``). Every Python process of the command whose interpreter
can load this package's C core then runs the agent (``_code_agent_child``, loaded by its path
with the C core, nothing else of the package): a stack sampler of its own process, also in the
children it forks (multiprocessing's fork workers) and in multiprocessing's spawn workers,
that writes its record to ``<pid>.json`` in that directory as it exits. The CLI reads them
back (``cli/code_records.py``) into the tracker (the snapshot's ``code_profile.processes``),
merged by function in its views.

A child that cannot load it (another Python, ``-I``, ``-S``, a broken file) runs as before:
the ``sitecustomize.py`` catches everything. Then it runs the command's own
``sitecustomize``, if any, as Python would: imported from the rest of ``sys.path`` (its own
``__file__``, ``sys.modules["sitecustomize"]``), its errors reported by ``site`` ("Error in
sitecustomize; set PYTHONVERBOSE for traceback:").
"""

from __future__ import annotations

import os
from typing import Dict, Tuple

from . import _code_agent_child, _core, settings

AGENT_DIR = "RESOURCE_TRACKER_CODE_AGENT_DIR"

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
    _rt_agent.start(__file__, %(core)r, %(interval)r, %(nvml)r, %(amd)r)
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
    environment that loads it: ``(env, directory)``. ``cli/code_records.collect`` reads the
    records and removes it."""
    directory = make_directory()
    with open(os.path.join(directory, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write(
            SITECUSTOMIZE
            % {
                "agent": _code_agent_child.AGENT_FILE,
                "core": os.path.abspath(_core.__file__ or ""),
                "interval": float(interval),
                "nvml": settings.get("RESOURCE_TRACKER_NVML_LIBRARY"),
                "amd": settings.get("RESOURCE_TRACKER_AMD_SMI_LIBRARY"),
            }
        )
    path = settings.foreign("PYTHONPATH")
    changes = {"PYTHONPATH": directory + (os.pathsep + path if path else ""), AGENT_DIR: directory}
    return settings.child_environment(changes), directory


def make_directory() -> str:
    """A new private directory (mode 0700) under ``$TMPDIR`` (else /tmp) for the agents'
    records, made without ``tempfile`` (whose import a tracker's start does not pay)."""
    parent = settings.foreign("TMPDIR") or "/tmp"
    for _ in range(100):
        path = os.path.join(parent, "resource-tracker-code-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free directory name in {parent}")
