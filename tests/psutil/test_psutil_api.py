"""The psutil sampler's interface (the same as the C sampler's) and the tracker on top of it:
lifecycle errors, fast idempotent stop, the partial last interval, stats, recommendations,
snapshots, and choosing the backend with RESOURCE_TRACKER_METHOD."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from array import array

import pytest
from build_variant import HAVE_PROCFS
from psutil_workloads import Workload, _force_psutil, psutil_tracker  # noqa: F401

from resource_tracker import ResourceTracker
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from resource_tracker.psutil_sampler import PsutilSampler


def _column(sampler, table, name):
    names = PROCESS_COLUMNS if table == "process" else SYSTEM_COLUMNS
    col = array("d")
    col.frombytes(sampler.columns(table)[names.index(name)])
    return list(col)


def test_lifecycle_errors_match_the_c_sampler():
    sampler = PsutilSampler(os.getpid(), 0.05)
    assert sampler.state == "new" and sampler.n_samples == 0 and sampler.start_time == 0.0
    sampler.start()
    assert sampler.state == "running" and sampler.start_time > 0 and sampler.stop_time == 0.0
    with pytest.raises(RuntimeError, match="already running; call stop"):
        sampler.start()
    with pytest.raises(RuntimeError, match="without a background thread"):
        sampler.sample_now()
    assert sampler.wait(2, 5.0)
    sampler.stop()
    sampler.stop()
    assert sampler.state == "stopped" and sampler.stop_time >= sampler.start_time
    with pytest.raises(RuntimeError, match="cannot be restarted; create a new one"):
        sampler.start()
    assert sampler.interval == 0.05
    with pytest.raises(ValueError, match="'process' or 'system'"):
        sampler.columns("gpu")
    with pytest.raises(ValueError, match="n >= 0"):
        sampler.wait(-1, 1.0)


@pytest.mark.parametrize("interval", [0, -1.0, float("nan"), float("inf"), "1", None, True])
def test_bad_interval_and_pid_are_value_errors(interval):
    with pytest.raises(ValueError, match="interval"):
        PsutilSampler(os.getpid(), interval)
    with pytest.raises(ValueError, match="pid"):
        PsutilSampler(-3, 1.0)


def test_stop_is_fast_and_idempotent_even_with_a_long_interval():
    tracker = psutil_tracker(interval=30.0)
    time.sleep(0.3)  # the baseline is done; the thread sleeps for 30 s
    t0 = time.perf_counter()
    tracker.stop()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    tracker.stop()
    second = time.perf_counter() - t0
    assert first < 0.1, f"stop() took {first:.3f} s"
    assert second < 0.01
    assert tracker.status == "finished" and not tracker.running
    # the partial interval became the only row
    assert tracker.n_samples == 1
    assert tracker.process_metrics["timestamp"][0] == pytest.approx(time.time(), abs=2.0)
    assert not any(t.name == "resource-tracker-psutil" for t in threading.enumerate())


def test_a_short_last_interval_is_folded_into_the_previous_row():
    w = Workload("spin(10)")
    try:
        w.go()
        tracker = psutil_tracker(pid=w.pid, interval=1.0)
        assert tracker.wait_for_samples(1, 5)
        before = tracker.process_metrics[0]
        time.sleep(0.1)  # < a quarter interval
        tracker.stop()
    finally:
        w.kill()
    after = tracker.process_metrics
    assert len(after) == 1
    row = after[0]
    assert row["timestamp"] > before["timestamp"]
    assert row["utime"] + row["stime"] > before["utime"] + before["stime"]
    # usage is recomputed over the combined interval (from the start to the last reading)
    covered = row["timestamp"] - tracker.start_time
    assert 1.05 < covered < 1.5
    assert row["cpu_usage"] == pytest.approx((row["utime"] + row["stime"]) / covered, rel=0.05)
    assert row["cpu_usage"] > 0.1  # the workload spins (its share of a busy machine)


def test_a_long_last_interval_is_its_own_row():
    tracker = psutil_tracker(interval=0.4)
    assert tracker.wait_for_samples(1, 5)
    time.sleep(0.25)
    tracker.stop()
    assert tracker.n_samples == 2
    ts = tracker.process_metrics["timestamp"]
    assert 0.15 < ts[1] - ts[0] < 0.4


def test_samples_stay_on_the_grid_aligned_to_the_start():
    tracker = psutil_tracker(interval=0.1)
    assert tracker.wait_for_samples(15, 10)
    tracker.stop()
    ts = tracker.process_metrics["timestamp"][:15]
    offsets = [(t - tracker.start_time) / 0.1 for t in ts]
    # tick k lands at start + k * interval (no drift: the 15th is not late by the sum of delays)
    assert offsets[14] == pytest.approx(15.0, abs=0.5)


def test_sample_now_gives_rows_in_the_calling_thread():
    sampler = PsutilSampler(os.getpid(), 1.0)
    assert sampler.sample_now() is None  # the baseline
    time.sleep(0.05)
    prow, srow = sampler.sample_now()
    assert len(prow) == len(PROCESS_COLUMNS) and len(srow) == len(SYSTEM_COLUMNS)
    assert prow[PROCESS_COLUMNS.index("pid")] == os.getpid()
    assert prow[PROCESS_COLUMNS.index("memory")] > 1024
    assert srow[SYSTEM_COLUMNS.index("processes")] >= 1
    assert sampler.n_samples == 1 and sampler.state == "new"


def test_the_tracked_process_exiting_mid_run_does_not_stop_sampling():
    w = Workload("spin(0.5)")
    tracker = psutil_tracker(pid=w.pid, interval=0.1)
    try:
        w.go()
        w.proc.wait(10)  # exits and is reaped: the pid vanishes
        n = tracker.n_samples
        assert tracker.wait_for_samples(n + 5, 5)
        assert tracker.running
    finally:
        tracker.stop()
        w.kill()
    df = tracker.process_metrics
    assert df["children"][-1] == 0 and df["memory"][-1] == 0
    assert sum(df["utime"]) + sum(df["stime"]) == pytest.approx(0.5, abs=0.25)


def test_garbage_collecting_a_running_sampler_ends_its_thread():
    sampler = PsutilSampler(os.getpid(), 0.05)
    sampler.start()
    assert sampler.wait(1, 5)
    del sampler
    gc.collect()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
        t.name == "resource-tracker-psutil" for t in threading.enumerate()
    ):
        time.sleep(0.02)
    assert not any(t.name == "resource-tracker-psutil" for t in threading.enumerate())


def test_stats_recommendations_and_snapshot_round_trip():
    w = Workload(
        """
        buf = bytearray(300 * 1024 * 1024)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        spin(1.5)
        report(done=True)
        """
    )
    tracker = psutil_tracker(pid=w.pid, interval=0.25)
    try:
        w.go()
        w.read_report()
        w.finish()
        tracker.stop()
    finally:
        tracker.stop()
        w.kill()
    stats = tracker.stats()
    assert stats["timestamp"]["samples"] == tracker.n_samples >= 4
    assert stats["process_memory"]["max"] > 300 * 1024
    assert 0.2 < stats["process_cpu_usage"]["mean"] < 1.2
    assert stats["system_disk_space_used_gb"]["max"] > 0
    rec = tracker.recommend_resources()
    # peak ~310 MiB + 20 % -> 512 MiB; mean usage under 1.5 cores -> 1
    assert rec == {"cpu": 1, "memory": 512, "gpu": 0, "vram": 0}
    assert tracker.recommend_resources(historical_stats=[stats]) == rec
    snap = tracker.snapshot()
    assert snap["method"] == "psutil"
    json.dumps(snap)
    loaded = ResourceTracker.from_snapshot(snap)
    again = ResourceTracker.loads(tracker.dumps())
    for other in (loaded, again):
        assert other.method == "psutil"
        assert other.process_metrics == tracker.process_metrics
        assert other.system_metrics == tracker.system_metrics
        assert other.stats() == stats
        assert other.recommend_resources() == rec
    combined = tracker.get_combined_metrics(human_names=True)
    assert "Process CPU usage" in combined.columns and "System used memory" in combined.columns


def test_the_environment_variable_chooses_psutil_in_a_fresh_interpreter():
    code = textwrap.dedent(
        """
        import json, time
        from resource_tracker import ResourceTracker
        t = ResourceTracker(interval=0.1, discover_cloud=False, discover_server=False)
        ok = t.wait_for_samples(3, 10)
        x = 0
        end = time.thread_time() + 0.5  # CPU time: the same work on a busy machine
        while time.thread_time() < end:
            x += 1
        t.stop()
        print(json.dumps({"method": t.method, "sampler": type(t._sampler).__name__, "ok": ok,
                          "n": t.n_samples, "cpu": sum(t.process_metrics["utime"])}))
        """
    )
    env = dict(os.environ, RESOURCE_TRACKER_METHOD="psutil")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["method"] == "psutil" and out["sampler"] == "PsutilSampler"
    assert out["ok"] and out["n"] >= 3 and out["cpu"] > 0.2
    env.pop("RESOURCE_TRACKER_METHOD")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    # by default: the C sampler where the core has it, psutil in the portable build
    assert json.loads(done.stdout)["method"] == ("procfs" if HAVE_PROCFS else "psutil")


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ValueError, match="'procfs' or 'psutil'"):
        ResourceTracker(method="magic", discover_cloud=False, discover_server=False)


def test_fork_in_a_tracked_process_is_safe():
    """After os.fork() the child has no sampler thread (its sampler reads as stopped) and
    runs normally; the parent keeps sampling."""
    code = textwrap.dedent(
        """
        import os, sys, time
        from resource_tracker import ResourceTracker
        t = ResourceTracker(interval=0.05, method="psutil", discover_cloud=False,
                            discover_server=False)
        assert t.wait_for_samples(2, 5)
        pid = os.fork()
        if pid == 0:
            ok = t._sampler.state == "stopped" and not t.running
            t.stop()  # no thread to join: returns at once
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        n = t.n_samples
        assert t.wait_for_samples(n + 3, 5), "the parent stopped sampling"
        t.stop()
        print(os.waitstatus_to_exitcode(status), t._sampler.read_errors)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0"]
