"""What machine the workload runs on: CPUs, memory, GPUs, OS and the container's limits.

Everything is read from /proc, /sys, NVML and AMD's SMI library in a few milliseconds; no
subprocess.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Union

from . import _core, settings

# the cgroup discovery, shared with cgroup_usage (a run's figures), is in _cgroup_fs
from ._cgroup_fs import _cgroup_places
from ._cgroup_limits import _v1_cpu, _v1_memory, _v2_cpu, _v2_memory, _walk
from ._cgroup_read import _read

if TYPE_CHECKING:
    from ._cgroup_fs import Mount


def get_server_info(
    pid: Optional[int] = None,
    nvml_library: Optional[str] = None,
    proc_root: str = "/proc",
    amd_library: Optional[str] = None,
) -> Dict[str, Any]:
    """Describe the server and the cgroup limits that apply to ``pid`` (default: this process).

    Returns a dict: ``vcpus``, ``memory_mb``, ``gpu_count``, ``gpu_names`` (list),
    ``gpu_memory_mb`` (total over all GPUs; both in MiB, also under the names
    ``memory_mib`` and ``gpu_memory_mib`` that code for the 0.4/0.5 packages reads),
    ``cpu_model``, ``architecture``, ``os`` and
    ``cgroup`` = {``version`` (1, 2 or None), ``cpu_limit_cores``, ``memory_limit_mb``}
    (None where there is no limit). ``nvml_library`` is the NVML library to load
    (default: ``RESOURCE_TRACKER_NVML_LIBRARY`` or ``libnvidia-ml.so.1``), ``amd_library``
    AMD's (default: ``RESOURCE_TRACKER_AMD_SMI_LIBRARY``, else ``libamd_smi.so`` or
    ``librocm_smi64.so``): the GPUs are NVIDIA's, then AMD's.
    """
    pid = os.getpid() if pid is None else int(pid)
    if nvml_library is None:
        nvml_library = settings.get("RESOURCE_TRACKER_NVML_LIBRARY")
    if amd_library is None:
        amd_library = settings.get("RESOURCE_TRACKER_AMD_SMI_LIBRARY")
    try:
        gpus = _core.gpu_inventory(nvml_library, amd_library)
    except Exception:
        gpus = []
    uname = os.uname()
    memory_mib = _memory_mb(proc_root)
    gpu_memory_mib = int(round(sum(gpu["memory_mb"] for gpu in gpus)))
    return {
        "vcpus": os.cpu_count(),
        "memory_mb": memory_mib,
        "memory_mib": memory_mib,
        "gpu_count": len(gpus),
        "gpu_names": [gpu["name"] for gpu in gpus],
        "gpu_memory_mb": gpu_memory_mib,
        "gpu_memory_mib": gpu_memory_mib,
        "cpu_model": _cpu_model(proc_root),
        "architecture": uname.machine,
        "os": _os_name(uname),
        "cgroup": cgroup_limits(pid, proc_root=proc_root),
    }


def _memory_kib(proc_root: str) -> Optional[int]:
    """The machine's memory in KiB (MemTotal; psutil where there is no procfs)."""
    text = _read(os.path.join(proc_root, "meminfo")) or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    try:  # no procfs (macOS, Windows): psutil, which samples there
        import psutil

        return int(psutil.virtual_memory().total) // 1024
    except Exception:
        return None


def _memory_mb(proc_root: str) -> Optional[int]:
    kib = _memory_kib(proc_root)
    return None if kib is None else kib // 1024


def get_total_memory_mib() -> Optional[float]:
    """The machine's memory in MiB, to 2 decimals (from /proc/meminfo, or psutil), as the
    original package's function of this name gave it; None when it cannot be read.
    ``get_server_info()["memory_mib"]`` gives it in whole MiB."""
    kib = _memory_kib("/proc")
    return None if kib is None else round(kib / 1024, 2)


#: The 0.4 name of get_total_memory_mib() (that series said MB for MiB).
get_total_memory_mb = get_total_memory_mib


def _cpu_model(proc_root: str) -> Optional[str]:
    text = _read(os.path.join(proc_root, "cpuinfo")) or ""
    found: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key in ("model name", "Model", "cpu model", "Hardware") and key not in found:
            found[key] = value.strip()
    for key in ("model name", "Model", "cpu model", "Hardware"):
        if found.get(key):
            return found[key]
    return None


def _os_name(uname: os.uname_result) -> str:
    text = _read("/etc/os-release") or _read("/usr/lib/os-release") or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            name = line.split("=", 1)[1].strip().strip("\"'")
            return f"{name} (Linux {uname.release})" if uname.sysname == "Linux" else name
    return f"{uname.sysname} {uname.release}"


# -- cgroups ------------------------------------------------------------------------------


def cgroup_limits(
    pid: Union[int, str], proc_root: str = "/proc", fs_root: str = ""
) -> Dict[str, Any]:
    """The tightest CPU and memory limits of ``pid``'s cgroup and its ancestors.

    Reads ``<proc_root>/<pid>/cgroup`` and ``<proc_root>/<pid>/mountinfo`` to find where
    the cgroup file systems are mounted (``fs_root`` is prefixed to mount points, for
    tests). cgroup v2: ``cpu.max``, ``memory.max``; v1: ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us``, ``memory.limit_in_bytes``.
    """
    result: Dict[str, Any] = {"version": None, "cpu_limit_cores": None, "memory_limit_mb": None}
    found = _cgroup_places(pid, proc_root, fs_root)
    if found is None:
        return result
    version, places = found
    result["version"] = version
    if version == 1:
        result["cpu_limit_cores"] = _walk_place(places.get("cpu"), _v1_cpu)
        result["memory_limit_mb"] = _walk_place(places.get("memory"), _v1_memory)
    else:
        result["cpu_limit_cores"] = _walk_place(places["unified"], _v2_cpu)
        result["memory_limit_mb"] = _walk_place(places["unified"], _v2_memory)
    return result


def _walk_place(
    place: Optional[Tuple[Mount, str]], reader: Callable[[str], Optional[float]]
) -> Optional[float]:
    """_walk over ``place`` (a cgroup's mount and path; None: no such cgroup)."""
    return None if place is None else _walk(place[0], place[1], reader)
