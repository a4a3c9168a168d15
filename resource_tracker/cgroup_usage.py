"""What the kernel's cgroup knows about the workload's container: memory now and at its peak,
the limits, CPU time, CPU throttling and OOM kills (cgroup v2 and v1).

The sampler sees processes; the cgroup sees the whole container, including memory the
kernel charges to it that no process shows (page cache, kernel memory) and peaks between
two samples (``memory.peak``, ``memory.max_usage_in_bytes``). Read at start() and at stop():
the counters are the difference, the peak is the cgroup's own high-water mark (since the
cgroup was created: for a container, the job). Paths and limits come from
``server_info`` (the same cgroup discovery as the container limits).
"""

from __future__ import annotations

import os

from .server_info import (
    _cgroup_places,
    _number,
    _read,
    _v1_cpu,
    _v1_memory,
    _v2_cpu,
    _v2_memory,
    _walk,
    cgroup_directory,
)

MIB = 1024 * 1024
UNLIMITED = 1 << 62


def read_cgroup(pid, proc_root="/proc", sys_root=None):
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


def locate_cgroup(pid, proc_root="/proc", sys_root=None):
    """(version, places) of pid's cgroup, or None. Located once, at start: a process that has
    exited (a zombie) no longer shows its mounts."""
    found = _cgroup_places(pid, proc_root, "")
    if found is None:
        return None
    version, places = found
    if sys_root:
        places = {c: ((r, _under(sys_root, m)), path) for c, ((r, m), path) in places.items()}
    return version, places


def read_cgroup_at(found):
    """The figures of a cgroup located by locate_cgroup() (None for None)."""
    if found is None:
        return None
    version, places = found
    return _read_v1(places) if version == 1 else _read_v2(places["unified"])


def _under(sys_root, mount_point):
    """A mount point below /sys, moved below sys_root."""
    if mount_point == "/sys" or mount_point.startswith("/sys/"):
        return sys_root.rstrip("/") + mount_point[4:]
    return mount_point


def _keyed(text):
    """{key: int} from 'key value' lines (cpu.stat, memory.events, memory.oom_control)."""
    out = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2:
            value = _number(fields[1])
            if value is not None:
                out[fields[0]] = value
    return out


def _mib(value):
    return None if value is None or value < 0 or value >= UNLIMITED else round(value / MIB, 1)


def _pids(directory):
    text = _read(os.path.join(directory, "cgroup.procs")) or ""
    return [int(p) for p in text.split() if p.isdigit()]


def _read_v2(place):
    d = cgroup_directory(*place)
    cpu = _keyed(_read(os.path.join(d, "cpu.stat")))
    events = _keyed(_read(os.path.join(d, "memory.events")))
    limit = _walk(*place, _v2_memory)
    usage = cpu.get("usage_usec")
    throttled = cpu.get("throttled_usec")
    return {
        "version": 2,
        "path": place[1],
        "memory_mib": _mib(_number(_read(os.path.join(d, "memory.current")))),
        "memory_peak_mib": _mib(_number(_read(os.path.join(d, "memory.peak")))),
        "memory_limit_mib": limit,
        "cpu_limit_cores": _walk(*place, _v2_cpu),
        "cpu_seconds": None if usage is None else usage / 1e6,
        "cpu_periods": cpu.get("nr_periods"),
        "cpu_throttled_periods": cpu.get("nr_throttled"),
        "cpu_throttled_seconds": None if throttled is None else throttled / 1e6,
        "oom_kills": events.get("oom_kill"),
        "pids": _pids(d),
    }


def _read_v1(places):
    memory, cpu, cpuacct = (places.get(c) for c in ("memory", "cpu", "cpuacct"))
    # a hierarchy where the process sits at the root (while it has a cgroup of its own in
    # another) measures the whole machine, not the container: left out
    own = {c for c, (_, path) in places.items() if path.strip("/")}
    if own:
        memory = memory if "memory" in own else None
        cpu = cpu if "cpu" in own else None
        cpuacct = cpuacct if "cpuacct" in own else None
    mem_dir = cgroup_directory(*memory) if memory else None
    cpu_dir = cgroup_directory(*cpu) if cpu else None
    acct_dir = cgroup_directory(*cpuacct) if cpuacct else None
    stat = _keyed(_read(os.path.join(cpu_dir, "cpu.stat"))) if cpu_dir else {}
    oom = _keyed(_read(os.path.join(mem_dir, "memory.oom_control"))) if mem_dir else {}
    usage = _number(_read(os.path.join(acct_dir, "cpuacct.usage"))) if acct_dir else None
    throttled = stat.get("throttled_time")

    def mem_file(name):
        return _mib(_number(_read(os.path.join(mem_dir, name)))) if mem_dir else None

    return {
        "version": 1,
        "path": (memory or cpu or places.get("memory") or places.get("cpu"))[1],
        "memory_mib": mem_file("memory.usage_in_bytes"),
        "memory_peak_mib": mem_file("memory.max_usage_in_bytes"),
        "memory_limit_mib": _walk(*memory, _v1_memory) if memory else None,
        "cpu_limit_cores": _walk(*cpu, _v1_cpu) if cpu else None,
        "cpu_seconds": None if usage is None else usage / 1e9,
        "cpu_periods": stat.get("nr_periods"),
        "cpu_throttled_periods": stat.get("nr_throttled"),
        "cpu_throttled_seconds": None if throttled is None else throttled / 1e9,
        "oom_kills": oom.get("oom_kill"),
        "pids": _pids(mem_dir or cpu_dir),
    }


COUNTERS = ("cpu_seconds", "cpu_periods", "cpu_throttled_periods", "cpu_throttled_seconds",
            "oom_kills")  # fmt: skip


def cgroup_run(start, end, root_pid, proc_root="/proc"):
    """The figures of a run from the readings at its start and end (None without a cgroup).

    Counters are the rise during the run; memory is the last reading; the peak is the
    cgroup's high-water mark; ``dedicated`` says whether only the workload (its processes,
    their ancestors and this process) was in the cgroup at both readings.
    """
    if start is None and end is None:
        return None
    end = end or start
    out = {k: v for k, v in end.items() if k != "pids"}
    for key in COUNTERS:
        a, b = (start or {}).get(key), end.get(key)
        out[key] = None if a is None or b is None else max(b - a, 0)
    peaks = [r.get("memory_peak_mib") for r in (start, end) if r and r.get("memory_peak_mib")]
    out["memory_peak_mib"] = max(peaks) if peaks else None
    pids = set((start or {}).get("pids") or []) | set(end.get("pids") or [])
    out["dedicated"] = _only_workload(pids, root_pid, proc_root)
    return out


def _parent(pid, proc_root):
    try:
        with open(os.path.join(proc_root, str(pid), "stat"), "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _only_workload(pids, root_pid, proc_root):
    """True when every pid is the root, one of its ancestors or descendants, or this process."""
    ancestors, pid = set(), root_pid
    while pid and pid not in ancestors and len(ancestors) < 1000:
        ancestors.add(pid)
        pid = _parent(pid, proc_root)
    for pid in pids:
        if pid in ancestors or pid == os.getpid():
            continue
        chain, p = 0, pid
        while p and p != root_pid and chain < 1000:
            p, chain = _parent(p, proc_root), chain + 1
        if p != root_pid and os.path.exists(os.path.join(proc_root, str(pid))):
            return False
    return True


_COLUMN_FILES = {
    2: {"cpu": ("cpu.stat",), "memory": ("memory.stat",), "io": ("io.stat",)},
    1: {
        "cpu": ("cpuacct.usage",),
        "memory": ("memory.stat",),
        "io": ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"),
    },
}


def tree_cgroup_plan(pid, mode="auto", proc_root="/proc", sys_root=None):
    """Where the tracked tree's columns can come from its cgroup: ``(version, {"cpu": dir,
    "memory": dir, "io": dir, "pids": dir}, note)``, a directory "" leaving that column to
    the process walk ("pids": the tree's own pids cgroup, whose task count tells when the
    member list needs a read; "" for none), or None when the tracked process's cgroup is not
    found. The note says why a column stays with the walk (None: none does).

    A cgroup that is the hierarchy's root is never the tree's own (it holds the machine); a
    column whose file is missing (a v2 controller not enabled) stays with the walk. In v1,
    ``blkio.throttle.io_service_bytes`` counts only throttled I/O on recent kernels (this
    machine, 6.x: 0 after 40 MiB written): the I/O column is taken from it only when the
    hierarchy's root shows bytes (the kernel counts them), or with ``mode`` "cgroup". With
    ``mode`` "auto" the cgroup is used only when it gives every column (else the walk runs
    every tick anyway, and its PSS-based memory is the closer one): every directory is then
    "". Whether the cgroup holds only the tree is checked by the sampler at each reading.
    """
    found = _cgroup_places(pid, proc_root, "", extra=("blkio", "pids"))
    if found is None:
        return None
    version, places = found
    if sys_root:
        places = {c: ((r, _under(sys_root, m)), path) for c, ((r, m), path) in places.items()}

    def own(controller):
        place = places.get(controller)
        return cgroup_directory(*place) if place and place[1].strip("/") else ""

    if version == 2:
        d = own("unified")
        dirs = {"cpu": d, "memory": d, "io": d}
        pids = d if d and os.path.exists(os.path.join(d, "pids.current")) else ""
    else:
        dirs = {"cpu": own("cpuacct"), "memory": own("memory"), "io": own("blkio")}
        pids = own("pids")
    why = {c: "no cgroup of the tree's own" for c, d in dirs.items() if not d}
    for column, d in dirs.items():
        names = _COLUMN_FILES[version][column]
        if d and not any(os.path.exists(os.path.join(d, n)) for n in names):
            dirs[column], why[column] = "", f"no {names[0]} (controller not enabled)"
    if version == 1 and dirs["io"] and mode != "cgroup":
        if not _blkio_counts(places["blkio"][0][1]):
            dirs["io"], why["io"] = "", "the kernel's blkio counts no unthrottled I/O"
    note = "; ".join(f"{c}: {w}" for c, w in why.items()) or None
    if why and mode != "cgroup":
        dirs = dict.fromkeys(dirs, "")
        note = f"processes walked ({note}; RESOURCE_TRACKER_TREE_SOURCE=cgroup mixes)"
    elif why:
        note = f"walked for {note}"
    dirs["pids"] = pids
    return version, dirs, note


def _blkio_counts(mount_point):
    """True when the blkio hierarchy's root shows storage bytes (the kernel counts them)."""
    for name in ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"):
        text = _read(os.path.join(mount_point, name))
        if text is not None:
            for line in text.splitlines():
                fields = line.split()
                if len(fields) == 3 and fields[1] in ("Read", "Write") and fields[2] != "0":
                    return True
            return False
    return False
