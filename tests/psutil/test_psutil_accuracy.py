"""Accuracy of the psutil sampler (forced with method="psutil") on real workloads.

Each workload measures itself (os.times(), /proc/self/statm, smaps_rollup) and the
tracker's readings are compared with that ground truth; where the C sampler is the
reference, both trackers watch the same workload at the same time."""

from __future__ import annotations

import os
import time

import pytest
from build_variant import needs_procfs
from psutil_workloads import Workload, _force_psutil, psutil_tracker, total_cpu  # noqa: F401

from resource_tracker import ResourceTracker
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS

MIB_KIB = 1024


def _start(workload, interval=0.25, **kwargs):
    tracker = psutil_tracker(pid=workload.pid, interval=interval, **kwargs)
    assert tracker.wait_for_samples(0, 1) and tracker.running
    time.sleep(0.15)  # the baseline is taken at once in the sampler thread
    return tracker


def _one_busy_core():
    """(process_metrics, truth) for a workload spinning one core for 3 s."""
    w = Workload(
        """
        t0 = time.monotonic(); c0 = sum(os.times()[:2])
        spin(3.0)
        report(cpu=sum(os.times()[:2]) - c0, wall=time.monotonic() - t0)
        """
    )
    tracker = _start(w, interval=0.5)
    try:
        w.go()
        truth = w.read_report()
        w.finish()
        tracker.stop()
    finally:
        tracker.stop()
        w.kill()
    return tracker.process_metrics, truth, w.pid


def test_one_busy_core_reads_one_core():
    """The CPU time is read to within 5 %; the busy rows read the cores the workload got: one
    within 0.05 on a quiet machine, its share over the spin on a busy one (0.1 of leeway: the
    rows cover part of the spin), never more than one core."""
    df, truth, pid = _one_busy_core()
    assert df.columns == list(PROCESS_COLUMNS)
    assert set(df["pid"]) == {float(pid)}
    assert total_cpu(df) == pytest.approx(truth["cpu"], rel=0.05, abs=0.05)
    share = truth["cpu"] / truth["wall"]
    busy = df["cpu_usage"][1:5]
    assert sum(busy) / len(busy) == pytest.approx(share, abs=0.05 if share > 0.97 else 0.1)
    assert max(busy) <= 1.05


def test_children_at_any_depth_and_short_lived_children_are_counted():
    """Two busy children (one of them through a grandchild) read two cores and two
    children; then 20 short-lived children each burn CPU between two samples."""
    w = Workload(
        """
        import subprocess
        busy = "import time\\nend=time.monotonic()+2.5\\nwhile time.monotonic()<end: pass"
        nested = f"import subprocess, sys\\nsubprocess.run([sys.executable, '-c', {busy!r}])"
        kids = [subprocess.Popen([sys.executable, "-c", busy]),
                subprocess.Popen([sys.executable, "-c", nested])]
        t0 = time.time()
        for k in kids: k.wait()
        t1 = time.time(); c = os.times()
        busy_cpu = c.children_user + c.children_system
        for _ in range(20):
            subprocess.run([sys.executable, "-c",
                "import time\\nend=time.monotonic()+0.05\\nwhile time.monotonic()<end: pass"])
        t = os.times()
        report(children_cpu=t.children_user + t.children_system, busy_cpu=busy_cpu,
               t0=t0, t1=t1)
        """
    )
    tracker = _start(w, interval=0.5)
    try:
        w.go()
        truth = w.read_report()
        w.finish()
        tracker.stop()
    finally:
        tracker.stop()
        w.kill()
    df = tracker.process_metrics
    # the nested chain is workload -> python -> python: 3 descendants at the peak
    assert max(df["children"]) == 3
    # rows inside the busy phase read the cores the children got (2 on an idle machine)
    start, end = truth["t0"] + 0.5, truth["t1"] - 0.3  # interpreter start-up and exit
    rows = [u for u, t in zip(df["cpu_usage"], df["timestamp"]) if start <= t - 0.5 and t <= end]
    assert len(rows) >= 2
    expected = truth["busy_cpu"] / (truth["t1"] - truth["t0"])
    # the rows cover part of the busy phase: on a busy machine the children's share varies
    # over it, hence more leeway there (the totals below are exact either way)
    assert sum(rows) / len(rows) == pytest.approx(expected, abs=0.3 if expected > 1.8 else 0.6)
    assert sum(rows) / len(rows) > 1.2 or expected < 1.5, "two children, less than 1.2 cores"
    # every child's CPU, including the short-lived ones, is in the totals
    assert total_cpu(df) == pytest.approx(truth["children_cpu"], rel=0.05, abs=0.1)


def test_touched_200_mib_buffer_reads_within_5_percent():
    w = Workload(
        """
        buf = bytearray(200 * 1024 * 1024)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        report(rss=rss_kib())
        sys.stdin.readline()
        """
    )
    tracker = _start(w)
    try:
        w.go()
        truth = w.read_report()
        time.sleep(0.8)
        peak = max(tracker.process_metrics["memory"])
    finally:
        tracker.stop()
        w.kill()
    assert truth["rss"] >= 200 * MIB_KIB
    assert peak == pytest.approx(truth["rss"], rel=0.05)
    assert peak == pytest.approx(200 * MIB_KIB, rel=0.10)


def test_forked_workers_sharing_a_buffer_are_counted_once():
    """A parent and 3 forked workers share a touched 150 MiB buffer: the memory column is
    the sum of their PSS (~150 MiB plus the interpreters), not 4 x 150 MiB of RSS."""
    w = Workload(
        """
        buf = bytearray(150 * 1024 * 1024)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        kids = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                time.sleep(4)
                os._exit(0)
            kids.append(pid)
        time.sleep(1.5)
        report(pss=sum(pss_kib(p) for p in [os.getpid()] + kids))
        for p in kids:
            os.waitpid(p, 0)
        """
    )
    tracker = _start(w, interval=0.25)
    try:
        w.go()
        truth = w.read_report()
        time.sleep(0.6)
        df = tracker.process_metrics
    finally:
        tracker.stop()
        w.kill()
    shared_rows = [m for m, c in zip(df["memory"], df["children"]) if c == 3]
    assert shared_rows, "no sample saw the 3 workers"
    assert shared_rows[-1] == pytest.approx(truth["pss"], rel=0.10)
    assert shared_rows[-1] < 1.5 * 150 * MIB_KIB


def test_written_50_mib_with_fsync_shows_in_write_bytes(tmp_path):
    target = tmp_path / "data.bin"
    w = Workload(
        f"""
        with open({str(target)!r}, "wb") as f:
            for _ in range(50):
                f.write(os.urandom(1024 * 1024))
            f.flush()
            os.fsync(f.fileno())
        report(done=True)
        """
    )
    tracker = _start(w)
    try:
        w.go()
        w.read_report()
        w.finish()
        tracker.stop()
    finally:
        tracker.stop()
        w.kill()
    written = sum(tracker.process_metrics["write_bytes"])
    assert written == pytest.approx(50 * 1024 * 1024, rel=0.05)


def test_the_trackers_own_thread_is_not_counted():
    """Tracking its own (idle) process every 0.02 s until the sampler thread has burnt 0.1 s
    of CPU (however long that takes on a busy machine): none of it shows up as the
    workload's (counting it would fail)."""
    tracker = psutil_tracker(interval=0.02)
    deadline = time.monotonic() + 60
    while tracker._sampler.cpu_seconds < 0.1 and time.monotonic() < deadline:
        time.sleep(0.25)
    tracker.stop()
    own = tracker._sampler.cpu_seconds
    measured = total_cpu(tracker.process_metrics)
    assert own >= 0.1, "the sampler thread should have used some CPU"
    assert measured < 0.3 * own + 0.02


@needs_procfs
def test_same_columns_and_readings_as_the_c_sampler():
    """The C sampler and the psutil sampler watch one busy workload side by side."""
    w = Workload(
        """
        buf = bytearray(64 * 1024 * 1024)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        spin(2.0)
        report(done=True)
        """
    )
    c_tracker = ResourceTracker(
        pid=w.pid, interval=0.5, discover_cloud=False, discover_server=False, method="procfs"
    )
    p_tracker = _start(w, interval=0.5)
    try:
        w.go()
        w.read_report()
        w.finish()
        c_tracker.stop()
        p_tracker.stop()
    finally:
        c_tracker.stop()
        p_tracker.stop()
        w.kill()
    assert c_tracker.method == "procfs"
    for table in ("process_metrics", "system_metrics"):
        c_df, p_df = getattr(c_tracker, table), getattr(p_tracker, table)
        assert p_df.columns == c_df.columns
        assert len(p_df) >= 3
    assert p_tracker.system_metrics.columns == list(SYSTEM_COLUMNS)
    c_proc, p_proc = c_tracker.process_metrics, p_tracker.process_metrics
    assert total_cpu(p_proc) == pytest.approx(total_cpu(c_proc), rel=0.05, abs=0.05)
    assert max(p_proc["memory"]) == pytest.approx(max(c_proc["memory"]), rel=0.05)
    c_sys, p_sys = c_tracker.system_metrics, p_tracker.system_metrics
    for col in ("disk_space_total_gb", "disk_space_used_gb", "memory_used", "memory_cached"):
        assert p_sys[col][-1] == pytest.approx(c_sys[col][-1], rel=0.05), col
    assert p_sys["processes"][-1] == pytest.approx(c_sys["processes"][-1], abs=10)
    # the machine ran at least the workload's core
    assert sum(p_sys["utime"]) + sum(p_sys["stime"]) >= 0.8 * total_cpu(p_proc)
    for col in ("gpu_usage", "gpu_vram", "gpu_utilized"):
        assert set(p_proc[col]) == {0.0} and set(p_sys[col]) == {0.0}


def test_system_network_counts_no_loopback_and_disk_io_counts_whole_disks():
    """Loopback traffic is not network traffic; read/written bytes never go negative."""
    import socket

    tracker = psutil_tracker(interval=0.25, track_processes=False)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    payload = b"x" * (1 << 20)
    for _ in range(20):
        client.sendall(payload)
        got = 0
        while got < len(payload):
            got += len(conn.recv(1 << 20))
    time.sleep(0.4)
    tracker.stop()
    for s in (client, conn, server):
        s.close()
    df = tracker.system_metrics
    assert len(tracker.process_metrics) == 0
    assert sum(df["net_recv_bytes"]) < 5 * 1024 * 1024  # 20 MiB went over loopback
    for col in ("disk_read_bytes", "disk_write_bytes", "net_recv_bytes", "net_sent_bytes"):
        assert min(df[col]) >= 0
    total = os.statvfs("/")
    assert df["disk_space_total_gb"][-1] >= total.f_blocks * total.f_frsize / 1e9 * 0.999
