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
