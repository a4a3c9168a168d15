"""The column registry (csrc/columns.c, read by resource_tracker.registry): one entry per
column, and the sampler, stats() and the rounded views all follow it."""

from __future__ import annotations

import time

import pytest

from resource_tracker import ResourceTracker, registry
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from resource_tracker.rounding import COLUMN_DIGITS


def spin(seconds: float) -> None:
    """Burns this thread's CPU time (not wall time: longer on a busy machine)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_registry_covers_both_tables_in_order():
    assert tuple(c.name for c in registry.PROCESS) == PROCESS_COLUMNS
    assert tuple(c.name for c in registry.SYSTEM) == SYSTEM_COLUMNS
    assert PROCESS_COLUMNS[0] == SYSTEM_COLUMNS[0] == "timestamp"
    for c in registry.COLUMNS:
        assert c.label and c.fold in {"latest", "sum", "peak", "rate"}
        assert c.aggregate in {"none", "dist", "sum", "max"}
        assert c.resource in {None, "cpu", "memory", "gpu", "vram"}
        assert COLUMN_DIGITS[c.name] == c.digits
    assert registry.column("system", "net_sent_bytes").unit == "B"
    assert registry.column("process", "memory").unit == "KiB"
    assert registry.column("process", "gpu_vram").resource == "vram"
    with pytest.raises(KeyError, match="no column 'nope' in the process table"):
        registry.column("process", "nope")
    with pytest.raises(ValueError, match="the tables are"):
        registry.columns("gpu")


def test_stats_report_exactly_the_registry_aggregates(backend):
    """A real tracked run: stats() has one entry per aggregated column, with its fields."""
    with ResourceTracker(interval=0.05) as tracker:
        spin(0.3)
        tracker.wait_for_samples(3, timeout=20)
    stats = tracker.stats()
    expected = {c.key: c.fields for c in registry.stat_columns()}
    got = {k: v for k, v in stats.items() if k in expected}
    assert set(got) == set(expected)
    for key, fields in expected.items():
        assert set(fields) <= set(got[key]), key


def test_sum_columns_add_up_over_the_run(backend):
    """A sum-folded column's total in stats() is the sum of its rows (nothing lost in folds)."""
    with ResourceTracker(interval=0.05) as tracker:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.5:
            spin(0.05)
        tracker.wait_for_samples(3, timeout=20)
    stats = tracker.stats()
    for c in registry.stat_columns():
        if c.aggregate == "sum":
            table = tracker.process_metrics if c.table == "process" else tracker.system_metrics
            assert stats[c.key]["sum"] == pytest.approx(sum(table[c.name]), rel=1e-9, abs=1e-6)
