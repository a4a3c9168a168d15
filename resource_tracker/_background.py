"""The tracker's slow side reads (the cgroup's figures at start and stop), run beside the
caller; whoever needs the result waits for it.

The start figures: the C sampler thread starts their thread right after its baseline reading
(``after_baseline``), so start() does not pay for making a thread. Others: one shared worker
thread at a time per process (``submit``), made when a job comes and ending as soon as no job
is left (a thread that stayed would outlive every tracker); a forked child makes its own.
Where no thread can be made (RLIMIT_NPROC, a container's ``pids.max``, RLIMIT_AS), the job
runs in the caller instead (``Job.in_caller`` says so): slower for the caller, never an
exception."""

from __future__ import annotations

import _thread
import _weakref  # builtin: no import cost
import atexit  # a builtin module (~20 us): here, not in start()
import os
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional

from . import _core

WAIT_S = 2.0  # the longest a caller waits for a job (a stuck read never stalls stop())

_lock = _thread.allocate_lock()  # guards _jobs and _owner
_jobs: List[Job] = []
_owner = 0  # the process whose worker serves _jobs (0: no worker)
_gate_registered = False  # _core.close_jobs is an atexit callback


def _after_fork_in_child() -> None:
    """The child has no worker, and _lock may have been held by it at the fork: fresh state."""
    global _lock, _owner
    _lock = _thread.allocate_lock()
    _jobs.clear()
    _owner = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


class Job:
    """One function run by the worker; wait() returns once it has run (or after WAIT_S)."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn: Optional[Callable[[], object]] = fn
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._owner = os.getpid()
        self.in_caller = False  # run by the caller: no thread could be made for it

    def run(self) -> None:
        try:
            if self._fn is not None:  # run once
                if self.in_caller:  # the caller's thread: profiled as the caller's
                    self._fn()
                else:
                    tracker_thread(self._fn)()
        except Exception:  # the job's own business; the worker goes on
            pass
        finally:
            self._fn = None  # no cycle left between the job and its owner
            self._done.release()

    def wait(self) -> None:
        """Returns when the job has run; at once in a forked child (it has no such worker)."""
        if os.getpid() == self._owner and self._done.acquire(timeout=WAIT_S):
            self._done.release()


@contextmanager
def tracker_work() -> Iterator[None]:
    """The calling thread does the tracker's own work inside the block: it is left out of the
    code profile (``_core.skip_thread_stacks``) until the block ends, so the program's profile
    never shows the tracker's threads (a live card's rendering, an exporter's sending)."""
    ident = _thread.get_ident()
    _skip_thread_stacks(ident, True)
    try:
        yield
    finally:  # the ident goes to a later thread, maybe the program's
        _skip_thread_stacks(ident, False)


def tracker_thread(target: Callable[[], object]) -> Callable[[], None]:
    """target run as the tracker's own work (``tracker_work``), for a thread's target:
    ``Thread(target=tracker_thread(self._loop))``."""

    def run() -> None:
        with tracker_work():
            target()

    return run


def _no_stacks(ident: int, skip: bool = True, /) -> bool:
    """A build without stack capture (platform.h) profiles no thread: nothing to skip."""
    return True


_skip_thread_stacks: Callable[[int, bool], bool] = getattr(_core, "skip_thread_stacks", _no_stacks)


def _next_job() -> Optional[Job]:
    """The next job, or None: none is left and the worker ends (submit() appends under the
    lock, so a job either is seen here or starts a new worker)."""
    global _owner
    with _lock:
        if _jobs:
            return _jobs.pop(0)
        _owner = 0
        return None


def _work() -> None:
    job = _next_job()
    while job is not None:
        job.run()
        job = _next_job()


def submit(fn: Callable[[], object]) -> Job:
    """Runs fn in the shared worker thread: the Job to wait() on. Only _thread is used (the
    _queue extension module alone costs a ~4 ms load)."""
    return resubmit(Job(fn))


def after_baseline(sampler: Any, fn: Callable[[], object]) -> Job:
    """Runs fn in a thread the C sampler thread starts right after its baseline reading (call
    before sampler.start()); a sampler without that hook (psutil) hands it to submit(). When
    the sampler stops before its baseline, ``settle(sampler, job)`` runs it instead."""
    global _gate_registered
    job = Job(fn)
    if not hasattr(sampler, "run_after_baseline"):
        return resubmit(job)
    if not _gate_registered:  # no such thread may take the interpreter lock at finalization
        atexit.register(_core.close_jobs)
        _gate_registered = True
    try:
        sampler.run_after_baseline(job.run)
    except RuntimeError:  # a subinterpreter: the C thread could not take its lock
        return resubmit(job)
    return job


def settle(sampler: Any, job: Optional[Job]) -> None:
    """Hands job to the shared worker when the sampler never started its thread (stopped
    before its baseline reading)."""
    take = getattr(sampler, "take_after_baseline", None)
    if job is not None and take is not None and take() is not None:
        resubmit(job)


def resubmit(job: Job) -> Job:
    """Runs a made job in the shared worker thread (see submit); in the caller, at once,
    when no thread can be made."""
    global _owner
    with _lock:
        if _owner != os.getpid():  # none running, or a forked child: a worker of its own
            _jobs.clear()
            try:
                _thread.start_new_thread(_work, ())
            except RuntimeError:  # no thread can be made: no worker, the job runs here
                _owner = 0
                job.in_caller = True
            else:
                _owner = os.getpid()
        if not job.in_caller:
            _jobs.append(job)
    if job.in_caller:
        job.run()
    return job


def weak_call(obj: Any, method: str) -> Any:
    """A function calling obj.method() that holds obj weakly: the C sampler holds the job
    until its thread runs it, and a reference hidden from the garbage collector would keep
    a tracker-sampler-job cycle alive (a KeyboardInterrupt inside start() then left the
    tracker, its thread and its descriptors behind)."""
    ref = _weakref.ref(obj)

    def call() -> None:
        target = ref()
        if target is not None:
            getattr(target, method)()

    return call
