"""What the kernel's cgroup knows about the workload's container: memory now and at its peak,
the limits, CPU time, CPU throttling and OOM kills (cgroup v2 and v1).

The sampler sees processes; the cgroup sees the whole container, including memory the
kernel charges to it that no process shows (page cache, kernel memory) and peaks between
two samples (``memory.peak``, ``memory.max_usage_in_bytes``). Read at start() and at stop():
the counters are the difference, the peak is the cgroup's own high-water mark (since the
cgroup was created: for a container, the job); ``_run_data.cgroup_run`` makes the run's
figures from the two readings (loaded on first use: this module is imported with the
package, for the worker thread that reads the start figures). Paths and limits come from
``_cgroup_fs`` (the same cgroup discovery as the container limits of ``server_info``).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

from ._cgroup_fs import Place, _cgroup_places, cgroup_directory
from ._cgroup_limits import _v2_cpu, _v2_memory, _walk
from ._cgroup_read import (  # noqa: F401  (MIB, UNLIMITED: importable from here, as before)
    MIB,
    UNLIMITED,
    _cpu_seconds,
    _mib,
    plausible_bytes,
    read_keyed,
    read_pids,
    read_value,
)
from ._cgroup_v1 import read_v1

#: A located cgroup: (version 1 or 2, {hierarchy: place}); "unified" is v2's one hierarchy.
Located = Tuple[int, Dict[str, Place]]


def read_cgroup(
    pid: int, proc_root: str = "/proc", sys_root: Optional[str] = None
) -> Optional[Dict[str, Any]]:
    """The cgroup figures of ``pid`` now, as a dict, or None when no cgroup is found.

    ``proc_root`` and ``sys_root`` (the directory standing for ``/sys``, mount points below
    ``/sys`` are read there) are for tests: ``RESOURCE_TRACKER_PROCFS_ROOT`` and
    ``RESOURCE_TRACKER_SYSFS_ROOT``.

    Keys: ``version``, ``path``, ``memory_mib``, ``memory_peak_mib``, ``memory_limit_mib``,
    ``cpu_limit_cores``, ``cpu_seconds``, ``cpu_periods``, ``cpu_throttled_periods``,
    ``cpu_throttled_seconds``, ``oom_kills``, ``pids`` (processes in the cgroup). A figure
    the kernel does not provide is None.
    """
    return read_cgroup_at(locate_cgroup(pid, proc_root, sys_root))


def locate_cgroup(
    pid: int,
    proc_root: str = "/proc",
    sys_root: Optional[str] = None,
    extra: Tuple[str, ...] = (),
) -> Optional[Located]:
    """(version, places) of pid's cgroup, or None; `extra`: v1 controllers wanted beside cpu,
    cpuacct and memory. Located once, at start: a process that has exited (a zombie) no
    longer shows its mounts. A mount below /sys is read below `sys_root` when given."""
    found = _cgroup_places(pid, proc_root, "", extra=extra)
    if found is None:
        return None
    version, places = found
    if sys_root:
        places = {c: ((r, _under(sys_root, m)), path) for c, ((r, m), path) in places.items()}
    return version, places


def read_cgroup_at(found: Optional[Located]) -> Optional[Dict[str, Any]]:
    """The figures of a cgroup located by locate_cgroup() (None for None)."""
    if found is None:
        return None
    version, places = found
    if version == 1:  # cgroup v1 (older hosts)
        return read_v1(places)
    return _read_v2(places["unified"])


def oom_kills_at(found: Optional[Located]) -> Optional[float]:
    """The OOM kills the cgroup located by locate_cgroup() counted so far (one file read:
    the export's live reading), or None (no cgroup, no memory controller, not readable)."""
    if found is None:
        return None
    version, places = found
    place = places.get("memory" if version == 1 else "unified")
    if place is None or (version == 1 and not place[1].strip("/")):  # v1 at the root: the
        return None  # machine's, not the container's (as read_v1 leaves it out)
    name = "memory.oom_control" if version == 1 else "memory.events"
    kills = read_keyed(os.path.join(cgroup_directory(*place), name)).get("oom_kill")
    return None if kills is None else float(kills)


def _under(sys_root: str, mount_point: str) -> str:
    """A mount point below /sys, moved below sys_root."""
    if mount_point == "/sys" or mount_point.startswith("/sys/"):
        return sys_root.rstrip("/") + mount_point[4:]
    return mount_point


def _read_v2(place: Place) -> Dict[str, Any]:
    d = cgroup_directory(*place)
    cpu = read_keyed(os.path.join(d, "cpu.stat"))
    events = read_keyed(os.path.join(d, "memory.events"))
    limit = _walk(*place, _v2_memory)
    usage = cpu.get("usage_usec")
    throttled = cpu.get("throttled_usec")
    return {
        "version": 2,
        "path": place[1],
        "memory_mib": _mib(read_value(os.path.join(d, "memory.current"))),
        "memory_peak_mib": _mib(read_value(os.path.join(d, "memory.peak"))),
        "memory_limit_mib": limit,
        "cpu_limit_cores": _walk(*place, _v2_cpu),
        "cpu_seconds": _cpu_seconds(usage, 1e6),
        "cpu_periods": cpu.get("nr_periods"),
        "cpu_throttled_periods": cpu.get("nr_throttled"),
        "cpu_throttled_seconds": _cpu_seconds(throttled, 1e6),
        "oom_kills": events.get("oom_kill"),
        "pids": read_pids(os.path.join(d, "cgroup.procs")),
    }
