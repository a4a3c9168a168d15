"""The ResourceTracker API: lifecycle, bad input, fork safety, persistence, the seeds' code."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
import textwrap
import time

import pytest
from build_variant import needs_procfs
from workloads import highest_priority

from resource_tracker import PidTracker, ResourceTracker, SystemTracker, TinyDataFrame, _core
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS


def quiet(**kwargs):
    return ResourceTracker(discover_cloud=False, discover_server=False, **kwargs)


def run_python(code, timeout=60):
    """Runs code in a fresh interpreter; returns the completed process (checked)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("interval", [0, -1, float("nan"), float("inf"), "1", None, True])
def test_bad_interval_is_a_clear_value_error(interval):
    with pytest.raises(ValueError, match="interval"):
        quiet(interval=interval)


def test_pid_that_does_not_exist_is_a_clear_value_error():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid is free now
    with pytest.raises(ValueError, match=f"no process with pid {proc.pid}"):
        quiet(pid=proc.pid)
    with pytest.raises(ValueError, match="positive"):
        quiet(pid=-5)


def test_start_twice_and_restart_are_runtime_errors_and_stop_is_idempotent(backend):
    tracker = quiet(interval=0.05)
    tracker.start()  # after autostart: a no-op (code for the 0.4 series calls it)
    with pytest.raises(RuntimeError, match="already running"):
        tracker.start()
    tracker.stop()
    tracker.stop()
    assert not tracker.running
    assert tracker.status == "finished"
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        tracker.start()


def test_autostart_false_and_context_manager(backend):
    tracker = quiet(interval=0.05, autostart=False)
    assert tracker.status == "new" and not tracker.running
    with tracker as t:
        assert t.running
        assert t.wait_for_samples(2, timeout=5)
    assert not tracker.running and tracker.n_samples >= 2


def test_stop_wakes_the_sampler_at_once(backend):
    tracker = quiet(interval=30.0)
    deadline = time.monotonic() + 60
    while tracker._sampler.samples_taken < 1:  # the baseline read: it now waits for its tick
        assert time.monotonic() < deadline
        time.sleep(0.01)
    started = time.monotonic()
    tracker.stop()
    took = time.monotonic() - started
    # the condition variable woke it: it read the partial interval before stop() returned (a
    # thread stop() gave up on at its bound stores nothing), long before the 30 s tick
    assert tracker.n_samples == 1
    assert took < 15.0


def test_samples_stay_on_the_grid_without_drift(backend):
    tracker = quiet(interval=0.02)
    assert tracker.wait_for_samples(60, timeout=10)
    tracker.stop()
    ts = tracker.process_metrics["timestamp"][:60]
    start = tracker.start_time
    offsets = [(t - start) / 0.02 for t in ts]
    # sample k is taken at start + k * interval (late ticks skip ahead, never shift the grid)
    late = [o - round(o) for o in offsets]
    assert max(abs(x) for x in late) < 0.5
    assert round(offsets[-1]) >= 60


def test_the_tracked_process_exiting_mid_run_does_not_stop_sampling(backend):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.4)"])
    tracker = quiet(pid=proc.pid, interval=0.1)
    proc.wait()
    n = tracker.n_samples
    assert tracker.wait_for_samples(n + 4, timeout=5)
    tracker.stop()
    df = tracker.process_metrics
    assert df["memory"][-1] == 0 and df["children"][-1] == 0
    assert len(tracker.system_metrics) == len(df)


@needs_procfs  # the C sampler joins at once; psutil's thread ends within an interval (its test)
def test_garbage_collecting_a_running_tracker_stops_its_thread():
    out = run_python(
        """
        import gc, os, time
        from resource_tracker import ResourceTracker
        threads = lambda: len(os.listdir("/proc/self/task"))
        def settled(n):  # the start's helper job thread ends on its own (a loaded machine
            end = time.monotonic() + 60  # may run it late): wait for it, bounded
            while threads() > n and time.monotonic() < end:
                time.sleep(0.01)
            return threads()
        before = threads()
        t = ResourceTracker(interval=0.01, discover_cloud=False, discover_server=False)
        t.wait_for_samples(2, timeout=60)
        during = settled(before + 2)
        del t
        gc.collect()
        print(before, during, settled(before))
        """
    )
    before, during, after = map(int, out.stdout.split())
    # the sampler thread, and the code profile's capture thread (docs/code_profile.md)
    assert during == before + 2 and after == before


def test_fork_in_a_tracked_process_is_safe(backend):
    out = run_python(
        """
        import os, time
        from resource_tracker import ResourceTracker
        t = ResourceTracker(interval=0.005, discover_cloud=False, discover_server=False)
        for _ in range(20):                 # fork often, while the sampler is busy
            pid = os.fork()
            if pid == 0:
                ok = not t.running and t.n_samples >= 0
                t.stop()                    # a no-op in the child: no thread to join
                child = ResourceTracker(interval=0.01, discover_cloud=False,
                                        discover_server=False)
                ok = ok and child.wait_for_samples(2, timeout=5)
                child.stop()
                os._exit(0 if ok else 3)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, status
        n = t.n_samples
        assert t.wait_for_samples(n + 1, timeout=30)  # the parent keeps sampling
        assert t.running
        t.stop()
        print("ok")
        """
    )
    assert out.stdout.strip() == "ok"


def test_snapshot_round_trip_loses_nothing(backend):
    tracker = quiet(interval=0.05)
    assert tracker.wait_for_samples(5)
    tracker.stop()
    tracker.label = "step <b>1</b>"
    tracker.extra["flow"] = "Demo"
    snap = tracker.snapshot()
    again = ResourceTracker.from_snapshot(snap)
    assert again.snapshot() == snap
    loaded = ResourceTracker.loads(tracker.dumps())
    assert loaded.snapshot() == snap
    assert loaded.process_metrics == tracker.process_metrics
    assert loaded.stats() == tracker.stats()
    assert loaded.recommend_resources() == tracker.recommend_resources()
    assert pickle.loads(pickle.dumps(tracker.process_metrics)) == tracker.process_metrics
    with pytest.raises(RuntimeError, match="cannot be started"):
        loaded.start()


def test_loading_something_else_is_a_clear_error():
    with pytest.raises(ValueError, match="not a resource-tracker snapshot"):
        ResourceTracker.loads("{not json")
    with pytest.raises(ValueError, match="not a resource-tracker snapshot"):
        ResourceTracker.from_snapshot({"hello": 1})


def test_tables_have_the_documented_columns_and_combined_names(backend):
    tracker = quiet(interval=0.05)
    assert tracker.wait_for_samples(2)
    tracker.stop()
    assert tracker.process_metrics.columns == list(PROCESS_COLUMNS)
    assert tracker.system_metrics.columns == list(SYSTEM_COLUMNS)
    assert len(PROCESS_COLUMNS) == 13 and len(SYSTEM_COLUMNS) == 24
    row = tracker.get_combined_metrics(human_names=True)[0]
    assert list(row)[:2] == ["Timestamp", "System processes"]
    assert "Process memory usage" in row and "System GPUs in use" in row
    assert len(row) == 1 + 23 + 12
    plain = tracker.get_combined_metrics()[0]
    assert "system_cpu_usage" in plain and "process_memory" in plain
    assert row["Process PID"] == os.getpid()
    assert all(row[k] == 0 for k in row if "GPU" in k or "VRAM" in k)  # no GPU here


def test_stats_and_recommendation_follow_the_rules(backend):
    tracker = quiet(interval=0.05)
    ballast = bytearray(900 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    assert tracker.wait_for_samples(4)
    tracker.stop()
    stats = tracker.stats()
    peak_kib = stats["process_memory"]["max"]
    assert peak_kib >= 900 * 1024
    for key in ("mean", "max", "p50", "p90", "p99"):
        assert key in stats["process_cpu_usage"]
    assert stats["timestamp"]["duration"] == pytest.approx(tracker.stop_time - tracker.start_time)
    rec = tracker.recommend_resources()
    assert rec == {
        "cpu": max(1, math.floor(stats["process_cpu_usage"]["mean"] + 0.5)),
        "memory": _core.round_memory_mib(peak_kib / 1024 * 1.2),
        "gpu": 0,
        "vram": 0,
    }
    assert rec["memory"] % 1024 == 0  # > 1 GiB rounds to whole GiB
    history = [{"process_cpu_usage": {"mean": 3.0}, "process_memory": {"max": 8 * 1024 * 1024}}]
    combined = tracker.recommend_resources(historical_stats=history)
    assert combined["memory"] == 10240  # max of peaks: 8 GiB * 1.2 -> 10 GiB
    assert combined["cpu"] == max(1, math.floor((stats["process_cpu_usage"]["mean"] + 3) / 2 + 0.5))
    del ballast


def test_memory_rounding_steps():
    assert [_core.round_memory_mib(x) for x in (1, 128, 129, 300, 513, 1024, 1025, 5000)] == [
        128,
        128,
        256,
        512,
        1024,
        1024,
        2048,
        5120,
    ]


def test_no_samples_is_a_clear_error_not_a_crash(backend):
    tracker = quiet(interval=60, autostart=False)
    tracker.stop()
    assert tracker.n_samples == 0
    assert tracker.stats()["timestamp"]["samples"] == 0
    with pytest.raises(ValueError, match="not enough data"):
        tracker.recommend_resources()


def test_the_seeds_quick_start_runs_as_written(backend):
    out = run_python(
        """
        from resource_tracker import ResourceTracker

        tracker = ResourceTracker()
        # your compute-heavy code
        total = 0
        for i in range(int(3e6)):
            total += i ** 3
        tracker.stop()
        print(tracker.system_metrics)
        print(tracker.process_metrics)
        print(tracker.get_combined_metrics(human_names=True)[0])
        print(tracker.stats())
        print(tracker.recommend_resources())
        """
    )
    assert "TinyDataFrame with" in out.stdout and "rows and 24 columns" in out.stdout
    assert "rows and 13 columns" in out.stdout
    assert "'cpu': 1" in out.stdout and "'gpu': 0" in out.stdout


def _cpu_seconds(pid):
    """utime + stime of pid from /proc (the ground truth for a CPU reading)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_pid_and_system_trackers_write_csv_lines(backend, tmp_path):
    # at the highest priority where allowed (root): the child gets CPU to measure whatever
    # else the machine runs; the comparison is with what it really got either way. It spins
    # until killed: a child that stopped after a fixed time could stop before a slowed tracker
    # took its rows (seen under ASan on a loaded machine: 0.06 cores read for 0.77)
    proc = subprocess.Popen(
        [sys.executable, "-c", "while True: pass"],
        preexec_fn=highest_priority,
    )
    try:
        path = tmp_path / "pid.csv"
        cpu0, wall0 = _cpu_seconds(proc.pid), time.time()
        PidTracker(pid=proc.pid, interval=0.2, output_file=str(path)).run(n_samples=4)
        cpu1, wall1 = _cpu_seconds(proc.pid), time.time()
        spath = tmp_path / "sys.csv"
        SystemTracker(interval=0.1, output_file=str(spath)).run(n_samples=2)
    finally:
        proc.kill()
        proc.wait()
    lines = path.read_text().splitlines()
    assert lines[0].split(",") == list(PROCESS_COLUMNS)
    rows = [dict(zip(PROCESS_COLUMNS, map(float, line.split(",")))) for line in lines[1:]]
    assert len(rows) == 4 and all(r["pid"] == proc.pid for r in rows)
    _rows_cpu_is_what_the_child_got(rows, cpu1 - cpu0, wall0, wall1)
    slines = spath.read_text().splitlines()
    assert slines[0].split(",") == list(SYSTEM_COLUMNS) and len(slines) == 3
    assert float(slines[1].split(",")[1]) > 10  # processes on the machine


def _rows_cpu_is_what_the_child_got(rows, got, wall0, wall1):
    """The rows' CPU seconds (baseline to last row, a window inside [wall0, wall1]) against
    what the one-thread child got in [wall0, wall1]: at most all of it, at least all of it
    less one core for the time outside the rows; each row's cpu_usage is its CPU seconds over
    its interval. Same-run bounds, however loaded the machine is."""
    slack = 3 / os.sysconf("SC_CLK_TCK")  # /proc's CPU times are whole clock ticks
    read = sum(r["utime"] + r["stime"] for r in rows)
    outside = (rows[0]["timestamp"] - wall0) + (wall1 - rows[-1]["timestamp"])
    assert read > 0.05  # the child got measurable CPU and the rows have it
    assert got - outside - slack <= read <= got + slack, (read, got, outside)
    for before, row in zip(rows, rows[1:]):
        seconds = row["timestamp"] - before["timestamp"]
        assert abs(row["cpu_usage"] * seconds - (row["utime"] + row["stime"])) < slack + 0.1 * (
            row["utime"] + row["stime"]
        ), (row, seconds)


def test_system_tracker_writes_to_stdout(backend):
    out = run_python(
        "from resource_tracker import SystemTracker\n"
        "SystemTracker(interval=0.05).run(n_samples=2)\n"
    )
    lines = out.stdout.splitlines()
    assert lines[0].startswith("timestamp,processes,") and len(lines) == 3


def test_tiny_data_frame_is_returned_everywhere(backend):
    tracker = quiet(interval=0.05)
    tracker.wait_for_samples(1)
    tracker.stop()
    assert isinstance(tracker.process_metrics, TinyDataFrame)
    assert isinstance(tracker.get_combined_metrics(), TinyDataFrame)


def test_every_backend_is_a_sampler_and_the_fixture_chooses_it(backend):
    """The suite's backend fixture really switches the engine, and each engine (and the
    stored-run reader of a loaded snapshot) satisfies the one sampler interface."""
    from resource_tracker.psutil_sampler import PsutilSampler
    from resource_tracker.sampling import Sampler, StoredRun

    tracker = quiet(interval=0.05)
    assert tracker.method == backend.method
    expected = _core.Sampler if backend.name == "c" else PsutilSampler
    assert type(tracker._sampler) is expected
    assert isinstance(tracker._sampler, Sampler)
    assert tracker.wait_for_samples(2)
    tracker.stop()
    loaded = ResourceTracker.loads(tracker.dumps())
    assert isinstance(loaded._sampler, StoredRun) and isinstance(loaded._sampler, Sampler)
    assert loaded.n_samples == tracker.n_samples and loaded.status == "finished"
    assert loaded._sampler.columns("process") == tracker._sampler.columns("process")
    views = loaded._sampler.column_views("system")
    assert [bytes(v) for v in views] == tracker._sampler.columns("system")
    assert loaded.data_quality() == tracker.data_quality()
