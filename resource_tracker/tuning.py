"""Tuned resource requests from a step's history (``@track_resources(tune=True)``, its card,
artifact and export, and ``resource-tracker recommend --metaflow``). Pure: the history is
passed in. :func:`tune_resources` is the one rule; everything that shows a tuned
``@resources(...)`` calls it. ``bench/bench_tuning.py`` replays it against KRR-like,
VPA-like and oracle policies (docs/insights.md has its table).

Each earlier run is a *record* (:func:`run_record`): its peak memory, its CPU at the 90th
percentile of the sampling intervals (and its mean), its run-queue wait
(``process_cpu_wait``: the cores its tasks were runnable but waiting for a CPU, on average
over the run), its GPUs, what it *had* (the cgroup limit when the kernel enforced one, else
the ask it ran with), its OOM kills, its CPU throttling (share of
periods and cores of throttled time), the step's code (``code``: the decorator's
fingerprint of the step function) and its status (``ok``, ``failed``, or ``killed``: the run
left a live record and no final one, as a SIGKILL leaves it). A run's ``stats()`` dict is
turned into a record. A record whose figures are not numbers of the right kind (text, an
overflowing number, a size beyond the largest machine: corrupt or forged) is skipped with
one note; nothing in a record raises.

The rule, over the newest runs the caller passes (only the runs of the step's current code
when it has some: a refactor changes the need; older code otherwise):

- memory: the highest peak of the runs that went through (or the next peak of a growth, when
  the newest :data:`TREND_RUNS` peaks each grew), plus a margin of 10% (the oracle's) and
  the larger of 5% and half the spread of their peaks (coefficient of variation, at most
  20%), rounded up to 1/32 of its
  power of two (at least 64 MiB: a 537 MiB need asks 576, not 1024;
  ``recommend_resources()`` keeps its 128/256/512/1024 MiB or whole-GiB steps);
- after an OOM kill, until a run goes through: at least 2 x what the killed run had (the
  next attempt asks more than the ask that failed; several kills of one ask count once).
  A kill is an OOM kill when the cgroup counted one, when its last live reading was at
  :data:`NEAR_LIMIT` of what it had, when no run of its code went through within what it
  had (nothing says the step fits), or when that ask was killed twice using more than any
  run that went through (an allocation faster than the live readings); any other kill
  (spot preemption, a node lost, a scheduler's kill) keeps the ask it had for the next
  attempt, raises nothing, so kills never compound;
- CPU: the 90th percentile of each run's per-interval usage (the busy part of a run, not
  its mean), the highest over the runs, rounded up to whole cores (0.1 core of tolerance),
  at least 1, or to quarters of a core where the platform takes them (:data:`CPU_STEPS`,
  ``RESOURCE_TRACKER_TUNED_CPU=fractional``: Kubernetes); a run throttled by its
  CPU limit (more than 10% of its periods, for a second at least:
  ``insights.was_throttled``) needed its usage plus its throttled time per
  second (the cores that waited for quota: the kernel sums ``cpu.stat``'s
  ``throttled_usec`` / ``throttled_time`` over the CPUs whose run queue was throttled), or
  a core more than it had when that time is unknown; a run that *waited* for a CPU (its
  tasks' run-queue wait, ``/proc/<pid>/task/<tid>/schedstat``, at
  :data:`STARVED_WAIT` cores or more on average) was starved, by a busy machine
  or by its quota: it needed its usage plus its wait (their means over the run: the cores
  its tasks were runnable, at most the machine's cores). Only the step's own wait says so:
  a busy machine beside a step that did not wait lowers nothing and raises nothing;
- GPUs: the highest number in use; lowered only from :data:`MIN_RUNS` finished runs;
- a value the runs did not measure (no memory peak, no CPU, no GPU in use) stays as asked;
- with one run gone through, a value is lowered only when the ask is above
  :data:`FAR_ABOVE` x the rule's value (one run is thin evidence for a small saving);
- last, the guardrails ``min_*`` / ``max_*`` (``@track_resources(min_memory=...)``) and the
  largest machine of the catalog (:data:`LARGEST_MACHINE`): a tuned ask never exceeds them,
  with a note saying it was held there.

Nothing is added to an ask: every figure is relative to what a run used or had, so tuned
runs of an unchanged workload keep the same ask (no compounding).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import statistics
import time
import types
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import formatting as fmt
from ._artifact_types import TuningResult
from ._run_data import has_measurements, with_gpu_fit, with_kernel_peak
from ._text import printable
from .insights import was_throttled
from .registry import column, stat_columns
from .settings import get as setting

__all__ = [
    "MIN_RUNS",
    "OOM_RAISE",
    "LARGEST_MACHINE",
    "BOUND_NAMES",
    "Tuning",
    "tune_resources",
    "run_record",
    "as_record",
    "check_bounds",
    "resources_line",
    "record_problem",
    "code_fingerprint",
    "step_tuning",
    "next_tuning",
    "this_run",
    "run_attempts",
    "RULE_TEXT",
    "CPU_STEPS",
    "platform_cpu_step",
]

#: A tuned value: a whole number, or CPU in fractions of a core (:data:`CPU_STEPS`).
Number = float  # int or float: mypy takes an int as a float
#: The fewest finished earlier runs the GPUs may be lowered from.
MIN_RUNS = 3
#: What an OOM kill multiplies the memory the run had by (2x: the kill says only that the
#: step needs more; the floor lasts only until a run goes through, then its peak decides).
OOM_RAISE = 2.0
#: The margin over the highest memory peak every tuned ask keeps (the oracle's 10%).
BASE_MARGIN = 0.1
#: The least margin over the oracle's (the same for one run or many: an unchanged workload
#: keeps one ask from its first tuned run on).
EVIDENCE_MARGIN = 0.05
#: The spread of the peaks (coefficient of variation) times this adds to the margin, up to
#: SPREAD_CAP: the highest of spread peaks already covers most of their spread (weight and
#: cap chosen on bench/bench_tuning.py's scenarios, checked on its held-out histories).
SPREAD_WEIGHT = 0.5
SPREAD_CAP = 0.2
#: The newest peaks that must each grow for a growth trend.
TREND_RUNS = 3
#: With one run gone through, an ask is lowered only when above this x the rule's value.
FAR_ABOVE = 1.5
#: A killed run whose last live memory reading was at this share of what it had: OOM killed.
NEAR_LIMIT = 0.8
#: Tuned memory is rounded up to its power of two / this (and to at least MEMORY_STEP MiB):
#: a readable ask that a peak moving by less than a step does not change. 32 (steps of 1.6
#: to 3.1% of the value): the margin above the peak (15% or more) already covers the runs'
#: variation, and a step's rounding adds up to another step, paid for every hour of every
#: run (1/16 cost 1-2% more memory-hours on each held-out seed of bench/bench_tuning.py,
#: with the same kills).
MEMORY_STEPS = 32
MEMORY_STEP = 64.0
#: The share of a CPU step (a core, or a fraction) of tolerance before the CPU percentile is
#: rounded up to the next step (0.1 core of whole cores).
CPU_TOLERANCE = 0.1
#: The steps tuned CPU is rounded up to, by the platform the step runs on
#: (``RESOURCE_TRACKER_TUNED_CPU``, kept in the step's tuning settings as ``cpu_step``: every
#: surface rounds alike): ``whole`` vCPUs (AWS Batch takes only whole vCPUs; the default) or
#: ``fractional`` cores in quarters (Kubernetes takes millicores). A quarter, not a tenth:
#: a step's CPU p90 moves between runs by more than a tenth of a core, and a tenth changes
#: the ask with it (on bench/bench_tuning.py's 30 held-out histories in 21 of 300 runs, a
#: quarter in 6, whole cores in 1) for 1-4% fewer core-hours; a quarter saves 10-12% of
#: the core-hours of whole cores there (docs/insights.md), a half only 2-6%.
CPU_STEPS = {"whole": 1.0, "fractional": 0.25}
#: A run whose tasks waited for a CPU this many cores or more (run-queue wait, on average
#: over the run: its start and end wait too on a busy machine, and in a short run they are
#: more than a tenth of the intervals) was starved: its usage says what it got, not what it
#: needed. Half a core: a task that wakes up on a busy machine waits for the running ones'
#: slices before it runs, which adds wait that no core of its own would have needed (an
#: idle step waking 10 times a second beside 4 busy loops per core waited 0.2 cores under
#: Linux 6.18); a step short of CPU waits for most of its busy intervals.
STARVED_WAIT = 0.5
#: The largest machine in the catalog shipped with the package (the 2026-01-31 dump: 1,920
#: vCPUs, 32 TiB; tests/core/test_core_tuning.py checks it against the catalog): no tuned
#: ask goes above it, and a size above it in a record is not a size.
LARGEST_MACHINE = {"cpu": 1920.0, "memory": 32.0 * 1024 * 1024}
#: The largest value taken as a size (cores, MiB, GPUs); beyond it a value is not a size.
PLAUSIBLE = {"cpu": LARGEST_MACHINE["cpu"], "memory": LARGEST_MACHINE["memory"], "gpu": 64.0}
#: Units the values are given in, for the change lines.
UNITS = {"cpu": "", "memory": " MiB", "gpu": ""}
RESOURCES = ("cpu", "memory", "gpu")
#: The guardrail names (``@track_resources(min_memory=...)``).
BOUND_NAMES = tuple(f"{side}_{k}" for k in RESOURCES for side in ("min", "max"))
#: One line: why the tuned request may differ from ``recommend_resources()``.
RULE_TEXT = (
    "tuned by @track_resources: CPU covers the 90th percentile of the busy intervals "
    "(recommend_resources() uses the mean), memory the highest peak of the runs of the "
    "current code + 15% or more for spread runs, in finer steps; raised 2x "
    "over what a run had after an OOM kill"
)


# -- reading values from outside ----------------------------------------------------------


def _shown(value: Any, limit: int = 40) -> str:
    """A value from outside as a short printable text (a huge number is not printed)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a number too large to be a size"
    return repr(printable(value if isinstance(value, str) else repr(value), limit))


def _size(
    value: Any, key: str, notes: Optional[List[str]] = None, what: str = ""
) -> Optional[float]:
    """A finite, non-negative, plausible number of ``key`` (cores, MiB, GPUs), or None
    (with a note saying what was wrong, when ``notes`` is given and the value was set)."""
    if value is None or value == "":
        return None
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if math.isfinite(number) and 0 <= number <= PLAUSIBLE[key]:
        return number
    if notes is not None:
        unit = {"cpu": "cores", "memory": "MiB", "gpu": "GPUs"}[key]
        notes.append(
            f"{what or key} {_shown(value)} ignored: not a number of {unit} "
            f"between 0 and {PLAUSIBLE[key]:.0f}"
        )
    return None


def _count(value: Any) -> float:
    """A counter from outside (``3``, ``"0"``): a finite number >= 0, else 0."""
    try:
        number = float(value) if not isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) and number > 0 else 0.0


def _field(stats: Mapping[str, Any], key: str, fld: str) -> Optional[float]:
    entry = stats.get(key)
    value = entry.get(fld) if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def check_bounds(bounds: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    """The guardrails ``{"min_memory": MiB, "max_cpu": cores, ...}`` as numbers (None and
    unset ones left out); ValueError naming a bad one (the decorator's attributes)."""
    out: Dict[str, float] = {}
    for name, value in (bounds or {}).items():
        if name not in BOUND_NAMES:
            raise ValueError(f"unknown tuning bound {name!r} (one of {', '.join(BOUND_NAMES)})")
        if value is None or value == "":
            continue
        notes: List[str] = []
        number = _size(value, name.split("_", 1)[1], notes, name)
        if number is None:
            raise ValueError(f"@track_resources({name}=...): {notes[0]}")
        out[name] = number
    for key in RESOURCES:
        low, high = out.get(f"min_{key}"), out.get(f"max_{key}")
        if low is not None and high is not None and low > high:
            raise ValueError(f"@track_resources: min_{key}={low:g} is above max_{key}={high:g}")
    return out


# -- one run's record ---------------------------------------------------------------------


def _cgroup_part(cgroup: Any, seconds: float) -> Dict[str, Any]:
    """Limits, OOM kills, the throttled share and the throttled cores (throttled time per
    second of the run's ``seconds``) from ``stats()['cgroup']``."""
    cg = cgroup if isinstance(cgroup, Mapping) else {}
    periods, hit = _count(cg.get("cpu_periods")), _count(cg.get("cpu_throttled_periods"))
    known = cg.get("cpu_throttled_seconds") is not None and seconds > 0
    waited = _count(cg.get("cpu_throttled_seconds")) / seconds if known else None
    return {
        "limits": {
            "cpu": _size(cg.get("cpu_limit_cores"), "cpu"),
            "memory": _size(cg.get("memory_limit_mib"), "memory"),
        },
        "oom_kills": _count(cg.get("oom_kills")),
        "throttled_share": hit / periods if periods else 0.0,
        "throttled_s": cg.get("cpu_throttled_seconds"),  # None: unknown
        "throttled_cores": _size(waited, "cpu"),
    }


def run_record(
    stats: Mapping[str, Any],
    asked: Optional[Mapping[str, Any]] = None,
    machine_cores: Any = None,
    status: str = "ok",
) -> Dict[str, Any]:
    """The record of one run from its ``stats()``: what tuning needs of it (the module's
    docstring). ``asked``: the request it ran with (``cpu``, ``memory`` MiB, ``gpu``);
    ``machine_cores``: the machine's cores (at most what a starved run needed)."""
    by_resource = {c.resource: c.key for c in stat_columns("process") if c.resource}
    # the GPUs busy, not the ones held (stats()["gpu_fit"]), as recommend_resources() asks
    stats = with_gpu_fit(with_kernel_peak(dict(stats))) if isinstance(stats, Mapping) else {}
    memory = _field(stats, by_resource["memory"], "max")
    cpu_key = by_resource["cpu"]
    cpu = _field(stats, cpu_key, "p90")
    wait_key = column("process", "cpu_wait").key
    record: Dict[str, Any] = {
        "version": 1,
        "status": status,
        "memory_peak_mib": None if memory is None else memory / 1024,
        "cpu_p90": cpu if cpu is not None else _field(stats, cpu_key, "mean"),
        "cpu_mean": _field(stats, cpu_key, "mean"),
        "cpu_wait_mean": _field(stats, wait_key, "mean"),
        "gpu_peak": _field(stats, column("process", "gpu_utilized").key, "max"),
        "system_cpu_p90": _field(stats, column("system", "cpu_usage").key, "p90"),
        "machine_cores": _size(machine_cores, "cpu"),
        "asked": {
            k: _size(asked.get(k), k) if isinstance(asked, Mapping) else None for k in RESOURCES
        },
        "updated": time.time(),
        "measured": has_measurements(stats),
    }
    seconds = _field(stats, "timestamp", "duration") or 0.0
    record.update(_cgroup_part(stats.get("cgroup"), seconds))
    record["starved"] = _starved(record)  # marked; the rule reads the figures themselves
    return record


def as_record(run: Any) -> Optional[Dict[str, Any]]:
    """A record as it is, a ``stats()`` dict as a record, anything else None; None too for
    a run whose tracked process was never visible (nothing was measured)."""
    if not isinstance(run, Mapping) or not run:
        return None
    if "version" in run and "status" in run:
        return dict(run) if run.get("measured", True) else None
    if "timestamp" in run or "process_memory" in run:
        return run_record(run) if has_measurements(run) else None
    return None


class _Corrupt(ValueError):
    """A record whose figures are not numbers of the right kind: skipped."""


@dataclass(frozen=True)
class _Run:
    """One record, checked: what the rule reads of it."""

    name: str
    status: str  # ok, failed or killed
    code: Optional[str]
    peak: Optional[float]  # MiB (of a killed run: its last live reading)
    cpu: Optional[float]  # cores at the 90th percentile
    gpu: Optional[float]
    had: Dict[str, Optional[float]]  # the cgroup limit, else the ask
    oom_kills: float
    throttled_share: float
    throttled_cores: Optional[float]
    throttled_s: Optional[float]
    starved: bool  # its tasks waited for a CPU (STARVED_WAIT)
    demand: Optional[float]  # mean usage + mean wait, at most the machine's cores; None: unknown

    @property
    def went_through(self) -> bool:
        return self.status != "killed" and not self.oom_kills


def _number(record: Mapping[str, Any], key: str, kind: Optional[str] = None) -> Optional[float]:
    """A figure of a record: None when unset, else a finite number >= 0 (a size of ``kind``
    at most :data:`PLAUSIBLE`); anything else makes the record corrupt."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Corrupt(f"{key} {_shown(value)} is not a number")
    try:
        number = float(value)
    except OverflowError:
        raise _Corrupt(f"{key} is {_shown(value)}") from None
    top = PLAUSIBLE[kind] if kind else math.inf
    if not (math.isfinite(number) and 0 <= number <= top):
        raise _Corrupt(f"{key} {_shown(value)} is not a size" if kind else f"{key} {_shown(value)}")
    return number


def _part(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = record.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Corrupt(f"{key} {_shown(value)} is not a set of resources")
    return value


def _checked(record: Mapping[str, Any]) -> _Run:
    """The record as the rule reads it; _Corrupt saying what is wrong."""
    status = record.get("status")
    if status not in ("ok", "failed", "killed", "running"):
        raise _Corrupt(f"status {_shown(status)}")
    limits, asked = _part(record, "limits"), _part(record, "asked")
    had = {k: _number(limits, k, k) for k in ("cpu", "memory")}
    had = {k: had.get(k) if had.get(k) is not None else _number(asked, k, k) for k in RESOURCES}
    cpu = _number(record, "cpu_p90", "cpu")
    _number(record, "system_cpu_p90", "cpu")
    wait = _number(record, "cpu_wait_mean", "cpu")
    demand = _demand(
        _number(record, "cpu_mean", "cpu"), wait, _number(record, "machine_cores", "cpu")
    )
    code = record.get("code")
    _number(record, "updated")  # the time of its last write (a killed run's end)
    return _Run(
        name=printable(record.get("run", "?"), 24),
        status="killed" if status == "running" else status,
        code=printable(code, 80) if isinstance(code, str) else None,
        peak=_number(record, "memory_peak_mib", "memory"),
        cpu=cpu,
        gpu=_number(record, "gpu_peak", "gpu"),
        had=had,
        oom_kills=_number(record, "oom_kills") or 0.0,
        throttled_share=_number(record, "throttled_share") or 0.0,
        throttled_cores=_number(record, "throttled_cores", "cpu"),
        throttled_s=_number(record, "throttled_s"),
        starved=wait is not None and wait >= STARVED_WAIT,
        demand=demand,
    )


def record_problem(record: Any) -> Optional[str]:
    """None when a tuning record (:func:`run_record`'s, as stored) can be read, else what is
    wrong with it (one line): text or a container where a number belongs, an overflowing
    number, a size beyond the largest machine. Readers of stored records skip those."""
    if not isinstance(record, Mapping):
        return f"{_shown(record)} is not a record"
    try:
        _checked(record)
    except _Corrupt as exc:
        return str(exc)
    return None


def _demand(
    used: Optional[float], waited: Optional[float], cores: Optional[float]
) -> Optional[float]:
    """The cores a run's tasks were runnable (mean usage + mean run-queue wait: the two are
    read in the same intervals, their percentiles not; the sum of two 90th percentiles
    counts the noise twice), at most the machine's cores (a pool of threads sized to the
    machine grows with it); None when either is unknown."""
    if used is None or waited is None:
        return None
    return min(used + waited, cores) if cores else used + waited


def _starved(record: Mapping[str, Any]) -> bool:
    """Whether a record (:func:`run_record`'s) waited for a CPU (:data:`STARVED_WAIT`)."""
    try:
        run = _checked(record)
    except _Corrupt:
        return False
    return run.starved


def _runs(raw: Sequence[Any], notes: List[str]) -> List[_Run]:
    """The checked records of ``raw`` (records or stats() dicts), newest first; a corrupt
    one is skipped with a note."""
    out = []
    for item in raw:
        try:
            record = as_record(item)
            if record is not None:
                out.append(_checked(record))
        except Exception as exc:  # a corrupt or forged record: skipped, never raised
            what = str(exc) if isinstance(exc, _Corrupt) else type(exc).__name__
            name = printable(item.get("run", "?"), 24) if isinstance(item, Mapping) else "?"
            notes.append(f"record of run {name} skipped: {what}")
    return out


# -- the rule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tuning:
    """The tuned request: ``resources`` (``cpu``, ``memory`` MiB, ``gpu``; empty when nothing
    is tuned), one line per change (``"memory 16000 -> 1024 MiB from 5 runs"``), ``note``:
    what raised or held a value, or why nothing changed; ``why``: the one line on how this
    rule differs from ``recommend_resources()``; ``basis``: the figures per resource."""

    runs: int
    resources: Dict[str, Number] = field(default_factory=dict)
    changes: List[str] = field(default_factory=list)
    note: str = ""
    why: str = RULE_TEXT
    basis: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> TuningResult:
        return {
            "runs": self.runs,
            "resources": dict(self.resources),
            "changes": list(self.changes),
            "note": self.note,
            "why": self.why,
            "basis": dict(self.basis),
        }


def _current_code(runs: Sequence[_Run], code: Optional[str], notes: List[str]) -> List[_Run]:
    """The runs of the step's current code (``code``, else the newest run's) when it has
    some, else all: a refactor changes what a step needs."""
    code = code if isinstance(code, str) else next((r.code for r in runs if r.code), None)
    same = [r for r in runs if r.code == code]
    if code is None or not same or len(same) == len(runs):
        return list(runs)
    notes.append(f"{fmt.plural(len(runs) - len(same), 'run')} of older code left out")
    return same


def _margin(peaks: Sequence[float]) -> float:
    """The memory margin over the highest peak: see the module's docstring."""
    spread = statistics.pstdev(peaks) / statistics.fmean(peaks) if len(peaks) > 1 else 0.0
    if not math.isfinite(spread):
        spread = 0.0
    spread = min(SPREAD_WEIGHT * spread, SPREAD_CAP)
    return BASE_MARGIN + max(EVIDENCE_MARGIN, spread)


def _next_peak(peaks: Sequence[float]) -> float:
    """The next peak of a growth (the newest peaks, newest first, each above the one before
    it): the newest plus the mean growth per run; else 0."""
    newest = list(peaks[:TREND_RUNS])
    if len(newest) < TREND_RUNS or any(a <= b * 1.01 for a, b in zip(newest, newest[1:])):
        return 0.0
    return newest[0] + (newest[0] - newest[-1]) / (len(newest) - 1)


def _oom_evidence(run: _Run, known: Sequence[float], killed_at: List[float]) -> str:
    """Why a run counts as OOM killed ('' when it does not): see the module's docstring.
    ``known``: the peaks of the runs that went through; ``killed_at``: what the newer kills
    since then that did not count had (this one is added when it does not count)."""
    had = run.had.get("memory")
    if run.oom_kills:
        return "the cgroup counted an OOM kill"
    if run.status != "killed":
        return ""
    if had is None or run.peak is None or run.peak >= NEAR_LIMIT * had:
        return "its last reading was near its limit"
    if not any(p <= had for p in known):
        return f"no run went through within {had:.0f} MiB"
    if run.peak <= max(known, default=0.0):  # in use: what runs that went through needed
        return ""
    if any(abs(had - other) <= 0.01 * had for other in killed_at):
        return "killed twice at that ask, using more than any run that went through"
    killed_at.append(had)
    return ""


def _memory(runs: Sequence[_Run], notes: List[str]) -> Tuple[float, float]:
    """(need, floor) in MiB, 0 when unknown: the peaks of the runs that went through with
    their margin and trend (a killed run's last reading: a lower bound); the floor of the
    kills since the newest run that went through."""
    peaks = [r.peak for r in runs if r.went_through and r.peak is not None]
    margin = 1 + _margin(peaks)
    need = max(max(peaks, default=0.0), _next_peak(peaks)) * margin
    need = max([need] + [r.peak * margin for r in runs if r.peak is not None])
    floor, killed_at = 0.0, []  # type: Tuple[float, List[float]]
    for run in reversed(list(itertools.takewhile(lambda r: not r.went_through, runs))):
        why, had = _oom_evidence(run, peaks, killed_at), run.had.get("memory")
        what = "had an OOM kill" if run.oom_kills else "was killed (taken as an OOM kill)"
        if why:
            base = had if had is not None else (run.peak or 0.0)
            floor = max(floor, base * OOM_RAISE)
            notes.append(f"run {run.name} {what} at {base:.0f} MiB: memory at least "
                         f"{OOM_RAISE:g}x that ({why})")  # fmt: skip
        elif had is not None:
            floor = max(floor, had)
            notes.append(f"run {run.name} was killed at {had:.0f} MiB with {run.peak or 0:.0f} "
                         "MiB in use, not as an OOM kill (runs went through within it): "
                         "its ask kept")  # fmt: skip
    return need, floor


def _cpu(runs: Sequence[_Run], notes: List[str]) -> float:
    """The cores the runs were seen to need (0 when unknown)."""
    need = 0.0
    for r in runs:
        value, had = r.cpu or 0.0, r.had.get("cpu")
        waited = max(value, r.demand or 0.0) if r.starved else value  # usage + its wait
        if was_throttled(r.throttled_share, r.throttled_s) and had is not None:
            if r.throttled_cores is not None:  # the cores that waited for quota
                value = max(waited, max(r.cpu or 0.0, had) + r.throttled_cores)
                why = f"{r.throttled_cores:.2g} more cores waited for quota"
            else:
                value = max(waited, math.floor(had) + 1.0)
                why = "its throttled time unknown: a core more"
            if waited >= value:
                why = f"its tasks runnable {waited:.2g} cores: usage + run-queue wait"
            notes.append(f"run {r.name} was throttled at {had:g} cores ({why}): "
                         f"CPU at least {value:.3g}")  # fmt: skip
        elif r.starved:
            value = waited
            notes.append(f"run {r.name} was starved by a saturated machine: "
                         "its usage plus its CPU wait is its need")  # fmt: skip
        need = max(need, value)
    return need


def _values(runs: Sequence[_Run], asked: Mapping[str, float], notes: List[str]) -> Dict[str, float]:
    """Each resource before the rounding and the guardrails: see the module's docstring."""
    through = sum(r.status != "killed" for r in runs)
    mem_need, floor = _memory(runs, notes)
    cpu_need, gpu_need = _cpu(runs, notes), max((r.gpu or 0.0 for r in runs), default=0.0)
    raw = {
        "cpu": cpu_need,
        "memory": mem_need,
        "gpu": float(math.ceil(gpu_need - 0.2)) if gpu_need > 0.2 else 0.0,
    }
    out: Dict[str, float] = {}
    for key in RESOURCES:
        value, ask = raw[key], asked.get(key)
        if through == 0 or not value or (key == "gpu" and through < MIN_RUNS):
            value = max(value, ask or 0.0) if ask else 0.0  # only raised
        elif through == 1 and ask and value < ask <= FAR_ABOVE * value:
            value = ask  # one run: lowered only from far above
        if key == "memory":
            value = max(value, floor)
        if value > 0:
            out[key] = value
    return out


def _memory_step(mib: float) -> float:
    """Tuned memory's step: 1/32 of the value's power of two, at least 64 MiB."""
    return max(MEMORY_STEP, 2.0 ** math.floor(math.log2(max(mib, 1.0))) / MEMORY_STEPS)


def platform_cpu_step() -> float:
    """The CPU step of the platform the step runs on (``RESOURCE_TRACKER_TUNED_CPU``:
    :data:`CPU_STEPS`); a SettingError (ValueError) naming a value it cannot use."""
    return CPU_STEPS[str(setting("RESOURCE_TRACKER_TUNED_CPU"))]


def _cpu_step(value: Any, notes: List[str]) -> float:
    """The CPU step of the settings (one of :data:`CPU_STEPS`; None: whole vCPUs)."""
    if value is None or value in CPU_STEPS.values():
        return float(value or 1.0)
    notes.append(f"cpu_step {_shown(value)} ignored: one of "
                 f"{', '.join(f'{v:g}' for v in CPU_STEPS.values())}; whole vCPUs")  # fmt: skip
    return 1.0


def _in_steps(value: float, step: float) -> Number:
    """``value`` cores (a whole number of ``step`` s) as a whole number when it is one."""
    value = round(value, 3)  # millicores
    return int(value) if value.is_integer() else value


def _rounded(key: str, value: float, asked: Mapping[str, float], cpu_step: float = 1.0) -> Number:
    """Rounded up: memory in :func:`_memory_step` steps, CPU in ``cpu_step`` s (whole cores
    or fractions, :data:`CPU_STEPS`) with :data:`CPU_TOLERANCE` of a step, the rest whole;
    an ask kept as it is rounded up to the step only."""
    if key == "cpu":
        tolerance = 0.0 if value == asked.get(key) else CPU_TOLERANCE * cpu_step
        steps = max(1, math.ceil((value - tolerance) / cpu_step - 1e-9))
        return _in_steps(steps * cpu_step, cpu_step)
    if value == asked.get(key):
        return int(math.ceil(value - 1e-9))
    if key == "memory":
        step = _memory_step(value)
        return int(math.ceil(value / step - 1e-9) * step)  # held by _bounded
    return int(math.ceil(value - 1e-9))


def _bounded(
    values: Dict[str, Number], bounds: Mapping[str, float], notes: List[str], cpu_step: float = 1.0
) -> None:
    """The guardrails (CPU in ``cpu_step`` s), then the largest machine of the catalog."""
    for key in list(values):
        low, high = bounds.get(f"min_{key}"), bounds.get(f"max_{key}")
        step = cpu_step if key == "cpu" else 1.0
        if low is not None and values[key] < low:
            values[key] = _in_steps(math.ceil(low / step - 1e-9) * step, step)
        if high is not None and values[key] > high:
            notes.append(f"{key} held at max_{key}={high:g} (the runs needed {values[key]})")
            values[key] = _in_steps(math.floor(high / step + 1e-9) * step, step) or values[key]
        top = LARGEST_MACHINE.get(key)
        if top is not None and values[key] > top:
            notes.append(f"{key} held at {top:.0f}{UNITS[key]}, the largest machine of the "
                         f"catalog (the runs needed {values[key]})")  # fmt: skip
            values[key] = int(top)


def tune_resources(
    runs: Sequence[Any],
    asked: Optional[Mapping[str, Any]] = None,
    bounds: Optional[Mapping[str, Any]] = None,
    code: Optional[str] = None,
    cpu_step: Any = None,
) -> Tuning:
    """The request for the step's next run; never raises (odd values: notes).

    Args:
        runs: its earlier runs, newest first: records (:func:`run_record`, also of failed
            and killed runs) or ``stats()`` dicts (taken as successful runs).
        asked: what the step's code asks (``cpu``, ``memory`` MiB, ``gpu``; values may be
            text or odd: they are checked): kept where the history is too short to lower it.
        bounds: the guardrails (``min_memory``, ``max_cpu``, ...), see :func:`check_bounds`.
        code: the fingerprint of the step's current code (default: the newest run's).
        cpu_step: the cores tuned CPU is rounded up to (:data:`CPU_STEPS`; default 1, whole
            vCPUs).
    """
    notes: List[str] = []
    step = _cpu_step(cpu_step, notes)
    every = _runs(runs if isinstance(runs, (list, tuple)) else (), notes)
    if asked is not None and not isinstance(asked, Mapping):
        notes.append(f"asked {_shown(asked)} ignored: not a set of resources")
        asked = None
    sizes = {k: _size((asked or {}).get(k), k, notes, f"asked {k}") for k in RESOURCES}
    ask = {k: v for k, v in sizes.items() if v}
    try:
        limits = check_bounds(bounds if isinstance(bounds, Mapping) else None)
    except ValueError as exc:
        notes.append(f"bounds ignored: {exc}")
        limits = {}
    if not every:
        note = "; ".join(dict.fromkeys(notes + ["not tuned: no earlier run with resource data"]))
        return Tuning(0, note=note)
    records = _current_code(every, code, notes)
    values = {k: _rounded(k, v, ask, step) for k, v in _values(records, ask, notes).items()}
    _bounded(values, limits, notes, step)
    return _result(records, values, ask, limits, notes)


def _result(
    records: Sequence[_Run],
    values: Dict[str, Number],
    ask: Mapping[str, float],
    limits: Mapping[str, float],
    notes: List[str],
) -> Tuning:
    finished = sum(r.status != "killed" for r in records)
    changes = []
    for key, value in values.items():
        before = ask.get(key)
        if before is None or before != value:
            was = "unset" if before is None else f"{before:g}"
            changes.append(f"{key} {was} -> {value}{UNITS[key]} from "
                           f"{fmt.plural(len(records), 'run')}")  # fmt: skip
    if finished == 0:
        notes.append("no finished earlier run: values only raised")
    note = "; ".join(dict.fromkeys(notes)) or (
        "" if changes else f"no change: the request fits {fmt.plural(len(records), 'run')}"
    )
    basis = {"records": len(records), "finished": finished, "bounds": dict(limits)}
    return Tuning(len(records), values, changes, note, RULE_TEXT, basis)


def resources_line(values: Optional[Mapping[str, Any]]) -> str:
    """``@resources(cpu=2, memory=1024)``: whole numbers, rounded up (a request below what
    was measured is never printed), CPU in millicores (``cpu=0.75``, :data:`CPU_STEPS`);
    None or no value: a sentence saying so."""
    parts = []
    for key in RESOURCES:
        value = _size((values or {}).get(key), key)
        if value and key == "cpu":
            parts.append(f"cpu={math.ceil(value * 1000 - 1e-6) / 1000:g}")
        elif value:
            parts.append(f"{key}={int(math.ceil(value - 1e-9))}")
    if not parts:
        return "nothing (no @resources, @kubernetes or @batch)"
    return f"@resources({', '.join(parts)})"


def limit_runs(records: Sequence[Mapping[str, Any]], runs: Any) -> List[Dict[str, Any]]:
    """The records of the newest ``runs`` distinct runs (all their attempts), in order."""
    try:
        n = max(1, int(runs))
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinity
        n = 5
    seen: List[str] = []
    kept = []
    for record in records:
        run = str(record.get("run", id(record)))
        if run not in seen:
            if len(seen) >= n:
                break
            seen.append(run)
        kept.append(dict(record))
    return kept


def _code_parts(code: types.CodeType) -> Iterator[bytes]:
    """What a code object does, not where it sits: its bytecode, names and constants (nested
    functions included), without file names or line numbers."""
    yield code.co_code
    yield repr((code.co_names, code.co_varnames)).encode()
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_parts(const)
        else:
            yield repr(const).encode()


def code_fingerprint(func: Any) -> Optional[str]:
    """A short fingerprint of a step function's code (records carry it: the runs of the
    step's current code are weighed over older code); None when it has no code."""
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    digest = hashlib.sha256()
    for part in _code_parts(code):
        digest.update(part)
    return digest.hexdigest()[:16]


def machine_cores(server_info: Any) -> Optional[float]:
    """The machine's cores from ``server_info`` (``vcpus``), for telling a starved run."""
    return _size((server_info or {}).get("vcpus") if isinstance(server_info, Mapping) else None,
                 "cpu")  # fmt: skip


def step_tuning(records: Sequence[Any], settings: Any = None, asked: Any = None) -> Tuning:
    """The tuned request of a step's next run: the one call of every surface that shows it
    (the artifact and card through :func:`next_tuning`, the export, ``recommend
    --metaflow``, ``dashboard``). Never raises.

    Args:
        records: the records its store keeps (its runs' attempts, newest first).
        settings: the step's tuning settings as its newest run stored them (the artifact's
            ``tuning_input``: ``asked``, the ask in the step's code; ``bounds``; ``runs``,
            how many runs are read; ``code``; ``cpu_step``, the platform's CPU step; ``run``;
            ``records``, the earlier runs' records
            that run saw: those of runs the store lacks are read too, right after it).
        asked: without settings, the ask (default: what the newest record asked, a killed
            run's too; no guardrails then).
    """
    given = settings if isinstance(settings, Mapping) else {}
    listed = records if isinstance(records, (list, tuple)) else ()
    kept = _with_history([r for r in listed if isinstance(r, Mapping)], given)
    if asked is None and kept:
        asked = kept[0].get("asked")
    code = given.get("code")
    return tune_resources(limit_runs(kept, given.get("runs") or len(kept) or 1),
                          given.get("asked", asked), given.get("bounds"),
                          code if isinstance(code, str) else None,
                          given.get("cpu_step"))  # fmt: skip


def _with_history(
    records: List[Mapping[str, Any]], given: Mapping[str, Any]
) -> List[Mapping[str, Any]]:
    """``records`` with the earlier records the settings' run saw whose run is not among
    them, put right after that run's records (saved snapshots keep one run each)."""
    earlier = given.get("records")
    if not isinstance(earlier, (list, tuple)):
        return records
    seen = {str(r.get("run")) for r in records}
    missing = [r for r in earlier if isinstance(r, Mapping) and str(r.get("run")) not in seen]
    run = str(given.get("run"))
    at = max((i + 1 for i, r in enumerate(records) if str(r.get("run")) == run), default=0)
    return records[:at] + missing + records[at:]


def run_attempts(record: Dict[str, Any], settings: Any) -> List[Dict[str, Any]]:
    """A run's records, newest first: its own ``record`` (named after the settings' run)
    and its earlier attempts (``@retry``) from its tuning settings' ``records``."""
    given = settings if isinstance(settings, Mapping) else {}
    run = str(given.get("run") or record.get("run") or "this run")
    earlier = given.get("records")
    same = [dict(r) for r in earlier if isinstance(r, Mapping) and str(r.get("run")) == run] \
        if isinstance(earlier, (list, tuple)) else []  # fmt: skip
    return [dict(record, run=run)] + same


def next_tuning(
    extra: Mapping[str, Any], stats: Mapping[str, Any], server_info: Any
) -> Optional[Tuning]:
    """The tuned request of the step's next run, from this run (its ``stats()``, the ask it
    ran with) and the earlier runs' records the integration attached
    (``extra['tuning_input']``: ``records``, ``asked``, ``bounds``, ``runs``, ``run``);
    None when the run is not tuned."""
    found = this_run(extra, stats, server_info)
    if found is None:
        return None
    this, given = found
    return step_tuning(run_attempts(this, given), given)


def this_run(
    extra: Mapping[str, Any], stats: Mapping[str, Any], server_info: Any
) -> Optional[Tuple[Dict[str, Any], Mapping[str, Any]]]:
    """(the record of this run, the step's tuning settings) of a tuned run (``extra`` with
    ``tuning_input``), else None: what :func:`next_tuning` reads, and what the export pushes
    for ``dashboard --prometheus`` to read the same."""
    given = extra.get("tuning_input") if isinstance(extra, Mapping) else None
    if not isinstance(given, Mapping):
        return None
    status = "failed" if extra.get("step_failed") else "ok"
    this = run_record(stats or {}, extra.get("resources_asked"), machine_cores(server_info), status)
    code = given.get("code")
    if isinstance(code, str):
        this["code"] = code
    return this, given
