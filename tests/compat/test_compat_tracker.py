"""ResourceTracker as code written for the original package (0.4/0.5) uses it.

One real tracked run of this process (module-scoped), asserted on by every test, compared
with the run's own figures (its tables), never with absolute numbers.
"""

from __future__ import annotations

import json
import pickle
from statistics import mean

import pytest

from resource_tracker import ResourceTracker, __version__, get_cloud_info
from resource_tracker.tiny_data_frame import StatSpec


@pytest.fixture(scope="module")
def run():
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    buffer = bytearray(32 * 1024 * 1024)  # touched: memory the tables see
    buffer[::4096] = b"x" * len(buffer[::4096])
    assert tracker.wait_for_samples(4, timeout=30)
    tracker.stop()
    del buffer
    return tracker


def test_snapshot_has_the_original_metadata_with_the_duration(run):
    meta = run.snapshot()["metadata"]
    assert meta["pid"] == run.pid and meta["interval"] == run.interval
    assert meta["children"] is True and meta["autostart"] is True
    assert meta["discover_cloud"] is False and meta["discover_server"] is True
    assert meta["track_processes"] is meta["track_system"] is True
    assert meta["start_time"] == run.start_time and meta["stop_time"] == run.stop_time
    assert meta["duration"] == round(run.stop_time - run.start_time, 2) > 0
    assert meta["resource_tracker"] == {"version": __version__, "implementation": run.method}
    assert meta["method"] == run.method
    # stored and loaded again: the same metadata
    again = ResourceTracker.loads(run.dumps())
    assert again.snapshot()["metadata"] == meta
    assert json.loads(run.dumps())["metadata"] == meta


def _original_snapshot(series):
    """A snapshot as the original package's snapshot() made it (its fields under metadata,
    its tables as row dicts): 0.5 in MiB with its names, 0.4 with the seeds' names."""
    meta = {
        "version": 1,
        "resource_tracker": {"version": "0.5.0" if series == "0.5" else "0.4.2"},
        "pid": 4242, "children": True, "interval": 1.0, "method": None, "autostart": False,
        "track_processes": True, "track_system": True, "discover_server": True,
        "discover_cloud": False, "start_time": 1000.0, "stop_time": 1003.0, "duration": 3.0,
    }  # fmt: skip
    mib = series == "0.5"
    process, system = [], []
    for i, mem in enumerate((100.0, 300.0, 200.0)):
        row = {"timestamp": 1001.0 + i, "pid": 4242, "children": 1, "utime": 0.5, "stime": 0.1,
               "cpu_usage": 0.6, "gpu_usage": 0, "gpu_utilized": 0}  # fmt: skip
        row.update(
            {"memory_mib": mem, "disk_read_bytes": 4096, "disk_write_bytes": 0, "gpu_vram_mib": 0}
            if mib
            else {"memory": mem * 1024, "read_bytes": 4096, "write_bytes": 0, "gpu_vram": 0}
        )
        process.append(row)
        srow = {"timestamp": 1001.0 + i, "processes": 100, "utime": 1.0, "stime": 0.2,
                "cpu_usage": 1.2, "disk_read_bytes": 0, "disk_write_bytes": 8192,
                "disk_space_total_gb": 100.0, "disk_space_used_gb": 40.0,
                "disk_space_free_gb": 60.0, "net_recv_bytes": 10, "net_sent_bytes": 20,
                "gpu_usage": 0, "gpu_utilized": 0}  # fmt: skip
        for part in ("free", "used", "buffers", "cached", "active", "inactive"):
            srow[f"memory_{part}_mib" if mib else f"memory_{part}"] = 1000.0 * (1 if mib else 1024)
        srow["gpu_vram_mib" if mib else "gpu_vram"] = 0
        system.append(srow)
    return {
        "metadata": meta,
        "server_info": {"vcpus": 2, "memory_mib": 2048.0, "gpu_count": 0, "gpu_names": []},
        "cloud_info": None,
        "process_metrics": process,
        "system_metrics": system,
    }


@pytest.mark.parametrize("series", ["0.4", "0.5"])
def test_a_snapshot_of_the_original_package_loads(series):
    """from_snapshot() and loads() of what 0.4/0.5 stored: the seeds' names and units (0.5's
    MiB read as KiB), its settings kept."""
    original = _original_snapshot(series)
    for tracker in (
        ResourceTracker.from_snapshot(original),
        ResourceTracker.loads(json.dumps(original)),
    ):
        assert tracker.process_metrics["memory"] == [100 * 1024.0, 300 * 1024.0, 200 * 1024.0]
        assert tracker.process_metrics["read_bytes"] == [4096.0] * 3
        assert tracker.system_metrics["memory_used"] == [1000 * 1024.0] * 3
        assert tracker.pid == 4242 and tracker.interval == 1.0
        assert tracker.stats()["process_memory"]["max"] == 300 * 1024
        assert tracker.recommend_resources()["memory"] == 512  # 300 MiB + 20%, rounded
        meta = tracker.snapshot()["metadata"]
        assert meta["autostart"] is False and meta["duration"] == 3.0
    with pytest.raises(ValueError, match="process table is not a list of rows"):
        ResourceTracker.from_snapshot(dict(original, process_metrics="rows"))
    with pytest.raises(ValueError, match="column memory holds something other than numbers"):
        bad = [dict(row, memory_mib="x", memory="x") for row in original["process_metrics"]]
        ResourceTracker.from_snapshot(dict(original, process_metrics=bad))


def test_combined_metrics_in_bytes(run):
    plain = run.get_combined_metrics()
    raw = run.get_combined_metrics(bytes=True)
    assert raw.columns == plain.columns  # the names stay
    process, system = run.process_metrics, run.system_metrics
    assert raw["process_memory"] == [float(round(v * 1024)) for v in process["memory"]]
    assert raw["system_memory_used"] == [float(round(v * 1024)) for v in system["memory_used"]]
    assert raw["process_gpu_vram"] == [float(round(v * 2**20)) for v in process["gpu_vram"]]
    assert raw["system_disk_space_used_gb"] == [
        float(round(v * 1e9)) for v in system["disk_space_used_gb"]
    ]
    assert raw["process_cpu_usage"] == plain["process_cpu_usage"]  # not a size: unchanged
    peak = max(raw["process_memory"])
    assert peak >= 32 * 2**20  # the touched buffer, in bytes


def test_combined_metrics_prefixes_and_offset(run):
    n = len(run.get_combined_metrics())
    named = run.get_combined_metrics(system_prefix="sys.", process_prefix="proc.", offset=1)
    assert len(named) == n - 1
    assert named.columns[:2] == ["timestamp", "sys.processes"]
    assert "proc.memory" in named.columns
    assert named["timestamp"] == run.system_metrics["timestamp"][1:n]
    human = run.get_combined_metrics(human_names=True, process_prefix="Job ")
    assert "Job memory usage" in human.columns and "System CPU usage" in human.columns
    assert len(run.get_combined_metrics(offset=n)) == 0


def test_stats_lookup_of_a_0_5_key_says_what_to_read(run):
    stats = run.stats()
    with pytest.raises(KeyError, match=r"0\.5 name of 'process_memory', in KiB"):
        stats["process_memory_mib"]
    with pytest.raises(KeyError, match=r"0\.5 name of 'process_gpu_vram', in MiB"):
        stats["process_gpu_vram_mib"]
    assert stats["process_memory"]["max"] == max(run.process_metrics["memory"])
    assert type(pickle.loads(pickle.dumps(stats))) is dict  # an artifact needs no class
    assert json.loads(json.dumps(stats, default=str))["process_memory"]


def test_stats_with_specs_as_the_original_took_them(run):
    combined = run.get_combined_metrics()
    out = run.stats(
        [
            StatSpec("process_cpu_usage", mean, round=2),
            StatSpec("process_memory", max),
            StatSpec("timestamp", lambda t: t[-1] - t[0], agg_name="duration"),
        ]
    )
    assert out["process_cpu_usage"]["mean"] == round(mean(combined["process_cpu_usage"]), 2)
    assert out["process_memory"]["max"] == max(combined["process_memory"])
    ts = combined["timestamp"]
    assert out["timestamp"]["duration"] == ts[-1] - ts[0]


def test_report_status_words_and_the_original_argument_order(run):
    finished = run.report()
    assert '<span class="rt-status rt-status-finished">Finished</span>' in finished
    failed = run.report("Metaflow", status_failed=True, integration_version="2.18.0")
    assert '<span class="rt-status rt-status-failed">Failed</span>' in failed
    assert "Metaflow 2.18.0" in failed
    pending = run.report(status="running")
    assert '<span class="rt-status rt-status-running">Pending</span>' in pending
    assert "Integration" not in run.report(integration="standalone")


def test_cloud_info_says_unknown_as_get_cloud_info_does():
    """No cloud evidence on this machine (and every endpoint on loopback): 'unknown'."""
    tracker = ResourceTracker(autostart=False, discover_cloud=True)
    tracker.start()
    tracker.stop()
    info = tracker.cloud_info
    expected = get_cloud_info()
    assert {k: info[k] for k in ("vendor", "instance_type", "region")} == {
        k: expected[k] for k in ("vendor", "instance_type", "region")
    }
    assert info["instance_type"] == info["region"] == "unknown"
    assert isinstance(info["discovery_time"], float)


def test_method_as_the_fourth_argument_says_what_to_write():
    """0.4/0.5 took (pid, children, interval, method, ...); the seeds' 4th is autostart: a
    method name there is a TypeError saying method=..., never a tracker that ignores it."""
    import os

    with pytest.raises(TypeError, match=r"4th argument of the 0\.4/0\.5 packages was method; "
                       r"write method='psutil'"):  # fmt: skip
        ResourceTracker(os.getpid(), True, 0.05, "psutil")
