"""Hardening of the sampler (issue 15): each test fails on the code before the fix.

- Interval bounds: a huge interval (1e19, CLI --interval 1e300, the Metaflow attribute) used to
  overflow the timed wait (EINVAL, a spinning thread holding the lock); it is refused with one
  ValueError naming the bounds, and the longest allowed interval still stops at once.
- One sampler used from several threads (sample_now from 4 threads, PidTracker.run() from 3)
  used to crash (SIGSEGV): readings are serialised. These run in a subprocess, so that a crash
  is a failed test, not a dead test session (the subprocess inherits the environment: under
  `make sanitize` it loads the instrumented core too).
- stop() while a reading blocks (a FIFO in a fake procfs, an NVML call of the stand-in
  tests/reliability/nvml_hang.c that sleeps 6 s) returns within STOP_TIMEOUT; the thread ends on
  its own later and frees the sampler then (ASan sees any use after free).
- Memory running out once (RLIMIT_AS in a subprocess) used to stop recording for good; rows
  are dropped while it lasts, counted (rows_dropped, stats()['data_quality']) and recording
  resumes.
- Descriptors: released by stop() (not at garbage collection), and never the last ones the
  process may open (RLIMIT_NOFILE in a subprocess).
- Non-root tracking of root's processes (a subprocess that drops to user nobody): io and
  smaps_rollup are refused; stats(), the report and the CLI summary say which columns are
  incomplete and why.
- Integer overflow into negative recommendations; a 301-deep process chain in a fake procfs
  (257 of its members were missed); a meminfo with values near 2^63.
- NVML: 64 GPUs x 3,000 processes (the stand-in's crowd mode): the duplicate scans used to be
  quadratic; CPU time of a reading now grows about linearly (measured against a baseline in
  the same test, with a generous bound); usedGpuMemory near 2^64 is not counted.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from reliability_helpers import nvml_stub, open_fds, table, threads
from test_reliability_faults import ROOT_PID, _pid_stat, _run, make_fake_proc

from resource_tracker import ResourceTracker, _core

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STOP_SLACK = 1.5  # seconds beyond STOP_TIMEOUT a stop() may take on a busy machine


def _python(code, timeout=120, env=None, preexec_fn=None):
    """Runs code in a fresh interpreter: (returncode, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=preexec_fn,
        cwd=ROOT,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _native_env():
    """This environment without the sanitizer's preload (RLIMIT_AS and ASan's shadow memory
    cannot live together): the subprocess runs the regular build."""
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "RESOURCE_TRACKER_CORE_SO", "PYTHONMALLOC"):
        env.pop(key, None)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and "sanitize_hook" not in p
    )
    return env


# -- interval bounds ---------------------------------------------------------------------


@pytest.mark.parametrize("interval", [1e19, 1e300, float("inf"), 10**400, 0.0, 1e-9, -1.0])
def test_hardening_interval_out_of_bounds_is_one_clear_error(interval):
    for make in (
        lambda: ResourceTracker(interval=interval, autostart=False, discover_cloud=False),
        lambda: _core.Sampler(os.getpid(), float(min(interval, 1e308))),
    ):
        with pytest.raises(ValueError, match="interval must be between"):
            make()


def test_hardening_interval_bounds_documented_values():
    """The bounds the docs state (docs/reliability.md, docs/api): 0.0001 s and one day."""
    from resource_tracker import tracker
    from resource_tracker.psutil_sampler import STOP_TIMEOUT

    assert _core.MIN_INTERVAL == tracker.MIN_INTERVAL == 0.0001
    assert _core.MAX_INTERVAL == tracker.MAX_INTERVAL == 86400.0
    assert _core.STOP_TIMEOUT == STOP_TIMEOUT == 2.0


def test_hardening_longest_interval_stops_at_once():
    """The longest interval waits a day for its next tick: stop() still wakes it at once (the
    timed wait is sliced, never an overflowing deadline)."""
    sampler = _core.Sampler(os.getpid(), _core.MAX_INTERVAL)
    sampler.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    sampler.stop()
    took = time.monotonic() - t0
    assert sampler.state == "stopped"
    assert took < _core.STOP_TIMEOUT  # woken, not given up on at stop's bound
    assert sampler.samples_taken >= 1


def test_hardening_psutil_interval_bounds():
    pytest.importorskip("psutil")
    from resource_tracker.psutil_sampler import PsutilSampler

    with pytest.raises(ValueError, match="interval must be between"):
        PsutilSampler(os.getpid(), 1e19)
    sampler = PsutilSampler(os.getpid(), _core.MAX_INTERVAL)
    sampler.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    sampler.stop()
    assert time.monotonic() - t0 < _core.STOP_TIMEOUT and sampler.state == "stopped"


def test_hardening_cli_interval_out_of_bounds():
    proc = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", "--interval", "1e300", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "between 0.0001 and 86400" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_hardening_metaflow_interval_out_of_bounds():
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins import track_resources_decorator as deco

    with pytest.raises(ValueError, match=r"@track_resources\(interval=...\).*between"):
        deco._bounded_interval(1e300)
    assert deco._bounded_interval(0.5) == 0.5


# -- one sampler, several threads --------------------------------------------------------


def test_hardening_sample_now_from_four_threads():
    """4 threads x 1,000 readings on one sampler tracking a tree that starts and reaps short
    children all the time (the old code crashed with SIGSEGV): no crash, every reading stored
    once."""
    code = """
        import os, subprocess, threading
        from resource_tracker import _core
        churn = subprocess.Popen(
            ["sh", "-c", "for i in $(seq 3000); do sleep 0.01 & done; wait"])
        s = _core.Sampler(churn.pid, 0.01)
        got = []
        def work():
            for _ in range(1000):
                r = s.sample_now()
                got.append(r is not None)
        ts = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        churn.kill()
        churn.wait()
        print(sum(got), s.n_samples, s.samples_taken)
    """
    for _ in range(2):
        rc, out, err = _python(code)
        assert rc == 0, f"crashed (rc {rc}): {err[-2000:]}"
        filled, rows, taken = (int(float(x)) for x in out.split())
        assert filled == rows == 3999 and taken == 4000


def test_hardening_pid_tracker_run_from_three_threads(tmp_path):
    code = f"""
        import threading
        from resource_tracker import PidTracker
        t = PidTracker(interval=0.005, output_file={str(tmp_path / "out.csv")!r}, header=False)
        ts = [threading.Thread(target=t.run, kwargs=dict(n_samples=40)) for _ in range(3)]
        [x.start() for x in ts]
        [x.join() for x in ts]
        print("done")
    """
    for _ in range(3):
        rc, out, err = _python(code)
        assert rc == 0 and "done" in out, f"crashed (rc {rc}): {err[-2000:]}"
    with open(tmp_path / "out.csv") as f:
        lines = f.read().splitlines()
    assert len(lines) == 3 * 3 * 40
    assert all(len(line.split(",")) == len(_core.PROCESS_COLUMNS) for line in lines)


def test_hardening_sample_now_refused_while_running():
    s = _core.Sampler(os.getpid(), 0.05)
    s.start()
    try:
        with pytest.raises(RuntimeError, match="without a background thread"):
            s.sample_now()
    finally:
        s.stop()


# -- stop() bounded whatever the reader does ---------------------------------------------


def _unblock_fifo(fifo, data):
    """Lets a reader blocked in open() of fifo go on: opens the write end, puts a regular file
    with data in the FIFO's place (later opens read it), writes data (the reader may have given
    up on the FIFO already: a broken pipe is fine)."""
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    regular = fifo + ".new"
    with open(regular, "wb") as f:
        f.write(data)
    os.replace(regular, fifo)
    try:
        os.write(fd, data)
    except BrokenPipeError:
        pass
    os.close(fd)


def _reader_arrives(fifo, timeout=10.0):
    """The write end of fifo, opened once a reader has opened it (open() of the write end
    without blocking fails with ENXIO until then)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            assert time.monotonic() < deadline, "the sampler never opened the FIFO"
            time.sleep(0.01)


def _wait_threads(target, timeout=15.0):
    deadline = time.monotonic() + timeout
    while threads() > target and time.monotonic() < deadline:
        time.sleep(0.05)
    return threads()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_hardening_stop_bounded_when_a_procfs_read_blocks(tmp_path):
    """The root's stat is a FIFO nobody writes: the reading blocks in open(). stop() returns
    within STOP_TIMEOUT, the sampler reads as stopped with no new rows; after the owner let go,
    a writer unblocks the reading and the thread ends and frees the sampler on its own."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    fifo = os.path.join(proc, str(ROOT_PID), "stat")
    os.remove(fifo)
    os.mkfifo(fifo)
    before = threads()
    sampler = _core.Sampler(ROOT_PID, 0.02, proc_root=proc, sys_root=sys_root)
    sampler.start()
    time.sleep(0.3)  # the thread is blocked in open() of the FIFO
    t0 = time.monotonic()
    sampler.stop()
    took = time.monotonic() - t0
    assert sampler.state == "stopped"
    assert _core.STOP_TIMEOUT - 0.1 <= took < _core.STOP_TIMEOUT + STOP_SLACK
    rows = sampler.n_samples
    del sampler  # the owner lets go first: the thread holds the last reference
    _unblock_fifo(fifo, _pid_stat(ROOT_PID, 1))
    assert _wait_threads(before) <= before, "the abandoned thread did not end"
    assert rows == 0
    print(f"hardening FIFO: stop() {took:.2f} s (bound {_core.STOP_TIMEOUT} s)")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_hardening_psutil_stop_bounded_when_a_read_blocks(tmp_path, monkeypatch):
    """The psutil backend pointed (psutil.PROCFS_PATH) at a fake procfs whose root stat turns
    into a FIFO: its thread blocks in the read; stop() returns within STOP_TIMEOUT."""
    psutil = pytest.importorskip("psutil")
    from resource_tracker.psutil_sampler import STOP_TIMEOUT, PsutilSampler

    proc, _ = make_fake_proc(str(tmp_path))
    monkeypatch.setattr(psutil, "PROCFS_PATH", proc)
    before = threads()
    sampler = PsutilSampler(ROOT_PID, 0.02, track_system=False)
    sampler.start()
    fifo = os.path.join(proc, str(ROOT_PID), "stat")
    os.mkfifo(fifo + ".fifo")
    os.replace(fifo + ".fifo", fifo)  # atomic: no tick may find the stat missing (an exit)
    writer = _reader_arrives(fifo)  # the thread now waits in read() for data that never comes
    t0 = time.monotonic()
    sampler.stop()
    took = time.monotonic() - t0
    assert sampler.state == "stopped"
    assert STOP_TIMEOUT - 0.1 <= took < STOP_TIMEOUT + STOP_SLACK
    regular = fifo + ".new"
    with open(regular, "wb") as f:
        f.write(_pid_stat(ROOT_PID, 1))
    os.replace(regular, fifo)  # later opens read a regular file
    os.close(writer)  # the blocked read ends (end of file)
    assert _wait_threads(before) <= before


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")
def test_hardening_stop_bounded_when_nvml_hangs(hang_stub, tmp_path, monkeypatch):
    """An NVML call of the stand-in sleeps 6 s (2 GPUs: a reading takes 12 s): stop() returns
    within STOP_TIMEOUT; the rows already stored stay; the thread ends on its own."""
    import test_gpu_nvml

    ctl = test_gpu_nvml.Control(str(tmp_path / "control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", ctl.path)
    monkeypatch.setenv("NVML_STUB_HANG_MS", "0")
    before = threads()
    sampler = _core.Sampler(os.getpid(), 0.01, nvml_library=hang_stub)
    sampler.start()
    assert sampler.wait(3, 10.0)
    os.environ["NVML_STUB_HANG_MS"] = "6000"
    time.sleep(0.3)  # the thread is now inside the sleeping call
    t0 = time.monotonic()
    sampler.stop()
    took = time.monotonic() - t0
    os.environ["NVML_STUB_HANG_MS"] = "0"
    rows = sampler.n_samples
    assert sampler.state == "stopped" and rows >= 3
    assert took < _core.STOP_TIMEOUT + STOP_SLACK
    time.sleep(0.2)
    assert sampler.n_samples == rows  # nothing stored after stop() returned
    del sampler
    assert _wait_threads(before, timeout=30.0) <= before
    print(f"hardening NVML 6 s hang: stop() {took:.2f} s")


# -- data lost or wrong ------------------------------------------------------------------


def test_hardening_memory_exhaustion_drops_rows_then_recovers():
    """RLIMIT_AS 1 MiB above what the process maps: once the table must grow past it, rows
    are dropped and counted, the state stays running, and once the limit is lifted the table
    grows again (the old code stopped at that size for good)."""
    code = """
        import json, os, resource, time
        from resource_tracker import _core
        s = _core.Sampler(os.getpid(), 0.0005, track_system=True)
        s.start()
        assert s.wait(700, 60.0)
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 20), hard))
        deadline = time.monotonic() + 20.0
        while s.rows_dropped < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        stuck_rows, state = s.n_samples, s.state
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        ok = s.wait(stuck_rows + 200, 30.0)
        s.stop()
        print(json.dumps(dict(stuck=stuck_rows, state=state, dropped=s.rows_dropped,
                              after=s.n_samples, ok=ok)))
    """
    rc, out, err = _python(code, env=_native_env())
    assert rc == 0, err[-2000:]
    result = json.loads(out.strip().splitlines()[-1])
    print(f"hardening RLIMIT_AS: {result}")
    assert result["state"] == "running"
    assert result["dropped"] >= 20
    assert result["stuck"] & (result["stuck"] - 1) == 0  # stuck at a full table (2^k rows)
    assert result["ok"] and result["after"] >= result["stuck"] + 200


def test_hardening_rows_dropped_in_stats_and_report():
    """The count reaches stats(), snapshots and the report."""
    tracker = ResourceTracker(interval=0.05, discover_cloud=False, discover_server=False)
    tracker.wait_for_samples(2)
    tracker.stop()
    quality = tracker.stats()["data_quality"]
    quality.pop("energy", None)  # the energy sources' line (no powercap on a VM)
    quality.pop("gpu", None)  # the GPU libraries' line (no GPU here)
    assert quality == {"samples_dropped": 0, "incomplete_columns": {}}
    snap = json.loads(tracker.dumps())
    snap["data_quality"]["samples_dropped"] = 7
    loaded = ResourceTracker.loads(json.dumps(snap))
    assert loaded.stats()["data_quality"]["samples_dropped"] == 7
    assert "7 samples were dropped because memory ran out" in str(loaded.report())


def test_hardening_descriptors_released_on_stop_and_margin_kept(tmp_path):
    """RLIMIT_NOFILE 96 and a workload of 40 processes: while tracking, the application can
    still open files (a margin of the limit is left to it); after stop() (the sampler still
    referenced) every descriptor of the sampler is closed."""
    code = """
        import json, os, resource, subprocess, time
        from resource_tracker import _core
        resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))
        kids = [subprocess.Popen(["sleep", "60"]) for _ in range(40)]
        fds = lambda: len(os.listdir("/proc/self/fd"))
        base = fds()
        s = _core.Sampler(os.getpid(), 0.02)
        s.start()
        assert s.wait(10, 30.0)
        running = fds()
        opened = []
        try:
            while True:
                opened.append(open("/dev/null"))
        except OSError:
            pass
        free_while_running = len(opened)
        for f in opened:
            f.close()
        s.stop()
        after = fds()
        for k in kids:
            k.kill(); k.wait()
        print(json.dumps(dict(base=base, running=running, free=free_while_running, after=after,
                              children=max(0, s.n_samples))))
    """
    rc, out, err = _python(code)
    assert rc == 0, err[-2000:]
    r = json.loads(out.strip().splitlines()[-1])
    print(f"hardening RLIMIT_NOFILE 96: {r}")
    assert r["free"] >= 16  # the margin: max(16, limit / 4) left to the application
    assert r["after"] == r["base"]


def _nobody():
    import pwd

    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


@pytest.mark.skipif(os.geteuid() != 0 or _nobody() is None, reason="needs root and user nobody")
def test_hardening_other_users_processes_are_reported_incomplete(backend, tmp_path):
    """A tracker running as nobody tracks a tree of root's processes (a shell and a child):
    /proc/<pid>/io and smaps_rollup are refused. stats(), the report and the CLI summary name
    the incomplete columns and why (both backends: psutil's AccessDenied counts too)."""
    import pwd

    pwd_entry = pwd.getpwnam("nobody")
    workload = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60; wait"])
    try:
        time.sleep(0.3)
        # everything imported first, then the switch to nobody (who cannot read this
        # interpreter's files under /root)
        code = f"""
            import base64, json, os
            import psutil, psutil._pslinux  # before the switch: nobody cannot read the venv
            import resource_tracker.export, resource_tracker.psutil_sampler
            import resource_tracker.server_info
            import resource_tracker._stored  # dumps() (loaded on first use, with the tables)
            import resource_tracker.cgroup_usage, resource_tracker._cgroup_v1  # the worker's
            import resource_tracker._tree_cgroup  # the worker's too
            from resource_tracker import ResourceTracker
            os.setgid({pwd_entry.pw_gid}); os.setuid({pwd_entry.pw_uid})
            t = ResourceTracker(pid={workload.pid}, interval=0.05, discover_cloud=False)
            t.wait_for_samples(10)
            t.stop()
            print(t.dumps())
        """
        rc, out, err = _python(code, env=_native_env())
    finally:
        workload.kill()
        workload.wait()
    assert rc == 0, err[-2000:]
    loaded = ResourceTracker.loads(out.strip().splitlines()[-1])
    assert loaded.method == backend.method
    incomplete = loaded.stats()["data_quality"]["incomplete_columns"]
    assert "process_read_bytes" in incomplete and "process_write_bytes" in incomplete
    assert "permission denied reading /proc/<pid>/io" in incomplete["process_read_bytes"]
    assert "process_memory" in incomplete
    assert "incomplete" in str(loaded.report())
    path = tmp_path / "run.json"
    path.write_text(out.strip().splitlines()[-1])
    cli = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "stats", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = cli.stdout + cli.stderr
    assert "incomplete" in text and "/proc/<pid>/io" in text, text


def test_hardening_recommendations_saturate():
    """A CPU mean of 3e9 cores and VRAM of 1.7e13 MiB used to come back as -2147483648."""
    res = _core.recommend(
        [
            {
                "process_cpu_usage": {"mean": 3e9},
                "process_memory": {"max": 1e30},
                "process_gpu_utilized": {"max": 1e12},
                "process_gpu_vram": {"max": 1.7e13},
            }
        ]
    )
    assert res == {"cpu": 2**31 - 1, "memory": 2**31 - 1, "gpu": 2**31 - 1, "vram": 2**31 - 1}


def _add_fake_process(proc, pid, ppid):
    """A process of the fake procfs under proc: its stat (pid and parent put in) only."""
    os.makedirs(os.path.join(proc, str(pid)))
    with open(os.path.join(proc, str(pid), "stat"), "wb") as f:
        f.write(_pid_stat(pid, ppid))


def _sample_fake_procfs(pid, proc, sys_root):
    """A sampler of pid in the fake procfs, stopped after 3 rows (at most 10 s: else fails)."""
    sampler = _core.Sampler(pid, 0.02, proc_root=proc, sys_root=sys_root)
    recorded, _ = _run(sampler, n=3, timeout=10.0)
    assert recorded
    return sampler


def test_hardening_deep_process_chain(tmp_path):
    """A chain of 301 processes (each the child of the previous; pids falling as after a pid
    wrap, so the listing meets the deepest first) in a fake procfs: all 300 descendants are
    members (the depth-limited walk cached the deep ones as non-members for good)."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    first = 5300
    for depth in range(301):
        pid = first - depth
        _add_fake_process(proc, pid, 1 if depth == 0 else pid + 1)
    sampler = _sample_fake_procfs(first, proc, sys_root)
    assert max(table(sampler, "process")["children"]) == 300


def test_hardening_parent_cycle_in_fake_procfs(tmp_path):
    """Two processes that are each other's parent (only a fake procfs can say so): the walk
    ends, neither is a member, sampling goes on."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    for pid, ppid in ((7001, 7002), (7002, 7001)):
        _add_fake_process(proc, pid, ppid)
    sampler = _sample_fake_procfs(ROOT_PID, proc, sys_root)
    assert max(table(sampler, "process")["children"]) == 1  # 4243 only


def test_hardening_meminfo_near_int64_limits(tmp_path):
    """MemTotal near 2^63 and a negative MemFree: no negative or overflowed memory (signed
    overflow before), the reading counts as a read error."""
    proc, sys_root = make_fake_proc(str(tmp_path))
    with open(os.path.join(proc, "meminfo"), "w") as f:
        f.write(
            "MemTotal: 9223372036854775807 kB\nMemFree: -9223372036854775807 kB\n"
            "Buffers: 9223372036854775807 kB\nCached: 9223372036854775807 kB\n"
        )
    sampler = _sample_fake_procfs(ROOT_PID, proc, sys_root)
    system = table(sampler, "system")
    for name in ("memory_free", "memory_used", "memory_buffers", "memory_cached"):
        assert min(system[name]) >= 0 and max(system[name]) < 2**50, name
    assert sampler.read_errors >= 3


# -- clear errors ------------------------------------------------------------------------


@pytest.mark.parametrize("pid", [2**31, 2**63, 2**100])
def test_hardening_huge_pid_is_a_value_error(pid):
    with pytest.raises(ValueError, match="positive process id"):
        ResourceTracker(pid=pid, autostart=False, discover_cloud=False)
    with pytest.raises(ValueError, match="positive process id"):
        _core.Sampler(pid, 1.0)


def _deep_json():
    return "[" * 200000 + "]" * 200000


@pytest.mark.parametrize(
    "text, match",
    [
        (_deep_json(), "nested too deeply"),
        ('{"format": "resource-tracker-snapshot", "start_time": 1e300}', "start_time"),
        ('{"format": "resource-tracker-snapshot", "server_info": "x"}', "server_info"),
        ('{"format": "resource-tracker-snapshot", "interval": -1}', "interval"),
        ('{"format": "resource-tracker-snapshot", "pid": 4294967296}', "pid"),
        (
            '{"format": "resource-tracker-snapshot", "process_metrics": {"memory": ["a"]}}',
            "numbers",
        ),
    ],
)
def test_hardening_loads_validates(text, match):
    with pytest.raises(ValueError, match=match):
        ResourceTracker.loads(text)


def test_hardening_cli_report_of_deep_json(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(_deep_json())
    proc = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


# -- NVML ----------------------------------------------------------------------------------


def _reading_cpu(sampler, n=3):
    """The least CPU time (this thread's) one sample_now() took, of n."""
    best = float("inf")
    for _ in range(n):
        t0 = time.thread_time()
        sampler.sample_now()
        best = min(best, time.thread_time() - t0)
    return best


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")
def test_hardening_nvml_many_gpus_many_processes(tmp_path, monkeypatch):
    """64 GPUs, each listing 3,000 other processes twice (compute and graphics) and 3,000
    utilisation samples: the tree's own process is counted once per GPU. The CPU time of a
    reading against 300 processes per GPU, measured in the same test: 10x the processes may
    cost at most 40x. Each process is looked up in hash maps (csrc/pid_map.c): about 10x
    measured (linear); the sort this replaced cost about 13x, a quadratic scan about 100x."""
    import test_gpu_nvml

    stub = nvml_stub(tmp_path)
    ctl = test_gpu_nvml.Control(str(tmp_path / "control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", ctl.path)
    ctl.set(tree_pid=os.getpid(), gpus=64, crowd=300)
    sampler = _core.Sampler(os.getpid(), 1.0, nvml_library=stub, track_system=False)
    sampler.sample_now()  # baseline (loads the library)
    small = _reading_cpu(sampler)
    ctl.set(crowd=3000)
    time.sleep(0.02)  # the stand-in re-reads its control file every 5 ms
    row, _ = sampler.sample_now()
    large = _reading_cpu(sampler)
    vram = row[_core.PROCESS_COLUMNS.index("gpu_vram")]
    print(
        f"hardening NVML 64 GPUs: 300 procs {small * 1000:.1f} ms, 3000 procs "
        f"{large * 1000:.1f} ms CPU per reading (x{large / max(small, 1e-6):.1f})"
    )
    assert vram == 63 * 1536  # GPUs 1..63 hold the tree's process, listed twice each
    assert large < 40 * max(small, 0.0005)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")
def test_hardening_nvml_impossible_process_memory(tmp_path, monkeypatch):
    """usedGpuMemory near 2^64 (above the device's 24 GiB) is not counted."""
    import test_gpu_nvml

    stub = nvml_stub(tmp_path)
    ctl = test_gpu_nvml.Control(str(tmp_path / "control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", ctl.path)
    ctl.set(tree_pid=os.getpid(), tree_bytes=2**64 - 2**20)
    sampler = _core.Sampler(os.getpid(), 1.0, nvml_library=stub, track_system=False)
    sampler.sample_now()
    row, _ = sampler.sample_now()
    assert row[_core.PROCESS_COLUMNS.index("gpu_vram")] == 0.0
    ctl.set(tree_bytes=1536 * 2**20)
    time.sleep(0.02)
    row, _ = sampler.sample_now()
    assert row[_core.PROCESS_COLUMNS.index("gpu_vram")] == 1536.0


def test_hardening_threads_helper_sane():
    assert threads() >= 1 and open_fds() >= 3 and resource.getrlimit(resource.RLIMIT_NOFILE)
    assert threading.active_count() >= 1


def test_hardening_catalog_argument_limits_are_clear_errors():
    """recommend_server(): a non-finite or absurd EUR rate, a huge n and an infinite max_price
    are each one ValueError naming the argument (before any catalog is opened)."""
    from resource_tracker import catalog

    res = {"cpu": 1, "memory": 512}
    cases = {
        "eur_usd_rate": dict(eur_usd_rate=float("inf")),
        "n": dict(n=10**30),
        "max_price": dict(max_price=float("inf")),
    }
    for name, kwargs in cases.items():
        with pytest.raises(ValueError, match=name):
            catalog.recommend_server(res, **kwargs)
    with pytest.raises(ValueError, match="eur_usd_rate"):
        catalog.recommend_server(res, eur_usd_rate=5000.0)


def test_hardening_wait_for_samples_bad_arguments():
    """wait_for_samples(n=10**30) was a raw OverflowError; now one ValueError each."""
    from resource_tracker import ResourceTracker

    tracker = ResourceTracker(interval=0.5, discover_cloud=False, discover_server=False)
    try:
        for kwargs in (dict(n=10**30), dict(n=-1), dict(n=1.5), dict(n=1, timeout=float("inf"))):
            with pytest.raises(ValueError, match="wait_for_samples"):
                tracker.wait_for_samples(**kwargs)
        assert tracker.wait_for_samples(1, timeout=10)
    finally:
        tracker.stop()
