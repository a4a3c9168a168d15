"""CPU package and DRAM energy from powercap (RAPL), on fake powercap trees.

There is no powercap on the development machines (a VM), so each test builds a tree laid
out as the kernel's /sys/class/powercap (intel-rapl:N named package-N, its subzones core
and dram, the intel-rapl-mmio copy of the package) under a directory given as the sysfs
root, and moves its counters between readings taken with ``sample_now()`` in this thread:
the expected joules are the counters' own rises. The process's estimated share is checked
againstthe CPU times of the same rows.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from powercap_tree import MAX_UJ, FakePowercap

from resource_tracker import ResourceTracker, _core


def spin(seconds):
    """Busy until this thread has used ``seconds`` more CPU time (its own clock)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def _sampler(pid, fake):
    return _core.Sampler(pid, 60.0, sys_root=fake.root, nvml_library="/nonexistent/libnvml.so")


def _rows(sampler):
    row = sampler.sample_now()
    assert row is not None
    prow, srow = row
    return dict(zip(_core.PROCESS_COLUMNS, prow)), dict(zip(_core.SYSTEM_COLUMNS, srow))


def test_energy_package_and_dram_counted_core_and_mmio_left_out(tmp_path):
    """Package and DRAM rises in joules; core (part of the package) and the MMIO copy of the
    package are not added again."""
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 1_000_000)
    fake.zone("intel-rapl:0:0", "core", 10)
    fake.zone("intel-rapl:0:1", "dram", 500_000)
    fake.zone("intel-rapl-mmio:0", "package-0", 7)
    sampler = _sampler(os.getpid(), fake)
    assert sampler.sample_now() is None  # the baseline
    fake.set("intel-rapl:0", 3_500_000)
    fake.set("intel-rapl:0:0", 9_000_000)
    fake.set("intel-rapl:0:1", 1_200_000)
    fake.set("intel-rapl-mmio:0", 9_000_000)
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(2.5)
    assert system["dram_energy_j"] == pytest.approx(0.7)
    assert sampler.powercap_zones == 2


def test_energy_counter_wrap_counted_through_max_energy_range(tmp_path):
    """A counter that passed max_energy_range_uj starts again from 0: the rise is the rest
    of the range plus the new value, not a negative or huge figure; a value beyond the range
    is no reading."""
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", MAX_UJ - 1_000_000)
    sampler = _sampler(os.getpid(), fake)
    assert sampler.sample_now() is None
    fake.set("intel-rapl:0", 3_000_000)
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(4.0)
    assert sampler.powercap_wraps == 1
    fake.set("intel-rapl:0", 4_000_000)
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(1.0)
    fake.set("intel-rapl:0", 2**64 - 1)  # beyond max_energy_range_uj: no real reading
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == 0.0
    fake.set("intel-rapl:0", 6_000_000)  # counted from the last real reading
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(2.0)


def test_energy_unreadable_zone_gives_zero_and_a_note(tmp_path, monkeypatch):
    """energy_uj unreadable (root-only on most kernels; a directory here, unreadable even to
    root): that zone gives nothing, the readable one its rise, the run one note, no error."""
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 1_000_000)
    fake.zone("intel-rapl:1", "package-1", 1_000_000)
    bad = os.path.join(fake.dir, "intel-rapl:1", "energy_uj")
    os.unlink(bad)
    os.mkdir(bad)
    sampler = _sampler(os.getpid(), fake)
    assert sampler.sample_now() is None
    fake.set("intel-rapl:0", 2_000_000)
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(1.0)
    assert sampler.powercap_unreadable >= 2
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", fake.root)
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    assert tracker.wait_for_samples(2, 30.0)
    tracker.stop()
    note = tracker.stats()["data_quality"]["energy"]
    assert "energy_uj failed" in note and "root" in note


def test_energy_zone_appearing_is_read_from_its_second_reading(tmp_path):
    """A zone that appears during the run (the RAPL driver loaded late) is listed at the next
    reading, counted from the one after (its first reading is its baseline)."""
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 1_000_000)
    sampler = _sampler(os.getpid(), fake)
    assert sampler.sample_now() is None
    fake.zone("intel-rapl:1", "package-1", 5_000_000)
    fake.set("intel-rapl:0", 2_000_000)
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(1.0)
    assert sampler.powercap_zones == 2
    fake.set("intel-rapl:0", 2_500_000)
    fake.set("intel-rapl:1", 7_000_000)
    _, system = _rows(sampler)
    assert system["cpu_energy_j"] == pytest.approx(2.5)


def test_energy_without_powercap_is_none_and_nothing_said(tmp_path, monkeypatch):
    """No powercap at all (a VM): energy None (not 0), no error, and no data-quality line: a
    machine with nothing to read is not an incomplete run (the report shows no energy)."""
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", str(tmp_path))
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    assert tracker.wait_for_samples(2, 30.0)
    tracker.stop()
    stats = tracker.stats()
    assert stats["energy"]["joules"] is None and stats["energy"]["cpu_joules"] is None
    assert stats["system_cpu_energy_j"]["sum"] == 0.0
    assert "energy" not in stats["data_quality"], stats["data_quality"]["energy"]
    assert "energy not measured" not in str(tracker.report())


def test_a_backend_that_leaves_the_machines_powercap_unread_says_so(tmp_path, monkeypatch):
    """The psutil backend reads no powercap: on a machine that has zones, one line says the
    CPU energy was not measured; without zones, none."""
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", str(tmp_path))
    monkeypatch.setenv("RESOURCE_TRACKER_METHOD", "psutil")
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    assert tracker.wait_for_samples(2, 30.0)
    tracker.stop()
    assert "energy" not in tracker.stats()["data_quality"]
    FakePowercap(tmp_path).zone("intel-rapl:0", "package-0", 1_000_000)
    quality = tracker.stats()["data_quality"]
    assert quality["energy"].startswith("CPU and DRAM energy not measured"), quality["energy"]
    assert "powercap" in quality["energy"]


def test_energy_in_stats_joules_and_kwh(tmp_path, monkeypatch):
    """stats()["energy"]: the machine's joules and kWh from the zones' rises."""
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 0)
    fake.zone("intel-rapl:0:1", "dram", 0)
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", fake.root)
    tracker = ResourceTracker(interval=0.25, discover_cloud=False)
    assert tracker.wait_for_samples(1, 30.0)
    spin(0.3)  # busy from before the rise's row began to after it ended (below)
    fake.set("intel-rapl:0", 36_000_000)
    fake.set("intel-rapl:0:1", 3_600_000)
    n, deadline = tracker.n_samples, time.monotonic() + 30.0
    while tracker.n_samples < n + 2 and time.monotonic() < deadline:
        spin(0.01)  # CPU time of this process in the rows that count the rise: its share
    tracker.stop()
    energy = tracker.stats()["energy"]
    assert energy["cpu_joules"] == pytest.approx(36.0)
    assert energy["dram_joules"] == pytest.approx(3.6)
    assert energy["joules"] == pytest.approx(39.6)
    assert energy["kwh"] == pytest.approx(39.6 / 3.6e6)
    stats = tracker.stats()
    share = stats["process_cpu_usage"]["mean"] / stats["system_cpu_usage"]["mean"]
    assert 0 < share  # this process's CPU time over the run, as the same run counts it
    assert energy["process_joules"] == pytest.approx(39.6 * min(share, 1.0))
    assert energy["process_kwh"] == pytest.approx(energy["process_joules"] / 3.6e6)
    assert "estimate" in energy["process_estimate"]
    assert "energy" not in tracker.stats()["data_quality"]


def test_energy_snapshot_from_before_the_energy_columns_loads(tmp_path, monkeypatch):
    """A snapshot saved before the energy columns existed loads: they read as not measured."""
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", str(tmp_path))
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    assert tracker.wait_for_samples(2, 30.0)
    tracker.stop()
    snap = json.loads(tracker.dumps())
    for table in ("process_metrics", "system_metrics"):
        for name in ("cpu_energy_j", "dram_energy_j", "gpu_energy_j"):
            snap[table]["columns"].pop(name, None)
    loaded = ResourceTracker.loads(json.dumps(snap))
    assert loaded.n_samples == tracker.n_samples
    assert list(loaded.system_metrics["gpu_energy_j"]) == [0.0] * tracker.n_samples
    assert loaded.stats()["energy"]["joules"] is None
