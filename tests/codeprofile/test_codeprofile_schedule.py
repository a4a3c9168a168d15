"""The stack captures' own schedule (csrc/schedule.c ``schedule_capture_period``; docs/
code_profile.md "How it is recorded"): dense at the start of a run, thinning, the ticks taking
over; a short job's shares at the default interval are right within 5 points of its own
``thread_time`` truth (the job of bench/bench_code_short.py: four functions called in a seeded
random order, in bursts of 20-300 ms of their own CPU, for shares of 44/27/18/12 %).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from resource_tracker import ResourceTracker, _core

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.normpath(os.path.join(HERE, "..", "..", "bench")))  # after tests/ (both
# have a workloads.py)
import bench_code_short  # noqa: E402

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")


@pytest.mark.parametrize("seed", [1, 2])
def test_a_short_job_at_the_default_interval_has_its_shares_right(seed, tmp_path):
    """8 s of CPU at the default 1 s interval: ticks alone give it ~8 samples (errors of 10-20
    points); the captures' own schedule gives it one every 0.1 s."""
    go, out = tmp_path / "go", tmp_path / "out.json"
    go.touch()  # the job starts at once
    job = bench_code_short.WORKLOAD % {"shares": bench_code_short.SHARES}
    done = subprocess.run(
        [sys.executable, "-c", job, "8", str(seed), str(go), str(out)], capture_output=True,
        text=True, timeout=600, cwd=str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(out.read_text())
    error = bench_code_short.max_error_points(found["ours"], found["truth"])
    assert error <= 5.0, (error, found["status"])
    assert found["status"]["scheduled"] >= 40, found["status"]


def test_the_own_schedule_adds_nothing_where_the_ticks_are_dense_enough():
    """At 0.1 s the ticks are as dense as the own schedule ever is: every capture is a tick's
    (a long run's profile stays bounded by its ticks, as before)."""
    tracker = ResourceTracker(interval=0.1, discover_cloud=False, discover_server=False)
    try:
        assert tracker.wait_for_samples(10, timeout=120)
    finally:
        tracker.stop()
    status = tracker.code_profile_status()
    assert status["scheduled"] == 0, status
    assert status["thinned"] == 0, status  # a short run: every tick captured
    assert status["captures"] <= status["requests"], status
