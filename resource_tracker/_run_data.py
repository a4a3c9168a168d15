"""A tracker's data: its tables, ``stats()``, ``data_quality()``, the cgroup's figures of
the run and the combined view (the bodies of those methods of
:class:`~resource_tracker.tracker.ResourceTracker`).

Loaded on first use: a tracker that only samples and stops needs none of it, and
``import resource_tracker`` stays small (every module imported with the package is
compiled, in time and memory, where no pyc is written).
"""

from __future__ import annotations

import os
from array import array
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Set,
    Tuple,
    TypeVar,
)

from . import _core, registry, settings
from . import formatting as fmt
from ._energy import GRID_SETTING, energy_note, energy_summary, grid_intensity, with_emissions
from ._gpu_fit import gpu_fit
from ._gpu_fit import with_gpu_fit as with_gpu_fit  # for recommend_resources()
from ._gpu_quality import gpu_note
from ._tracked import TrackedRun
from .code_profile import quality_note as code_quality_note
from .names import PROCESS_COLUMNS, PROCESS_LABELS, SYSTEM_COLUMNS, SYSTEM_LABELS
from .rounding import round_column
from .sampling import StoredRun
from .tiny_data_frame import TinyDataFrame

_T = TypeVar("_T")


def cached(tracker: TrackedRun, what: str, compute: Callable[[], _T]) -> _T:
    """compute() once per state of the samples: recomputed when a row was added (or the
    run stopped), else the value of the last call."""
    sampler = tracker._sampler
    key = (sampler, sampler.n_samples, sampler.state)
    cache = tracker.__dict__.setdefault("_data_cache", {})
    hit = cache.get(what)
    if hit is not None and hit[0] == key:
        value: _T = hit[1]
        return value
    value = compute()
    cache[what] = (key, value)
    return value


def table_columns(tracker: TrackedRun, table: str) -> Dict[str, Any]:
    """{column: float64 column} of a table (see ResourceTracker._table_columns)."""

    def load() -> Dict[str, Any]:
        names = PROCESS_COLUMNS if table == "process" else SYSTEM_COLUMNS
        raw = tracker._sampler.column_views(table)
        if raw is not None:
            return dict(zip(names, raw))
        arrays: Dict[str, Any] = {}
        for name, data in zip(names, tracker._sampler.columns(table)):
            col = array("d")
            col.frombytes(data)
            arrays[name] = col
        return arrays

    return cached(tracker, table, load)


def table(tracker: TrackedRun, name: str) -> TinyDataFrame:
    return TinyDataFrame._from_arrays(table_columns(tracker, name))


#: Bytes per unit, for get_combined_metrics(bytes=True).
_BYTES_PER_UNIT = {"KiB": 1024.0, "MiB": 1024.0 * 1024.0, "GB": 1e9}


def _combined_column(table: str, name: str, values: Any, in_bytes: bool) -> Any:
    """A column of get_combined_metrics(): rounded for people, or in whole bytes."""
    factor = _BYTES_PER_UNIT.get(registry.column(table, name).unit) if in_bytes else None
    if factor is None:
        return round_column(name, values)
    return array("d", (float(round(v * factor)) for v in values))


def _combined_name(label: str, name: str, prefix: Optional[str], human: bool, table: str) -> str:
    """A column's name in get_combined_metrics(): prefix + name, or the registry's label
    (whose first word is the table's: 'System ...', 'Process ...') with its prefix."""
    if not human:
        return (table + "_" if prefix is None else prefix) + name
    if prefix is None:
        return label
    return prefix + label.split(" ", 1)[1]


def combined_metrics(
    tracker: TrackedRun,
    human_names: bool,
    in_bytes: bool = False,
    prefixes: Tuple[Optional[str], Optional[str]] = (None, None),
    offset: Optional[int] = None,
) -> TinyDataFrame:
    """get_combined_metrics(): both tables side by side, rounded for people (or in bytes),
    from row ``offset`` on."""
    system, process = tracker.system_metrics, tracker.process_metrics
    n = min(len(system), len(process)) if len(system) and len(process) else len(system or process)
    rows = slice(max(0, int(offset or 0)), n)
    combined = {}
    for table, frame, labels, prefix in (
        ("system", system, SYSTEM_LABELS, prefixes[0]),
        ("process", process, PROCESS_LABELS, prefixes[1]),
    ):
        if not len(frame):
            continue
        for name in frame.columns:
            if name == "timestamp":
                if "timestamp" in combined or "Timestamp" in combined:
                    continue
                key = "Timestamp" if human_names else "timestamp"
            else:
                key = _combined_name(labels[name], name, prefix, human_names, table)
            values = frame.column_array(name)[rows]
            combined[key] = _combined_column(table, name, values, in_bytes)
    return TinyDataFrame._from_arrays(combined)


def stats(tracker: TrackedRun) -> Dict[str, Any]:
    """stats(): computed once per state of the samples; each call returns a new dict."""

    def compute() -> Dict[str, Any]:
        return _core.stats(
            table_columns(tracker, "process") if tracker.track_processes else None,
            table_columns(tracker, "system") if tracker.track_system else None,
            tracker.start_time or 0.0,
            tracker.stop_time or 0.0,
        )

    result = {
        k: dict(v) if isinstance(v, dict) else v
        for k, v in cached(tracker, "stats", compute).items()
    }
    result["data_quality"] = data_quality(tracker)
    energy = energy_summary(result)
    if energy is not None:
        result["energy"] = _with_grid(tracker, energy, result["data_quality"])
    fit = cached(tracker, "gpu_fit", lambda: gpu_fit(result, tracker._gpu_devices()))
    if fit is not None and tracker.track_processes:
        result["gpu_fit"] = {k: list(v) if isinstance(v, list) else v for k, v in fit.items()}
    hwm = tracker.memory_hwm
    if hwm and tracker.track_processes:
        result["process_memory_hwm"] = {"max": hwm}
    cgroup = tracker.cgroup_metrics
    if cgroup is not None:
        result["cgroup"] = cgroup
    source = tracker.tree_source
    if source is not None:
        result["tree_source"] = source
    export = tracker.export_report()
    if export is not None:
        result["export"] = export
    return result


def _with_grid(tracker: TrackedRun, energy: Dict[str, Any], quality: Dict[str, Any]) -> Any:
    """The run's energy with its grams CO2e when a grid intensity is given for it (the cloud
    region read only then); else as it is, with a data-quality line when the setting does
    not parse or names no intensity for the run's region."""
    try:
        given = settings.get(GRID_SETTING)
    except settings.SettingError as exc:
        return _noted(energy, quality, f"no CO2e figure: {exc}")
    if given is None:
        return energy
    intensity, source = grid_intensity(given, tracker.cloud_info)
    if intensity is None:
        return _noted(energy, quality, source)
    return with_emissions(energy, intensity, source)


def _noted(energy: Dict[str, Any], quality: Dict[str, Any], note: str) -> Dict[str, Any]:
    """energy, with note added to the energy line of the data quality."""
    quality["energy"] = f"{quality['energy']}; {note}" if quality.get("energy") else note
    return energy


def data_quality(tracker: TrackedRun) -> Dict[str, Any]:
    """data_quality(): a stored run's own, else from the sampler's counters."""
    sampler = tracker._sampler
    if isinstance(sampler, StoredRun) and sampler.data_quality is not None:
        return sampler.data_quality
    quality = _data_quality(
        int(sampler.rows_dropped), int(sampler.io_denied), int(sampler.pss_denied)
    )
    if getattr(tracker, "_read_in_caller", False):
        quality["read_in_caller"] = READ_IN_CALLER
    errors = int(getattr(sampler, "read_errors", 0) or 0)
    if errors:
        quality["read_errors"] = errors
    replaced = int(getattr(sampler, "fds_replaced", 0) or 0)
    if replaced:
        quality["descriptors_replaced"] = replaced
    # never found, though the root lived (not just gone before the first reading)
    seen, missed = getattr(sampler, "tree_seen", None), getattr(sampler, "tree_missed", 0)
    if tracker.track_processes and seen == 0 and missed:
        quality["errors"] = [invisible_process_error(tracker.pid, errors)]
        quality["process_visible"] = False
    note = energy_note(sampler) if tracker.track_system else None
    if note:
        quality["energy"] = note
    note = gpu_note(sampler)
    if note:
        quality["gpu"] = note
    code_note = code_quality_note(tracker._code_record())
    if code_note:
        quality["code_profile"] = code_note
    return quality


#: data_quality()['read_in_caller']: stop() could not make a thread for the end figures.
READ_IN_CALLER = (
    "no thread could be created (RLIMIT_NPROC, the container's pids.max or RLIMIT_AS): the "
    "cgroup's figures were read in the caller of stop()"
)


def descriptors_replaced_note(count: Any) -> str:
    """The data-quality line of a run whose program closed or replaced descriptors the
    tracker kept open between readings (os.closerange, dup2)."""
    return (
        f"descriptors replaced by the application: {count} files the tracker kept open were "
        "closed or replaced by the program (os.closerange, dup2); the tracker left those "
        "numbers alone (never read nor closed them) and re-opened the files, so no reading "
        "was lost"
    )


def invisible_process_error(pid: int, read_errors: int) -> str:
    """The data-quality error of a run whose tracked process no reading found."""
    root = settings.get("RESOURCE_TRACKER_PROCFS_ROOT") or "/proc"
    failing = (
        f"{read_errors} procfs reads failed: too few file descriptors? (raise RLIMIT_NOFILE, "
        "ulimit -n); else "
        if read_errors
        else ""
    )
    return (
        f"the tracked process (pid {pid}) was never visible in {root}: the process columns "
        f"are zeros, not measurements, and no resources are recommended from them ({failing}"
        "/proc mounted with hidepid and a process of another user: run as that user or as "
        "root; or a /proc that does not show the process: an empty or foreign /proc)"
    )


def has_measurements(stats: Mapping[str, Any]) -> bool:
    """False for a run whose tracked process was never visible (data_quality says so): its
    process figures are zeros, and nothing is recommended from them."""
    quality = stats.get("data_quality") if isinstance(stats, dict) else None
    return not (isinstance(quality, dict) and quality.get("process_visible") is False)


def tree_source(tracker: TrackedRun) -> Optional[Dict[str, Any]]:
    """tree_source of a live tracker: the C sampler's account, with the start plan's note."""
    sampler = tracker._sampler
    if not hasattr(sampler, "tree_source"):
        return None
    tracker._wait_cgroup_start()  # the plan is made beside start()
    info: Dict[str, Any] = sampler.tree_source()
    plan_note = getattr(tracker, "_tree_plan_note", None)
    if info["note"] is None and plan_note is not None:
        info["note"] = plan_note
    return info


def cgroup_figures(tracker: TrackedRun) -> Optional[Dict[str, Any]]:
    """cgroup_metrics of a live tracker: the run's figures from the start and end readings."""
    tracker._wait_cgroup_start()
    start = getattr(tracker, "_cgroup_start", None)
    end = getattr(tracker, "_cgroup_end", None)
    if start is None and end is None:
        return None
    if end is None and tracker.running:
        end = tracker._read_cgroup()
    try:
        return cgroup_run(
            start, end, tracker.pid, settings.get("RESOURCE_TRACKER_PROCFS_ROOT") or "/proc"
        )
    except Exception:
        return None


def _data_quality(rows_dropped: int, io_denied: int, pss_denied: int) -> Dict[str, Any]:
    """The data_quality() dict from the sampler's counters."""
    incomplete: Dict[str, str] = {}
    if io_denied:
        reason = (
            f"permission denied reading /proc/<pid>/io ({io_denied} reads): processes of "
            "another user are tracked without root, their disk I/O is not counted; run as "
            "that user or as root"
        )
        incomplete["process_read_bytes"] = incomplete["process_write_bytes"] = reason
    if pss_denied:
        incomplete["process_memory"] = (
            f"permission denied reading /proc/<pid>/smaps_rollup ({pss_denied} reads): memory "
            "shared between the tracked processes is counted once per process (an "
            "over-estimate); run as that user or as root"
        )
    return {"samples_dropped": int(rows_dropped), "incomplete_columns": incomplete}


def data_quality_notes(stats: Optional[Mapping[str, Any]]) -> List[str]:
    """One line per problem in stats()['data_quality'] (for the report and the CLI)."""
    quality = (stats or {}).get("data_quality") or {}
    if not isinstance(quality, dict):
        return []
    notes = [f"ERROR: {e}" for e in quality.get("errors") or () if isinstance(e, str)]
    dropped = quality.get("samples_dropped") or 0
    if dropped:
        notes.append(
            f"{fmt.plural(dropped, 'sample')} {'was' if dropped == 1 else 'were'} dropped "
            "because memory ran out (recording resumed "
            "when memory was available again)"
        )
    by_reason: Dict[str, List[str]] = {}
    for column, reason in (quality.get("incomplete_columns") or {}).items():
        by_reason.setdefault(str(reason), []).append(str(column))
    for reason, columns in by_reason.items():
        notes.append(f"{', '.join(columns)} incomplete: {reason}")
    if quality.get("descriptors_replaced"):
        notes.append(descriptors_replaced_note(quality["descriptors_replaced"]))
    if isinstance(quality.get("energy"), str):
        notes.append(f"energy: {quality['energy']}")
    if isinstance(quality.get("gpu"), str):
        notes.append(f"GPU: {quality['gpu']}")
    if quality.get("read_in_caller"):
        notes.append(str(quality["read_in_caller"]))
    if quality.get("code_profile"):
        notes.append(f"code profile: {quality['code_profile']}")
    return notes + _export_notes((stats or {}).get("export"))


def _export_notes(export: Any) -> List[str]:
    """One line per export target that dropped samples or failed (stats()['export'])."""
    if not isinstance(export, dict):
        return []
    notes = [f"export: {export['error']}"] if export.get("error") else []
    for target, done in (export.get("targets") or {}).items():
        dropped, failures = done.get("dropped_rows", 0), done.get("failures", 0)
        if dropped or failures or done.get("final") not in ("sent", "pending"):
            notes.append(
                f"export to {target}: {fmt.plural(dropped, 'sample')} dropped, "
                f"{fmt.plural(failures, 'failed send')}, "
                f"final push {done.get('final')}"
                + (f" (last error: {done['last_error']})" if done.get("last_error") else "")
            )
    return notes


def with_kernel_peak(stats: Mapping[str, Any]) -> Mapping[str, Any]:
    """stats() with the memory peak raised to the kernel's high-water mark of one process
    when the samples missed a higher peak."""
    hwm = (stats.get("process_memory_hwm") or {}).get("max")
    memory = stats.get("process_memory")
    if not hwm or not isinstance(memory, dict) or hwm <= (memory.get("max") or 0):
        return stats
    return dict(stats, process_memory=dict(memory, max=hwm))


# -- the cgroup's figures of a run (from the readings at start() and stop()) --------------

COUNTERS = ("cpu_seconds", "cpu_periods", "cpu_throttled_periods", "cpu_throttled_seconds",
            "oom_kills")  # fmt: skip


def cgroup_run(
    start: Optional[Dict[str, Any]],
    end: Optional[Dict[str, Any]],
    root_pid: int,
    proc_root: str = "/proc",
) -> Optional[Dict[str, Any]]:
    """The figures of a run from the readings at its start and end (None without a cgroup).

    Counters are the rise during the run; memory is the last reading; the peak is the
    cgroup's high-water mark; ``dedicated`` says whether only the workload (its processes,
    their ancestors and this process) was in the cgroup at both readings.
    """
    last = end or start
    if last is None:
        return None
    out = {k: v for k, v in last.items() if k != "pids"}
    for key in COUNTERS:
        a, b = (start or {}).get(key), last.get(key)
        out[key] = None if a is None or b is None else max(b - a, 0)
    peaks = [r["memory_peak_mib"] for r in (start, last) if r and r.get("memory_peak_mib")]
    out["memory_peak_mib"] = max(peaks) if peaks else None
    lists = [r.get("pids") for r in (start, last) if r is not None]
    pids = {pid for members in lists for pid in members or ()}
    # a member list not read: who else was in the cgroup is not known
    known = all(isinstance(members, list) for members in lists)
    out["dedicated"] = known and _only_workload(pids, root_pid, proc_root)
    return out


def _parent(pid: int, proc_root: str) -> Optional[int]:
    try:
        with open(os.path.join(proc_root, str(pid), "stat"), "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _only_workload(pids: Set[int], root_pid: int, proc_root: str) -> bool:
    """True when every pid is the root, one of its ancestors or descendants, or this process."""
    ancestors: Set[int] = set()
    pid: Optional[int] = root_pid
    while pid and pid not in ancestors and len(ancestors) < 1000:
        ancestors.add(pid)
        pid = _parent(pid, proc_root)
    p: Optional[int]
    for member in pids:
        if member in ancestors or member == os.getpid():
            continue
        chain, p = 0, member
        while p and p != root_pid and chain < 1000:
            p, chain = _parent(p, proc_root), chain + 1
        if p != root_pid and os.path.exists(os.path.join(proc_root, str(member))):
            return False
    return True
