"""This machine's real cgroup v1 controllers (memory, cpu), for the tests that make real
cgroups (tests/core/test_core_cgroups.py, tests/metaflow/mf_cgroup.py)."""

from __future__ import annotations

import os
import time


def own_v1_memory_cgroup():
    """(directory of this process's v1 memory cgroup, None), or (None, why there is none
    usable: not root, cgroup v2 only, not mounted, not writable)."""
    return own_v1_cgroup("memory")


def own_v1_cgroup(controller):
    """(directory of this process's v1 cgroup of ``controller`` (``memory``, ``cpu``), None),
    or (None, why there is none usable: not root, cgroup v2 only, not mounted, not
    writable)."""
    if os.geteuid() != 0:
        return None, "creating a cgroup needs root"
    place = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            parts = line.strip().split(":", 2)
            if len(parts) == 3 and controller in parts[1].split(","):
                place = parts[2]
    if place is None:
        return None, f"no cgroup v1 {controller} controller on this machine (cgroup v2 only)"
    with open("/proc/self/mountinfo") as f:
        mounts = [
            line.split()[4]
            for line in f
            if " - cgroup " in line and controller in line.split(" - ")[1].split()[2].split(",")
        ]
    if not mounts:
        return None, f"the v1 {controller} controller is not mounted"
    directory = os.path.join(mounts[0], place.strip("/"))
    if not os.access(directory, os.W_OK):
        return None, f"{directory} is not writable"
    return directory, None


def remove_cgroup(path, tries=50):
    """Remove a cgroup once its processes have exited (retried for up to 5 s)."""
    for _ in range(tries):
        try:
            os.rmdir(path)
            return
        except OSError:
            time.sleep(0.1)
