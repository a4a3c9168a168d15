"""The tracked tree's own cgroup as the source of its CPU, memory and I/O (docs/metrics.md,
"The tree from its own cgroup"): the plan made beside start(), in the worker thread, and
handed to the C sampler, which reads the files at each tick."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

from . import settings
from ._cgroup_fs import cgroup_directory
from ._cgroup_read import _read
from .cgroup_usage import locate_cgroup


def start_tree_source(tracker: Any) -> None:
    """Asks the tracker's C sampler to read the tree's CPU, memory and I/O from its cgroup
    (the reason why not goes to ``tracker._tree_plan_note``)."""
    sampler = tracker._sampler
    mode = settings.get("RESOURCE_TRACKER_TREE_SOURCE")
    if mode == "procfs" or not hasattr(sampler, "use_cgroup"):
        return
    if not (tracker.track_processes and tracker.children):
        tracker._tree_plan_note = "the tracker follows no children: processes walked"
        return
    try:
        plan = tree_cgroup_plan(
            tracker.pid,
            mode,
            proc_root=settings.get("RESOURCE_TRACKER_PROCFS_ROOT") or "/proc",
            sys_root=settings.get("RESOURCE_TRACKER_SYSFS_ROOT"),
        )
    except Exception as exc:  # never let a probe break the run
        tracker._tree_plan_note = f"no cgroup source: {type(exc).__name__}: {exc}"
        return
    if plan is None:
        tracker._tree_plan_note = "processes walked: the tracked process's cgroup not found"
        return
    version, dirs, tracker._tree_plan_note = plan
    if dirs["cpu"] or dirs["memory"] or dirs["io"]:
        sampler.use_cgroup(version, dirs["cpu"], dirs["memory"], dirs["io"], dirs["pids"])


#: The files that give each column, per cgroup version (any one of them will do).
_COLUMN_FILES: Dict[int, Dict[str, Tuple[str, ...]]] = {
    2: {"cpu": ("cpu.stat",), "memory": ("memory.stat",), "io": ("io.stat",)},
    1: {
        "cpu": ("cpuacct.usage",),
        "memory": ("memory.stat",),
        "io": ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"),
    },
}


#: A plan: (cgroup version, {"cpu", "memory", "io", "pids": directory or ""}, note or None).
Plan = Tuple[int, Dict[str, str], Optional[str]]


def tree_cgroup_plan(
    pid: int, mode: str = "auto", proc_root: str = "/proc", sys_root: Optional[str] = None
) -> Optional[Plan]:
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
    found = locate_cgroup(pid, proc_root, sys_root, extra=("blkio", "pids"))
    if found is None:
        return None
    version, places = found

    def own(controller: str) -> str:
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


def _blkio_counts(mount_point: str) -> bool:
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
