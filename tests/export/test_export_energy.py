"""The energy columns through the Pushgateway export, against the real servers (Debian's
prometheus-pushgateway and a Prometheus scraping it, on loopback: servers.py): the
``_joules_total`` counter and the run summary read back from Prometheus equal the tracker's
own figures (the final push replaces the live series with the summary). The CPU energy
comes from a fake powercap tree (powercap_tree.py)."""

from __future__ import annotations

import os

import pytest
from powercap_tree import FakePowercap
from servers import prom_wait

from resource_tracker import ResourceTracker


def test_pushgateway_energy_joules_total_and_run_summary(prom_stack, monkeypatch, tmp_path):
    pushgateway, prometheus = prom_stack
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 1_000_000)
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", fake.root)
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", pushgateway.url)
    tracker = ResourceTracker(interval=0.2, export="pushgateway", discover_cloud=False)
    assert tracker.wait_for_samples(1, 30.0)
    fake.set("intel-rapl:0", 43_000_000)  # 42 J
    pid = os.getpid()
    live = prom_wait(prometheus, f'resource_tracker_system_cpu_energy_joules_total{{pid="{pid}"}}')
    assert float(live[0]["value"][1]) == pytest.approx(42.0)
    tracker.stop()
    assert tracker.stats()["system_cpu_energy_j"]["sum"] == pytest.approx(42.0)
    name = "resource_tracker_run_system_cpu_energy_total_joules"
    summary = prom_wait(prometheus, f'{name}{{pid="{pid}"}}')
    assert float(summary[0]["value"][1]) == pytest.approx(42.0)
