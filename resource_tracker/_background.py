"""One shared worker thread for the tracker's slow side reads (the cgroup's start figures):
start() hands them over and returns at once; whoever needs the result waits for it.

One thread per process, made when a job comes and ending after IDLE_S without one (a thread
per tracker would leave a stack each in the C library's cache; a thread that stays would
outlive every tracker); a forked child makes its own."""

from __future__ import annotations

import _thread
import os
from typing import Callable

WAIT_S = 2.0  # the longest a caller waits for a job (a stuck read never stalls stop())
IDLE_S = 0.5  # the worker ends after this long without a job

_lock = _thread.allocate_lock()
_queue = None
_owner = 0  # the process whose worker serves _queue (0: no worker)


class Job:
    """One function run by the worker; wait() returns once it has run (or after WAIT_S)."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn = fn
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._owner = os.getpid()

    def run(self) -> None:
        try:
            self._fn()
        except Exception:  # the job's own business; the worker goes on
            pass
        finally:
            self._fn = None  # no cycle left between the job and its owner
            self._done.release()

    def wait(self) -> None:
        """Returns when the job has run; at once in a forked child (it has no such worker)."""
        if os.getpid() == self._owner and self._done.acquire(timeout=WAIT_S):
            self._done.release()


def _work(queue) -> None:
    global _owner
    from _queue import Empty

    while True:
        try:
            job = queue.get(timeout=IDLE_S)
        except Empty:
            with _lock:  # submit() puts under the lock: nothing can slip in unseen
                if queue.empty():
                    _owner = 0
                    return
            continue
        job.run()
        del job


def submit(fn: Callable[[], object]) -> Job:
    """Runs fn in the shared worker thread: the Job to wait() on."""
    global _queue, _owner
    job = Job(fn)
    with _lock:
        if _owner != os.getpid():
            from _queue import SimpleQueue

            _queue, _owner = SimpleQueue(), os.getpid()
            _thread.start_new_thread(_work, (_queue,))
        _queue.put(job)
    return job
