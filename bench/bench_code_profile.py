"""Cost of the code profile's stack captures (docs/code_profile.md), measured in this process.

- CPU per capture: the process's CPU (os.times) over a run at a 10 ms interval with the code
  profile on, minus the same run with it off, divided by the captures made: the added CPU at
  1 s is one capture a second, at 0.1 s ten (the sampler's own reading is the same on and off).
  The main thread sleeps (a capture walks its stack) and, in a second pair of runs, runs a
  Python loop 20 frames deep (the capture must take the GIL from it).
- GIL hold per capture (p50/p99) and the wait for it, from code_profile_status().

Usage: python bench/bench_code_profile.py [seconds per run, default 5]
"""

from __future__ import annotations

import os
import sys
import threading
import time

from resource_tracker import ResourceTracker


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _busy(stop: threading.Event, depth: int = 20) -> None:
    if depth:
        return _busy(stop, depth - 1)
    while not stop.is_set():
        sum(range(200))


def _one(seconds: float, code_profile: bool, busy: bool) -> tuple:
    """(process CPU-seconds, the status) of a run of the given length."""
    stop = threading.Event()
    worker = threading.Thread(target=_busy, args=(stop,)) if busy else None
    start = _cpu()
    tracker = ResourceTracker(
        interval=0.01,
        discover_server=False,
        discover_cloud=False,
        track_system=False,
        code_profile=code_profile,
    )
    if worker:
        worker.start()
    time.sleep(seconds)
    stop.set()
    if worker:
        worker.join()
    tracker.stop()
    return _cpu() - start, tracker.code_profile_status()


def main(seconds: float) -> None:
    for busy in (False, True):
        off, _ = _one(seconds, False, busy)
        on, status = _one(seconds, True, busy)
        captures = max(status.get("captures", 0), 1)
        per = (on - off) / captures if not busy else None
        print(f"main thread {'busy (Python loop, 20 frames)' if busy else 'sleeping'}:")
        print(
            f"  captures {captures}, gil_busy {status.get('gil_busy')}, "
            f"GIL hold p50 {status['gil_hold_us_p50']:.1f} us, p99 "
            f"{status['gil_hold_us_p99']:.1f} us; wait p50 {status['gil_wait_us_p50']:.0f} "
            f"us, p99 {status['gil_wait_us_p99']:.0f} us"
        )
        if per is not None:
            print(
                f"  CPU per capture {per * 1e6:.1f} us: added at 1 s {per * 100:.4f} % of "
                f"a core, at 0.1 s {per * 1000:.4f} %"
            )
        else:
            print(f"  process CPU on {on:.3f} s, off {off:.3f} s (the busy thread dominates)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
