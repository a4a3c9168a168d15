"""The cgroup v1 reader of ``cgroup_usage`` (older hosts): the figures of the ``memory``,
``cpu`` and ``cpuacct`` hierarchies. A module of its own, loaded only where cgroup v1 is
found (the worker thread that reads the start figures compiles only what the host needs).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ._cgroup_fs import Place, cgroup_directory
from ._cgroup_limits import _v1_cpu, _v1_memory, _walk
from ._cgroup_read import _cpu_seconds, _mib, read_keyed, read_pids, read_value


def read_v1(places: Dict[str, Place]) -> Dict[str, Any]:
    """The figures of a cgroup v1 process (``places``: its hierarchies, from locate_cgroup)."""
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
    stat = read_keyed(os.path.join(cpu_dir, "cpu.stat")) if cpu_dir else {}
    oom = read_keyed(os.path.join(mem_dir, "memory.oom_control")) if mem_dir else {}
    usage = read_value(os.path.join(acct_dir, "cpuacct.usage")) if acct_dir else None
    throttled = stat.get("throttled_time")

    def mem_file(name: str) -> Optional[float]:
        return _mib(read_value(os.path.join(mem_dir, name))) if mem_dir else None

    # the cgroup's path: the first of its own hierarchies (cpuacct alone may be one)
    where = memory or cpu or cpuacct or places.get("memory") or places.get("cpu")
    members = mem_dir or cpu_dir or acct_dir
    return {
        "version": 1,
        "path": where[1] if where else None,
        "memory_mib": mem_file("memory.usage_in_bytes"),
        "memory_peak_mib": mem_file("memory.max_usage_in_bytes"),
        "memory_limit_mib": _walk(*memory, _v1_memory) if memory else None,
        "cpu_limit_cores": _walk(*cpu, _v1_cpu) if cpu else None,
        "cpu_seconds": _cpu_seconds(usage, 1e9),
        "cpu_periods": stat.get("nr_periods"),
        "cpu_throttled_periods": stat.get("nr_throttled"),
        "cpu_throttled_seconds": _cpu_seconds(throttled, 1e9),
        "oom_kills": oom.get("oom_kill"),
        "pids": read_pids(os.path.join(members, "cgroup.procs")) if members else None,
    }
