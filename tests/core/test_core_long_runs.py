"""Long runs: what a 24 h run at 1 s (86,400 samples) holds, and the memory stats(),
snapshot(), dumps() and loads() need beyond it (issue 19, "Long runs"; bench/bench_long.py
prints the same figures at 864,000 samples, with times).

The run is a real dumps() text loaded by ResourceTracker.loads(), as a saved run is; memory is
what tracemalloc sees (Python objects and the C core's PyMem buffers). Bounds have room for the
interpreter's own allocations; none is about speed. A stopped real tracker checks that the
samples reach Python as views of the sampler's storage, once.
"""

from __future__ import annotations

import gc
import json
import math
import tracemalloc
from array import array

import pytest

from resource_tracker import ResourceTracker
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS

ROWS = 86_400
SAMPLES_BYTES = ROWS * (len(PROCESS_COLUMNS) + len(SYSTEM_COLUMNS)) * 8
MIB = 1024 * 1024


def _long_run_text(rows=ROWS):
    """dumps() text of a stopped 24 h run at 1 s: waves in every column."""
    start = 1_790_000_000.0
    wave = array("d", (0.5 + 0.5 * math.sin(i / 3600.0) + (i % 7) * 0.01 for i in range(rows)))
    proc = {name: array("d", (1.0 + w for w in wave)) for name in PROCESS_COLUMNS}
    syst = {name: array("d", (2.0 + w for w in wave)) for name in SYSTEM_COLUMNS}
    proc["timestamp"] = syst["timestamp"] = array("d", (start + i + 1.0 for i in range(rows)))
    proc["memory"] = array("d", (2e6 + 1e6 * w for w in wave))
    snap = {
        "format": "resource-tracker-snapshot",
        "format_version": 1,
        "pid": 4242,
        "interval": 1.0,
        "start_time": start,
        "stop_time": start + rows,
        "track_processes": True,
        "track_system": True,
        "process_metrics": proc,
        "system_metrics": syst,
    }
    return ResourceTracker.from_snapshot(snap).dumps()


@pytest.fixture(scope="module")
def text():
    return _long_run_text()


def _extra(fn):
    """(result, peak bytes fn needed beyond what was allocated before it)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak - base


def test_a_day_at_one_second_holds_under_25_mib(text):
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracker = ResourceTracker.loads(text)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert tracker.n_samples == ROWS
    # the samples themselves are 21.75 MiB: held is them (measured: 21.8 MiB), not copies
    assert SAMPLES_BYTES * 0.95 <= held <= 25 * MIB


def test_stats_reads_the_stored_columns_without_copying_them(text):
    tracker = ResourceTracker.loads(text)
    stats, extra = _extra(tracker.stats)
    assert stats["timestamp"]["samples"] == ROWS
    assert extra < 0.1 * SAMPLES_BYTES  # before: 1.7x (every column copied, then sorted)
    # computed once: the second call builds only the result dict
    again, extra_again = _extra(tracker.stats)
    assert again == stats and again is not stats
    assert extra_again < 256 * 1024
    assert tracker.recommend_resources() == ResourceTracker.loads(text).recommend_resources()


def test_process_metrics_is_not_copied_on_each_access(text):
    tracker = ResourceTracker.loads(text)
    first = tracker.process_metrics
    second, extra = _extra(lambda: tracker.system_metrics and tracker.process_metrics)
    assert second.column_array("memory") is first.column_array("memory")
    assert extra < 64 * 1024
    assert second is not first  # a frame of its own: changing it leaves the tracker alone
    second["memory"] = 0.0
    assert tracker.process_metrics.column_array("memory")[5] == first.column_array("memory")[5]


@pytest.mark.parametrize("operation", ["snapshot", "dumps", "loads"])
def test_persistence_needs_at_most_twice_the_samples(text, operation):
    tracker = ResourceTracker.loads(text)
    run = {
        "snapshot": tracker.snapshot,
        "dumps": tracker.dumps,
        "loads": lambda: ResourceTracker.loads(text),
    }[operation]
    result, extra = _extra(run)
    # base64 text of float64 is 4/3 of the samples: the result itself; before: 4.7x, 4.9x, 3.0x
    assert extra <= 2 * SAMPLES_BYTES, f"{operation}: {extra / SAMPLES_BYTES:.2f}x the samples"
    if operation == "dumps":
        assert result == text
        assert json.loads(result)["process_metrics"]["rows"] == ROWS
    if operation == "snapshot":
        assert ResourceTracker.from_snapshot(result).stats() == tracker.stats()


def test_a_stopped_tracker_hands_out_its_own_storage():
    """A real run: after stop() the columns are read-only views of the C sampler's tables
    (no copy), the same ones on every access, and they outlive the tracker object."""
    tracker = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    assert tracker.wait_for_samples(3, timeout=30)
    tracker.stop()
    df = tracker.process_metrics
    col = df.column_array("timestamp")
    assert isinstance(col, memoryview) and col.readonly and col.format == "d"
    assert tracker.process_metrics.column_array("timestamp") is col
    with pytest.raises(TypeError):
        col[0] = 0.0
    n = tracker.n_samples
    assert len(col) == n and list(col) == sorted(col)
    stats = tracker.stats()
    assert stats["timestamp"]["samples"] == n
    del tracker
    gc.collect()
    assert len(df) == n and df["timestamp"][0] == col[0]  # the view keeps the storage alive
    import pickle

    assert pickle.loads(pickle.dumps(df)) == df
