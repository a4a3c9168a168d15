"""Where ML workloads live: forked workers sharing memory copy-on-write, process pools
(fork and spawn), busy threads. Each test runs a real workload at the default interval (1 s)
and at 0.1 s and compares the tracker with ground truth the workload measures itself: the
sum of PSS over its processes (read from their /proc/<pid>/smaps_rollup while they hold
their memory) and its own CPU time (os.times(), children included once reaped). The peak is
taken over the whole run, as recommend_resources() takes it, so the ticks right after the
forks count. Memory peaks do not depend on the machine's speed; CPU is compared with the
CPU time the workload got, not with wall time, so the checks hold on a busy machine.

The workers' memory contract runs per backend (the ``backend`` fixture); the other
scenarios read the C sampler only: they are slow (two intervals each), and the kernel
high-water mark they check is the C sampler's (psutil has none).

The measured figures are written to $RESOURCE_TRACKER_ACCURACY_LOG (one JSON line per
scenario) when it is set: docs/metrics.md's accuracy table is made from them."""

from __future__ import annotations

import json
import os
import time

import pytest
from workloads import Workload, run_to_report, total_cpu

from resource_tracker import ResourceTracker

MIB = 1024  # KiB
INTERVALS = [1.0, 0.1]


def _track(pid, interval, method=None):
    tracker = ResourceTracker(
        pid=pid, interval=interval, discover_cloud=False, discover_server=False, method=method
    )
    assert tracker.wait_for_samples(1, timeout=10)
    return tracker


def _log(scenario, interval, truth, measured, unit):
    """Appends one accuracy figure to the log named by RESOURCE_TRACKER_ACCURACY_LOG."""
    path = os.environ.get("RESOURCE_TRACKER_ACCURACY_LOG")
    if not path:
        return
    record = {
        "scenario": scenario,
        "interval": interval,
        "truth": truth,
        "measured": measured,
        "unit": unit,
        "error": (measured - truth) / truth if truth else None,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def _rows_between(df, start, end):
    """Memory values of the rows whose reading was taken between two wall-clock times."""
    return [m for t, m in zip(df["timestamp"], df["memory"]) if start <= t <= end]


COW_WORKLOAD = """
buf = touched(400)
pids = []
t_fork = time.time()
for k in range(4):
    time.sleep(0.3)  # forks spread over the ticks, as a pool's or a DataLoader's
    pid = os.fork()
    if pid == 0:
        s = 0
        for i in range(0, len(buf), 4096):
            s += buf[i]  # the workers read the whole buffer
        wait_for(FOLDER, "write")
        own = touched(50)
        open(os.path.join(FOLDER, f"written-{k}"), "w").close()
        wait_for(FOLDER, "end")
        os._exit(0)
    pids.append(pid)
time.sleep(0.5)
report(t_fork=t_fork, shared=sum(pss_kib(p) for p in [os.getpid()] + pids))
for p in pids:
    os.waitpid(p, 0)
"""


@pytest.mark.parametrize("interval", INTERVALS)
def test_forked_workers_sharing_400_mib_peak_within_10_percent(backend, interval, tmp_path):
    """Parent + 4 forked workers sharing a touched 400 MiB buffer: the peak over the whole
    run, ticks right after each fork included, is the true footprint (sum of PSS), not
    5 x 400 MiB; then each worker writes 50 MiB of its own and the peak follows (600 MiB).
    Both samplers (the backend fixture)."""
    method = backend.method
    w = Workload(COW_WORKLOAD.replace("FOLDER", repr(str(tmp_path))))
    tracker = _track(w.pid, interval)
    try:
        w.go()
        shared = w.read_report()
        # the shared phase lasts a few ticks of the tracker (its clock, not the test's)
        assert tracker.wait_for_samples(tracker.n_samples + 3, timeout=60)
        t_write = time.time()
        (tmp_path / "write").touch()
        flags = [tmp_path / f"written-{k}" for k in range(4)]  # each worker wrote its 50 MiB
        deadline = time.monotonic() + 60
        while not all(f.exists() for f in flags) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert all(f.exists() for f in flags)
        assert tracker.wait_for_samples(tracker.n_samples + 3, timeout=60)
        written = sum(_pss_of_tree(w.pid))
        (tmp_path / "end").touch()
        w.finish()
    finally:
        tracker.stop()
        (tmp_path / "write").touch()  # the workers never outlive the test
        (tmp_path / "end").touch()
        w.kill()
    df = tracker.process_metrics
    before_writes = _rows_between(df, shared["t_fork"], t_write)
    assert max(df["children"]) == 4
    peak_shared = max(before_writes)
    peak = max(df["memory"])
    name = "" if method == "procfs" else f" ({method})"
    _log(f"fork: 4 workers share 400 MiB{name}", interval, shared["shared"] / MIB,
         peak_shared / MIB, "MiB")  # fmt: skip
    _log(f"fork: + 50 MiB written by each{name}", interval, written / MIB, peak / MIB, "MiB")
    assert peak_shared == pytest.approx(shared["shared"], rel=0.10)
    assert written == pytest.approx(600 * MIB, rel=0.10)  # the workload did what it says
    assert peak == pytest.approx(written, rel=0.10)
    assert tracker.recommend_resources()["memory"] <= 1024  # 600 MiB + 20 %, not 2 GiB


def _pss_of_tree(root):
    """PSS (KiB) of root and its descendants, read now (the ground truth of the tests)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    out = []
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                out += [int(line.split()[1]) for line in f if line.startswith("Pss:")]
        except OSError:
            pass
    return out


POOL_TASK = """
import os, time
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
def hold(args):
    folder, seconds = args
    mem = bytearray(100 * 1024 * 1024)
    for i in range(0, len(mem), 4096):
        mem[i] = 1
    open(os.path.join(folder, str(os.getpid())), "w").close()
    while not os.path.exists(os.path.join(folder, "release")):
        time.sleep(0.05)
    spin(seconds)
    return os.getpid()
"""

POOL_WORKLOAD = """
import multiprocessing
sys.path.insert(0, FOLDER)  # spawned workers import the task from there (spawn copies sys.path)
from pool_task import hold
folder = os.path.join(FOLDER, "flags")
os.mkdir(folder)
with multiprocessing.get_context(METHOD).Pool(4) as pool:
    result = pool.map_async(hold, [(folder, 0.5)] * 4, chunksize=1)
    while len(os.listdir(folder)) < 4:
        time.sleep(0.05)
    time.sleep(0.3)
    kids = [p.pid for p in multiprocessing.active_children()]
    report(pss=sum(pss_kib(p) for p in [os.getpid()] + kids), workers=len(set(kids)))
    sys.stdin.readline()
    open(os.path.join(folder, "release"), "w").close()
    result.get()
    pool.close()
    pool.join()
t = os.times()
report(cpu=t.user + t.system + t.children_user + t.children_system)
"""


@pytest.mark.parametrize("interval", INTERVALS)
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_of_4_workers_holding_100_mib(method, interval, tmp_path):
    """multiprocessing.Pool(4), each worker holding 100 MiB: the peak within 10 % of the PSS
    sum, the workers counted as children, and the CPU of all workers counted."""
    (tmp_path / "pool_task.py").write_text(POOL_TASK)
    code = POOL_WORKLOAD.replace("METHOD", repr(method)).replace("FOLDER", repr(str(tmp_path)))
    w = Workload(code)
    tracker = _track(w.pid, interval)
    try:
        w.go()
        held = w.read_report()
        time.sleep(2.5 * interval + 0.3)  # the workers hold for a few ticks
        descendants = len(_pss_of_tree(w.pid)) - 1
        w.send("release")
        cpu = w.read_report()["cpu"]
        w.finish()
    finally:
        tracker.stop()
        flags = tmp_path / "flags"
        if flags.is_dir():
            (flags / "release").touch()  # the workers never outlive the test
        w.kill()
    df = tracker.process_metrics
    peak = max(df["memory"])
    _log(f"Pool(4) {method}: 100 MiB each", interval, held["pss"] / MIB, peak / MIB, "MiB")
    _log(f"Pool(4) {method}: CPU of all workers", interval, cpu, total_cpu(df), "CPU s")
    assert held["workers"] >= 4
    assert peak == pytest.approx(held["pss"], rel=0.10)
    # the workers, and for spawn the helper process multiprocessing starts
    assert max(df["children"]) == descendants
    assert total_cpu(df) == pytest.approx(cpu, rel=0.10, abs=0.1)


THREADS_WORKLOAD = """
import hashlib, threading
data = os.urandom(1 << 20)
def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hashlib.sha256(data).digest()  # releases the GIL: the threads run in parallel
t0 = time.monotonic(); c0 = sum(os.times()[:2])
threads = [threading.Thread(target=busy, args=(3.0,)) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
report(cpu=sum(os.times()[:2]) - c0, wall=time.monotonic() - t0, life=sum(os.times()[:2]))
sys.stdin.readline()  # the test stops its tracker meanwhile
"""


@pytest.mark.parametrize("interval", INTERVALS)
def test_eight_busy_threads_read_the_cores_they_get_never_more(interval):
    """8 busy threads in one process on a machine with N cores read the CPU time they got
    (at most N cores), never more than N cores in any row."""
    cores = len(os.sched_getaffinity(0))
    w = Workload(THREADS_WORKLOAD)
    tracker = _track(w.pid, interval)
    try:
        w.go()
        truth = w.read_report()
        tracker.stop()  # while the workload waits: its last reading has all the threads' CPU
    finally:
        tracker.stop()
        w.kill()
    df = tracker.process_metrics
    measured = total_cpu(df)
    _log(
        "8 busy threads (cores)",
        interval,
        truth["cpu"] / truth["wall"],
        measured / truth["wall"],
        "cores",
    )
    # all the threads' CPU (from before they started to the report), no more than the whole
    # life's at the report (a loaded machine may still be starting the interpreter when the
    # tracker takes its baseline); a clock tick (10 ms) of rounding each way
    assert 0.95 * truth["cpu"] - 0.01 <= measured <= truth["life"] + 0.02, (measured, truth)
    # one clock tick (10 ms) per row of rounding, and the rows' own timing jitter
    slack = 0.02 / interval + 0.05
    assert max(df["cpu_usage"]) <= cores + slack


SPIKE_WORKLOAD = """
time.sleep(SETTLE)
b = touched(300)
report(spike=rss_kib())
del b  # freed at once: 50 ms of 300 MiB, between two samples
time.sleep(2.0)
"""


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_peak_between_two_samples_shows_through_the_kernel_high_water_mark(interval):
    """A process that holds 300 MiB for a moment between two samples: the memory column may
    miss it (a sampler reads gauges), the kernel's VmHWM does not, and the recommendation
    is built on it."""
    w = Workload(SPIKE_WORKLOAD.replace("SETTLE", str(interval * 1.3)))
    tracker = _track(w.pid, interval)
    spike = run_to_report(w, tracker)["spike"]
    stats = tracker.stats()
    hwm = stats["process_memory_hwm"]["max"]
    _log("a 300 MiB spike between samples (VmHWM)", interval, spike / MIB, hwm / MIB, "MiB")
    assert hwm == pytest.approx(spike, rel=0.05)
    assert tracker.recommend_resources()["memory"] >= 1.2 * spike / MIB
    again = ResourceTracker.loads(tracker.dumps())
    assert again.stats()["process_memory_hwm"]["max"] == hwm


def test_a_peak_before_tracking_began_is_not_the_workloads():
    """VmHWM covers a process's whole life: a peak from before start() is left out."""
    w = Workload(
        """
        b = touched(400)
        del b
        report(rss=rss_kib())
        sys.stdin.readline()
        """,
    )
    try:
        w.go()
        rss = w.read_report()["rss"]
        tracker = _track(w.pid, 0.1)
        assert tracker.wait_for_samples(5)
        w.finish()
        tracker.stop()
    finally:
        w.kill()
    hwm = tracker.stats()["process_memory_hwm"]["max"]
    assert hwm < rss + 50 * MIB  # not the 400 MiB of before the start


@pytest.mark.parametrize("interval", [0.1])
def test_short_lived_children_cpu_is_counted_at_a_short_interval(interval):
    """Children living less than one interval: their CPU counts (via the parent's cutime);
    at 1 s see test_core_accuracy.py::test_short_lived_children_cpu_is_counted."""
    w = Workload(
        """
        import subprocess
        code = "import time\\nend=time.monotonic()+0.03\\nwhile time.monotonic()<end: pass"
        for _ in range(20):
            subprocess.run([sys.executable, "-c", code])
        t = os.times()
        report(cpu=t.user + t.system + t.children_user + t.children_system)
        """
    )
    tracker = _track(w.pid, interval)
    truth = run_to_report(w, tracker)
    measured = total_cpu(tracker.process_metrics)
    _log("20 children of 0.03 s (CPU s)", interval, truth["cpu"], measured, "CPU s")
    assert measured == pytest.approx(truth["cpu"], rel=0.10, abs=0.1)


def test_a_large_trees_pss_round_is_spread_over_ticks():
    """A 5 x 1.5 GiB copy-on-write tree (1.5 GiB of memory): its round of smaps_rollup reads
    costs several times PSS_ROUND_SLICE (20 ms of CPU) and is spread over ticks, so one
    reading costs at most about a slice plus one read; every reading is right meanwhile."""
    from resource_tracker import _core

    w = Workload(
        """
        buf = touched(1536)
        pids = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                sys.stdin.readline()
                os._exit(0)
            pids.append(pid)
        time.sleep(0.3)
        report(pss=sum(pss_kib(p) for p in [os.getpid()] + pids))
        sys.stdin.readline()
        """
    )
    try:
        w.go()
        truth = w.read_report()["pss"]
        sampler = _core.Sampler(w.pid, 1.0, track_system=False)
        costs, memory = [], []
        extra = 5  # readings after the round completed: no second round starts
        # a loaded machine makes each read cost more: more ticks, and the PSS budget
        # (PSS_BUDGET_SHARE of the elapsed time, csrc/proc_tree.h) refills over seconds
        for _ in range(400):
            started = time.thread_time()
            row = sampler.sample_now()
            costs.append(time.thread_time() - started)
            if row is not None:
                memory.append(row[0][6])
            time.sleep(0.05)
            extra -= sampler.pss_reads >= 5
            if extra == 0:
                break
    finally:
        w.proc.stdin.close()  # the forked copies read EOF and exit
        w.kill()
    assert sampler.pss_reads == 5  # one round, complete
    reading_ticks = sum(1 for c in costs if c > 0.002)
    if sampler.pss_seconds > 0.050:  # more than two slices' worth: spread over ticks
        assert reading_ticks >= 2
    one_read = sampler.pss_seconds / 5
    assert max(costs) <= 0.020 + 2 * one_read + 0.005
    for value in memory:
        assert value == pytest.approx(truth, rel=0.10)
