"""Where a process's cgroup is: the cgroup discovery shared by ``server_info`` (the
container's limits, ``cgroup_limits``) and ``cgroup_usage`` (the run's figures, read at
start() and at stop()); the limit files are read in ``_cgroup_limits``.

Small modules on purpose: the tracker's worker thread imports them when it reads the start
figures, and the compiler's peak memory in that thread stays in the thread's C heap.

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
import stat

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple, Union

    #: A cgroup mount: (root of the mount, mount point).
    Mount = Tuple[str, str]


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
    directory), larger than ``limit`` bytes, or unreadable. Opened non-blocking; invalid
    UTF-8 is replaced."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # never open a device (side effects)
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError):  # ValueError: a NUL in the path (found by fuzz_cgroup.py)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between stat() and open()
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(chunk)
            size += len(chunk)
        return None  # larger than any real file of its kind: damaged, not read
    except OSError:
        return None
    finally:
        os.close(fd)


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
    ``memory.events``); a line whose value is out of range is left out (not read)."""
    out = {}
    for line in (_read(path, MAX_VALUE_BYTES) or "").splitlines():
        fields = line.split()
        if len(fields) == 2:
            value = _number(fields[1])
            if value is not None:
                out[fields[0]] = value
    return out


def read_pids(path: str) -> List[int]:
    """The pids of a list file (``cgroup.procs``, one a line); [] when it is not read."""
    text = _read(path, MAX_LIST_BYTES) or ""
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


# -- cgroups -----------------------------------------------------------------------------


def _cgroup_places(
    pid: Union[int, str], proc_root: str, fs_root: str, extra: Tuple[str, ...] = ()
) -> Optional[Tuple[int, Dict[str, Tuple[Mount, str]]]]:
    """(version, {controller: (mount, path)}) of pid's cgroups, or None when none is found.

    v1: the ``cpu``, ``cpuacct`` and ``memory`` hierarchies that are mounted (v1 wins when a
    v1 ``cpu`` or ``memory`` controller is mounted: then v2 holds no controller of those);
    v2: the one ``unified`` hierarchy. A mount is (root of the mount, mount point).
    ``extra``: v1 controllers wanted too (``blkio`` and ``pids`` for the tree source).
    """
    membership = _read(os.path.join(proc_root, str(pid), "cgroup"))
    mountinfo = _read(os.path.join(proc_root, str(pid), "mountinfo"))
    if not membership or not mountinfo:
        return None
    v1_paths: Dict[str, str] = {}
    v2_path: Optional[str] = None
    for line in membership.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2_path = parts[2]
        else:
            for controller in parts[1].split(","):
                v1_paths[controller] = parts[2]
    v1_mounts: Dict[str, Mount] = {}
    v2_mount: Optional[Mount] = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        tail = line.split(" - ", 1)[1].split()
        if len(tail) < 3:  # a damaged line (found by fuzz/fuzz_cgroup.py)
            continue
        fs_type, _source, options = tail[:3]
        mount = (fields[3], fs_root + _unescape(fields[4]))
        if fs_type == "cgroup2":
            v2_mount = mount
        elif fs_type == "cgroup":
            for controller in options.split(","):
                if controller in ("cpu", "cpuacct", "memory") + extra:
                    v1_mounts[controller] = mount
    if any(c in v1_mounts and c in v1_paths for c in ("cpu", "memory")):
        places = {c: (v1_mounts[c], v1_paths[c]) for c in v1_mounts if c in v1_paths}
        return 1, places
    if v2_mount is not None and v2_path is not None:
        return 2, {"unified": (v2_mount, v2_path)}
    return None


def _unescape(path: str) -> str:
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")


def _relative_parts(mount: Mount, path: str) -> Tuple[str, List[str]]:
    """(mount point, [directory names]) of a cgroup path below its mount."""
    root, mount_point = mount
    if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
        path = path[len(root.rstrip("/")) :]
    # in a cgroup namespace /proc/<pid>/cgroup is relative to the namespace root: the mount
    rel = path.strip("/")
    return mount_point, (rel.split("/") if rel else [])


def cgroup_directory(mount: Mount, path: str) -> str:
    """The directory of a cgroup (``mount`` and ``path`` from ``_cgroup_places``)."""
    mount_point, parts = _relative_parts(mount, path)
    return os.path.join(mount_point, *parts)


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
