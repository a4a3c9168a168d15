"""The limits of a cgroup and its ancestors: CPU quota and memory limit, cgroup v2 and v1
(``server_info``'s container limits and ``cgroup_usage``'s readings)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Optional

from ._cgroup_fs import _relative_parts
from ._cgroup_read import _number, read_fields, read_value

if TYPE_CHECKING:
    from ._cgroup_fs import Mount


_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a page-aligned 2**63 - 1


def _walk(
    mount: Optional[Mount], path: Optional[str], reader: Callable[[str], Optional[float]]
) -> Optional[float]:
    """The smallest limit ``reader`` finds from the cgroup directory up to the mount point."""
    if mount is None or path is None:
        return None
    mount_point, parts = _relative_parts(mount, path)
    best: Optional[float] = None
    for depth in range(len(parts), -1, -1):
        directory = os.path.join(mount_point, *parts[:depth])
        value = reader(directory)
        if value is not None and (best is None or value < best):
            best = value
    return best


def _v2_cpu(directory: str) -> Optional[float]:
    fields = read_fields(os.path.join(directory, "cpu.max"))
    if not fields or fields[0] == "max":
        return None
    return _cores(_number(fields[0]), _number(fields[1]) if len(fields) > 1 else 100000)


def _v2_memory(directory: str) -> Optional[int]:
    return _mib(read_value(os.path.join(directory, "memory.max")))  # "max": None


def _v1_cpu(directory: str) -> Optional[float]:
    quota = read_value(os.path.join(directory, "cpu.cfs_quota_us"))  # -1 (none): None
    return _cores(quota, read_value(os.path.join(directory, "cpu.cfs_period_us")))


def _v1_memory(directory: str) -> Optional[int]:
    return _mib(read_value(os.path.join(directory, "memory.limit_in_bytes")))


def _cores(quota: Optional[int], period: Optional[int]) -> Optional[float]:
    """CPU cores of a quota per period (None: no limit), to 0.001 core, never rounded to 0
    (the kernel's smallest quota, 1 ms per 1 s period, is 0.001 core)."""
    if not quota or not period or quota <= 0 or period <= 0:
        return None
    return max(round(quota / period, 3), 0.001)


def _mib(value: Optional[int]) -> Optional[int]:
    """Whole MiB of a memory limit in bytes (None: no limit), never rounded to 0."""
    if value is None or value <= 0 or value >= _UNLIMITED:
        return None
    return max(value // (1024 * 1024), 1)
