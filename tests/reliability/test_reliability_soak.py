"""Soak: a sampler at a 10 ms interval while the tracked tree forks and reaps children
continuously and another thread reads the metrics; then many trackers started and stopped.

The sample count is RESOURCE_TRACKER_SOAK_SAMPLES (default 6,000: one minute, for `make test`);
`make soak` runs the full 100,000 samples (about 17 minutes). Bounds stated and checked:
- memory: RSS growth of this process <= 2 x the tables' bytes (rows x columns x 8; tables
  grow by doubling) + 16 MiB;
- interval: ticks stay on the grid start + k x interval (they skip ahead, never drift; the
  rule itself is checked with an injected clock in tests/core/c/stats_check.c). Each tick is
  late on its grid by what the scheduler gave the thread: from one tick to the next the
  phase on the grid moves forward as often as back, however busy the machine is. A drifting
  schedule (next tick one interval after the last reading) moves it forward by the reading's
  cost every tick. Checked: at most 60 % of the phase changes are forward (a grid: 50 % give
  or take 1 %; a drifting schedule: nearly all on a quiet machine);
- cost: the sampler's own CPU time per reading (its thread's clock, not a share of wall
  time, which a busy machine stretches) is under a quarter of the interval (about 0.4 ms of
  10 ms here: a sampler costing 10 times as much fails), so every tick it loses is the
  scheduler's; the share of ticks kept is printed;
- no deadlock: the reader sees rows grow for the whole run; stop() <= 1 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time

from reliability_helpers import _ASAN_ALLOCATED, heap_bytes, open_fds, rss_kib, table, threads

from resource_tracker import ResourceTracker, _core

SAMPLES = int(os.environ.get("RESOURCE_TRACKER_SOAK_SAMPLES", "6000"))
INTERVAL = 0.01

FORKER = """
import os, sys, time
n = 0
while not os.path.exists(sys.argv[1]):
    pids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    n += len(pids)
    time.sleep(0.004)
print(n)
"""


def test_reliability_soak(tmp_path):
    done_flag = str(tmp_path / "done")
    tree = subprocess.Popen(
        [sys.executable, "-c", FORKER, done_flag], stdout=subprocess.PIPE, text=True
    )
    sampler = _core.Sampler(tree.pid, INTERVAL)
    stop = threading.Event()
    seen = {"reads": 0, "stalls": 0, "max_stall": 0.0}

    def reader():
        last_n, last_change = 0, time.monotonic()
        while not stop.is_set():
            p = table(sampler, "process")
            sampler.columns("system")
            n = sampler.n_samples
            now = time.monotonic()
            if n > last_n:
                seen["max_stall"] = max(seen["max_stall"], now - last_change)
                last_n, last_change = n, now
            seen["reads"] += 1
            assert len(p["timestamp"]) <= n + 1
            time.sleep(0.05)

    rss0 = rss_kib()
    t0 = time.monotonic()
    sampler.start()
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        assert sampler.wait(SAMPLES, SAMPLES * INTERVAL * 3 + 30), "soak: samples not reached"
    finally:
        elapsed = time.monotonic() - t0
        t1 = time.monotonic()
        sampler.stop()
        stop_s = time.monotonic() - t1
        stop.set()
        thread.join()
        open(done_flag, "w").close()
        children = int(tree.stdout.read() or 0)
        tree.wait()
    rss_growth = rss_kib() - rss0
    p, y = table(sampler, "process"), table(sampler, "system")
    rows = len(p["timestamp"])
    table_bytes = rows * (len(p) + len(y)) * 8
    bound_kib = (2 * table_bytes) // 1024 + 16 * 1024
    ts = list(y["timestamp"])
    start = sampler.start_time
    offsets = [(t - start) % INTERVAL for t in ts[:-1]]  # how late each tick was on its grid
    median_off = statistics.median(offsets)
    p99_off = sorted(offsets)[int(len(offsets) * 0.99)]
    # the phase change on the grid from one tick to the next: forward when below half an
    # interval (a tick later on its grid than the tick before on its own)
    shifts = [(b - a) % INTERVAL for a, b in zip(ts[:-2], ts[1:-1])]
    forward = sum(1 for d in shifts if 0 < d < INTERVAL / 2) / len(shifts)
    cpu_per_reading = sampler.cpu_seconds / sampler.samples_taken
    expected = (ts[-2] - start) / INTERVAL
    kept = (rows - 1) / expected
    print(
        f"soak: {rows} samples at {INTERVAL * 1000:.0f} ms in {elapsed:.1f} s, tree forked and "
        f"reaped {children} children, {seen['reads']} reader passes (longest wait for a new "
        f"row {seen['max_stall'] * 1000:.0f} ms)\n"
        f"soak: RSS growth {rss_growth} KiB (bound {bound_kib} KiB = 2 x {table_bytes // 1024}"
        f" KiB tables + 16 MiB); lateness on the grid median {median_off * 1000:.2f} ms, p99 "
        f"{p99_off * 1000:.2f} ms (forward phase changes {forward * 100:.1f} %); ticks kept "
        f"{kept * 100:.1f} %; sampler CPU {sampler.cpu_seconds:.2f} s "
        f"({cpu_per_reading * 1000:.2f} ms a reading); stop() {stop_s:.3f} s"
    )
    assert children >= min(1000, SAMPLES // 6)
    assert rss_growth <= bound_kib
    assert forward <= 0.6
    assert cpu_per_reading < INTERVAL / 4
    assert seen["max_stall"] < 2.0
    assert stop_s < 1.0


def test_reliability_soak_many_trackers_in_a_loop():
    """300 ResourceTrackers started and stopped one after another (and 20 pairs at once):
    threads, descriptors and memory come back to where they were. Memory: the resident set, or
    under ASan (make sanitize) its own count of live allocations (its quarantine of freed
    blocks grows the resident set by up to 8 MiB: no leak measure there)."""

    def memory_kib():
        return heap_bytes() // 1024 if _ASAN_ALLOCATED is not None else rss_kib()

    fds0, threads0 = open_fds(), threads()
    ResourceTracker(interval=0.005, discover_server=False, discover_cloud=False).stop()
    rss0 = memory_kib()
    t0 = time.monotonic()
    for i in range(300):
        tr = ResourceTracker(interval=0.005, discover_server=False, discover_cloud=False)
        if i % 10 == 0:
            tr.wait_for_samples(2, 5.0)
        tr.stop()
        assert tr.status == "finished"
    for _ in range(20):
        a = ResourceTracker(interval=0.005, discover_server=False, discover_cloud=False)
        b = ResourceTracker(interval=0.007, discover_server=False, discover_cloud=False)
        b.stop()
        a.stop()
    del tr, a, b
    elapsed = time.monotonic() - t0
    deadline = time.monotonic() + 2.0
    while threads() > threads0 and time.monotonic() < deadline:
        time.sleep(0.01)
    growth = memory_kib() - rss0
    print(
        f"soak: 340 trackers started/stopped in {elapsed:.1f} s; threads {threads()} "
        f"(before {threads0}), fds {open_fds()} (before {fds0}), memory growth {growth} KiB"
    )
    assert threads() <= threads0  # (a thread of an earlier test may have ended meanwhile)
    assert open_fds() <= fds0
    assert growth < 4096
