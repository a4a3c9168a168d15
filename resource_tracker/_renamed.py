"""The column names of the original package's 0.5 series that the seeds' names replace.

0.5 renamed the memory columns to ``*_mib`` (in MiB), the VRAM to ``gpu_vram_mib`` and the
process tree's I/O to ``disk_read_bytes`` / ``disk_write_bytes``. This package keeps the
seeds' names and units (memory in KiB), so a lookup of a 0.5 name is a ``KeyError`` whose
message names the column to read instead and its unit (docs/migrating.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from .registry import COLUMNS

if TYPE_CHECKING:
    from .registry import Column


def _old_name(col: Column) -> Optional[str]:
    """The 0.5 name of a column (None: 0.5 kept the seeds' name)."""
    if col.unit == "KiB":
        return col.name + "_mib"
    if col.name == "gpu_vram":
        return "gpu_vram_mib"
    if col.table == "process" and col.name in ("read_bytes", "write_bytes"):
        return "disk_" + col.name
    return None


def _table() -> Dict[str, Tuple[str, str]]:
    out: Dict[str, Tuple[str, str]] = {}
    for col in COLUMNS:
        old = _old_name(col)
        if old is not None:
            out.setdefault(old, (col.name, col.unit))  # gpu_vram_mib: the same in both tables
            out[col.table + "_" + old] = (col.key, col.unit)  # get_combined_metrics(), stats()
    return out


#: 0.5 name -> (this package's name, its unit): the tables' names and the prefixed names of
#: get_combined_metrics() and stats().
RENAMED: Dict[str, Tuple[str, str]] = _table()


def old_names(table: str) -> Dict[str, Tuple[str, float]]:
    """For one table ('process' or 'system'): this package's name -> (its 0.5 name, the
    factor from the 0.5 value to this package's unit: 1024 for MiB -> KiB, else 1)."""
    return {
        col.name: (old, 1024.0 if col.unit == "KiB" else 1.0)
        for col in COLUMNS
        if col.table == table and (old := _old_name(col)) is not None
    }


_MIB_HINT = {"KiB": " (MiB = KiB / 1024)"}


def renamed_hint(name: Any) -> str:
    """What to write instead of a 0.5 name ('' for any other name)."""
    found = RENAMED.get(name) if isinstance(name, str) else None
    if found is None:
        return ""
    new, unit = found
    return (
        f"{name!r} is the resource-tracker 0.5 name of {new!r}, in {unit}"
        f"{_MIB_HINT.get(unit, '')}: read {new!r} (see docs/migrating.md)"
    )


class Stats(dict):  # type: ignore[type-arg]
    """The dict ``ResourceTracker.stats()`` returns: a lookup of a 0.5 key (such as
    ``'process_memory_mib'``) raises a KeyError that names the key to read instead."""

    __slots__ = ()

    def __missing__(self, key: Any) -> Any:
        hint = renamed_hint(key)
        raise KeyError(hint or key)

    def __reduce__(self) -> Any:  # pickles (and unpickles) as a plain dict
        return (dict, (dict(self),))
