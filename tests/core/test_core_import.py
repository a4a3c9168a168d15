"""What ``import resource_tracker`` and a tracker's run load: only what constructing, starting
and stopping a ResourceTracker needs (issue 16: import time and memory back to their figures).

Each check runs in a fresh interpreter started with ``-S`` (no site: nothing but the
interpreter's own start-up modules is loaded before the import) and reads ``sys.modules``: a
behaviour, not a speed. The public names that load on first use (PEP 562) must import exactly
as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import resource_tracker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: The package's modules loaded by ``import resource_tracker``: the tracker and what it
#: needs to be constructed, started and stopped.
IMPORTED_WITH_THE_PACKAGE = {
    "resource_tracker",
    "resource_tracker._core",
    "resource_tracker._version",
    "resource_tracker._background",
    "resource_tracker._code",
    "resource_tracker._code_agent_child",
    "resource_tracker._worker_agent",
    "resource_tracker.code_agent",
    "resource_tracker._identity",
    "resource_tracker._launch",
    "resource_tracker._results",
    "resource_tracker._tracked",
    "resource_tracker.settings",
    "resource_tracker.tracker",
}
#: What a run adds: the cgroup readers (v2 and v1), imported by the worker thread that reads
#: the start figures, and their bounded reader of regular files.
LOADED_BY_A_RUN = {
    "resource_tracker._regular_file",
    "resource_tracker._cgroup_v1",
    "resource_tracker._cgroup_fs",
    "resource_tracker._cgroup_read",
    "resource_tracker._cgroup_limits",
    "resource_tracker.cgroup_usage",
    "resource_tracker._tree_cgroup",
}

#: Standard modules a tracker must not load to construct, start, sample and stop (each
#: costs the import milliseconds or memory; they belong to reports, exports, the CLI...).
#: ``typing`` (and the ``re``, ``collections`` and ``enum`` it imports) is not among them:
#: the package's modules annotate with it at run time (issue 26: no ``TYPE_CHECKING =
#: False`` work-arounds); what it costs is measured in bench/bench_import.py.
HEAVY = {
    "json",
    "argparse",
    "sqlite3",
    "csv",
    "urllib",
    "urllib.request",
    "http.client",
    "subprocess",
    "threading",
    "dataclasses",
    "datetime",
    "base64",
    "inspect",
    "numbers",
    "html",
    "importlib.util",
}

_PROBE = """
import sys
sys.path.insert(0, {root!r})
before = set(sys.modules)
import resource_tracker
imported = sorted(set(sys.modules) - before)
tracker = resource_tracker.ResourceTracker(interval=0.01, discover_cloud=False)
tracker.wait_for_samples(5, timeout=30)
tracker.stop()
ran = sorted(set(sys.modules) - before)
import json
print(json.dumps({{"before": sorted(before), "imported": imported, "ran": ran}}))
"""


@pytest.fixture(scope="module")
def loaded():
    """The modules of a fresh ``python -S``: before, after the import, after a short run."""
    env = dict(os.environ)
    env.pop("RESOURCE_TRACKER_METHOD", None)  # the default backend of this build
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PROBE.format(root=ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_loads_only_the_tracker_and_what_it_starts_with(loaded):
    ours = {m for m in loaded["imported"] if m.split(".")[0] == "resource_tracker"}
    assert ours == IMPORTED_WITH_THE_PACKAGE


def test_import_and_a_run_load_no_heavy_standard_module(loaded):
    """Neither the import nor a tracker's whole run (construct, start, 5 samples, stop)
    loads a heavy module that was not loaded before (``-S``: none of them was)."""
    if not resource_tracker._core.HAVE_PROCFS:
        pytest.skip("without procfs in the build the psutil sampler runs: it loads psutil")
    assert not HEAVY & set(loaded["before"]), "the probe should start without them"
    assert not HEAVY & set(loaded["imported"])
    assert not HEAVY & set(loaded["ran"])
    ours_after_run = {m for m in loaded["ran"] if m.split(".")[0] == "resource_tracker"}
    assert ours_after_run <= IMPORTED_WITH_THE_PACKAGE | LOADED_BY_A_RUN


def test_every_public_name_imports_as_before():
    """``from resource_tracker import X`` for each name of __all__, in a fresh interpreter,
    gives the object of the module that defines it; dir() lists them; an unknown name is an
    AttributeError naming it."""
    code = f"""
import sys
sys.path.insert(0, {ROOT!r})
import resource_tracker
from resource_tracker import *
from resource_tracker import PidTracker, SystemTracker, TinyDataFrame
from resource_tracker.csv_trackers import PidTracker as P, SystemTracker as S
from resource_tracker.tiny_data_frame import TinyDataFrame as T
assert (PidTracker, SystemTracker, TinyDataFrame) == (P, S, T)
for name in resource_tracker.__all__:
    assert getattr(resource_tracker, name) is not None, name
    assert name in dir(resource_tracker), name
    assert name in globals(), name
try:
    resource_tracker.NoSuchThing
except AttributeError as exc:
    assert "NoSuchThing" in str(exc), exc
else:
    raise AssertionError("no AttributeError")
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_the_lazy_names_are_the_same_objects_in_this_process():
    from resource_tracker.csv_trackers import PidTracker, SystemTracker
    from resource_tracker.tiny_data_frame import TinyDataFrame

    assert resource_tracker.PidTracker is PidTracker
    assert resource_tracker.SystemTracker is SystemTracker
    assert resource_tracker.TinyDataFrame is TinyDataFrame
