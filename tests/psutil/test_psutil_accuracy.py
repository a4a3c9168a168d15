"""Accuracy of the psutil sampler (forced with method="psutil") on real workloads.

Each workload measures itself (os.times(), /proc/self/statm, smaps_rollup) and the
tracker's readings are compared with that ground truth; where the C sampler is the
reference, both trackers watch the same workload at the same time."""

from __future__ import annotations

import os
import threading
import time

import pytest
from build_variant import needs_procfs
from psutil_workloads import Workload, _force_psutil, psutil_tracker, total_cpu  # noqa: F401
from workloads import wait_for_baseline

from resource_tracker import ResourceTracker
from resource_tracker.names import SYSTEM_COLUMNS

MIB_KIB = 1024


def _start(workload, interval=0.25, **kwargs):
    tracker = psutil_tracker(pid=workload.pid, interval=interval, **kwargs)
    assert tracker.running
    wait_for_baseline(tracker)  # the workload's CPU counts from the baseline reading on
    return tracker


@needs_procfs
def test_same_columns_and_readings_as_the_c_sampler():
    """The C sampler and the psutil sampler watch one busy workload side by side."""
    w = Workload(
        """
        buf = touched(64)
        spin(2.0)
        report(done=True)
        """
    )
    counts = _ProcessCounts()
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
        counts.stop()
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
    assert p_sys["disk_space_total_gb"][-1] == pytest.approx(c_sys["disk_space_total_gb"][-1])
    # machine-wide figures move with everything else the machine runs: the two samplers read
    # them at different moments, so each one's typical reading lies in the range the other saw
    for col, rel, abs_ in (("disk_space_used_gb", 0.01, 0), ("memory_used", 0.01, 0),
                           ("memory_cached", 0.01, 0)):  # fmt: skip
        _same_quantity(c_sys[col], p_sys[col], rel, abs_, col)
    # the process count moves by dozens a second on a busy machine: each sampler's readings
    # against the count the test itself listed through the same run
    for name, readings in (("c", c_sys["processes"]), ("psutil", p_sys["processes"])):
        counts.assert_within(readings, name)
    # the machine ran at least the workload's core
    assert sum(p_sys["utime"]) + sum(p_sys["stime"]) >= 0.8 * total_cpu(p_proc)
    for col in ("gpu_usage", "gpu_vram", "gpu_utilized"):
        assert set(p_proc[col]) == {0.0} and set(p_sys[col]) == {0.0}


class _ProcessCounts:
    """The ground truth of the machine-wide ``processes`` column: the pids in /proc listed by
    a thread every 20 ms, from before the trackers start until they stopped, with the
    kernel's count of forks since boot (/proc/stat ``processes``). Between two listings the
    count was at least the pids in both. A sampler counts at most the processes alive at some
    moment of the run: the C sampler lists /proc every 5 s at most and adds the pids handed
    out since, so a process outside the workload that exited counts until the next listing.
    Those are the pids any listing saw, plus the forks of each 20 ms that the next listing
    did not show as a new pid (a process that lived and died between two listings, or a
    thread: /proc/stat counts both)."""

    def __init__(self):
        self.low, self.high = float("inf"), 0
        self._seen, self._unseen_forks = set(), 0
        self._last = self._listing()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    @staticmethod
    def _listing():
        with open("/proc/stat") as f:
            forks = next(int(line.split()[1]) for line in f if line.startswith("processes "))
        return {name for name in os.listdir("/proc") if name.isdigit()}, forks

    def _watch(self):
        while True:
            done = self._done.wait(0.02)
            (pids0, forks0), (pids1, forks1) = self._last, self._listing()
            self.low = min(self.low, len(pids0 & pids1))
            self._seen |= pids0 | pids1
            self._unseen_forks += max(0, forks1 - forks0 - len(pids1 - pids0))
            self.high = len(self._seen) + self._unseen_forks
            self._last = pids1, forks1
            if done:
                return

    def stop(self):
        self._done.set()
        self._thread.join()

    def assert_within(self, readings, name):
        """Every reading lies within the bounds (2 more either side: a listing races the
        processes it lists)."""
        for n in readings:
            assert self.low - 2 <= n <= self.high + 2, (name, n, self.low, self.high)


def _same_quantity(a, b, rel, abs_, name):
    """Two series of one machine-wide quantity sampled over the same time at interleaved
    moments: the median of each lies in the range of the other, widened by how much the
    other saw it move during the run (two readings at different moments differ by about
    that: the C sampler's process count, for one, is a listing refreshed every 5 s) and by
    rel (a share) and abs_."""
    for x, y in ((a, b), (b, a)):
        mid = sorted(x)[len(x) // 2]
        low, high = min(y), max(y)
        margin = (high - low) + rel * max(abs(low), abs(high)) + abs_
        assert low - margin <= mid <= high + margin, (name, list(a), list(b))


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
