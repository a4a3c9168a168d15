"""Real workloads for the psutil sampler tests: child Python processes that wait for a "go"
line on stdin, do their work and report ground truth about themselves (CPU time from
os.times(), RSS/PSS from /proc) as JSON lines on stdout."""

from __future__ import annotations

import pytest
from workloads import PRELUDE, Workload, total_cpu  # noqa: F401  (shared)

from resource_tracker import ResourceTracker


def psutil_tracker(pid=None, interval=0.25, **kwargs):
    """A ResourceTracker forced onto the psutil sampler (checked)."""
    tracker = ResourceTracker(
        pid=pid,
        interval=interval,
        discover_cloud=False,
        discover_server=False,
        method="psutil",
        **kwargs,
    )
    assert tracker.method == "psutil"
    assert type(tracker._sampler).__name__ == "PsutilSampler"
    return tracker


@pytest.fixture(autouse=True)
def _force_psutil(monkeypatch):
    """Every tracker made in these tests uses the psutil sampler."""
    monkeypatch.setenv("RESOURCE_TRACKER_METHOD", "psutil")
