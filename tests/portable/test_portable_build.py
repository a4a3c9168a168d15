"""The platform boundary of the C core (csrc/platform.h).

In the Linux build these check that the Linux readers are there and chosen; the portable lane
(tests/portable/run_lane.sh) runs them against a RESOURCE_TRACKER_PORTABLE=1 build, the core as
a non-Linux platform compiles it, where psutil must sample real workloads instead."""

from __future__ import annotations

import os
import time

import pytest
from build_variant import HAVE_PROCFS
from workloads import Workload, total_cpu

from resource_tracker import PidTracker, ResourceTracker, _core
from resource_tracker.catalog import _keeper
from resource_tracker.cloud import discover_cloud, start_discovery
from resource_tracker.server_info import get_server_info

LINUX_READERS = (
    "Sampler",
    "gpu_inventory",
    "discover_cloud",
    "cloud_evidence",
    "keeper_servers",
    "keeper_prices",
    "keeper_path",
)
PORTABLE_CORE = ("stats", "summarize", "recommend", "round_memory_mib", "PROCESS_COLUMNS")

portable_only = pytest.mark.skipif(HAVE_PROCFS, reason="this is the Linux build of the core")


def test_the_core_has_the_linux_readers_exactly_when_it_says_so():
    assert {name: hasattr(_core, name) for name in LINUX_READERS} == dict.fromkeys(
        LINUX_READERS, HAVE_PROCFS
    )
    assert all(hasattr(_core, name) for name in PORTABLE_CORE)


def test_the_default_sampler_follows_the_build(monkeypatch):
    monkeypatch.delenv("RESOURCE_TRACKER_METHOD", raising=False)
    tracker = ResourceTracker(autostart=False, discover_cloud=False, discover_server=False)
    assert tracker.method == ("procfs" if HAVE_PROCFS else "psutil")
    assert type(tracker._sampler).__name__ == ("Sampler" if HAVE_PROCFS else "PsutilSampler")


@portable_only
def test_asking_for_the_procfs_sampler_is_a_clear_error():
    with pytest.raises(ValueError, match="use method='psutil'"):
        ResourceTracker(method="procfs", discover_cloud=False, discover_server=False)


@portable_only
def test_a_busy_child_is_tracked_and_sized_with_psutil(monkeypatch):
    monkeypatch.delenv("RESOURCE_TRACKER_METHOD", raising=False)
    w = Workload("c0 = sum(os.times()[:2])\nspin(2.0)\nreport(cpu=sum(os.times()[:2]) - c0)")
    tracker = ResourceTracker(pid=w.pid, interval=0.25, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(0, 5)
        w.go()
        truth = w.read_report()["cpu"]  # less than 2 s on a busy machine
        w.finish()
        tracker.stop()
    finally:
        tracker.stop()
        w.kill()
    assert tracker.method == "psutil"
    assert 0.7 * truth < total_cpu(tracker.process_metrics) < truth + 0.4
    stats = tracker.stats()
    assert stats["process_memory"]["max"] > 1  # MiB of a live Python child
    assert tracker.recommend_resources()["cpu"] >= 1


@portable_only
def test_the_csv_tracker_samples_with_psutil(tmp_path, monkeypatch):
    monkeypatch.delenv("RESOURCE_TRACKER_METHOD", raising=False)
    out = tmp_path / "pid.csv"
    PidTracker(interval=0.1, output_file=str(out)).run(n_samples=3)
    lines = out.read_text().splitlines()
    assert lines[0].startswith("timestamp,pid") and len(lines) == 4
    assert all(float(line.split(",")[1]) == os.getpid() for line in lines[1:])


@portable_only
def test_cloud_discovery_answers_unknown_at_once():
    started = time.monotonic()
    assert discover_cloud()["vendor"] == "unknown"
    assert start_discovery().result()["vendor"] == "unknown"
    assert time.monotonic() - started < 1.0


@portable_only
def test_the_keeper_api_is_unavailable_not_a_crash():
    price, note = _keeper.current_price("http://127.0.0.1:9", "aws", "t3.micro", None, 1.0)
    assert price is None and "no Keeper API client" in note


@portable_only
def test_server_info_without_the_linux_readers():
    info = get_server_info()
    assert info["gpu_count"] == 0 and info["vcpus"] >= 1 and info["memory_mb"] > 0
