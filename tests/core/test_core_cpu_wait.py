"""The run-queue wait column (``process_cpu_wait``, csrc/sched_wait.c): the cores' worth of
the tree's threads that were runnable but not running, compared with what the workload's
own threads read in their own ``/proc/self/task/<tid>/schedstat``."""

from __future__ import annotations

import os

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


def test_the_wait_of_every_thread_is_counted():
    """Threads of one process, more than the cores, each runnable all along: the column's
    total over the run is the sum of the threads' own waits (not the main thread's only)."""
    n = 2 * (os.cpu_count() or 1) + 1
    w = Workload(THREADS.replace("THREADS_N", str(n)))
    wait_reading_stdin(w.pid)  # tracked from its "go" on: the threads' window
    tracker = ResourceTracker(pid=w.pid, interval=0.2, discover_cloud=False,
                              discover_server=False)  # fmt: skip
    report = run_to_report(w, tracker)
    stats = tracker.stats()
    seen = stats["process_cpu_wait"]["mean"] * stats["timestamp"]["duration"]
    assert report["waited"] > 0.5 * report["wall"], report  # they did wait
    assert abs(seen - report["waited"]) <= 0.2 * report["waited"] + 0.3, (seen, report)
