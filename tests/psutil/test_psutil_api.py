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
from psutil_workloads import Workload, _force_psutil, psutil_tracker, total_cpu  # noqa: F401

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


def test_column_views_are_the_stored_rows_once_stopped():
    """column_views(): None until the sampler stopped, then read-only views of its rows."""
    sampler = PsutilSampler(os.getpid(), 0.05)
    assert sampler.column_views("process") is None
    sampler.start()
    assert sampler.wait(2, 5)
    assert sampler.column_views("system") is None  # rows still come
    sampler.stop()
    for table in ("process", "system"):
        views = sampler.column_views(table)
        assert all(v.readonly and v.format == "d" for v in views)
        assert [bytes(v) for v in views] == sampler.columns(table)
    with pytest.raises(ValueError, match="'process' or 'system'"):
        sampler.column_views("gpu")


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
        t0 = os.times()
        buf = touched(300)
        spin(1.5)
        t = os.times()
        report(since_go=t.user + t.system - t0.user - t0.system, cpu=t.user + t.system)
        sys.stdin.readline()  # the test stops its tracker meanwhile
        """
    )
    tracker = psutil_tracker(pid=w.pid, interval=0.25)
    try:
        w.go()
        truth = w.read_report()
        tracker.stop()  # while the workload waits: its last reading has all its CPU
    finally:
        tracker.stop()
        w.kill()
    stats = tracker.stats()
    assert stats["timestamp"]["samples"] == tracker.n_samples >= 4
    assert stats["process_memory"]["max"] > 300 * 1024
    # the workload's own CPU (os.times): all it used after "go" counted, no more than its
    # whole life's; one thread: never over one core
    counted = total_cpu(tracker.process_metrics)
    assert 0.95 * truth["since_go"] - 0.01 <= counted <= truth["cpu"] + 0.02, (counted, truth)
    assert 0 < stats["process_cpu_usage"]["mean"] < 1.2
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
        start = time.thread_time()  # CPU time: the same work on a busy machine
        while time.thread_time() < start + 0.5:
            x += 1
        spun = time.thread_time() - start  # user and system time (thread_time is a syscall)
        t.stop()
        print(json.dumps({"method": t.method, "sampler": type(t._sampler).__name__, "ok": ok,
                          "n": t.n_samples,
                          "cpu": sum(t.process_metrics["utime"]) + sum(t.process_metrics["stime"]),
                          "spun": spun}))
        """
    )
    env = dict(os.environ, RESOURCE_TRACKER_METHOD="psutil")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["method"] == "psutil" and out["sampler"] == "PsutilSampler"
    # the CPU the spinning thread took (its own thread_time: the tracker leaves out its own
    # thread's) is all in the samples
    assert out["ok"] and out["n"] >= 3 and out["cpu"] >= 0.9 * out["spun"], out
    env.pop("RESOURCE_TRACKER_METHOD")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    # by default: the C sampler where the core has it, psutil in the portable build
    assert json.loads(done.stdout)["method"] == ("procfs" if HAVE_PROCFS else "psutil")


def _burn(seconds):
    """Keeps this thread on a CPU for `seconds` of its own CPU time (the same work on a busy
    machine)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_first_reading_s_own_cost_is_not_taken_off_the_workload():
    """The first reading lists and classifies every process of the machine: on a machine of
    thousands of processes that costs its thread tens of ms of CPU, which the process's CPU
    time holds when it is read. That cost is the tracker's, so it comes off the first
    reading as the later, cheap readings' costs do; else the run counts short by the
    difference (0.43 of 0.50 CPU-seconds, seen on a busy machine).

    The machine of thousands of processes is a listing that costs 80 ms of this thread's
    CPU in the first reading; this thread plays the sampler thread (own_cpu: its CPU time
    when each reading begins, as the engine gives it), and another thread of the process
    is the workload, its CPU seconds its own thread_time."""
    import psutil

    from resource_tracker.psutil_sampler import _Collector

    class _ManyProcesses(_Collector):
        def _discover(self, pids):
            if not self.has_baseline:
                _burn(0.08)
            return super()._discover(pids)

    collector = _ManyProcesses(psutil, os.getpid(), True, True, False)
    assert collector.sample(time.monotonic(), time.time(), time.thread_time(), 0.0) is None
    spun = []

    def workload():
        began = time.thread_time()
        _burn(0.3)
        spun.append(time.thread_time() - began)

    worker = threading.Thread(target=workload)
    worker.start()
    worker.join()
    prow, _srow = collector.sample(time.monotonic(), time.time(), time.thread_time(), 0.0)
    counted = prow[PROCESS_COLUMNS.index("utime")] + prow[PROCESS_COLUMNS.index("stime")]
    # /proc counts CPU time in clock ticks (10 ms); other threads of this test process may
    # add a little, never take away
    assert spun[0] - 0.025 <= counted <= spun[0] + 0.1, (counted, spun)


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ValueError, match="'procfs' or 'psutil'"):
        ResourceTracker(method="magic", discover_cloud=False, discover_server=False)
