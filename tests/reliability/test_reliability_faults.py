"""Fault injection: whatever procfs, NVML or a metadata service do, the tracker never crashes,
stop() returns within its bound, and what can be recorded is recorded.

- A fake procfs root (Sampler(proc_root=..., sys_root=...)) built from this machine's real
  files, with one file at a time missing, empty, truncated, garbage or enormous (over the
  16 MiB read cap; one 100 MB stat line), and files replaced, truncated and removed by a racing
  thread while the sampler reads them (there is no FUSE here: a thread does the vanishing).
- Real /proc with a tree that starts and reaps short-lived children continuously, so that
  processes exit between the listing and the reading of their files.
- NVML: the tests' stand-in library (tests/gpu_cloud/nvml_stub.c, speaking the NVML C
  interface; there is no GPU here) switched to failing modes while sampling, and built with one
  call that hangs (nvml_hang.c).
- Cloud metadata: the loopback stand-in of tests/gpu_cloud/gpu_cloud_mock.py that hangs,
  resets the connection or answers garbage.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import sys
import threading
import time

import pytest
from reliability_helpers import nvml_stub, table

from resource_tracker import _core

HERE = os.path.dirname(os.path.abspath(__file__))
INTERVAL = 0.02
STOP_BOUND = 1.0  # seconds stop() may take when nothing hangs
ROOT_PID, CHILD_PID = 4242, 4243
SYSTEM_FILES = ["stat", "meminfo", "diskstats", "net/dev", "self/mountinfo"]
PID_FILES = ["stat", "io", "smaps_rollup"]
ENORMOUS = 20 * 1024 * 1024  # bytes: above the 16 MiB cap of csrc/textbuf.h


def _real(path):
    with open(path, "rb") as f:
        return f.read()


def _pid_stat(pid, ppid, comm=b"fake) (worker"):
    """A real stat line of this process with pid, ppid and a hostile comm put in, and one
    thread (its task directory holds one: a test worker's own threads would not be there)."""
    line = _real("/proc/self/stat")
    rest = line[line.rindex(b")") + 2 :].split(b" ")
    rest[1] = str(ppid).encode()
    rest[17] = b"1"  # num_threads, the 20th field
    return str(pid).encode() + b" (" + comm + b") " + b" ".join(rest)


def make_fake_proc(root):
    """A procfs tree under root holding a two-process workload and the system files."""
    proc = os.path.join(root, "proc")
    for rel in SYSTEM_FILES:
        path = os.path.join(proc, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(_real(os.path.join("/proc", rel)))
    for pid, ppid in ((ROOT_PID, 1), (CHILD_PID, ROOT_PID)):
        os.makedirs(os.path.join(proc, str(pid)))
        contents = {
            "stat": _pid_stat(pid, ppid),
            "io": _real("/proc/self/io"),
            "smaps_rollup": _real("/proc/self/smaps_rollup"),
        }
        for name, data in contents.items():
            with open(os.path.join(proc, str(pid), name), "wb") as f:
                f.write(data)
    sys_root = os.path.join(root, "sys")
    os.makedirs(os.path.join(sys_root, "block"))
    return proc, sys_root


def _finite_rows(sampler):
    """Rows of both tables; every value finite and not negative (where it cannot be)."""
    rows = 0
    for which in ("process", "system"):
        t = table(sampler, which)
        for name, col in t.items():
            for v in col:
                assert math.isfinite(v), f"{which}.{name} = {v}"
            if name not in ("timestamp",) and not name.endswith("_time"):
                assert min(col, default=0.0) >= 0.0, f"{which}.{name} negative: {min(col)}"
        rows = max(rows, max((len(c) for c in t.values()), default=0))
    return rows


def _run(sampler, n=3, timeout=10.0):
    sampler.start()
    try:
        recorded = sampler.wait(n, timeout)
    finally:
        t0 = time.monotonic()
        sampler.stop()
        stop_s = time.monotonic() - t0
    return recorded, stop_s


def _fault(path, kind):
    if kind == "missing":
        os.remove(path)
        return
    data = _real(path)
    with open(path, "wb") as f:
        if kind == "empty":
            pass
        elif kind == "truncated":
            f.write(data[: len(data) // 2])
        elif kind == "garbage":
            f.write(random.Random(7).randbytes(len(data) or 100) + b"\xff\x00 ) ( : -1")
        elif kind == "enormous":
            chunk = (data.rstrip(b"\n") + b" ") * 64
            while f.tell() < ENORMOUS:
                f.write(chunk)
            f.write(b"\n")


FAULTS = ["missing", "empty", "truncated", "garbage", "enormous"]
TARGETS = SYSTEM_FILES + [f"{ROOT_PID}/{n}" for n in PID_FILES] + [f"{CHILD_PID}/stat"]


def test_reliability_fault_fake_procfs_is_read(tmp_path):
    """The pristine fake root: the two-process tree and the system files are really read
    (so the damaged variants below test what they claim)."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    sampler = _core.Sampler(ROOT_PID, INTERVAL, proc_root=proc, sys_root=sys_root)
    recorded, _ = _run(sampler)
    assert recorded
    p, y = table(sampler, "process"), table(sampler, "system")
    assert max(p["children"]) == 1  # 4243 is 4242's child
    assert max(p["memory"]) > 0
    assert max(y["memory_used"]) > 0 and max(y["processes"]) == 2


@pytest.mark.parametrize("kind", FAULTS)
def test_reliability_fault_fake_procfs(tmp_path, kind):
    """Each file in turn damaged: rows are still recorded, values finite, stop() prompt."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    pristine = str(tmp_path / "pristine")
    shutil.copytree(proc, pristine)
    worst = 0.0
    for target in TARGETS:
        shutil.rmtree(proc)
        shutil.copytree(pristine, proc)
        _fault(os.path.join(proc, target), kind)
        sampler = _core.Sampler(ROOT_PID, INTERVAL, proc_root=proc, sys_root=sys_root)
        recorded, stop_s = _run(sampler)
        worst = max(worst, stop_s)
        assert recorded, f"{target} {kind}: no rows recorded"
        assert _finite_rows(sampler) >= 3
        assert stop_s < STOP_BOUND, f"{target} {kind}: stop() took {stop_s:.3f} s"
    print(f"fault {kind:9s}: {len(TARGETS)} files, rows recorded each time, stop() <= {worst:.3f}")


def test_reliability_fault_hundred_megabyte_stat_line(tmp_path):
    """A 100 MB /proc/<pid>/stat line is refused (read cap), the system table still fills."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    path = os.path.join(proc, str(ROOT_PID), "stat")
    head = _real(path).rstrip(b"\n")
    with open(path, "wb") as f:
        f.write(head)
        f.write(b" 1" * (50 * 1024 * 1024))
        f.write(b"\n")
    sampler = _core.Sampler(ROOT_PID, INTERVAL, proc_root=proc, sys_root=sys_root)
    rss0 = _rss_kib()
    recorded, stop_s = _run(sampler)
    grew = _rss_kib() - rss0
    assert recorded and stop_s < STOP_BOUND
    assert _finite_rows(sampler) >= 3
    assert grew < 64 * 1024, f"RSS grew {grew} KiB reading a 100 MB file"
    print(f"fault 100 MB stat line: stop() {stop_s:.3f} s, RSS growth {grew} KiB")


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_reliability_fault_files_vanish_mid_read(tmp_path):
    """A racing thread replaces, truncates, rewrites and removes the files while a 5 ms
    sampler reads them for 2 s: no crash, rows keep coming, stop() prompt."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    originals = {t: _real(os.path.join(proc, t)) for t in TARGETS}
    stop = threading.Event()
    actions = {"n": 0}

    def racer():
        rng = random.Random(11)
        while not stop.is_set():
            target = rng.choice(TARGETS)
            path = os.path.join(proc, target)
            data = originals[target]
            op = rng.randrange(5)
            try:
                if op == 0:
                    os.remove(path)
                elif op == 1:  # truncate in place, then write slowly in two halves
                    with open(path, "wb") as f:
                        f.write(data[: len(data) // 3])
                        f.flush()
                        time.sleep(0.0005)
                        f.write(data[len(data) // 3 :])
                elif op == 2:
                    tmp = path + ".new"
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.replace(tmp, path)
                elif op == 3:
                    with open(path, "wb") as f:
                        f.write(data[: rng.randrange(len(data) + 1)])
                else:
                    with open(path, "wb") as f:
                        f.write(data)
            except OSError:
                pass
            actions["n"] += 1

    sampler = _core.Sampler(ROOT_PID, 0.005, proc_root=proc, sys_root=sys_root)
    thread = threading.Thread(target=racer)
    sampler.start()
    thread.start()
    try:
        time.sleep(2.0)
    finally:
        t0 = time.monotonic()
        sampler.stop()
        stop_s = time.monotonic() - t0
        stop.set()
        thread.join()
    rows = _finite_rows(sampler)
    print(
        f"fault vanishing files: {actions['n']} file changes, {rows} rows in 2 s at 5 ms, "
        f"{sampler.read_errors} read errors, stop() {stop_s:.3f} s"
    )
    assert rows >= 100, f"only {rows} rows in 2 s at a 5 ms interval"
    assert stop_s < STOP_BOUND


CHURN = """
import os, select, sys
sys.stdin.readline()  # go: the sampler has its baseline
cpu0 = sum(os.times()[:2])
n = 0
while not select.select([sys.stdin], [], [], 0)[0]:  # until the test closes stdin
    pids = [os.posix_spawn("/bin/true", ["true"], os.environ) for _ in range(8)]
    for pid in pids:
        os.waitpid(pid, 0)
    n += len(pids)
    print(n, flush=True)
print(n, sum(os.times()[:2]) - cpu0, flush=True)
"""


def test_reliability_fault_processes_exit_between_listing_and_reading():
    """Real /proc: the tracked tree starts and reaps short-lived children all the time, so
    entries vanish between the listing and the reads; every reading gives its row (none
    fails) over 200 readings and more than 100 children, however slowly a busy machine runs
    either, and the churn's own CPU (its os.times, from when it began) is counted."""
    proc = subprocess.Popen([sys.executable, "-c", CHURN], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    sampler = _core.Sampler(proc.pid, 0.005)
    sampler.start()
    try:
        deadline = time.monotonic() + 120
        while sampler.samples_taken < 1:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        while int(proc.stdout.readline().split()[0]) <= 100:  # its children so far
            pass
        assert sampler.wait(200, 120.0)
        proc.stdin.close()
        *_, last = proc.stdout.read().splitlines()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    finally:
        t0 = time.monotonic()
        sampler.stop()
        stop_s = time.monotonic() - t0
        proc.kill()
    children, own_cpu = last.split()
    children, own_cpu = int(children), float(own_cpu)
    proc.wait()
    rows = _finite_rows(sampler)
    t = table(sampler, "process")
    print(
        f"fault exiting processes: {children} children started and reaped, {rows} rows, "
        f"{sampler.samples_taken:.0f} readings, max children seen "
        f"{max(t['children'], default=0):.0f}, {sampler.read_errors} read errors, "
        f"stop() {stop_s:.3f} s"
    )
    assert children > 100 and rows >= 200
    assert sampler.read_errors == 0
    assert sampler.state == "stopped" and stop_s < _core.STOP_TIMEOUT  # woken, not given up on
    assert rows >= sampler.samples_taken - 2  # the baseline, and a final reading folded in
    # the churn's own CPU since it began (its os.times) was counted, its children's on top
    assert sum(t["utime"]) + sum(t["stime"]) >= 0.9 * own_cpu - 0.02


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")
def test_reliability_fault_nvml_fails_while_sampling(tmp_path, monkeypatch):
    """NVML calls start failing (lost GPU, not supported, no process utilisation) mid-run:
    sampling goes on, GPU values stay finite."""
    import test_gpu_nvml

    stub = nvml_stub(tmp_path)
    ctl = test_gpu_nvml.Control(str(tmp_path / "control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", ctl.path)
    ctl.set(tree_pid=os.getpid())
    sampler = _core.Sampler(os.getpid(), 0.01, nvml_library=stub)
    sampler.start()
    try:
        for mode in ("gpu1_lost", "not_supported", "no_process_utilization", "no_gpu", ""):
            n = sampler.n_samples
            ctl.set(mode=mode)
            assert sampler.wait(n + 5, 5.0), f"sampling stopped in NVML mode {mode!r}"
    finally:
        t0 = time.monotonic()
        sampler.stop()
        stop_s = time.monotonic() - t0
    system = table(sampler, "system")
    assert max(system["gpu_usage"]) > 0  # the healthy phases were recorded
    assert _finite_rows(sampler) >= 25
    assert stop_s < STOP_BOUND
    print(f"fault NVML failing modes: {sampler.n_samples} rows, stop() {stop_s:.3f} s")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")
def test_reliability_fault_nvml_hangs(hang_stub, tmp_path, monkeypatch):
    """An NVML call that hangs 400 ms: readers are never blocked by it (the sampler holds no
    lock while collecting), and stop() returns within the reading under way plus one final
    reading. (A call that hangs longer than STOP_TIMEOUT no longer holds stop():
    test_reliability_hardening.py::test_hardening_stop_bounded_when_nvml_hangs.)"""
    import test_gpu_nvml

    hang_ms = 400
    ctl = test_gpu_nvml.Control(str(tmp_path / "control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", ctl.path)
    monkeypatch.setenv("NVML_STUB_HANG_MS", "0")
    sampler = _core.Sampler(os.getpid(), 0.01, nvml_library=hang_stub)
    sampler.start()
    try:
        assert sampler.wait(3, 5.0)
        os.environ["NVML_STUB_HANG_MS"] = str(hang_ms)
        time.sleep(0.1)  # the thread is now inside the hanging call
        worst_read = 0.0
        for _ in range(20):
            t0 = time.monotonic()
            sampler.columns("system")
            _ = sampler.n_samples, sampler.state
            worst_read = max(worst_read, time.monotonic() - t0)
            time.sleep(0.02)
    finally:
        t0 = time.monotonic()
        sampler.stop()
        stop_s = time.monotonic() - t0
        os.environ["NVML_STUB_HANG_MS"] = "0"
    # the stand-in has 2 GPUs: a reading takes 2 hangs; stop() waits for the reading under
    # way and the final one, plus slack
    bound = 2 * 2 * hang_ms / 1000 + 0.5
    print(
        f"fault NVML hang {hang_ms} ms per GPU call: reads <= {worst_read * 1000:.1f} ms, "
        f"stop() {stop_s:.3f} s (bound {bound:.1f} s)"
    )
    assert worst_read < hang_ms / 1000 / 2  # a read that waited for the call: ~0.3 s
    assert stop_s < bound
    _finite_rows(sampler)


@pytest.mark.parametrize("behaviour", ["slow", "broken", "garbage", "error"])
def test_reliability_fault_metadata_service(tmp_path, behaviour):
    """A metadata service (evidence: AWS) that hangs, resets, answers garbage or 500: the
    discovery gives up within its timeout, reports unknown, and the process goes on."""
    from gpu_cloud_mock import MetadataServer, make_sysfs

    sysfs = make_sysfs(str(tmp_path / "aws"), "aws")
    timeout = 0.5
    with MetadataServer("aws", behaviour=behaviour, delay=5.0) as server:
        t0 = time.monotonic()
        info = _core.discover_cloud(sysfs, server.url, timeout)
        took = time.monotonic() - t0
    print(
        f"fault metadata {behaviour:8s}: {took:.3f} s (timeout {timeout} s), vendor "
        f"{info['vendor']!r}, error {info.get('error')!r}"
    )
    assert info["vendor"] == "unknown"
    assert took < server.delay  # its own timeout, not the slow service's answer (5 s)


def test_reliability_fault_tracker_with_hanging_metadata(tmp_path, monkeypatch):
    """The whole ResourceTracker with cloud discovery against a hanging service: sampling
    starts at once, stop() is not held up by the discovery, cloud_info says unknown."""
    from gpu_cloud_mock import MetadataServer, make_sysfs

    from resource_tracker import ResourceTracker

    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", make_sysfs(str(tmp_path / "aws"), "aws"))
    with MetadataServer("aws", behaviour="slow", delay=10.0) as server:
        monkeypatch.setenv("RESOURCE_TRACKER_METADATA_URL", server.url)
        t0 = time.monotonic()
        tracker = ResourceTracker(interval=0.02, discover_cloud=True)
        assert tracker.wait_for_samples(3, 5.0)
        started = time.monotonic() - t0
        t1 = time.monotonic()
        tracker.stop()
        stop_s = time.monotonic() - t1
        info = tracker.cloud_info
        total = time.monotonic() - t0
    print(
        f"fault tracker + hanging metadata: 3 samples after {started:.3f} s, stop() "
        f"{stop_s:.3f} s, cloud_info after {total:.3f} s: {info}"
    )
    assert started < 2.0
    assert stop_s < STOP_BOUND
    assert info is None or info.get("vendor") in (None, "unknown")
    assert total < 5.0
