"""The fleet: every step's runs turned into what the page, ``--check`` and ``--json`` show.

Nothing here is a new rule: what a step needs is ``tuning.step_tuning`` over its runs'
records (failed and killed ones included) and the tuning settings its newest run stored; a
run at risk is ``insights.at_risk`` / ``insights.above_ask`` on its figures (or a killed
run); an anomaly is ``insights.changed`` against the runs before it; the money is
``insights.Pricing`` on the cheapest catalog server for the need (as ``recommend
--metaflow``). The trend is :mod:`._trend`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .. import formatting as fmt
from ..insights import (
    DEFAULT_RUNS_PER_MONTH,
    MEMORY_RISK_SHARE,
    Pricing,
    above_ask,
    at_risk,
    changed,
    runs_per_month,
)
from ..tuning import step_tuning
from . import _trend
from ._model import RunRecord

#: Each run is compared with at most this many runs before it (``insights.changed``).
CHANGE_WINDOW = 10
#: The tuning rule reads at most this many newest runs of a step.
TUNING_RUNS = 20
#: The trended figures: name -> (RunRecord field, label, the ask key of its line, unit).
TRENDED = {
    "memory": ("peak_memory_mib", "peak memory", "memory_mib", "MiB"),
    "cpu": ("mean_cpu_cores", "mean CPU", "cpu", "cores"),
}
#: The trends that alert (memory: past its limit a step is killed; CPU past its ask is only
#: throttled, shown on the page).
ALERTING_TRENDS = ("memory",)
#: A pricing function: (cpu, memory MiB, gpu) needed -> Pricing or None.
PriceFor = Callable[[Mapping[str, float]], Optional[Pricing]]


@dataclass
class Anomaly:
    """An ``insights.changed`` finding on one run (its index in the step's runs)."""

    index: int
    run_id: str
    metric: str
    message: str


@dataclass
class StepView:
    """One step of the fleet: its runs (oldest first) and what is computed from them."""

    step: str
    runs: List[RunRecord]
    ask: Dict[str, float] = field(default_factory=dict)
    need: Dict[str, float] = field(default_factory=dict)
    note: str = ""
    runs_per_month: float = DEFAULT_RUNS_PER_MONTH
    per_month_basis: str = "assumed: one a day"
    waste_usd_month: Optional[float] = None
    priced_on: str = ""
    run_costs: List[Optional[float]] = field(default_factory=list)
    at_risk: List[Tuple[int, str]] = field(default_factory=list)
    anomalies: List[Anomaly] = field(default_factory=list)
    trends: Dict[str, _trend.Trend] = field(default_factory=dict)
    alerts: List[str] = field(default_factory=list)

    @property
    def newest_at_risk(self) -> bool:
        return bool(self.at_risk) and self.at_risk[-1][0] == len(self.runs) - 1

    @property
    def trending(self) -> bool:
        """An alerting figure's trend reaches its line within the horizon."""
        return any((t := self.trends.get(n)) is not None and t.runs_to_line is not None
                   for n in ALERTING_TRENDS)  # fmt: skip


@dataclass
class Fleet:
    """All steps, sorted by the monthly money asked but unused (most first)."""

    steps: List[StepView]
    skipped: List[str] = field(default_factory=list)

    @property
    def waste_usd_month(self) -> Optional[float]:
        """The priced steps' money asked but unused a month; None when no step was priced
        (no price: not $0)."""
        priced = [s.waste_usd_month for s in self.steps if s.waste_usd_month is not None]
        return sum(priced) if priced else None

    @property
    def at_risk_steps(self) -> List[StepView]:
        return [s for s in self.steps if s.newest_at_risk]

    @property
    def alerting(self) -> List[StepView]:
        return [s for s in self.steps if s.alerts]

    def headline(self) -> str:
        """ "$412/month asked but unused across 37 steps; 3 steps at risk of OOM"."""
        risky = len(self.at_risk_steps)
        trending = sum(1 for s in self.steps if s.trending)
        text = (
            f"{waste_text(self.waste_usd_month)} across "
            f"{fmt.plural(len(self.steps), 'step')}; {fmt.plural(risky, 'step')} at risk"
        )
        return text + (f"; {fmt.plural(trending, 'step')} trending to a limit" if trending else "")


def waste_text(usd_month: Optional[float]) -> str:
    """'$412 a month asked but unused' (money written as the report writes an amount:
    '< $0.01', never '$0.000846'), or 'unused asks not priced' when nothing was priced."""
    if usd_month is None:
        return "unused asks not priced"
    return f"{fmt.money(usd_month)} a month asked but unused"


def group(records: Sequence[RunRecord]) -> Dict[str, List[RunRecord]]:
    """Records by step, each step's runs oldest first (ties by run id)."""
    steps: Dict[str, List[RunRecord]] = {}
    for record in records:
        steps.setdefault(record.step, []).append(record)
    for runs in steps.values():
        runs.sort(key=lambda r: (r.started, r.run_id))
    return steps


def build_fleet(
    records: Sequence[RunRecord], price_for: Optional[PriceFor] = None, skipped: Iterable[str] = ()
) -> Fleet:
    """The fleet of ``records``; ``price_for`` prices a need (None: no money)."""
    views = [step_view(name, runs, price_for) for name, runs in group(records).items()]
    views.sort(key=lambda v: (-(v.waste_usd_month or 0.0), not v.alerts, v.step))
    return Fleet(views, list(skipped))


def step_view(name: str, runs: List[RunRecord], price_for: Optional[PriceFor]) -> StepView:
    """One step: its need, money, at-risk runs, anomalies and trends."""
    view = StepView(name, runs, ask=_ask_of(runs))
    newest_first = [record for r in reversed(runs[-TUNING_RUNS:]) for record in r.tuning_records()]
    settings = next((r.tuning_settings for r in reversed(runs) if r.tuning_settings), None)
    tuning = step_tuning(newest_first, settings)  # the ask: the newest run's
    view.need, view.note = dict(tuning.resources), tuning.note
    per_month = runs_per_month([r.started for r in runs])
    if per_month:
        view.runs_per_month, view.per_month_basis = per_month, "from the runs' times"
    _price(view, price_for)
    view.at_risk = [(i, text) for i, r in enumerate(runs) for text in _risks(r)[:1]]
    view.anomalies = _anomalies(runs)
    view.trends = _trends(runs, view.ask)
    view.alerts = _alerts(view)
    return view


def _ask_of(runs: Sequence[RunRecord]) -> Dict[str, float]:
    """What the step asks today: the newest run's ask that says something."""
    for run in reversed(runs):
        if run.ask:
            return {k: float(v) for k, v in run.ask.items() if v}
    return {}


def _tuning_ask(ask: Mapping[str, float]) -> Dict[str, float]:
    return {"cpu": ask.get("cpu"), "memory": ask.get("memory_mib"), "gpu": ask.get("gpu")}  # type: ignore[dict-item]


def _shape(values: Mapping[str, Any], keys: Sequence[str]) -> Tuple[float, float, float]:
    return tuple(float(values.get(k) or 0.0) if k in keys else 0.0  # type: ignore[return-value]
                 for k in ("cpu", "memory", "gpu"))  # fmt: skip


def _price(view: StepView, price_for: Optional[PriceFor]) -> None:
    """The monthly money asked but unused, and each run's cost (its own, else its ask's
    share of the server priced for the need)."""
    pricing = price_for(view.need) if price_for and view.need else None
    ask = _tuning_ask(view.ask)
    keys = [k for k, v in ask.items() if v]
    if pricing is not None:
        view.priced_on = pricing.server
    for run in view.runs:
        cost = run.cost_usd
        if cost is None and pricing is not None and keys:
            hourly = pricing.hourly(*_shape(_tuning_ask(run.ask or view.ask), keys))
            cost = hourly * run.duration_s / 3600 if math.isfinite(hourly) else None
        view.run_costs.append(cost)
    if pricing is None or not keys:
        return
    gap = pricing.hourly(*_shape(ask, keys)) - pricing.hourly(*_shape(view.need, keys))
    durations = [r.duration_s for r in view.runs[-TUNING_RUNS:] if r.duration_s >= 0]
    if math.isfinite(gap) and durations:
        hours = sum(durations) / len(durations) / 3600
        view.waste_usd_month = max(0.0, gap) * hours * view.runs_per_month


def _risks(run: RunRecord) -> List[str]:
    """Why a run is at risk (the insights' sentences), most serious first."""
    found = []
    if run.status == "killed":
        found.append("killed: it left no final record (an OOM kill or SIGKILL)")
    cgroup = {
        "oom_kills": run.oom_kills,
        "memory_peak_mib": run.peak_memory_mib,
        "memory_limit_mib": run.limit_memory_mib,
        "cpu_periods": 1.0 if run.throttled_share else None,
        "cpu_throttled_periods": run.throttled_share,
        "cpu_limit_cores": run.limit_cpu_cores,
    }
    insights = at_risk(cgroup, run.duration_s)
    if run.limit_memory_mib is None:
        asked = {"memory": run.ask.get("memory_mib"), "cpu": run.ask.get("cpu")}
        insights += above_ask(asked, run.peak_memory_mib, run.mean_cpu_cores)
    order = {"critical": 0, "warning": 1, "info": 2}
    found += [i.message for i in sorted(insights, key=lambda i: order[i.severity])]
    return found + _near_ask(run)


def _near_ask(run: RunRecord) -> List[str]:
    """Peak memory at or above the share of the ask that ``insights.at_risk`` uses for a
    limit (no cgroup limit known; above the ask is ``insights.above_ask``'s)."""
    ask, peak = run.ask.get("memory_mib"), run.peak_memory_mib
    if run.limit_memory_mib is not None or not ask or peak is None or peak > ask:
        return []
    if peak < MEMORY_RISK_SHARE * ask:
        return []
    return [f"Peak memory {fmt.quantity(peak, 'MiB')} is {peak / ask:.0%} of the "
            f"{fmt.quantity(ask, 'MiB')} it asks: on Kubernetes or AWS Batch a larger input "
            "would be killed (OOM)."]  # fmt: skip


def _anomalies(runs: Sequence[RunRecord]) -> List[Anomaly]:
    """``insights.changed`` of every run against the runs before it (at most
    :data:`CHANGE_WINDOW`)."""
    metrics = [r.change_metrics() for r in runs]
    found = []
    for i, run in enumerate(runs):
        earlier = metrics[max(0, i - CHANGE_WINDOW) : i]
        for insight in changed(metrics[i], earlier):
            found.append(Anomaly(i, run.run_id, str(insight.numbers["metric"]), insight.message))
    return found


def _line_of(runs: Sequence[RunRecord], ask: Mapping[str, float], key: str) -> Optional[float]:
    """The line a figure must stay under: the memory limit the newest run had, else the ask."""
    if key == "memory_mib" and runs[-1].limit_memory_mib:
        return runs[-1].limit_memory_mib
    return ask.get(key) or None


def _trends(runs: Sequence[RunRecord], ask: Mapping[str, float]) -> Dict[str, _trend.Trend]:
    found = {}
    for name, (attr, _, ask_key, _) in TRENDED.items():
        trend = _trend.fit([getattr(r, attr) for r in runs], _line_of(runs, ask, ask_key))
        if trend is not None:
            found[name] = trend
    return found


def trend_sentence(view: StepView, name: str) -> Optional[str]:
    """ "at this rate peak memory reaches the 16 GiB ask in ~9 runs (about 9 days)"."""
    trend = view.trends.get(name)
    if trend is None or trend.runs_to_line is None or trend.line is None:
        return None
    _, label, ask_key, unit = TRENDED[name]
    what = "limit" if ask_key == "memory_mib" and view.runs[-1].limit_memory_mib else "ask"
    days = trend.runs_to_line * 30.0 / view.runs_per_month
    when = f"about {fmt.plural(max(1, round(days)), 'day')}"
    if view.per_month_basis != "from the runs' times":
        when += " at one run a day"
    amount = fmt.quantity(trend.line, unit) if unit == "MiB" else f"{trend.line:g} {unit}"
    if trend.runs_to_line == 0:
        return f"{label} is at the {amount} {what} already (growing {trend.growth:.1%} a run)"
    runs = fmt.plural(trend.runs_to_line, "run")
    return (
        f"at this rate {label} reaches the {amount} {what} in ~{runs} "
        f"({when}; growing {trend.growth:.1%} a run)"
    )


def _alerts(view: StepView) -> List[str]:
    """The lines of ``--check``: the newest run at risk, peak memory trending to its line."""
    alerts = []
    if view.newest_at_risk:
        alerts.append(f"at risk: {view.at_risk[-1][1]}")
    for name in ALERTING_TRENDS:
        sentence = trend_sentence(view, name)
        if sentence:
            alerts.append(sentence)
    return alerts
