"""A known workload for the code profile tests, run in the tracked interpreter itself.

Each function measures its own truth with time.thread_time() (the CPU its thread used inside
it) or time.monotonic(), so the profile is compared with the same run, on any load.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from typing import Dict, Iterator

TRUTH: Dict[str, float] = {}
PEAK_MIB = 160


def _burn(cpu_seconds: float) -> None:
    end = time.thread_time() + cpu_seconds
    x = 0
    while time.thread_time() < end:
        x += 1


def phase_a(cpu: float) -> None:
    start = time.thread_time()
    _burn(cpu)
    TRUTH["phase_a"] = time.thread_time() - start


def phase_b(cpu: float) -> None:
    start = time.thread_time()
    _burn(cpu)
    TRUTH["phase_b"] = time.thread_time() - start


def phase_c(cpu: float) -> None:
    start = time.thread_time()
    _burn(cpu)
    TRUTH["phase_c"] = time.thread_time() - start


def hash_in_c(rounds: int) -> None:
    """sha256 of a large buffer releases the GIL: the thread runs C code, not Python."""
    start = time.thread_time()
    buffer = b"\x01" * (16 << 20)
    for _ in range(rounds):
        hashlib.sha256(buffer).digest()
    TRUTH["hash_in_c"] = time.thread_time() - start


def deep(n: int, cpu: float) -> None:
    if n == 0:
        start = time.thread_time()
        _burn(cpu)
        TRUTH["deep"] = time.thread_time() - start
        return
    deep(n - 1, cpu)


def numbers(cpu: float) -> Iterator[int]:
    start = time.thread_time()
    end = start + cpu
    i = 0
    while time.thread_time() < end:
        i += 1
        if i % 1000 == 0:
            yield i
    TRUTH["numbers"] = time.thread_time() - start


def consume(cpu: float) -> None:
    for _ in numbers(cpu):
        pass


def nap(seconds: float) -> None:
    start = time.monotonic()
    time.sleep(seconds)
    TRUTH["nap"] = time.monotonic() - start


def allocate(mib: int, cpu: float) -> None:
    TRUTH["allocate_start"] = time.time()
    held = b"\x01" * (mib << 20)  # touched pages: resident
    _burn(cpu)
    TRUTH["allocate_len"] = len(held)
    del held
    TRUTH["allocate_end"] = time.time()


def fork_child() -> int:
    """fork() while the sampler runs; the child does a little Python and exits: its status."""
    pid = os.fork()
    if pid == 0:
        total = sum(range(10000))
        os._exit(0 if total else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def run(scale: float, fork: bool = True) -> Dict[str, float]:
    """The whole workload: scale is the CPU-seconds of the largest phase; fork=False: no
    child forked (a forked child is a worker whose own record a tracker takes)."""
    worker = threading.Thread(target=hash_in_c, args=(max(int(40 * scale), 4),), name="hasher")
    worker.start()  # exits mid-run
    phase_a(0.3 * scale)
    worker.join()
    if fork:
        TRUTH["fork_status"] = fork_child()
    phase_b(0.5 * scale)
    phase_c(0.2 * scale)
    deep(500, 0.2 * scale)
    consume(0.2 * scale)
    nap(0.2 * scale)
    allocate(PEAK_MIB, 0.15 * scale)
    return dict(TRUTH)
