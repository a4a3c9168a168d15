"""The per-GPU series of a run: each GPU's utilisation (%) and used memory (MiB), one value
per row of the system table, kept by the C sampler beside its tables
(``_core.Sampler.gpu_devices()``), stored in a snapshot under the optional key
``gpu_devices`` and drawn by the report as one utilisation line per GPU.

A snapshot keeps them as ``[{"index", "name", "memory_total_mib", "utilization",
"memory_used_mib"}]`` with the two series as base64 of little-endian float64 (as the tables);
plain lists of numbers are read too. Snapshots without the key (older ones, the psutil
backend, a machine without GPUs) load with no per-GPU series.
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Dict, List, NoReturn, Optional, Set, cast

from . import _core

#: GPUs a run keeps series of at most (the C sampler's bound; 16 where it is not built)
MAX_GPUS: int = int(getattr(_core, "GPU_SERIES_MAX", 16))
#: the longest GPU name kept (NVML's names are under 96 bytes)
MAX_NAME = 96
#: the two series of a GPU and the largest value each may hold
SERIES = (("utilization", 100.0), ("memory_used_mib", 2.0**50))


def of_sampler(sampler: Any) -> List[Dict[str, Any]]:
    """The per-GPU series of a sampler ([] where it keeps none: psutil, no GPU)."""
    read = getattr(sampler, "gpu_devices", None)
    return list(read()) if callable(read) else []


def encoded(devices: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """devices as a snapshot stores them (the series as base64 float64 text)."""
    out = []
    for dev in devices:
        item = {k: dev[k] for k in ("index", "name", "memory_total_mib")}
        for key, _ in SERIES:
            item[key] = _core.float64_text([_float64(dev[key])])
        out.append(item)
    return out


def stored(value: Any, rows: int) -> List[Dict[str, Any]]:
    """The per-GPU series of a snapshot's ``gpu_devices`` (None: none), each series as
    array('d') of ``rows`` values (the system table's). ValueError naming the first bad
    field: not a list of at most MAX_GPUS objects, an index repeated or out of range, a name
    that is not a short text, a memory that is not a number, a series of another length or
    with a value out of range (utilisation 0..100 %, memory at least 0)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_GPUS:
        _bad("gpu_devices", f"a list of at most {MAX_GPUS} GPUs", value)
    out: List[Dict[str, Any]] = []
    for i, dev in enumerate(value):
        out.append(_stored_device(dev, f"gpu_devices[{i}]", rows, {d["index"] for d in out}))
    return out


def _stored_device(dev: Any, where: str, rows: int, seen: Set[int]) -> Dict[str, Any]:
    """One GPU of a snapshot's gpu_devices, checked (see stored())."""
    if not isinstance(dev, dict):
        _bad(where, "an object", dev)
    index, name, total = dev.get("index"), dev.get("name"), dev.get("memory_total_mib")
    if type(index) is not int or not 0 <= index < MAX_GPUS or index in seen:
        _bad(f"{where}.index", f"a GPU number from 0 to {MAX_GPUS - 1}, once", index)
    if not isinstance(name, str) or len(name) > MAX_NAME:
        _bad(f"{where}.name", f"a text of at most {MAX_NAME} characters", name)
    if not _number(total) or not 0 <= cast(float, total) < 2.0**50:  # _number: int or float
        _bad(f"{where}.memory_total_mib", "a number of MiB", total)
    memory = float(cast(float, total))
    out: Dict[str, Any] = {"index": index, "name": name, "memory_total_mib": memory}
    for key, top in SERIES:
        out[key] = _series(dev.get(key), f"{where}.{key}", rows, top)
    return out


def _series(value: Any, where: str, rows: int, top: float) -> array[float]:
    """A stored series as array('d'): base64 float64 text or a list of numbers."""
    col: Optional[array[float]] = None
    if isinstance(value, str):
        col = _decoded(value)
    elif isinstance(value, list) and all(_number(v) for v in value):
        col = array("d", value)
    if col is None or len(col) != rows:
        _bad(where, f"{rows} float64 values (one per system sample)", value)
    if not all(0.0 <= v <= top for v in col):  # NaN and infinities fail too
        _bad(where, f"values from 0 to {top:g}", value)
    return col


def _decoded(text: str) -> Optional[array[float]]:
    """array('d') of base64 little-endian float64 text, or None when it is not that."""
    import base64
    import binascii
    import sys

    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) % 8:
        return None
    col = array("d")
    col.frombytes(raw)
    if sys.byteorder != "little":
        col.byteswap()
    return col


def _number(value: Any) -> bool:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return ok and math.isfinite(value)


def _float64(col: Any) -> Any:
    if isinstance(col, memoryview) and col.format == "d":
        return col
    return col if isinstance(col, array) and col.typecode == "d" else array("d", col)


def _bad(where: str, what: str, value: Any) -> NoReturn:
    raise ValueError(f"not a resource-tracker snapshot: {where} must be {what}, got {value!r:.80}")
