"""One CPU-usage rule: the exporter folds the rows between two points by the C sampler's own
rule (csrc/row_rules.c through ``_core.fold_rows``), so the exported CPU is the stored one:
over at least one clock tick, never above the CPUs."""

from __future__ import annotations

import threading
import time

import pytest

from resource_tracker import ResourceTracker, _core
from resource_tracker.export.metrics import cpu_count, fold_rows
from resource_tracker.names import SYSTEM_COLUMNS


@pytest.fixture(scope="module")
def stored():
    """A real run's process table (one thread spinning beside the sampler)."""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin)
    with ResourceTracker(interval=0.05) as tracker:
        spinner.start()
        tracker.wait_for_samples(8, timeout=30)
        stop.set()
        spinner.join()
    df = tracker.process_metrics
    return {name: list(df[name]) for name in df.columns}


def _rows(table, first, last):
    return {name: values[first:last] for name, values in table.items()}


def test_a_point_of_one_row_exports_the_stored_cpu(stored):
    t = stored["timestamp"]
    for k in range(1, len(t)):
        point = fold_rows("process", _rows(stored, k, k + 1), previous_time=t[k - 1])
        assert point["cpu_usage"] == stored["cpu_usage"][k]


def test_a_point_of_many_rows_exports_their_time_weighted_stored_cpu(stored):
    """The CPU seconds of the rows over the time they cover, which is the stored rows' mean
    weighted by their intervals (a stored rate is over the monotonic interval, a timestamp is
    wall-clock time read beside it: the two differ by the jitter between the reads)."""
    t, cpu = stored["timestamp"], stored["cpu_usage"]
    point = fold_rows("process", _rows(stored, 1, len(t)), previous_time=t[0])
    seconds = sum(stored["utime"][1:]) + sum(stored["stime"][1:])
    assert point["cpu_usage"] == pytest.approx(min(seconds / (t[-1] - t[0]), cpu_count("process")))
    weighted = sum(cpu[k] * (t[k] - t[k - 1]) for k in range(1, len(t))) / (t[-1] - t[0])
    if max(cpu) < cpu_count("process"):  # no stored row was capped
        assert point["cpu_usage"] == pytest.approx(weighted, rel=0.02, abs=0.005)


def test_the_exported_cpu_is_capped_and_floored_as_the_stored_rows():
    """Counter jitter: the machine's CPU seconds read over an interval exceed its CPUs (e.g.
    2.08 of 2 cores). Every stored row is capped at the CPUs; the exported point over those
    rows is too, so it equals them. A point over less than a clock tick is measured over one
    tick, as a stored row is."""
    cores = float(cpu_count("system"))
    start, step = time.time(), 0.05
    table = {name: [0.0] * 4 for name in SYSTEM_COLUMNS}
    for k in range(4):
        table["timestamp"][k] = start + step * (k + 1)
        table["utime"][k] = 1.5 * cores * step
        table["cpu_usage"][k] = _core.cpu_rate(table["utime"][k], step, cores)
    assert table["cpu_usage"] == [cores] * 4  # the stored rule caps each row
    point = fold_rows("system", table, previous_time=start)
    assert point["cpu_usage"] == cores
    short = {name: [0.0] for name in SYSTEM_COLUMNS}
    short["timestamp"], short["utime"] = [start + 0.002], [0.005]
    point = fold_rows("system", {n: v * 2 for n, v in short.items()}, previous_time=start - 0.002)
    assert point["cpu_usage"] == pytest.approx(min(cores, 0.01 / max(0.004, _core.CLOCK_TICK)))
