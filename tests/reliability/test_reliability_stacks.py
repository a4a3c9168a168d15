"""The code profile's stack captures (csrc/stacks.c) under the checks of the C core: in the
valgrind subset (memcheck and helgrind: the capture thread, the GIL, the sampler's row hook),
and where no safe capture exists (a sub-interpreter) nothing is recorded, and it is said.
"""

from __future__ import annotations

import _thread
import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from resource_tracker import ResourceTracker, _core

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")
UNDER_VALGRIND = os.environ.get("RESOURCE_TRACKER_VALGRIND") == "1"


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _spin(stop: threading.Event, depth: int) -> None:
    if depth:
        return _spin(stop, depth - 1)
    while not stop.is_set():
        sum(range(100))


@pytest.mark.valgrind
def test_captures_with_a_busy_thread_then_nothing_left():
    """Captures while a thread runs Python 30 frames deep; after stop() and the collector the
    capture thread is gone, the record readable, every sample's ids in range."""
    before = _threads()
    stop = threading.Event()
    worker = threading.Thread(target=_spin, args=(stop, 30))
    worker.start()
    tracker = ResourceTracker(interval=0.01, discover_server=False, discover_cloud=False)
    assert tracker.wait_for_samples(5 if UNDER_VALGRIND else 20, timeout=120)
    stop.set()
    worker.join()
    tracker.stop()
    record = tracker._code_record()
    assert record["status"] == "recorded"
    assert record["samples"], record["stats"]
    stacks, threads = len(record["stacks"]), len(record["threads"])
    assert all(0 <= s[2] < stacks and 0 <= s[1] < threads for s in record["samples"])
    assert "_spin" in {f[0] for f in record["frames"]}
    del tracker
    deadline = time.monotonic() + 30
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)  # the capture thread ends on its own once released
    assert _threads() == before


def _frames_then(depth: int, wait) -> None:
    """Calls wait() under depth new frames of this thread (frames with no frame object yet)."""
    if depth:
        return _frames_then(depth - 1, wait)
    wait()


def test_no_garbage_collection_runs_in_the_capture_thread():
    """In Python 3.11 a collection runs inside the allocation that crosses its threshold; in the
    capture thread, that is a frame object it makes for a frame of the thread it walks. The
    collection's finalizers and gc.callbacks are Python code that may let the GIL go in the
    middle of the walk: the walked thread runs on and pops the very frames walked (SIGSEGV in
    PyFrame_GetBack: the likely cause of the soak's dead xdist worker). With every allocation
    collecting (threshold 1) and this thread's frames new at each capture, no collection starts
    in a thread without a Python frame (the capture thread), until captures have walked those
    frames."""
    sampler = _core.Sampler(os.getpid(), 0.01)
    sampler.record_stacks(threading.main_thread().ident)
    in_c_thread = []

    def watch(phase, info):
        if phase == "start" and sys._getframe().f_back is None:  # no Python caller
            in_c_thread.append(_thread.get_ident())

    def next_rows():
        sampler.wait(sampler.n_samples + 2, 10.0)  # the captures run meanwhile

    thresholds, rounds, walked = gc.get_threshold(), 0, False
    deadline = time.monotonic() + 60.0  # only to fail: a starved capture thread takes longer
    gc.callbacks.append(watch)
    gc.set_threshold(1, 10**6, 10**6)  # every allocation collects the young objects
    try:
        sampler.start()
        while (rounds < 3 or not walked) and time.monotonic() < deadline:
            _frames_then(20, next_rows)  # 21 new frames, no frame object yet
            rounds += 1
            walked = "_frames_then" in {f[0] for f in sampler.stacks()["frames"]}
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(watch)
        sampler.stop()
    assert walked, sampler.stacks()["stats"]  # captures walked the new frames
    assert in_c_thread == [], f"{len(in_c_thread)} collections in the capture thread"


_SUB = textwrap.dedent(
    """
    import _xxsubinterpreters as si
    interp = si.create()
    si.run_string(interp, '''
    import os
    from resource_tracker import ResourceTracker
    from resource_tracker.tracker import data_quality_notes
    t = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    t.stop()
    notes = data_quality_notes({"data_quality": t.data_quality()})
    with open(os.environ["OUT"], "w") as f:
        f.write(t.code_profile_status()["status"] + "|" + t.data_quality()["code_profile"]
                + "|" + [n for n in notes if n.startswith("code profile")][0])
    ''')
    """
)


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11) and sys.version_info[:2] != (3, 12),
    reason="_xxsubinterpreters as in 3.11/3.12",
)
def test_a_sub_interpreter_records_nothing_and_says_so(tmp_path):
    out = tmp_path / "out.txt"
    done = subprocess.run(
        [sys.executable, "-c", _SUB],
        env=dict(os.environ, OUT=str(out)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    status, note, line = out.read_text().split("|")
    assert status == "not supported" and "sub-interpreter" in note
    assert line == f"code profile: {note}"  # the report's and the CLI's data-quality line


def _blocked_signals(tid):
    """The signal numbers a thread of this process blocks (its SigBlk in /proc)."""
    with open(f"/proc/self/task/{tid}/status") as f:
        mask = int(next(line for line in f if line.startswith("SigBlk:")).split()[1], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def test_the_c_threads_block_signals_for_the_application_but_not_their_own_faults():
    """The tracker's own C threads (the engine's sampling thread, the stack capture's) leave
    signals sent to the process to the application's threads, and keep the fault signals of
    their own code unblocked (blocked, a fault kills the process past every handler: the test
    of that is test_gpu_nvml.py's crash in the sampler thread)."""
    import signal

    before = set(os.listdir("/proc/self/task"))
    tracker = ResourceTracker(interval=0.02, discover_server=False, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(3, 30.0)
        ours = {}
        for tid in set(os.listdir("/proc/self/task")) - before:
            try:
                ours[tid] = _blocked_signals(tid)
            except (OSError, StopIteration):
                pass  # a thread that ended meanwhile (the start's helper job)
    finally:
        tracker.stop()
    asynchronous = {signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGALRM, signal.SIGUSR1}
    faults = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT}
    assert len([blocked for blocked in ours.values() if asynchronous <= blocked]) >= 2, ours
    for blocked in ours.values():
        assert not blocked & faults, blocked


class _NativeThreads:
    """Threads that are not Python's entering Python again and again, as a library's callback
    threads do: each round a new C thread (pthread_create through ctypes) whose entry is a
    ctypes callback, which takes the GIL with PyGILState_Ensure; that makes the thread's state
    without the GIL, and ends it after the call."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None)
        self._create, self._join = libc.pthread_create, libc.pthread_join
        self._create.argtypes = [ctypes.POINTER(ctypes.c_ulong)] + [ctypes.c_void_p] * 3
        self._join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
        self._entry = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(self._entered)
        self.entries = 0  # callbacks run (under the GIL)

    def _entered(self, _arg):
        self.entries += 1

    def churn(self, stop: threading.Event) -> None:
        thread, entry = ctypes.c_ulong(), ctypes.cast(self._entry, ctypes.c_void_p)
        while not stop.is_set():
            if self._create(ctypes.byref(thread), None, entry, None) == 0:
                self._join(thread.value, None)  # ctypes lets the GIL go meanwhile


def _python_churn(stop: threading.Event) -> None:
    """Python threads that start, run 60 frames deep and end, one after the other."""
    while not stop.is_set():
        worker = threading.Thread(target=_frames_then, args=(60, lambda: sum(range(300))))
        worker.start()
        worker.join()


@pytest.mark.parametrize("attempt", range(5))  # CI's loaded lane runs it 5 times a run
def test_captures_beside_threads_that_enter_python_and_end(attempt):
    """The SIGSEGV of issue 41 (an xdist worker dead in test_a_run_stopped_at_once_...): a thread
    that is not Python's (the tracker's own after-baseline job thread, a library's callback
    thread) makes its thread state without the GIL, under the runtime's thread-list lock; 3.11
    links it at the head of the list before filling it in. The capture walked that list with
    the GIL only and read the half-made state's frame pointer (NULL). 300 trackers (interval 1
    ms: half stopped at once, half after 10 rows, each with a capture per row) beside 3 threads
    making such C threads and 1 making Python threads 60 frames deep: the old build died within
    ~1 s in 6 runs of 6. Every tracker's profile is recorded; C threads entered Python meanwhile."""
    native, stop = _NativeThreads(), threading.Event()
    churners = [threading.Thread(target=native.churn, args=(stop,)) for _ in range(3)]
    churners.append(threading.Thread(target=_python_churn, args=(stop,)))
    for churner in churners:
        churner.start()
    statuses, captures = set(), 0
    try:
        for i in range(300):
            tracker = ResourceTracker(interval=0.001, discover_server=False, discover_cloud=False)
            if i % 2:
                assert tracker.wait_for_samples(10, timeout=60)
            tracker.stop()
            status = tracker.code_profile_status()
            statuses.add(status["status"])
            captures += status["captures"]
    finally:
        stop.set()
        for churner in churners:
            churner.join()
    assert statuses == {"recorded"}
    assert captures >= 150 and native.entries > 0, (captures, native.entries)


_TRACEMALLOC_FLIPS = textwrap.dedent(
    """
    import sys, tracemalloc
    from resource_tracker import ResourceTracker

    trackers, rows = int(sys.argv[1]), int(sys.argv[2])
    captures = flips = 0
    for _ in range(trackers):
        tracker = ResourceTracker(interval=0.001, discover_server=False, discover_cloud=False)
        while tracker.n_samples < rows:
            tracemalloc.start()
            tracemalloc.stop()
            flips += 1
        tracker.stop()
        status = tracker.code_profile_status()
        assert status["status"] == "recorded", status
        captures += status["captures"]
    print(captures, flips)
    """
)


def test_tracemalloc_started_and_stopped_while_captures_run():
    """A C thread of the tracker (the stack capture's, the after-baseline job's) that made its
    thread state with PyGILState_Ensure allocated it without the GIL; while tracemalloc traces,
    that allocation runs tracemalloc's hook, which waits for the GIL, and the thread holding it
    may stop tracemalloc meanwhile (freeing the hook's traceback buffer): SIGSEGV in
    traceback_new. The capture thread made one per capture. 10 trackers (interval 1 ms, 150 rows
    each) while the main thread starts and stops tracemalloc without pause: the old build died
    within 0.2 s in 6 runs of 6. In a process of its own, so a crash fails this test only (under
    `make sanitize` that process loads the instrumented core too)."""
    env = dict(os.environ)
    preload = os.environ.get("RESOURCE_TRACKER_SANITIZE_PRELOAD")
    if preload:
        env.update(LD_PRELOAD=preload, PYTHONMALLOC="malloc")
    done = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", _TRACEMALLOC_FLIPS, "10", "150"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    captures, flips = map(int, done.stdout.split())
    assert captures >= 50 and flips > captures, (captures, flips)  # captures met the flips
