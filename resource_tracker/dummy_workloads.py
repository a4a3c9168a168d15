"""Workloads that keep CPU cores busy, for trying the tracker out: what code written for the
original package (0.4/0.5) imports from ``resource_tracker.dummy_workloads``.

``cpu_single`` keeps the calling thread busy; ``cpu_multi`` starts one Python process per
core (the same interpreter, ``-c`` with a busy loop, no import of this package) and waits for
them. Both run for ``duration`` seconds of wall-clock time: on a busy machine they get fewer
CPU seconds than that.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import List, Optional

__all__ = ["cpu_multi", "cpu_single"]

#: what each process of cpu_multi runs: argv[1] seconds of busy arithmetic
_BUSY_CHILD = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "x = 1.0\n"
    "while time.monotonic() < end:\n"
    "    for _ in range(1000):\n"
    "        x = x * 1.000001 % 7.0 + 1.0\n"
)


def _seconds(duration: float) -> float:
    """duration as a float; ValueError for a value that is not a number >= 0."""
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration >= 0:
        raise ValueError(f"duration must be a number of seconds >= 0, got {duration!r:.40}")
    return float(duration)


def cpu_single(duration: float = 1) -> None:
    """Keeps one core busy (this thread, arithmetic in a loop) for ``duration`` seconds.

    Example:
        >>> cpu_single(0.01)
    """
    end = time.monotonic() + _seconds(duration)
    x = 1.0
    while time.monotonic() < end:
        for _ in range(1000):
            x = x * 1.000001 % 7.0 + 1.0


def cpu_multi(duration: float = 1, ncores: Optional[int] = None) -> None:
    """Keeps ``ncores`` cores busy (None: every logical core, ``os.cpu_count()``) for
    ``duration`` seconds: one busy process each, waited for (and killed if this is
    interrupted)."""
    seconds = _seconds(duration)
    count = (os.cpu_count() or 1) if ncores is None else ncores
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"ncores must be a whole number >= 1 or None, got {ncores!r:.40}")
    children: List[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            children.append(subprocess.Popen([sys.executable, "-c", _BUSY_CHILD, repr(seconds)]))
        for child in children:
            child.wait()
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
