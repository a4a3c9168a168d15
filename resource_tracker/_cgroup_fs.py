"""Where a process's cgroup is: the cgroup discovery shared by ``server_info`` (the
container's limits, ``cgroup_limits``) and ``cgroup_usage`` (the run's figures, read at
start() and at stop()); the limit files are read in ``_cgroup_limits``.

Small modules on purpose: the tracker's worker thread imports them when it reads the start
figures, and the compiler's peak memory in that thread stays in the thread's C heap.

The files are read by the bounded readers of ``_cgroup_read``.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple, Union

from ._cgroup_read import _read

#: A cgroup mount: (root of the mount, mount point).
Mount = Tuple[str, str]
#: Where one hierarchy of a process's cgroup is: (its mount, the cgroup's path in it).
Place = Tuple[Mount, str]


# -- cgroups -----------------------------------------------------------------------------


def _cgroup_places(
    pid: Union[int, str], proc_root: str, fs_root: str, extra: Tuple[str, ...] = ()
) -> Optional[Tuple[int, Dict[str, Place]]]:
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
