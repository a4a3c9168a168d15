"""Numbers as the seeds' documents show them: the views for people, never the stored columns.

The columns of ``process_metrics`` / ``system_metrics`` keep the exact values the sampler
computed. ``get_combined_metrics()`` and the summary the Metaflow extension stores
(``documented_stats``) round them as the documents print them: CPU usage to 4 decimals,
CPU seconds to 4, memory in KiB and byte counts to whole numbers, disk space in GB and
means/maxes of the summary to 2 decimals. This also removes the float noise of
differences such as ``0.35 - 0.25 == 0.09999999999999998``.
"""

from __future__ import annotations

from array import array
from typing import Any, Dict, Iterable, Mapping, Optional

from .registry import COLUMNS, Column, by_role, stat_columns, traffic_columns

#: Decimals per column name (both tables; the registry's digits) in the rounded views; None
#: keeps the value as it is.
COLUMN_DIGITS = {c.name: c.digits for c in COLUMNS}

#: Decimals of the means and maxes in the documented summary.
STATS_DIGITS = 2


def round_column(name: str, values: Iterable[float]) -> array[float]:
    """The column's values rounded for display (a new array('d'); the input is untouched)."""
    digits = COLUMN_DIGITS.get(name)
    if digits is None:
        return array("d", values)
    return array("d", (round(v, digits) + 0.0 for v in values))  # + 0.0: no -0.0


def _documented_name(col: Column) -> str:
    """The seeds' name of a process column's mean/max pair (memory is 'memory_usage')."""
    return "memory_usage" if col.resource == "memory" else col.name


#: The documented summary's mean/max pairs: seeds' name -> stats() key (the process tree's
#: distributions: CPU, memory, GPU use, VRAM, GPUs in use).
DOCUMENTED_PAIRS = {
    _documented_name(c): c.key for c in stat_columns("process") if c.aggregate == "dist"
}


def _pair(
    stats: Optional[Mapping[str, Any]], key: str, digits: int = STATS_DIGITS
) -> Dict[str, float]:
    entry = (stats or {}).get(key) or {}
    return {
        "mean": round(float(entry.get("mean") or 0.0), digits) + 0.0,
        "max": round(float(entry.get("max") or 0.0), digits) + 0.0,
    }


def _value(stats: Optional[Mapping[str, Any]], key: str, field: str, digits: int) -> float:
    return round(float(((stats or {}).get(key) or {}).get(field) or 0.0), digits) + 0.0


def documented_stats(stats: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """``ResourceTracker.stats()`` in the shape and rounding of the seeds' Metaflow artifact.

    ``{'cpu_usage': {'mean', 'max'}, 'memory_usage': {'mean', 'max'}, the same pairs for the
    GPU use, the VRAM and the GPUs in use (``DOCUMENTED_PAIRS``), 'disk_usage': {'max'},
    'traffic': {'inbound', 'outbound'}, 'duration'}``: process CPU in cores and memory in
    KiB (whole), GPU usage, VRAM (MiB) and GPUs in use of the process tree, the machine's
    peak disk space used (GB) and its network bytes received/sent, the run's duration in
    seconds. Means and maxes
    have 2 decimals, KiB and bytes are whole. None for None.
    """
    if stats is None:
        return None
    out: Dict[str, Any] = {
        name: _pair(stats, key, digits=0 if name == "memory_usage" else STATS_DIGITS)
        for name, key in DOCUMENTED_PAIRS.items()
    }
    used = by_role("system", "disk_space_used").key
    out["disk_usage"] = {"max": _value(stats, used, "max", STATS_DIGITS)}
    out["traffic"] = {
        direction: _value(stats, col.key, "sum", 0) for direction, col in traffic_columns().items()
    }
    out["duration"] = _value(stats, "timestamp", "duration", STATS_DIGITS)
    return out
