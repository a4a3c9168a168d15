"""The shared worker thread that reads the cgroup's start figures beside start()
(resource_tracker._background): jobs run in order, the worker ends when none is left, and a forked
child gets a worker of its own. Real threads and a real fork."""

from __future__ import annotations

import os
import threading
import time

from resource_tracker import _background


def _threads():
    return len(os.listdir("/proc/self/task"))


def test_jobs_run_in_order_and_the_worker_ends_when_idle():
    before = _threads()
    done = []
    jobs = [_background.submit(lambda i=i: done.append(i)) for i in range(20)]
    for job in jobs:
        job.wait()
    assert done == list(range(20))
    deadline = time.monotonic() + 5
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _threads() <= before
    # and a new job after that starts a worker again
    again = []
    _background.submit(lambda: again.append(1)).wait()
    assert again == [1]


def test_a_failing_job_does_not_stop_the_worker():
    def boom():
        raise RuntimeError("boom")

    _background.submit(boom).wait()
    ran = []
    _background.submit(lambda: ran.append(1)).wait()
    assert ran == [1]


def test_a_forked_child_runs_its_own_jobs():
    """A job still waiting in the parent when it forks: the child does not wait for it (it
    has no such worker); its own jobs run in a worker of its own."""
    gate = threading.Event()
    pending = _background.submit(gate.wait)  # holds the parent's worker
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            started = time.monotonic()
            pending.wait()  # the parent's job: returns at once here
            quick = time.monotonic() - started < 1.0
            ran = []
            _background.submit(lambda: ran.append(1)).wait()
            code = 0 if quick and ran == [1] else 1
        finally:
            os._exit(code)
    gate.set()
    pending.wait()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


# -- jobs started by the C sampler thread after its baseline (_core.Sampler.run_after_baseline)


def _sampler(interval=0.05):
    from resource_tracker import _core

    return _core.Sampler(os.getpid(), interval, track_system=False)


def test_the_sampler_thread_runs_the_job_after_its_baseline_in_a_thread_of_its_own():
    sampler = _sampler()
    seen = {}
    done = threading.Event()

    def job():
        seen["thread"] = threading.get_ident()
        seen["samples_taken"] = sampler.samples_taken
        done.set()

    sampler.run_after_baseline(job)
    sampler.start()
    try:
        assert done.wait(10)
    finally:
        sampler.stop()
    assert seen["thread"] != threading.get_ident()
    assert seen["samples_taken"] >= 1  # the baseline was read before
    assert sampler.take_after_baseline() is None  # handed over: nothing left to take


def test_a_job_the_sampler_never_started_is_given_back():
    """Never started, or stopped before the baseline: the owner takes the job back."""
    sampler = _sampler()
    job = lambda: None  # noqa: E731
    sampler.run_after_baseline(job)
    sampler.stop()
    assert sampler.take_after_baseline() is job
    assert sampler.take_after_baseline() is None


def test_run_after_baseline_says_what_is_wrong():
    import pytest

    sampler = _sampler()
    with pytest.raises(TypeError, match="callable"):
        sampler.run_after_baseline(42)
    sampler.start()
    try:
        with pytest.raises(RuntimeError, match="before start"):
            sampler.run_after_baseline(lambda: None)
    finally:
        sampler.stop()


def test_a_failing_job_is_reported_and_sampling_goes_on(monkeypatch):
    import sys

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: reported.append(info.exc_value))
    sampler = _sampler(0.02)

    def boom():
        raise RuntimeError("boom in the job")

    sampler.run_after_baseline(boom)
    sampler.start()
    try:
        assert sampler.wait(5, 10)
        deadline = time.monotonic() + 10
        while not reported and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        sampler.stop()
    assert [str(e) for e in reported] == ["boom in the job"]


def test_start_then_stop_at_once_reads_the_start_figures_before_the_end_ones():
    """Stopped before or right after the baseline: the start figures are read either way (by
    the job's thread or, given back, by the shared worker), always before the end figures,
    and nobody waits for a job that never runs."""
    from resource_tracker import ResourceTracker

    order = []

    class Ordered(ResourceTracker):
        def _read_cgroup(self):
            order.append(self)
            return {"read": len(order)}

    for _ in range(30):
        order.clear()
        tracker = Ordered(interval=0.5, discover_cloud=False, discover_server=False)
        tracker.stop()
        started = time.monotonic()
        tracker._wait_cgroup_start()
        assert time.monotonic() - started < 1.5  # not the 2 s bound of a job that never ran
        assert tracker._cgroup_start == {"read": 1}
        assert tracker._cgroup_end == {"read": 2}


_EXIT_DURING_JOB = r"""
import os, sys, threading, time
from resource_tracker import ResourceTracker

under_way = threading.Event()

class Slow(ResourceTracker):
    def _read_cgroup_start(self):
        os.write(1, b"job started\n")
        under_way.set()
        time.sleep(0.3)
        os.write(1, b"job ended\n")

tracker = Slow(interval=0.01, discover_cloud=False, discover_server=False)  # kept to the end
if sys.argv[1] == "wait":
    assert under_way.wait(60)  # the job is under way when the interpreter exits
"""


def test_the_interpreter_exits_cleanly_with_a_job_under_way_or_not_started():
    """The job's thread is not the interpreter's: the atexit gate lets a job under way end
    before finalization and lets none start after it. Real interpreters, 10 exits each."""
    import subprocess
    import sys

    for mode in ("wait", "at-once"):
        for _ in range(10):
            proc = subprocess.run(
                [sys.executable, "-c", _EXIT_DURING_JOB, mode],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 0, proc.stderr
            assert "Fatal" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
            lines = proc.stdout.splitlines()
            assert lines in ([], ["job started", "job ended"]), lines
            if mode == "wait":
                assert lines == ["job started", "job ended"]


def test_a_forked_child_starts_its_own_after_baseline_jobs():
    from resource_tracker import ResourceTracker

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            tracker = ResourceTracker(interval=0.05, discover_cloud=False)
            tracker.wait_for_samples(1, timeout=10)
            tracker.stop()
            tracker._wait_cgroup_start()
            code = 0 if hasattr(tracker, "_cgroup_start") else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
