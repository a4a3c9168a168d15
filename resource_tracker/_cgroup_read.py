"""The bounded readers of cgroup files (and of a process's cgroup table and mount table).

Every cgroup file is read by one of three bounded readers, one per kind of file:
``read_value`` (one number: ``memory.current``, ``cpuacct.usage``; ``read_fields`` for a
line of a few fields: ``cpu.max``), ``read_keyed`` ("key value" lines: ``cpu.stat``,
``memory.stat``, ``memory.events``) and ``read_pids`` (``cgroup.procs``). Each takes only a
regular file (a FIFO, a device such as ``/dev/zero``, a directory: not read, never opened
when ``stat`` already shows it), opens it non-blocking, reads at most a few KiB (the pid
list: ``MAX_LIST_BYTES``) and keeps a number only in range (0 to 2**63 - 1: a value of
2**64 - 1 is "not read", never wrapped); the callers check what a value means (a memory
figure above the machine's RAM, ``plausible_bytes``).
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional

from . import _core

MIB = 1024 * 1024
#: Limits at or above this are "no limit" (cgroup v1 writes it as a page-aligned 2**63 - 1).
UNLIMITED = 1 << 62
#: The most a file of one value or of "key value" lines may hold (memory.stat: ~1.5 KiB).
MAX_VALUE_BYTES = 64 * 1024
#: The most a list (cgroup.procs) or a process's cgroup table (mountinfo) may hold: the C
#: readers' cap (csrc/cgroup_tree.c); 4 million pids of 7 digits fit.
MAX_LIST_BYTES = 16 * 1024 * 1024
#: The largest counter or size taken as read (int64; the kernel's "no limit" is below it).
MAX_VALUE = (1 << 63) - 1
#: The largest pid (the kernel's PID_MAX_LIMIT).
MAX_PID = 1 << 22
#: A memory figure above the machine's RAM times this is damaged ("not read").
RAM_MARGIN = 4


def _read(path: str, limit: int = MAX_LIST_BYTES) -> Optional[str]:
    """The text of the regular file ``path``, or None: not a regular file (FIFO, device,
    directory), larger than ``limit`` bytes, or unreadable. Opened non-blocking, read and
    closed by the C core without letting the interpreter lock go (csrc/py_files.c: these
    reads run beside the program, which may close every descriptor and open its own at the
    number being read); invalid UTF-8 is replaced."""
    try:
        data = _core.read_regular_file(path, limit)  # a FIFO or a device: never opened
    except ValueError:  # a NUL in the path (found by fuzz_cgroup.py)
        return None
    return None if data is None else data.decode("utf-8", "replace")


def read_fields(path: str) -> List[str]:
    """The blank-separated fields of a one-line file (``cpu.max``: "max 100000"); [] when
    it is not read."""
    return (_read(path, MAX_VALUE_BYTES) or "").split()


def read_value(path: str) -> Optional[int]:
    """The number a one-value file holds (``memory.current``), or None: not read, not a
    number, or out of range (below 0, above ``MAX_VALUE``)."""
    fields = read_fields(path)
    return _number(fields[0]) if fields else None


def read_keyed(path: str) -> Dict[str, int]:
    """{key: number} of a file of "key value" lines (``cpu.stat``, ``memory.stat``,
    ``memory.events``), parsed by the C readers' own parser (``_core.cgroup_keyed``,
    csrc/cgroup_parse.c); a line whose value is out of range is left out (not read)."""
    keyed = _core.cgroup_keyed(_read(path, MAX_VALUE_BYTES) or "")
    return {key: value for key, value in keyed.items() if value <= MAX_VALUE}


def read_pids(path: str) -> Optional[List[int]]:
    """The pids of a list file (``cgroup.procs``, one a line); None when it is not read
    (then who is in the cgroup is not known)."""
    text = _read(path, MAX_LIST_BYTES)
    if text is None:
        return None
    return [int(p) for p in text.split() if p.isdigit() and 0 < int(p) <= MAX_PID]


def plausible_bytes(value: Optional[int]) -> Optional[int]:
    """A memory figure in bytes, or None when it cannot be real: above the machine's RAM
    times ``RAM_MARGIN`` (a damaged or forged file; what the cgroup holds is in RAM)."""
    if value is None:
        return None
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        ram = 0
    return value if ram <= 0 or value <= ram * RAM_MARGIN else None


def _mib(value: Optional[int]) -> Optional[float]:
    """MiB of a memory figure in bytes; None when not read or not real (above the RAM)."""
    value = plausible_bytes(value)
    return None if value is None or value >= UNLIMITED else round(value / MIB, 1)


def _cpu_seconds(value: Optional[int], per_second: float) -> Optional[float]:
    """Seconds of a CPU time counter (``per_second`` units a second), or None when not read
    or more than every CPU could have run since boot (a damaged or forged file)."""
    if value is None:
        return None
    seconds = value / per_second
    try:
        most = time.clock_gettime(time.CLOCK_BOOTTIME) * (os.cpu_count() or 1) * 2 + 60
    except (OSError, AttributeError):
        return seconds
    return seconds if seconds <= most else None


def _number(text: Optional[str]) -> Optional[int]:
    """The decimal number ``text`` holds, or None: not a number, below 0 or above
    ``MAX_VALUE`` (a figure the kernel cannot write: 2**64 - 1 is not taken as a size)."""
    if text is None or len(text) > 24:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if 0 <= value <= MAX_VALUE else None
