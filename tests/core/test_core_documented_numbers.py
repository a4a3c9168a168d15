"""Numbers as the seeds print them, without float noise; the tables keep exact values.

A real tracker on a real workload (a busy loop and a 32 MiB buffer in this process).
"""

from __future__ import annotations

import time

from resource_tracker import ResourceTracker
from resource_tracker.rounding import COLUMN_DIGITS, documented_stats


def _tracked_run():
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    ballast = bytearray(32 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    end = time.perf_counter() + 0.4
    while time.perf_counter() < end:
        pass
    tracker.stop()
    return tracker


def _decimals(value):
    text = repr(value)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def test_combined_metrics_are_rounded_as_the_seeds_print_them():
    """'System CPU usage': 1.0303, 'Process memory usage': 84612.0, 'System disk space
    used': 2600.86 ... never 0.09999999999999998."""
    tracker = _tracked_run()
    row_names = tracker.get_combined_metrics()
    human = tracker.get_combined_metrics(human_names=True)
    assert len(human) == len(row_names) == tracker.n_samples >= 4
    for column in row_names.columns:
        bare = column if column == "timestamp" else column.split("_", 1)[1]
        digits = COLUMN_DIGITS[bare]
        for value in row_names[column]:
            if digits is not None:
                assert round(value, digits) == value, (column, value)
                assert _decimals(value) <= max(digits, 1), (column, value)
    first = human[0]
    assert first["Timestamp"] == tracker.system_metrics["timestamp"][0]  # exact
    assert first["Process memory usage"] == round(tracker.process_metrics["memory"][0])
    assert first["System CPU usage"] == round(tracker.system_metrics["cpu_usage"][0], 4)


def test_the_tables_keep_the_exact_values():
    tracker = _tracked_run()
    process = tracker.process_metrics
    combined = tracker.get_combined_metrics()
    # the rounded view and the exact column differ somewhere (CPU usage is a ratio)
    exact = process["cpu_usage"]
    shown = combined["process_cpu_usage"]
    assert any(a != b for a, b in zip(exact, shown))
    assert all(abs(a - b) <= 0.00005 for a, b in zip(exact, shown))


def test_documented_stats_of_a_real_run():
    """The artifact's summary: {'cpu_usage': {'mean': 1.42, 'max': 6.11}, 'memory_usage':
    {'mean': 342509.0, 'max': 591621.0}, ..., 'duration': 9.89}."""
    tracker = _tracked_run()
    stats = tracker.stats()
    doc = documented_stats(stats)
    assert doc["cpu_usage"] == {
        "mean": round(stats["process_cpu_usage"]["mean"], 2),
        "max": round(stats["process_cpu_usage"]["max"], 2),
    }
    assert doc["memory_usage"]["max"] == float(round(stats["process_memory"]["max"]))
    assert doc["memory_usage"]["max"] >= 32 * 1024
    assert doc["duration"] == round(stats["timestamp"]["duration"], 2)
    assert doc["traffic"] == {
        "inbound": float(round(stats["system_net_recv_bytes"]["sum"])),
        "outbound": float(round(stats["system_net_sent_bytes"]["sum"])),
    }
    assert documented_stats(None) is None
