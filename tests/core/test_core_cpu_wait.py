"""The run-queue wait column (``process_cpu_wait``, csrc/sched_wait.c): the cores' worth of
the tree's threads that were runnable but not running, compared with what the workload's
own threads read in their own ``/proc/self/task/<tid>/schedstat``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from workloads import Workload, run_to_report, wait_reading_stdin

from resource_tracker import ResourceTracker

#: Threads hashing without the GIL (hashlib releases it for large buffers) for 2 s of wall
#: time each, more than the machine's cores: they wait for a CPU; each reports its own wait.
THREADS = """import hashlib, threading
def own_wait():
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9
waits = []
def hash_for(seconds):
    first, end, data = own_wait(), time.time() + seconds, bytes(1 << 20)
    while time.time() < end:
        hashlib.sha256(data).digest()
    waits.append(own_wait() - first)
ts = [threading.Thread(target=hash_for, args=(2.0,)) for _ in range(THREADS_N)]
start = time.time()
[t.start() for t in ts]
[t.join() for t in ts]
report(waited=sum(waits), wall=time.time() - start)
os._exit(0)
"""


def _waits_of(script, count_name):
    """(the column's total over the run, the workload's report, the tracker) for script with
    count_name set to more tasks than the cores, each runnable all along."""
    n = 2 * (os.cpu_count() or 1) + 1
    w = Workload(script.replace(count_name, str(n)))
    wait_reading_stdin(w.pid)  # tracked from its "go" on: the tasks' window
    tracker = ResourceTracker(pid=w.pid, interval=0.2, discover_cloud=False,
                              discover_server=False)  # fmt: skip
    report = run_to_report(w, tracker)
    stats = tracker.stats()
    seen = stats["process_cpu_wait"]["mean"] * stats["timestamp"]["duration"]
    assert report["waited"] > 0.5 * report["wall"], report  # they did wait
    return seen, report, tracker


def test_the_wait_of_every_thread_is_counted():
    """Threads of one process, more than the cores, each runnable all along: the column's
    total over the run is the sum of the threads' own waits (not the main thread's only)."""
    seen, report, _ = _waits_of(THREADS, "THREADS_N")
    assert abs(seen - report["waited"]) <= 0.2 * report["waited"] + 0.3, (seen, report)


#: Processes of one thread each, more than the machine's cores, busy for 2 s of wall time: they
#: wait for a CPU; each reports its own wait (its /proc/self/schedstat) through a pipe.
PROCESSES = """def own_wait():
    with open("/proc/self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9
r, w = os.pipe()
start, pids = time.time(), []
for _ in range(PROCS_N):
    pid = os.fork()
    if pid == 0:
        first, end = own_wait(), time.time() + 2.0
        while time.time() < end:
            pass
        os.write(w, f"{own_wait() - first}\\n".encode())
        os._exit(0)
    pids.append(pid)
os.close(w)
with os.fdopen(r) as lines:
    waited = sum(float(line) for line in lines)
report(waited=waited, wall=time.time() - start)
for pid in pids:
    os.waitpid(pid, 0)
os._exit(0)
"""

#: A root and 10 children, each one thread, all asleep until killed.
SLEEPERS = """import os, signal
for _ in range(10):
    if os.fork() == 0:
        signal.pause()
signal.pause()
"""


def test_the_wait_of_one_thread_processes_is_counted():
    """Single-threaded members are read from /proc/<pid>/schedstat (no task listing): the
    column's total over the run is the sum of the processes' own waits."""
    seen, report, tracker = _waits_of(PROCESSES, "PROCS_N")
    # a process that ends between two ticks takes its last interval's wait with it
    assert abs(seen - report["waited"]) <= 0.2 * report["waited"] + 0.3, (seen, report)
    assert tracker._sampler.wait_reads > 0


def test_a_sleeping_tree_of_one_thread_processes_is_not_read_each_tick():
    """Members that did not run since their last read keep their reading (the kernel adds to a
    task's wait when it is scheduled in): 11 sleeping processes cost no schedstat read a tick
    (before: 11 task listings and 11 reads a tick)."""
    root = subprocess.Popen([sys.executable, "-c", SLEEPERS], start_new_session=True)
    tracker = None
    try:
        tracker = ResourceTracker(pid=root.pid, interval=0.1, discover_cloud=False,
                                  discover_server=False)  # fmt: skip
        deadline = time.monotonic() + 120
        while not (tracker.n_samples and tracker.process_metrics["children"][-1] == 10):
            assert time.monotonic() < deadline, "the 10 children were never seen"
            tracker.wait_for_samples(tracker.n_samples + 1, timeout=60)
        sampler = tracker._sampler
        reads, carried, rows = sampler.wait_reads, sampler.wait_carried, tracker.n_samples
        assert tracker.wait_for_samples(rows + 10, timeout=120)
        reads, carried = sampler.wait_reads - reads, sampler.wait_carried - carried
    finally:
        if tracker is not None:
            tracker.stop()
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
    assert reads <= 3 and carried >= 100, (reads, carried)
