"""Concurrency: several samplers in one process, start/stop from different threads, reading
while sampling, os.fork() during sampling (the child gets a stopped copy with the data and
can start its own tracker). Real /proc, real threads, real fork."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time

import pytest
from reliability_helpers import open_fds, table, threads

from resource_tracker import ResourceTracker, _core


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


@pytest.mark.valgrind
def test_reliability_concurrency_several_samplers():
    """Six samplers (this process, two children, system-only) at once: all record."""
    kids = [_sleeper(), _sleeper()]
    try:
        samplers = [
            _core.Sampler(os.getpid(), 0.01),
            _core.Sampler(os.getpid(), 0.013, children=False),
            _core.Sampler(kids[0].pid, 0.01),
            _core.Sampler(kids[1].pid, 0.017),
            _core.Sampler(os.getpid(), 0.01, track_processes=False),
            _core.Sampler(kids[0].pid, 0.02, track_system=False),
        ]
        for s in samplers:
            s.start()
        for s in samplers:
            assert s.wait(10, 10.0), "a sampler among several stopped recording"
        for s in samplers:
            s.stop()
        counts = [s.n_samples for s in samplers]
        assert all(n >= 10 for n in counts)
        assert all(s.state == "stopped" for s in samplers)
        print(f"concurrency: 6 samplers at once recorded {counts} rows")
    finally:
        for k in kids:
            k.kill()
            k.wait()


def _cross_thread_cycle():
    """Creates a sampler in one thread, starts it in another, stops it from four at once:
    the (state after stop(), seconds stop() took) seen by each stopper."""
    box = {}
    creator = threading.Thread(target=lambda: box.update(s=_core.Sampler(os.getpid(), 0.005)))
    creator.start()
    creator.join()
    s = box.pop("s")
    starter = threading.Thread(target=s.start)
    starter.start()
    starter.join()
    assert s.wait(2, 5.0)
    states = []
    barrier = threading.Barrier(4)

    def stopper():
        barrier.wait()
        t0 = time.monotonic()
        s.stop()
        states.append((s.state, time.monotonic() - t0))

    stoppers = [threading.Thread(target=stopper) for _ in range(4)]
    for t in stoppers:
        t.start()
    for t in stoppers:
        t.join(10.0)
        assert not t.is_alive(), "stop() deadlocked"
    return states


def test_reliability_concurrency_start_stop_from_other_threads():
    """Created in one thread, started in a second, stopped by four threads at once: every
    stop() returns only once the sampler is stopped (regression: a concurrent stop() used to
    return while the thread still ran); no thread or descriptor is left."""
    fds0, threads0 = open_fds(), threads()
    worst = 0.0
    for _ in range(50):
        states = _cross_thread_cycle()
        assert [st for st, _ in states] == ["stopped"] * 4, states
        worst = max([worst] + [d for _, d in states])
    gc.collect()
    deadline = time.monotonic() + 2.0  # Python threads leave /proc just after join()
    while threads() > threads0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threads() <= threads0  # (a thread or descriptor of an earlier test may have
    assert open_fds() <= fds0  # ended meanwhile: a leak is growth)
    print(f"concurrency: 50 x (create/start/4 concurrent stops), stop() <= {worst:.3f} s")


@pytest.mark.valgrind
def test_reliability_concurrency_read_while_sampling():
    """Four reader threads take columns(), n_samples and stats() while a 2 ms sampler writes:
    every table read is rectangular and its rows only grow. Under valgrind (~50x slower, every
    read a walk of the tables) the sampler writes every 20 ms: the same interleavings, a tenth
    of the rows to walk."""
    interval = 0.02 if os.environ.get("RESOURCE_TRACKER_VALGRIND") else 0.002
    s = _core.Sampler(os.getpid(), interval)
    s.start()
    stop = threading.Event()
    errors, reads = [], [0]

    def reader():
        last = 0
        try:
            while not stop.is_set():
                p, y = table(s, "process"), table(s, "system")
                lengths = {len(c) for c in p.values()} | {len(c) for c in y.values()}
                assert len({len(c) for c in p.values()}) == 1, "ragged process table"
                assert len({len(c) for c in y.values()}) == 1, "ragged system table"
                n = len(p["timestamp"])
                assert n >= last, "rows went backwards"
                last = n
                if n > 1:
                    _core.stats(p, y, s.start_time, time.time())
                _ = s.n_samples, s.state, s.cpu_seconds, lengths
                reads[0] += 1
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    readers = [threading.Thread(target=reader) for _ in range(4)]
    for t in readers:
        t.start()
    time.sleep(1.5)
    stop.set()
    for t in readers:
        t.join()
    s.stop()
    assert not errors, errors
    print(f"concurrency: {reads[0]} table reads by 4 threads beside {s.n_samples} rows")
    assert reads[0] > 50


CHILD_CODE = """
import os, sys
from resource_tracker import _core
"""


def test_reliability_concurrency_fork_during_sampling():
    """os.fork() 20 times while two samplers run and a thread reads them: the child sees
    them stopped with their rows, starts its own sampler and exits; the parent's go on."""
    a = _core.Sampler(os.getpid(), 0.003)
    b = _core.Sampler(os.getpid(), 0.005, track_processes=False)
    a.start()
    b.start()
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            a.columns("process")
            b.columns("system")

    t = threading.Thread(target=reader)
    t.start()
    statuses = []
    try:
        for i in range(20):
            assert a.wait(3 + i * 2, 5.0)
            pid = os.fork()
            if pid == 0:  # child: no sampler thread; a tracker of its own works
                code = 1
                try:
                    ok = a.state == "stopped" and b.state == "stopped" and a.n_samples >= 3
                    a.stop()  # must not try to join a thread that does not exist here
                    mine = _core.Sampler(os.getpid(), 0.005)
                    mine.start()
                    ok = ok and mine.wait(3, 5.0)
                    mine.stop()
                    code = 0 if ok else 3
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            statuses.append(os.waitstatus_to_exitcode(status))
        assert a.state == b.state == "running"
        n_before = a.n_samples
        assert a.wait(n_before + 5, 5.0), "the parent's sampler stopped after fork()"
    finally:
        stop.set()
        t.join()
        a.stop()
        b.stop()
    assert statuses == [0] * 20, statuses
    print(f"concurrency: 20 forks during sampling, children exit codes {set(statuses)}")


def test_reliability_concurrency_fork_child_starts_tracker():
    """The public API across fork: a ResourceTracker running in the parent; the forked child
    starts a ResourceTracker of its own, which records samples."""
    parent = ResourceTracker(interval=0.01, discover_server=False, discover_cloud=False)
    try:
        assert parent.wait_for_samples(3, 5.0)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                child = ResourceTracker(interval=0.01, discover_server=False, discover_cloud=False)
                ok = child.wait_for_samples(3, 5.0)
                child.stop()
                code = 0 if ok and child.pid == os.getpid() else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        n = parent.n_samples
        assert parent.wait_for_samples(n + 3, 5.0)
    finally:
        parent.stop()
