"""The run's energy: ``stats()["energy"]`` and its data-quality note.

The columns (``csrc/columns.c``): the machine's CPU package and DRAM energy from the
kernel's powercap (RAPL) zones, the GPUs' power and energy from NVML, and the process's
share of both, estimated from its share of the CPU time and of the GPU usage. RAPL and
NVML measure the machine and the device, never a process: ``joules`` is the machine's,
``process_joules`` an estimate. A source that read nothing gives ``None``, not 0.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from . import settings
from .registry import by_role

__all__ = ["JOULES_PER_KWH", "energy_summary", "energy_note"]

#: 1 kWh = 3.6 MJ.
JOULES_PER_KWH = 3.6e6

#: What the process figures are: said beside them wherever they are shown.
ESTIMATE = (
    "estimate: the machine's CPU and DRAM energy times the process's share of the CPU time, "
    "the GPUs' energy times its share of their usage"
)


def _sum(stats: Mapping[str, Any], table: str, role: str) -> Optional[float]:
    """The run's sum of the column with ``role`` (None when absent or nothing was read)."""
    entry = stats.get(by_role(table, role).key)
    value = entry.get("sum") if isinstance(entry, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _total(*parts: Optional[float]) -> Optional[float]:
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _kwh(joules: Optional[float]) -> Optional[float]:
    return None if joules is None else joules / JOULES_PER_KWH


def energy_summary(stats: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """``stats()["energy"]`` from the energy columns' sums in ``stats`` (None when the system
    was not tracked: the energy sources are the machine's)."""
    if by_role("system", "cpu_energy").key not in stats:
        return None
    cpu = _sum(stats, "system", "cpu_energy")
    dram = _sum(stats, "system", "dram_energy")
    gpu = _sum(stats, "system", "gpu_energy")
    process = _total(_sum(stats, "process", "cpu_energy"), _sum(stats, "process", "gpu_energy"))
    machine = _total(cpu, dram, gpu)
    return {
        "joules": machine,
        "kwh": _kwh(machine),
        "cpu_joules": cpu,
        "dram_joules": dram,
        "gpu_joules": gpu,
        "process_joules": process,
        "process_kwh": _kwh(process),
        "process_estimate": ESTIMATE,
    }


def energy_note(sampler: Any) -> Optional[str]:
    """The data-quality line of the run's energy sources (None when nothing is missing)."""
    zones = int(getattr(sampler, "powercap_zones", 0) or 0)
    unreadable = int(getattr(sampler, "powercap_unreadable", 0) or 0)
    integrated = int(getattr(sampler, "gpu_energy_integrated", 0) or 0)
    root = (settings.get("RESOURCE_TRACKER_SYSFS_ROOT") or "/sys") + "/class/powercap"
    parts = []
    if not hasattr(sampler, "powercap_zones"):
        parts.append("CPU and DRAM energy not measured: this backend does not read powercap")
    elif zones == 0:
        parts.append(
            f"CPU and DRAM energy not measured: no powercap (RAPL) zone under {root} "
            "(virtual machines and containers usually have none)"
        )
    if unreadable:
        parts.append(
            f"{unreadable} readings of a powercap zone's energy_uj failed (it is readable "
            "by root only on most kernels: run as root or make it readable); CPU and DRAM "
            "energy are incomplete"
        )
    if integrated:
        parts.append(
            f"GPU energy of {integrated} readings is the power times the interval (no "
            "energy counter on the GPU): an approximation"
        )
    return "; ".join(parts) or None
