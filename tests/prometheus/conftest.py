"""The session's fed Pushgateway + Prometheus (prom_stack.py: what it holds)."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from prom_stack import FORGOTTEN, RULE_FILES, RUNS, Stack, _feed, held_runs  # noqa: E402
from servers import prom_query, start_prometheus, start_pushgateway  # noqa: E402

from resource_tracker.dashboard._prometheus import load_prometheus  # noqa: E402


def _wait_count(prometheus, promql: str, n: int, timeout: float = 60.0) -> None:
    """Polls Prometheus until promql has exactly n series (it scrapes every second)."""
    deadline = time.monotonic() + timeout
    while len(prom_query(prometheus, promql)) != n:
        assert time.monotonic() < deadline, f"{promql}: not {n} series in {timeout} s"
        time.sleep(0.2)


def _wait_killed_listed(prometheus, started: float, timeout: float = 120.0) -> None:
    """Polls until the dashboard's rule counts the killed run as stopped: its live pushes
    quiet for two of its push periods and the send timeout (a loaded machine pushes less
    often: its period grows with the time a reading takes)."""
    deadline = time.monotonic() + timeout
    while not any(
        r.step == "killed-lib"
        for r in load_prometheus(prometheus.url, time.time() - started + 60, []).records
    ):
        assert time.monotonic() < deadline, f"the killed run not listed in {timeout} s"
        time.sleep(0.5)


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """The fed stack (:class:`Stack`); the servers stop at the end of the session."""
    pytest.importorskip("prometheus_client")
    folder = str(tmp_path_factory.mktemp("prometheus-stack"))
    started = time.time()
    pushgateway = start_pushgateway(folder)
    try:
        prometheus = start_prometheus(folder, pushgateway.url, RULE_FILES)
    except BaseException:
        pushgateway.stop()
        raise
    try:
        runs, killed = _feed(pushgateway.url)
        expected = Counter(job for job, _ in held_runs(pushgateway.url))
        assert all(expected[job] >= n for job, n in RUNS.items()), expected
        runs_held = sum(expected.values())
        _wait_count(prometheus, "resource_tracker_run_end_timestamp_seconds", runs_held)
        # the final push replaced the live gauges: only the killed run's are left
        _wait_count(prometheus, "resource_tracker_process_memory_bytes", 1)
        _wait_killed_listed(prometheus, started)
        yield Stack(pushgateway, prometheus, runs, dict(expected), started, killed, FORGOTTEN)
    finally:
        prometheus.stop()
        pushgateway.stop()
