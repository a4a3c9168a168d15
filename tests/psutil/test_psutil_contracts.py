"""The tracker's contract on both backends (psutil's ``test_contracts`` habit): every public
method and property of ``ResourceTracker`` answers with the same types, and every dict with
the same keys (nested), whether the C sampler or the psutil backend read the machine. One
real tracked run per backend, shared by the module's tests."""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys

import pytest
from build_variant import HAVE_PROCFS

from resource_tracker import ResourceTracker, TinyDataFrame

pytest.importorskip("psutil", reason="the contract compares the psutil backend with the C one")
if not HAVE_PROCFS:
    pytest.skip(
        "the C sampler: this build of the core has no procfs readers", allow_module_level=True
    )

METHODS = {"c": "procfs", "psutil": "psutil"}


def shape(value, depth=0):
    """What a caller relies on: the type, a dict's keys with their values' shapes, a
    sequence's element types, a table's columns, a dataclass's fields."""
    if depth > 6:
        return type(value).__name__
    if isinstance(value, dict):
        return {str(k): shape(v, depth + 1) for k, v in value.items()}
    if isinstance(value, TinyDataFrame):
        return ("TinyDataFrame", tuple(value.columns))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, shape(dataclasses.asdict(value), depth + 1))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, sorted({type(v).__name__ for v in value} - {"NoneType"}))
    return type(value).__name__


def _numbers_alike(a, b):
    """int and float are one kind of number in a figure (a count may read 0 or 0.0)."""
    numeric = ("int", "float")
    return a == b or (a in numeric and b in numeric)


@pytest.fixture(scope="module")
def runs():
    """{backend: a stopped real run tracking this process, spinning a little}."""
    out = {}
    for name, method in METHODS.items():
        tracker = ResourceTracker(interval=0.05, method=method)
        end = os.times().elapsed + 0.3
        while os.times().elapsed < end:
            pass
        tracker.wait_for_samples(4, timeout=30)
        tracker.stop()
        out[name] = tracker
    return out


def _public(cls):
    return sorted(n for n in dir(cls) if not n.startswith("_"))


#: how each public method is called on a stopped run (a classmethod: on the class, fed from it)
CALLS = {
    "stats": lambda t, tmp: t.stats(),
    "recommend_resources": lambda t, tmp: t.recommend_resources(),
    "recommend_server": lambda t, tmp: t.recommend_server(),
    "data_quality": lambda t, tmp: t.data_quality(),
    "get_combined_metrics": lambda t, tmp: t.get_combined_metrics(),
    "snapshot": lambda t, tmp: t.snapshot(),
    "dumps": lambda t, tmp: t.dumps(),
    "summary": lambda t, tmp: t.summary(lookup_server=False),
    "report": lambda t, tmp: t.report(),
    "export_report": lambda t, tmp: t.export_report(),
    "wait_for_samples": lambda t, tmp: t.wait_for_samples(1, timeout=1),
    "stop": lambda t, tmp: t.stop(),
    "from_snapshot": lambda t, tmp: shape(ResourceTracker.from_snapshot(t.snapshot()).stats()),
    "loads": lambda t, tmp: shape(ResourceTracker.loads(t.dumps()).stats()),
    "code_profile": lambda t, tmp: t.code_profile(),
    "code_timeline": lambda t, tmp: t.code_timeline(),
    "code_between": lambda t, tmp: t.code_between(0, t.stop_time),
    "code_peak": lambda t, tmp: t.code_peak(),
    "code_profile_status": lambda t, tmp: t.code_profile_status(),
    "run": lambda t, tmp: ResourceTracker.run(
        [sys.executable, "-c", "pass"], interval=0.05, method=t.method
    ).tracker.stats(),
}
#: What only the C sampler measures, documented as such (docs/metrics.md, "The psutil
#: backend": no kernel high-water mark; the tree's source is the C sampler's account): keys
#: present on the C backend, absent (or None) on psutil's.
C_ONLY = {"process_memory_hwm", "tree_source", "memory_hwm"}
#: The code profile's records (docs/code_profile.md): the stacks are taken at the C sampler's
#: ticks, so on psutil's a record says why there is none (``status``, ``note``) or is None;
#: its tables have the same columns on both backends (compared as the other calls).
CODE_RECORDS = {"code", "code_profile", "code_peak", "code_profile_status"}
#: starting a stopped run is refused the same way on both backends
REFUSED = {"start": RuntimeError}


def test_every_public_method_is_covered():
    methods = {
        n for n in _public(ResourceTracker) if not isinstance(getattr(ResourceTracker, n), property)
    }
    assert methods == set(CALLS) | set(REFUSED)


def test_every_property_has_the_same_shape_on_both_backends(runs):
    for name in _public(ResourceTracker):
        if isinstance(inspect.getattr_static(ResourceTracker, name), property):
            c, p = (shape(getattr(runs[b], name)) for b in METHODS)
            _assert_same(name, c, p)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_public_method_answers_alike_on_both_backends(runs, name, tmp_path):
    c, p = (shape(CALLS[name](runs[b], tmp_path)) for b in METHODS)
    _assert_same(name, c, p)


def test_refused_calls_are_refused_alike(runs):
    for name, error in REFUSED.items():
        for backend in METHODS:
            with pytest.raises(error):
                getattr(runs[backend], name)()


def _assert_same(name, c, p, where=""):
    key = where.rsplit("[", 1)[-1].strip("]'") if where else name
    if key in CODE_RECORDS and (p == "NoneType" or isinstance(p, dict)):
        assert p == "NoneType" or "status" in p, (name + where, p)
        assert c == "NoneType" or isinstance(c, dict), (name + where, c)
    elif name in C_ONLY:
        assert p == "NoneType", (name, p)
    elif isinstance(c, dict) and isinstance(p, dict):
        assert set(c) - C_ONLY == set(p) - C_ONLY, (name + where, sorted(set(c) ^ set(p)))
        for key in set(p) & C_ONLY:
            assert p[key] == "NoneType", (name + where, key, p[key])
        for key in set(p) - C_ONLY:
            _assert_same(name, c[key], p[key], f"{where}[{key!r}]")
    elif isinstance(c, tuple) and isinstance(p, tuple) and len(c) == len(p) == 2:
        _assert_same(name, c[0], p[0], where)
        _assert_same(name, c[1], p[1], where + ".")
    elif isinstance(c, list) and isinstance(p, list):
        assert c == p or not (c and p), (name + where, c, p)
    else:
        assert _numbers_alike(c, p), (name + where, c, p)
