"""The run's energy: ``stats()["energy"]`` and its data-quality note.

The columns (``csrc/columns.c``): the machine's CPU package and DRAM energy from the
kernel's powercap (RAPL) zones, the GPUs' power and energy from NVML and AMD's SMI library.
RAPL and the GPU libraries measure the machine and the device, never a process: ``joules``
is the machine's, and ``process_joules`` the process's share estimated from its share of the
CPU time and of the GPU usage over the run (no column of its own: a day at 1 s stays within
25 MiB). A source that read nothing gives ``None``, not 0.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple, Union

from . import formatting as fmt
from . import settings
from .registry import by_role

__all__ = [
    "JOULES_PER_KWH",
    "GRID_SETTING",
    "energy_summary",
    "energy_note",
    "energy_lines",
    "grid_intensity",
    "with_emissions",
]

#: 1 kWh = 3.6 MJ.
JOULES_PER_KWH = 3.6e6

#: The setting giving the grid's carbon intensity (gCO2e/kWh): no CO2e figure without it
#: (the catalog carries no intensities, and none is guessed).
GRID_SETTING = "RESOURCE_TRACKER_GRID_INTENSITY"

#: What the process figures are: said beside them wherever they are shown.
ESTIMATE = (
    "estimate: the machine's CPU and DRAM energy times the process's share of the machine's "
    "CPU time over the run, the GPUs' energy times its share of their usage"
)


def _sum(stats: Mapping[str, Any], role: str) -> Optional[float]:
    """The run's sum of the system column with ``role`` (None when absent or nothing read)."""
    entry = stats.get(by_role("system", role).key)
    value = entry.get("sum") if isinstance(entry, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _share(stats: Mapping[str, Any], role: str) -> Optional[float]:
    """The process's share (0..1) of the machine's figure with ``role`` over the run: the
    ratio of the two time-weighted means (None when either table lacks it)."""
    means = []
    for table in ("process", "system"):
        entry = stats.get(by_role(table, role).key)
        mean = entry.get("mean") if isinstance(entry, Mapping) else None
        if not isinstance(mean, (int, float)):
            return None
        means.append(float(mean))
    process, machine = means
    return min(1.0, max(0.0, process / machine)) if machine > 0 else 0.0


def _total(*parts: Optional[float]) -> Optional[float]:
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _kwh(joules: Optional[float]) -> Optional[float]:
    return None if joules is None else joules / JOULES_PER_KWH


def _process_joules(
    stats: Mapping[str, Any], rapl: Optional[float], gpu: Optional[float]
) -> Optional[float]:
    """The process's estimated joules: each source times its share (None when unknown)."""
    cpu_share, gpu_share = _share(stats, "cpu"), _share(stats, "gpu_usage")
    return _total(
        rapl * cpu_share if rapl is not None and cpu_share is not None else None,
        gpu * gpu_share if gpu is not None and gpu_share is not None else None,
    )


def energy_summary(stats: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """``stats()["energy"]`` from the energy columns' sums in ``stats`` (None when the system
    was not tracked: the energy sources are the machine's)."""
    if by_role("system", "cpu_energy").key not in stats:
        return None
    cpu, dram, gpu = (
        _sum(stats, "cpu_energy"),
        _sum(stats, "dram_energy"),
        _sum(stats, "gpu_energy"),
    )
    machine = _total(cpu, dram, gpu)
    process = _process_joules(stats, _total(cpu, dram), gpu)
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


def _region(cloud_info: Optional[Mapping[str, Any]]) -> Tuple[Optional[str], Optional[str]]:
    """(the region id, 'aws us-east-1') when the run's cloud region is known, else Nones."""
    info = cloud_info or {}
    vendor, region = info.get("vendor"), info.get("region")
    if not isinstance(region, str) or not region or region == "unknown":
        return None, None
    known = vendor if isinstance(vendor, str) and vendor and vendor != "unknown" else None
    return region, f"{known} {region}" if known else region


def grid_intensity(
    given: Union[float, Mapping[str, float]], cloud_info: Optional[Mapping[str, Any]]
) -> Tuple[Optional[float], str]:
    """(gCO2e/kWh, where it came from) for the run from :data:`GRID_SETTING`'s value (one
    number, or one per region id), or (None, why there is none: the run's region is not
    among the ones given, or not known)."""
    region, shown = _region(cloud_info)
    where = f"the run's cloud region: {shown}" if shown else "the run's region is not known"
    if not isinstance(given, Mapping):
        return float(given), f"given in {GRID_SETTING} ({where})"
    if region is not None and region.lower() in given:
        return given[region.lower()], f"given for {region} in {GRID_SETTING} ({where})"
    whose = f"the run's region ({shown})" if shown else "the run (its region is not known)"
    return None, f"no CO2e figure: {GRID_SETTING} gives no intensity for {whose}"


def with_emissions(figures: Mapping[str, Any], intensity: float, source: str) -> Dict[str, Any]:
    """``stats()["energy"]`` with the run's grams CO2e: the machine's and the process's kWh
    times ``intensity`` (gCO2e/kWh; ``source``: where it came from, see
    :func:`grid_intensity`). A kWh not measured gives None, never a guess."""
    out = dict(figures)
    for key, kwh in (("co2e_g", "kwh"), ("process_co2e_g", "process_kwh")):
        value = figures.get(kwh)
        out[key] = value * intensity if isinstance(value, (int, float)) else None
    out["grid_intensity"] = intensity
    out["grid_source"] = source
    return out


def _co2e_detail(figures: Mapping[str, Any]) -> str:
    """'; CO2e: the kWh times 350 gCO2e/kWh, given in ...' or '' without an intensity."""
    if figures.get("co2e_g") is None or "grid_intensity" not in figures:
        return ""
    return (
        f"; CO2e: the kWh times {figures['grid_intensity']:g} gCO2e/kWh, "
        f"{figures.get('grid_source') or 'given'}"
    )


def energy_lines(figures: Optional[Mapping[str, Any]]) -> Optional[Tuple[str, str]]:
    """(the run's energy, what it is made of) as the report and the CLI summary show it, or
    None when no source measured any (the data-quality note says why). With a grid
    intensity: the grams CO2e beside the energy, and where the intensity came from."""
    if not figures or figures.get("joules") is None:
        return None
    sources = [
        f"{name} {fmt.energy(figures.get(key))}"
        for name, key in (("CPU", "cpu_joules"), ("DRAM", "dram_joules"), ("GPU", "gpu_joules"))
        if figures.get(key) is not None
    ]
    share, grams = figures.get("process_joules"), figures.get("process_co2e_g")
    detail = f"the machine's: {', '.join(sources)}" + (
        f"; this process about {fmt.energy(share)}"
        + (f", {fmt.co2e(grams)}" if grams is not None else "")
        + " (estimate: its share of CPU and GPU use)"
        if share is not None
        else ""
    )
    shown = fmt.energy(figures["joules"])
    if figures.get("co2e_g") is not None:
        shown += f", {fmt.co2e(figures['co2e_g'])}"
    return shown, detail + _co2e_detail(figures)


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
