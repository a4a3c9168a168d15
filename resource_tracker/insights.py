"""Findings about a run: what was asked but not used, what is close to failing, what changed
against the step's history, and the phases of the run (with the saving of a split).

Every function here is pure (no I/O): :func:`resource_tracker.summary.build_summary` reads
the tracker, the cgroup figures, the history and the catalog result, and passes plain
values in. Each kind has one function returning a list of :class:`Insight` (empty when
there is nothing to say):

- :func:`over_provisioned`: the asked resources (Metaflow ``@resources`` / ``@kubernetes``
  / ``@batch`` attributes, or the container's cgroup limits) against the peak used, with
  the cost of the gap per run and per month priced on the catalog's recommended server;
- :func:`held_unused_gpus`: GPUs the step held (memory on them) and never computed on
  (``stats()["gpu_fit"]``), whatever it asked;
- :func:`at_risk`: peak memory at or above 85% of the limit, CPU throttled for more than
  10% of the run, an OOM kill (the cgroup figures of ``stats()["cgroup"]``);
- :func:`changed`: this run against the median and MAD of the earlier runs (at least 3),
  with absolute and relative floors so that noise is not news; the change it states is the
  history table's (``formatting.change`` against the history rule's figure);
- :func:`phases`: change points of the CPU, memory and GPU series (binary segmentation of
  the mean) and, when sizing each phase on its own would save enough, what a split into
  steps saves.

Costs use :class:`Pricing`: the hourly price of the recommended server (from the summary's
catalog result) shared out by the largest fraction of its vCPUs, memory or GPUs a shape
needs (a shape needing half the server's vCPUs costs half its price).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _core, settings
from . import formatting as fmt
from ._artifact_types import InsightEntry
from .registry import column, stat_columns

__all__ = [
    "Insight",
    "Pricing",
    "KINDS",
    "over_provisioned",
    "held_unused_gpus",
    "at_risk",
    "was_throttled",
    "above_ask",
    "changed",
    "phases",
    "run_metrics",
    "DEFAULT_RUNS_PER_MONTH",
    "runs_per_month",
]

#: The kinds of findings, in the order they are shown.
KINDS = ("at_risk", "over_provisioned", "changed", "phases")
_SEVERITIES = ("info", "warning", "critical")

#: Runs a month assumed when the history does not tell the run's frequency (one a day).
DEFAULT_RUNS_PER_MONTH = 30.0
#: Memory at or above this share of the limit is at risk.
MEMORY_RISK_SHARE = 0.85
#: CPU throttled for more than this share of the run (periods, else seconds) is at risk ...
THROTTLE_RISK_SHARE = 0.10
#: ... when it was throttled this many seconds at least (the kernel's throttled time): a
#: short burst in an idle step crosses the share of periods and costs the step nothing.
THROTTLE_FLOOR_S = 1.0
#: A resource is over-provisioned when its peak use is at most this share of the ask ...
OVER_SHARE = 0.5
#: ... and the gap is at least this much (the settings of the memory and CPU floors; GPUs).
OVER_FLOOR_SETTINGS = {
    "memory": "RESOURCE_TRACKER_OVER_MIN_MIB",
    "cpu": "RESOURCE_TRACKER_OVER_MIN_CORES",
}
OVER_FLOOR_GPUS = 1.0
#: An ask at least this many times what the run needs is a finding whatever its gap costs:
#: it holds capacity other jobs of the cluster could use (a short step costs little a month).
OVER_RATIO = 4.0
#: The fewest earlier runs a change is judged against.
MIN_HISTORY = 3
#: A change must exceed this many robust standard deviations (1.4826 MAD) ...
CHANGE_MADS = 4.0
#: ... and this share of the median ...
CHANGE_SHARE = 0.2
#: A split is advised when it saves at least this share of the one-step cost.
SPLIT_MIN_SAVING = 0.2
#: Samples a phase has at least.
MIN_PHASE_SAMPLES = 3
#: Phases whose memory peaks are this close (MiB; or 10%) need the same memory.
SAME_MEMORY_MIB = 256.0


@dataclass(frozen=True)
class Insight:
    """One finding: its ``kind`` (one of :data:`KINDS`), ``severity`` (``info``,
    ``warning``, ``critical``), one sentence for a person and the numbers behind it."""

    kind: str
    severity: str
    message: str
    numbers: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> InsightEntry:
        """``{"kind", "severity", "message", "numbers"}`` as plain JSON values."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "numbers": dict(self.numbers),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Insight:
        """The Insight of ``to_dict()``; ValueError when ``data`` is not one."""
        if not isinstance(data, Mapping):
            raise ValueError("an insight is not an object")
        kind, severity, message = data.get("kind"), data.get("severity"), data.get("message")
        if kind not in KINDS or severity not in _SEVERITIES or not isinstance(message, str):
            raise ValueError(f"not an insight: kind {kind!r}, severity {severity!r}")
        numbers = data.get("numbers") or {}
        if not isinstance(numbers, Mapping):
            raise ValueError("an insight's numbers are not an object")
        return cls(kind, severity, message, dict(numbers))


@dataclass(frozen=True)
class Pricing:
    """The recommended server's hourly price (USD) and size: what a shape of resources
    costs is the price times the largest share of the server it needs."""

    hourly_usd: float
    vcpus: float
    memory_mib: float
    gpus: float = 0.0
    server: str = ""

    def hourly(self, cpu: float = 0.0, memory_mib: float = 0.0, gpu: float = 0.0) -> float:
        """USD per hour of a shape (cores, MiB, GPUs) at this server's rate."""
        shares = [cpu / self.vcpus if self.vcpus else 0.0]
        shares.append(memory_mib / self.memory_mib if self.memory_mib else 0.0)
        if gpu:
            shares.append(gpu / self.gpus if self.gpus else math.inf)
        share = max(shares)
        return self.hourly_usd * share if math.isfinite(share) else math.nan

    @classmethod
    def from_server(cls, server: Optional[Mapping[str, Any]]) -> Optional[Pricing]:
        """From a catalog record (``vcpus``, ``memory_amount`` MiB, ``gpu_count``,
        ``price``); None without a price or a size."""
        if not isinstance(server, Mapping):
            return None
        price = _num(server.get("price", server.get("min_price")))
        vcpus, memory = _num(server.get("vcpus")), _num(server.get("memory_amount"))
        if price is None or not vcpus or not memory:
            return None
        name = f"{server.get('vendor_id', '?')} {server.get('server_id', '?')}"
        return cls(price, vcpus, memory, _num(server.get("gpu_count")) or 0.0, name)


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _gib(mib: Optional[float]) -> str:
    """MiB in the report's number style (formatting.quantity): '512 MiB', '14 GiB'."""
    return fmt.quantity(mib, "MiB")


def _cores(cores: Optional[float]) -> str:
    return fmt.quantity(cores, "cores")


def _frequency(runs_per_month: Optional[float]) -> str:
    if runs_per_month:
        return fmt.plural(round(runs_per_month, 1), "run") + " a month"
    return fmt.plural(DEFAULT_RUNS_PER_MONTH, "run") + " a month (assumed: one a day)"


def _usd(value: float) -> str:
    """Dollars by the documented rule (formatting.money): '$3.50', '$0.42', '< $0.01'."""
    return fmt.money(value)


#: Runs spanning less than this (seconds) tell no schedule.
MIN_SCHEDULE_SPAN_S = 86400.0
_MONTH_S = 30 * 86400.0


def runs_per_month(times: Sequence[float]) -> Optional[float]:
    """A job's run frequency from its runs' start times (epoch seconds); None with fewer
    than two or when they span less than a day (a burst of runs tells no schedule)."""
    known = [t for t in (_num(t) for t in times) if t is not None]
    if len(known) < 2 or max(known) - min(known) < MIN_SCHEDULE_SPAN_S:
        return None
    return (len(known) - 1) / (max(known) - min(known)) * _MONTH_S


# -- over-provisioned ---------------------------------------------------------------------


def _over(resource: str, asked: Optional[float], peak: Optional[float]) -> bool:
    if asked is None or peak is None or asked <= 0:
        return False
    name = OVER_FLOOR_SETTINGS.get(resource)
    floor = float(settings.get(name)) if name else OVER_FLOOR_GPUS
    return peak <= OVER_SHARE * asked and asked - peak >= floor


def _gap_severity(cost: Mapping[str, Any], far_over: bool) -> Optional[str]:
    """The severity of a gap by what it costs a month: None (not worth a finding) when it
    costs nothing or less than ``RESOURCE_TRACKER_OVER_MIN_USD_MONTH`` and the ask is not
    ``far_over`` (:data:`OVER_RATIO` times the need: info whatever it costs), a warning from
    ``RESOURCE_TRACKER_WARN_USD_MONTH``, else info (also when the gap is not priced)."""
    per_month = cost.get("gap_usd_per_month")
    if per_month is None:
        return "info"
    if per_month <= 0 or per_month < settings.get("RESOURCE_TRACKER_OVER_MIN_USD_MONTH"):
        return "info" if far_over else None
    return "warning" if per_month >= settings.get("RESOURCE_TRACKER_WARN_USD_MONTH") else "info"


def _over_part(key: str, asked: Any, peak: Any, numbers: Dict[str, Any]) -> str:
    """The finding's words on one over-provisioned resource (its figures into numbers)."""
    share = peak / asked
    numbers.update({f"asked_{key}": asked, f"peak_{key}": peak, f"{key}_used_share": share})
    if key == "memory":
        return f"asked {_gib(asked)} memory, peak {_gib(peak)} ({fmt.percent(share)})"
    unit = "cores" if key == "cpu" else "GPUs"
    return (
        f"asked {fmt.quantity(asked, unit)}, peak {fmt.quantity(peak, unit)} ({fmt.percent(share)})"
    )


def _ask_ratio(
    over: Sequence[str],
    ask: Mapping[str, Optional[float]],
    peak: Mapping[str, Optional[float]],
    needed: Optional[Mapping[str, Any]],
) -> float:
    """The highest ask / need of the over-provisioned resources (the need: the
    recommendation, else the peak; 0 when no need is known)."""
    ratios = [0.0]
    for k in over:
        need = _num((needed or {}).get(k))
        need = need if need is not None else peak[k]
        if need and ask[k]:
            ratios.append(ask[k] / need)  # type: ignore[operator]
    return max(ratios)


def over_provisioned(
    asked: Optional[Mapping[str, Any]],
    used: Mapping[str, Optional[float]],
    needed: Optional[Mapping[str, Any]],
    duration_s: Optional[float],
    pricing: Optional[Pricing],
    runs_per_month: Optional[float] = None,
) -> List[Insight]:
    """What was asked against what was used.

    Args:
        asked: ``cpu`` (cores), ``memory`` (MiB), ``gpu`` and ``source`` (where the ask
            comes from, e.g. ``@resources`` or ``cgroup limits``); None: nothing asked.
        used: ``cpu`` (peak cores), ``memory`` (peak MiB), ``gpu`` (peak GPUs).
        needed: the recommendation (``cpu``, ``memory`` MiB, ``gpu``): what the gap is
            priced against (the peak plus the recommender's margin); None: the peaks.
        duration_s, runs_per_month: the run's length and frequency for the costs (None:
            unknown, one run a day is assumed and said).
        pricing: the recommended server's price; None: the gap is not priced.
    """
    if not asked:
        return []
    names = ("cpu", "memory", "gpu")
    ask = {k: _num(asked.get(k)) for k in names}
    peak = {k: _num(used.get(k)) for k in names}
    over = [k for k in names if _over(k, ask[k], peak[k])]
    if not over:
        return []
    source = str(asked.get("source") or "the request")
    numbers: Dict[str, Any] = {"source": source}
    parts = [_over_part(k, ask[k], peak[k], numbers) for k in over]
    message = f"Over-provisioned ({source}): " + "; ".join(parts)
    ratio = _ask_ratio(over, ask, peak, needed)
    if ratio >= OVER_RATIO:  # a finding whatever it costs
        numbers["ask_need_ratio"] = ratio
        message += f"; it asks {ratio:.0f}x what it needs, capacity other jobs could use"
    cost = _gap_cost(ask, peak, needed, duration_s, pricing, runs_per_month)
    severity = _gap_severity(cost, ratio >= OVER_RATIO)
    if severity is None:
        return []
    numbers.update(cost)
    if "gap_usd_per_run" in cost:
        message += (
            f". The gap costs {_usd(cost['gap_usd_per_run'])} per run, "
            f"{_usd(cost['gap_usd_per_month'])} per month at {_frequency(runs_per_month)} "
            f"(priced on {pricing.server})"  # type: ignore[union-attr]
        )
    return [Insight("over_provisioned", severity, message + ".", numbers)]


def _gap_cost(
    ask: Mapping[str, Optional[float]],
    peak: Mapping[str, Optional[float]],
    needed: Optional[Mapping[str, Any]],
    duration_s: Optional[float],
    pricing: Optional[Pricing],
    runs_per_month: Optional[float],
) -> Dict[str, Any]:
    if pricing is None or not duration_s:
        return {}
    found = {k: _num((needed or {}).get(k)) for k in ("cpu", "memory", "gpu")}
    need = {k: v if v is not None else (peak[k] or 0.0) for k, v in found.items()}
    # what is asked and not given (None) costs as what is needed
    asked = {k: v if v is not None else need[k] for k, v in ((k, ask[k]) for k in need)}
    hourly_gap = pricing.hourly(asked["cpu"], asked["memory"], asked["gpu"]) - pricing.hourly(
        need["cpu"], need["memory"], need["gpu"]
    )
    if not math.isfinite(hourly_gap):
        return {}
    per_run = max(hourly_gap, 0.0) * duration_s / 3600.0
    runs_per_month = runs_per_month or DEFAULT_RUNS_PER_MONTH
    return {
        "gap_usd_per_hour": max(hourly_gap, 0.0),
        "gap_usd_per_run": per_run,
        "gap_usd_per_month": per_run * runs_per_month,
        "runs_per_month": runs_per_month,
        "priced_on": pricing.server,
    }


def held_unused_gpus(fit: Optional[Mapping[str, Any]]) -> List[Insight]:
    """A step that held GPUs it never used (``stats()["gpu_fit"]``, see
    ``resource_tracker._gpu_fit``): its process held memory on more GPUs than showed any
    utilisation. A warning (a GPU costs more than the rest of a server): the recommendation
    asks for the busy ones only; nothing when every GPU held was busy or it cannot be told."""
    if not isinstance(fit, Mapping):
        return []
    held, busy, unused = (_num(fit.get(k)) for k in ("gpus_held", "gpus_busy", "gpus_unused"))
    idle = [i for i in fit.get("idle") or () if isinstance(i, int) and not isinstance(i, bool)]
    if not held or busy is None or not unused or unused < 1 or not idle:
        return []
    names = f"GPU{'s' if len(idle) > 1 else ''} {', '.join(str(i) for i in idle)}"
    message = (
        f"Held {fmt.plural(held, 'GPU')}, kept {fmt.quantity(busy, 'GPUs')} busy: {names} held "
        f"memory and never computed. The recommendation asks for {fmt.plural(busy, 'GPU')} "
        "(CUDA_VISIBLE_DEVICES keeps a process off the GPUs it does not use)."
    )
    numbers = {"gpus_held": held, "gpus_busy": busy, "gpus_unused": unused, "idle_gpus": idle}
    return [Insight("over_provisioned", "warning", message, numbers)]


# -- at risk ------------------------------------------------------------------------------


def at_risk(cgroup: Optional[Mapping[str, Any]], duration_s: Optional[float]) -> List[Insight]:
    """Findings from the container's cgroup figures (``stats()["cgroup"]``): an OOM kill
    (critical), peak memory at or above 85% of the limit, CPU throttled more than 10% of
    the run (by periods; by seconds against the duration when periods are unknown) for a
    second at least (:func:`was_throttled`)."""
    if not isinstance(cgroup, Mapping):
        return []
    found = []
    kills = _num(cgroup.get("oom_kills"))
    if kills:
        found.append(
            Insight(
                "at_risk",
                "critical",
                f"The kernel killed {fmt.plural(kills, 'process', 'processes')} of the "
                "container for lack of memory (OOM kill) during the run.",
                {"oom_kills": kills, "memory_limit_mib": cgroup.get("memory_limit_mib")},
            )
        )
    found += _memory_risk(cgroup)
    found += _throttle_risk(cgroup, duration_s)
    return found


def above_ask(
    asked: Optional[Mapping[str, Any]], memory_peak_mib: Optional[float], cpu_mean: Optional[float]
) -> List[Insight]:
    """The run used more than the step asks (``asked`` as in :func:`over_provisioned`), also
    where nothing enforced the ask (a local run): peak memory above the asked memory is
    critical (Kubernetes or AWS Batch would kill the step), mean CPU above the asked cores a
    warning (it would be throttled). Asks read from the cgroup limits are left to
    :func:`at_risk`, which sees the kernel's own figures."""
    if not asked or asked.get("source") == "cgroup limits":
        return []
    source = str(asked.get("source") or "the request")
    found = []
    memory = _num(asked.get("memory"))
    if memory and memory_peak_mib is not None and memory_peak_mib > memory:
        found.append(
            Insight(
                "at_risk",
                "critical",
                f"Peak memory {_gib(memory_peak_mib)} is above the {_gib(memory)} this step "
                f"asks ({source}): on Kubernetes or AWS Batch it would be killed (OOM).",
                {"memory_peak_mib": memory_peak_mib, "asked_memory": memory, "source": source},
            )
        )
    cpu = _num(asked.get("cpu"))
    if cpu and cpu_mean is not None and cpu_mean > cpu:
        found.append(
            Insight(
                "at_risk",
                "warning",
                f"Mean CPU {_cores(cpu_mean)} is above the {_cores(cpu)} this step asks "
                f"({source}): on Kubernetes or AWS Batch it would be throttled and run longer.",
                {"cpu_mean_cores": cpu_mean, "asked_cpu": cpu, "source": source},
            )
        )
    return found


def _memory_risk(cgroup: Mapping[str, Any]) -> List[Insight]:
    peak, limit = _num(cgroup.get("memory_peak_mib")), _num(cgroup.get("memory_limit_mib"))
    if peak is None or not limit or peak < MEMORY_RISK_SHARE * limit:
        return []
    share = peak / limit
    return [
        Insight(
            "at_risk",
            "critical" if share >= 0.95 else "warning",
            f"The container's memory peak {_gib(peak)} (the kernel's high-water mark, page "
            f"cache included) is {fmt.percent(share)} of its {_gib(limit)} limit: a larger "
            "input may be killed.",
            {"memory_peak_mib": peak, "memory_limit_mib": limit, "share": share},
        )
    ]


def throttled_share(
    cgroup: Mapping[str, Any], duration_s: Optional[float]
) -> Optional[Tuple[float, str]]:
    """(share, basis): the share of the run the CPU was throttled, by the cgroup's periods,
    else by its throttled seconds against the duration; None when neither is known."""
    periods, throttled = _num(cgroup.get("cpu_periods")), _num(cgroup.get("cpu_throttled_periods"))
    seconds = _num(cgroup.get("cpu_throttled_seconds"))
    if periods and throttled is not None:
        return throttled / periods, "of its CPU periods"
    if seconds is not None and duration_s:
        return seconds / duration_s, "of the run"
    return None


def was_throttled(share: Any, seconds: Any) -> bool:
    """The rule of a run held back by its CPU limit (the insight, tuning, the tuning record):
    throttled in more than :data:`THROTTLE_RISK_SHARE` of the run (``share``: of its CPU
    periods, see :func:`throttled_share`) for :data:`THROTTLE_FLOOR_S` seconds at least
    (``seconds``: the kernel's throttled time; the share alone when it is unknown)."""
    share, seconds = _num(share), _num(seconds)
    if share is None or share <= THROTTLE_RISK_SHARE:
        return False
    return seconds is None or seconds >= THROTTLE_FLOOR_S


def _throttle_risk(cgroup: Mapping[str, Any], duration_s: Optional[float]) -> List[Insight]:
    periods, throttled = _num(cgroup.get("cpu_periods")), _num(cgroup.get("cpu_throttled_periods"))
    seconds = _num(cgroup.get("cpu_throttled_seconds"))
    found = throttled_share(cgroup, duration_s)
    if found is None or not was_throttled(found[0], seconds):
        return []
    share, basis = found
    limit = _num(cgroup.get("cpu_limit_cores"))
    return [
        Insight(
            "at_risk",
            "warning",
            f"CPU was throttled in {fmt.percent(share)} {basis}"
            + (f" (limit {_cores(limit)})" if limit else "")
            + ": the step waits for CPU it is not allowed.",
            {
                "throttled_share": share,
                "cpu_throttled_periods": throttled,
                "cpu_periods": periods,
                "cpu_throttled_seconds": seconds,
                "cpu_limit_cores": limit,
            },
        )
    ]


# -- changed ------------------------------------------------------------------------------

#: What is compared with the history: name -> (label, unit, absolute floor).
CHANGE_METRICS: Dict[str, Tuple[str, str, float]] = {
    "memory_peak_mib": ("peak memory", "MiB", 64.0),
    "cpu_mean_cores": ("mean CPU", "cores", 0.25),
    "duration_s": ("duration", "s", 10.0),
    "vram_peak_mib": ("peak VRAM", "MiB", 256.0),
    "gpu_peak": ("GPUs used", "GPUs", 1.0),
}
#: The figures of CHANGE_METRICS that are peaks (earlier runs: the highest of them).
PEAK_METRICS = frozenset(("memory_peak_mib", "vram_peak_mib", "gpu_peak"))


def run_metrics(stats: Any) -> Dict[str, float]:
    """The figures of one run's ``stats()`` that :func:`changed` compares (known ones)."""
    by_resource = {c.resource: c.key for c in stat_columns("process") if c.resource}
    sources = {
        "memory_peak_mib": (by_resource.get("memory"), "max", 1 / 1024),
        "cpu_mean_cores": (by_resource.get("cpu"), "mean", 1.0),
        "duration_s": ("timestamp", "duration", 1.0),
        "vram_peak_mib": (by_resource.get("vram"), "max", 1.0),
        "gpu_peak": (column("process", "gpu_utilized").key, "max", 1.0),
    }
    out = {}
    for name, (key, fld, scale) in sources.items():
        entry = stats.get(key) if isinstance(stats, Mapping) and key else None
        value = _num(entry.get(fld)) if isinstance(entry, Mapping) else None
        if value is not None:
            out[name] = value * scale
    return out


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n, mid = len(ordered), len(ordered) // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _reference(name: str, past: Sequence[float]) -> Optional[float]:
    """The earlier runs' figure this run is compared with, by the one rule of the history
    (``summary.history_values``, in C): the highest of their peaks, the mean of the rest."""
    return _core.combine_runs(list(past), name in PEAK_METRICS)


def changed(current: Mapping[str, float], earlier: Sequence[Mapping[str, float]]) -> List[Insight]:
    """This run's figures (:func:`run_metrics`) against the earlier runs': a finding for
    each figure further from the earlier runs' median than 4 robust standard deviations
    (1.4826 MAD), 20% of the median and the figure's absolute floor. Nothing from fewer
    than :data:`MIN_HISTORY` earlier runs.

    The change it states is the one the report's history table shows
    (``formatting.change`` against the earlier runs' figure of the history rule: the
    highest of their peaks, the mean of their means and durations), so that one change
    reads the same in the finding, the table and the card; a change the two tests do not
    agree on (direction, or within the noise floors) is no finding."""
    found = []
    for name, (label, unit, floor) in CHANGE_METRICS.items():
        now = _num(current.get(name))
        past = [v for v in (_num(run.get(name)) for run in earlier) if v is not None]
        if now is None or len(past) < MIN_HISTORY:
            continue
        med = _median(past)
        mad = _median([abs(v - med) for v in past])
        threshold = max(CHANGE_MADS * 1.4826 * mad, CHANGE_SHARE * abs(med), floor)
        delta, ref = now - med, _reference(name, past)
        shown = fmt.change(now, ref, unit)
        if abs(delta) <= threshold or shown is None or shown.direction == "same":
            continue
        if (shown.direction == "up") != (delta > 0):
            continue
        found.append(
            _changed_insight(name, label, unit, now, ref, len(past), shown, med, mad, threshold)
        )
    return found


def _changed_insight(
    name: str,
    label: str,
    unit: str,
    now: float,
    ref: Optional[float],
    runs: int,
    shown: fmt.Change,
    med: float,
    mad: float,
    threshold: float,
) -> Insight:
    basis = "their highest" if name in PEAK_METRICS else "their mean"
    message = (
        f"{label[0].upper()}{label[1:]} {shown.text} against the last {fmt.plural(runs, 'run')}"
        f" ({fmt.quantity(now, unit)}; {basis} {fmt.quantity(ref, unit)})."
    )
    return Insight(
        "changed",
        "warning" if shown.direction == "up" else "info",
        message,
        {
            "metric": name,
            "unit": unit,
            "value": now,
            "reference": ref,
            "reference_rule": "max" if name in PEAK_METRICS else "mean",
            "median": med,
            "mad": mad,
            "threshold": threshold,
            "change": (now - ref) / ref if ref else None,
            "change_text": shown.text,
            "runs": runs,
        },
    )


# -- phases -------------------------------------------------------------------------------

#: The series phases are found in: name -> (label, unit, absolute floor of a step).
PHASE_SERIES: Dict[str, Tuple[str, str, float]] = {
    "cpu": ("CPU", "cores", 0.3),
    "memory": ("memory", "MiB", 128.0),
    "gpu": ("GPU", "GPUs", 0.5),
}
#: A step in the mean is also at least this share of the series' highest value.
PHASE_SHARE = 0.2


def change_points(values: Sequence[float], floor: float, max_phases: int = 4) -> List[int]:
    """Indices where the mean of ``values`` steps by more than ``floor`` (binary
    segmentation: the best split, then the best split of each part, up to ``max_phases``).

    The best split of a part is the one with the least squared error, both sides at least
    :data:`MIN_PHASE_SAMPLES` long, kept when the two means differ by more than ``floor`` and
    twice the within-part deviation. Done in C over the samples (``_core.change_points``: a
    float64 buffer is read in place)."""
    return _core.change_points(values, floor, max(max_phases - 1, 0), MIN_PHASE_SAMPLES)


def _as_values(values: Sequence[float]) -> Sequence[float]:
    """A float64 buffer (a stopped run's column) as it is, read in place; else a list."""
    try:
        if memoryview(values).format == "d":  # type: ignore[arg-type]
            return values
    except TypeError:
        pass
    return list(values)


def _need(cpu: Sequence[float], memory: Sequence[float], gpu: Sequence[float]) -> Dict[str, float]:
    """The shape a phase (or the whole run) needs: whole cores above its mean (0.2 core of
    slack), its peak memory, its peak GPUs."""
    mean_cpu = sum(cpu) / len(cpu) if cpu else 0.0
    return {
        "cpu": float(max(1, math.ceil(mean_cpu - 0.2))),
        "memory": max(memory) if memory else 0.0,
        "gpu": float(math.ceil(max(gpu) - 0.2)) if gpu and max(gpu) > 0.2 else 0.0,
    }


def _merge(points: List[Tuple[int, str]], gap: int) -> List[Tuple[int, str]]:
    """Boundaries closer than ``gap`` samples merged into one: the memory series' where it is
    one of them (a phase's memory need is its peak, which a sample on the wrong side moves;
    a CPU or GPU need is a mean, which it hardly moves), else the first one found."""
    kept: List[Tuple[int, str]] = []
    for k, name in sorted(points):
        if kept and k - kept[-1][0] < gap:
            memory = name == "memory" and "memory" not in kept[-1][1].split("+")
            kept[-1] = (k if memory else kept[-1][0], kept[-1][1] + "+" + name)
        else:
            kept.append((k, name))
    return kept


def phases(
    timestamps: Sequence[float],
    series: Mapping[str, Sequence[float]],
    pricing: Optional[Pricing] = None,
    runs_per_month: Optional[float] = None,
) -> List[Insight]:
    """Phases of a run from its samples: ``timestamps`` (s, one per sample, the end of each
    interval) and ``series`` (``cpu`` cores, ``memory`` MiB, ``gpu`` GPUs in use; any may
    be missing). One finding when there are two phases or more: where they start, what
    each uses, and, when sizing each phase on its own (a split into steps) saves at least
    :data:`SPLIT_MIN_SAVING` of the run's cost on ``pricing``, the saving."""
    n = len(timestamps)
    data = {k: _as_values(v) for k, v in series.items() if k in PHASE_SERIES and len(v) == n}
    if n < 2 * MIN_PHASE_SAMPLES or not data:
        return []
    found = []
    for name, values in data.items():
        floor = max(PHASE_SERIES[name][2], PHASE_SHARE * max(values))
        found += [(k, name) for k in change_points(values, floor)]
    bounds = _merge(found, MIN_PHASE_SAMPLES)
    if not bounds:
        return []
    cols = [data.get(k, []) for k in ("cpu", "memory", "gpu")]
    bounds = _distinct_phases(bounds, n, cols)
    if not bounds:
        return []
    edges = [0] + [k for k, _ in bounds] + [n]
    step = (timestamps[-1] - timestamps[0]) / (n - 1) if n > 1 else 0.0
    start = timestamps[0] - step
    shapes = []
    for lo, hi in zip(edges, edges[1:]):
        began = start if lo == 0 else timestamps[lo - 1]
        shapes.append(
            {
                "start_s": began - start,
                "start_time": began,
                "duration_s": timestamps[hi - 1] - began,
                **_need(*(c[lo:hi] for c in cols)),
            }
        )
    # one step runs every phase: it needs the most any phase needs
    whole = {k: max(shape[k] for shape in shapes) for k in ("cpu", "memory", "gpu")}
    return [_phases_insight(shapes, bounds, whole, pricing, runs_per_month)]


def _distinct_phases(
    bounds: List[Tuple[int, str]], n: int, cols: Sequence[Sequence[float]]
) -> List[Tuple[int, str]]:
    """The boundaries between phases that need different resources: a boundary whose two
    sides need the same cores and GPUs and memory within :data:`SAME_MEMORY_MIB` (or 10%)
    is dropped (a wobble of a busy machine, not a phase a split could size for)."""
    kept = list(bounds)
    changed = True
    while changed and kept:
        changed = False
        edges = [0] + [k for k, _ in kept] + [n]
        for i in range(len(kept)):
            left = _need(*(c[edges[i] : edges[i + 1]] for c in cols))
            right = _need(*(c[edges[i + 1] : edges[i + 2]] for c in cols))
            if _same_need(left, right):
                del kept[i]
                changed = True
                break
    return kept


def _same_need(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    memory_gap = abs(a["memory"] - b["memory"])
    return (
        a["cpu"] == b["cpu"]
        and a["gpu"] == b["gpu"]
        and memory_gap <= max(SAME_MEMORY_MIB, 0.1 * max(a["memory"], b["memory"]))
    )


def _phases_insight(
    shapes: Sequence[Mapping[str, float]],
    bounds: Sequence[Tuple[int, str]],
    whole: Mapping[str, float],
    pricing: Optional[Pricing],
    runs_per_month: Optional[float],
) -> Insight:
    numbers: Dict[str, Any] = {"phases": len(shapes)}
    texts = []
    for i, shape in enumerate(shapes, 1):
        for key in ("start_s", "start_time", "duration_s", "cpu", "memory", "gpu"):
            numbers[f"phase{i}_{key}"] = shape[key]
        end = shape["start_s"] + shape["duration_s"]
        text = f"{fmt.duration(shape['start_s'])} to {fmt.duration(end)}: "
        text += f"{fmt.plural(shape['cpu'], 'CPU')}, {_gib(shape['memory'])}"
        texts.append(text + (f", {fmt.plural(shape['gpu'], 'GPU')}" if shape["gpu"] else ""))
    numbers["boundaries_s"] = ", ".join(f"{s['start_s']:.1f}" for s in shapes[1:])
    numbers["changed_series"] = ", ".join(name for _, name in bounds)
    message = f"{len(shapes)} phases ({'; '.join(texts)})"
    severity = "info"
    if pricing is not None:
        total = sum(s["duration_s"] for s in shapes)
        one = pricing.hourly(whole["cpu"], whole["memory"], whole["gpu"]) * total / 3600
        split = sum(
            pricing.hourly(s["cpu"], s["memory"], s["gpu"]) * s["duration_s"] / 3600 for s in shapes
        )
        if math.isfinite(one) and math.isfinite(split) and one > 0:
            saving = one - split
            per_month = runs_per_month or DEFAULT_RUNS_PER_MONTH
            numbers.update(
                one_step_usd_per_run=one,
                split_usd_per_run=split,
                split_saving_usd_per_run=saving,
                split_saving_share=saving / one,
                split_saving_usd_per_month=saving * per_month,
                runs_per_month=per_month,
                priced_on=pricing.server,
            )
            floor = settings.get("RESOURCE_TRACKER_SPLIT_MIN_USD_MONTH")
            if saving / one >= SPLIT_MIN_SAVING and saving * per_month >= floor:
                severity = "warning"
                at = shapes[1]["start_s"]
                message += (
                    f". Splitting the step at {fmt.duration(at)} into steps sized for each "
                    f"phase would save {fmt.percent(saving / one)}: {_usd(saving)} per run, "
                    f"{_usd(saving * per_month)} per month at {_frequency(runs_per_month)} "
                    f"(priced on {pricing.server})"
                )
    return Insight("phases", severity, message + ".", numbers)
