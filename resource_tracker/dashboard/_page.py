"""The dashboard page: one self-contained HTML file (the report's template, styles and
escaping; its own small chart script, dashboard.js) over the fleet.

The fleet table and every sentence are written here in Python (readable without a script,
searchable, testable); the charts are drawn in the browser from the JSON in ``#rt-data``. A
step with many runs is downsampled to :data:`MAX_POINTS` runs (the lowest and highest peak
memory of each bucket), and every anomaly, failed or killed run, the first and the newest are
kept.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, Dict, List, Optional, Sequence

from .. import formatting as fmt
from .._text import printable, well_formed_data
from ..report._render import _LOGO, _SCRIPT_ESCAPES, Report, _resource, _utc
from ..report._render import _esc as _html
from ..tuning import resources_line
from ._fleet import TRENDED, Fleet, StepView, trend_sentence, waste_text

#: Most runs a step's charts get (the rest is downsampled, anomalies kept).
MAX_POINTS = 240
#: The charts of a step: id, title, unit (dashboard.js), RunRecord field, ask key of its line.
CHARTS = (
    ("memory", "Peak memory", "mib", "peak_memory_mib", "memory_mib"),
    ("cpu", "CPU (mean and peak)", "cores", "mean_cpu_cores", "cpu"),
    ("gpu", "GPUs in use", "gpus", "peak_gpu_count", "gpu"),
    ("vram", "Peak VRAM", "mib", "peak_vram_mib", None),
    ("duration", "Duration", "s", "duration_s", None),
    ("cost", "Cost per run", "usd", None, None),
)


def kept_points(view: StepView, limit: int = MAX_POINTS) -> List[int]:
    """Indices of the runs drawn: all when few, else the min and max peak memory of each
    bucket plus every anomaly, non-ok run, the first and the newest."""
    n = len(view.runs)
    if n <= limit:
        return list(range(n))
    keep = {0, n - 1} | {a.index for a in view.anomalies}
    keep |= {i for i, r in enumerate(view.runs) if r.status != "ok"}
    size = math.ceil(n / (limit // 2))
    for start in range(0, n, size):
        bucket = range(start, min(n, start + size))
        values = [(view.runs[i].peak_memory_mib or 0.0, i) for i in bucket]
        keep |= {min(values)[1], max(values)[1]}
    return sorted(keep)


def _series(view: StepView, attr: Optional[str], idx: Sequence[int]) -> List[Optional[float]]:
    if attr is None:
        return [_round(view.run_costs[i], 6) for i in idx]
    return [_round(getattr(view.runs[i], attr), 4) for i in idx]


def _round(value: Any, digits: int) -> Optional[float]:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


def step_data(view: StepView, number: int) -> Dict[str, Any]:
    """The JSON a step's charts are drawn from."""
    idx = kept_points(view)
    charts = []
    for cid, title, unit, attr, ask_key in CHARTS:
        values = _series(view, attr, idx)
        if all(v is None or v == 0 for v in values) and cid in ("gpu", "vram", "cost"):
            continue
        chart: Dict[str, Any] = {"id": cid, "title": title, "unit": unit, "v": values}
        if cid == "cpu":
            chart["peak"] = _series(view, "peak_cpu_cores", idx)
        ask = view.ask.get(ask_key) if ask_key else None
        chart["ask"] = [_round((view.runs[i].ask or {}).get(ask_key) or ask, 6)
                        for i in idx] if ask and ask_key else None  # fmt: skip
        if cid == "memory":
            chart["limit"] = [_round(view.runs[i].limit_memory_mib, 6) for i in idx]
        charts.append(_with_trend(chart, view, cid))
    anomalies = [
        {"i": idx.index(a.index), "run": a.run_id, "metric": a.metric, "msg": a.message}
        for a in view.anomalies
    ]
    return {
        "id": f"step-{number}", "t": [round(view.runs[i].started, 3) for i in idx],
        "runs": [view.runs[i].run_id for i in idx],
        "status": [view.runs[i].status for i in idx], "charts": charts, "anomalies": anomalies,
        "total": len(view.runs),
    }  # fmt: skip


def _with_trend(chart: Dict[str, Any], view: StepView, cid: str) -> Dict[str, Any]:
    trend = view.trends.get(cid)
    if trend is not None:
        chart["trend"] = {"growth": _round(trend.growth, 6), "level": _round(trend.level, 6),
                          "runs": trend.runs, "to_line": trend.runs_to_line,
                          "line": _round(trend.line, 6)}  # fmt: skip
    return chart


# -- HTML ---------------------------------------------------------------------------------


def _esc(value: Any) -> str:
    """Text from outside (step names, run ids, messages) printable and escaped for HTML."""
    return _html(printable("" if value is None else value, None))


def _money(value: Optional[float], per: str = "") -> str:
    return _esc(fmt.money(value, per)) if value is not None else "n/a"


def _ask_text(values: Dict[str, Any]) -> str:
    tuned = {"cpu": values.get("cpu"), "memory": values.get("memory_mib", values.get("memory")),
             "gpu": values.get("gpu")}  # fmt: skip
    if not any(tuned.values()):
        return "unknown"
    return resources_line(tuned)


def _tiles(fleet: Fleet) -> str:
    runs = sum(len(s.runs) for s in fleet.steps)
    trending = sum(1 for s in fleet.steps if s.trending)
    tiles = (
        ("waste", "Asked but unused", _money(fleet.waste_usd_month), "a month, all steps"),
        ("steps", "Steps", str(len(fleet.steps)), _esc(fmt.plural(runs, "run"))),
        ("risk", "At risk", str(len(fleet.at_risk_steps)), "newest run at risk"),
        ("trend", "Trending to a limit", str(trending), "within the horizon"),
    )
    cells = "".join(
        f'<div class="rt-tile" id="rt-tile-{tid}"><div class="rt-tile-title">{title}</div>'
        f'<div class="rt-tile-value">{value}</div><div class="rt-tile-sub">{sub}</div></div>'
        for tid, title, value, sub in tiles
    )
    head = f'<p class="rt-answer-value" id="rt-fleet-headline">{_esc(fleet.headline())}</p>'
    return f'<section class="rt-headline">{head}<div class="rt-tiles">{cells}</div></section>'


def _fleet_table(fleet: Fleet) -> str:
    head = ("Step", "Unused $/month", "At risk", "Changed", "Runs", "Asks", "Needs", "Trend")
    rows = []
    for number, view in enumerate(fleet.steps):
        statuses = [r.status for r in view.runs]
        failed = sum(s != "ok" for s in statuses)
        runs = f"{len(view.runs)}" + (f" ({failed} failed/killed)" if failed else "")
        growth = view.trends.get("memory")
        trend = f"memory {growth.growth:+.1%}/run" if growth else "n/a"
        if view.trending:
            trend = f'<span class="rt-up">{_esc(trend)}</span>'
        else:
            trend = _esc(trend)
        risk = len(view.at_risk)
        values = (
            (" rt-num", _money(view.waste_usd_month)),
            (" rt-num rt-up" if view.newest_at_risk else " rt-num", str(risk)),
            (" rt-num", str(len(view.anomalies))), ("", _esc(runs)),
            ("", f"<code>{_esc(_ask_text(view.ask))}</code>"),
            ("", f"<code>{_esc(_ask_text(view.need))}</code>"), ("", trend),
        )  # fmt: skip
        # data-label: a narrow screen shows each row as a card, its cells labelled (CSS)
        cells = [f'<th><a href="#step-{number}">{_esc(view.step)}</a></th>'] + [
            f'<td class="{cls.strip()}" data-label="{_esc(label)}">{value}</td>'
            for label, (cls, value) in zip(head[1:], values)
        ]
        rows.append(f'<tr data-step="{_esc(view.step)}">{"".join(cells)}</tr>')
    header = "".join(f"<th>{h}</th>" for h in head)
    return (
        '<section id="rt-fleet"><h2>Fleet</h2><div class="rt-scroll"><table class="rt-fleet">'
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        '<p class="rt-help">Needs: the tuning rule of <code>@track_resources(tune=True)</code> '
        "over the step's runs (failed and killed ones included). Unused: the price of what is "
        "asked minus the price of what is needed, on the cheapest catalog server for the need, "
        "for the runs' mean duration and frequency.</p></section>"
    )


def _step_section(view: StepView, number: int) -> str:
    basis = f"{fmt.plural(view.runs_per_month, 'run')} a month ({view.per_month_basis})"
    lines = [
        f"{fmt.plural(len(view.runs), 'run')}, {basis}",
        f"asks {_ask_text(view.ask)}, needs {_ask_text(view.need)}",
    ]
    if view.waste_usd_month is not None:
        lines.append(f"{waste_text(view.waste_usd_month)} "
                     f"(priced on {view.priced_on})")  # fmt: skip
    if view.note:
        lines.append(view.note)
    alerts = "".join(f'<li class="rt-insight rt-sev-warning rt-alert"><span class="rt-badge">'
                     f"alert</span>{_esc(a)}</li>" for a in view.alerts)  # fmt: skip
    anomalies = "".join(
        f'<li class="rt-insight rt-anomaly-line" data-run="{_esc(a.run_id)}"><span '
        f'class="rt-badge">changed</span>run {_esc(a.run_id)}: {_esc(a.message)}</li>'
        for a in view.anomalies[-20:]
    )
    trend = _growth_line(view)  # a crossing is among the alerts
    cpu = trend_sentence(view, "cpu")
    return (
        f'<section class="rt-step" id="step-{number}" data-step="{_esc(view.step)}">'
        f"<h2>{_esc(view.step)}</h2>"
        + "".join(f'<p class="rt-sub">{_esc(line)}</p>' for line in lines)
        + (f'<p class="rt-trend">{_esc(trend)}</p>' if trend else "")
        + (f'<p class="rt-sub">{_esc(cpu)} (throttled, not killed)</p>' if cpu else "")
        + f'<ul class="rt-insights">{alerts}{anomalies}</ul>'
        f'<div class="rt-grid" id="step-{number}-charts"></div></section>'
    )


def _growth_line(view: StepView) -> str:
    trend = view.trends.get("memory")
    if trend is None:
        return ""
    label = TRENDED["memory"][1]
    return (
        f"{label} trend: {trend.growth:+.1%} a run (Theil-Sen over {fmt.plural(trend.runs, 'run')})"
    )


def render_dashboard(fleet: Fleet, sources: Sequence[str], now: Optional[float] = None) -> Report:
    """The page (a Report: save(), browse())."""
    now = time.time() if now is None else now
    data = {"steps": [step_data(v, n) for n, v in enumerate(fleet.steps)]}
    text = json.dumps(well_formed_data(data), separators=(",", ":"), allow_nan=False)
    for char, escaped in _SCRIPT_ESCAPES:
        text = text.replace(char, escaped)
    body = _header(fleet, sources, now) + _tiles(fleet) + _fleet_table(fleet)
    body += "".join(_step_section(v, n) for n, v in enumerate(fleet.steps)) + _skipped(fleet)
    parts = {
        "TITLE": _esc(f"Resource dashboard: {fmt.plural(len(fleet.steps), 'step')}"),
        "CSS": _resource("report.css") + _dashboard_file("dashboard.css"),
        "BODY": body,
        "DATA": text,
        "JS": _dashboard_file("dashboard.js"),
    }
    page = re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], _resource("template.html"))
    return Report(page)


def _dashboard_file(name: str) -> str:
    import os

    with open(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), name), encoding="utf-8"
    ) as f:
        return f.read()


def _header(fleet: Fleet, sources: Sequence[str], now: float) -> str:
    return (
        f'<header class="rt-header">{_LOGO}<div class="rt-title"><h1>Resource dashboard</h1>'
        f'<p class="rt-sub">{_esc(", ".join(sources))} · made {_utc(now)}</p></div></header>'
    )


def _skipped(fleet: Fleet) -> str:
    if not fleet.skipped:
        return ""
    items = "".join(f"<li>{_esc(s)}</li>" for s in fleet.skipped[:200])
    more = len(fleet.skipped) - 200
    items += f"<li>... and {more} more</li>" if more > 0 else ""
    return (f'<details class="rt-fold" id="rt-skipped"><summary><h2>Skipped runs</h2>'
            f'<span class="rt-fold-note">{len(fleet.skipped)}</span></summary>'
            f"<ul>{items}</ul></details>")  # fmt: skip
