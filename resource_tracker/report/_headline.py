"""The report's headline band: the answers first (what the run used against what it had, what
it needs, the cheapest fitting server, what the run cost and would cost, the insights and
one line per problem). Pure formatting of a RunSummary; numbers through
resource_tracker.formatting, statistics found by the column registry's resources."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple

from .. import formatting as fmt
from .._energy import energy_lines
from ..registry import by_key, stat_columns
from ..tuning import resources_line as tuning_resources_line

if TYPE_CHECKING:
    from ..summary import RunSummary, StatRow

__all__ = [
    "headline",
    "gpu_seen",
    "capacity",
    "resources_line",
    "server_name",
    "server_shape",
    "server_caveats",
    "server_price",
    "catalog_problem",
]

_SEVERITIES = ("critical", "warning", "info")


def _esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _stat(summary: RunSummary, table: str, field: str, **attrs: object) -> Optional[float]:
    """This run's `field` of the first stats column of `table` with the registry `attrs`."""
    for col in stat_columns(table):
        if all(getattr(col, k) == v for k, v in attrs.items()):
            row = summary.row(col.key, field)
            return None if row is None else row.value
    return None


def gpu_seen(summary: RunSummary) -> bool:
    """A GPU was there: the machine has one, or a GPU or VRAM statistic is above zero."""
    info = summary.server_info or {}
    if info.get("gpu_count"):
        return True
    return any((r.value or 0) > 0 for r in summary.rows if gpu_row(r) and r.field == "max")


def gpu_row(row: StatRow) -> bool:
    """A statistics row of a GPU column (the registry's ``gpu`` and ``vram`` charts)."""
    col = by_key(row.key)
    return col is not None and col.chart in ("gpu", "vram")


def capacity(summary: RunSummary) -> Tuple[Optional[float], Optional[float], str, str]:
    """(cores, memory MiB, where the cores figure is from, where the memory figure is from)
    the run had: a container's limit where lower than the machine's, else the machine's."""
    info = summary.server_info or {}
    cgroup = info.get("cgroup") or {}
    cores, mem = info.get("vcpus"), info.get("memory_mb")
    cpu_where = mem_where = "machine"
    limit = cgroup.get("cpu_limit_cores")
    if limit and (not cores or limit < cores):
        cores, cpu_where = limit, "container limit"
    limit = cgroup.get("memory_limit_mb")
    if limit and (not mem or limit < mem):
        mem, mem_where = limit, "container limit"
    return cores, mem, cpu_where, mem_where


def _bar(part: Optional[float], whole: Optional[float]) -> str:
    if not part or not whole or whole <= 0:
        return ""
    pct = max(min(part / whole * 100.0, 100.0), 1.0)
    cls = " rt-bar-high" if part / whole >= 0.9 else ""
    return (
        f'<span class="rt-bar{cls}" role="img" aria-label="{pct:.0f}% of the capacity">'
        f'<span style="width:{pct:.0f}%"></span></span>'
    )


def _tile(tile_id: str, title: str, value: str, sub: str = "", bar: str = "") -> str:
    return (
        f'<div class="rt-tile" id="rt-tile-{tile_id}"><div class="rt-tile-title">{title}</div>'
        f'<div class="rt-tile-value">{value}</div>{bar}'
        + (f'<div class="rt-tile-sub">{sub}</div>' if sub else "")
        + "</div>"
    )


def _usage_tiles(summary: RunSummary) -> List[str]:
    cores, mem_mib, cpu_where, mem_where = capacity(summary)
    run = summary.run
    tiles = [
        _tile(
            "duration",
            "Duration",
            _esc(fmt.duration(summary.duration)),
            _esc(f"{fmt.plural(summary.n_samples, 'sample')} every {fmt.duration(run.interval)}"),
        )
    ]
    mem = _stat(summary, "process", "max", resource="memory")
    mem_b = None if mem is None else mem * 1024.0
    of = f"of {fmt.nbytes(mem_mib * 2**20)} ({mem_where})" if mem_mib else "capacity unknown"
    bar = _bar(mem_b, (mem_mib or 0) * 2**20)
    tiles.append(_tile("memory", "Peak memory", _esc(fmt.nbytes(mem_b)), _esc(of), bar))
    mean = _stat(summary, "process", "mean", resource="cpu")
    peak = _stat(summary, "process", "max", resource="cpu")
    vcpus = (summary.server_info or {}).get("vcpus")
    if vcpus and peak is not None:  # sampling jitter never shows more cores than there are
        peak = min(peak, float(vcpus))
    sub = f"mean {fmt.quantity(mean, 'cores')}"
    sub += f" · of {fmt.quantity(cores, 'cores')} ({cpu_where})" if cores else ""
    value = _esc(fmt.quantity(peak, "cores"))
    tiles.append(_tile("cpu", "Peak CPU", value, _esc(sub), _bar(peak, cores)))
    if gpu_seen(summary):
        tiles.append(_gpu_tile(summary))
    return tiles


def _gpu_tile(summary: RunSummary) -> str:
    info = summary.server_info or {}
    gpus = _stat(summary, "process", "max", resource="gpu")
    vram = _stat(summary, "process", "max", resource="vram")
    total = info.get("gpu_memory_mb")
    value = f"{fmt.quantity(gpus, 'GPUs')} · VRAM {fmt.quantity(vram, 'MiB')}"
    sub = f"of {fmt.plural(info.get('gpu_count') or 0, 'GPU')}"
    if total:
        sub += f", {fmt.quantity(total, 'MiB')} VRAM"
    return _tile("gpu", "GPU peak", _esc(value), _esc(sub), _bar(vram, total))


def resources_line(rec: Mapping[str, Any]) -> str:
    """The Metaflow decorator for the recommendation (memory in MiB, as Metaflow takes it):
    the one printer of it, ``tuning.resources_line``, as the card, the CLI and the demo."""
    return tuning_resources_line(rec)


def _recommendation(summary: RunSummary) -> str:
    rec = summary.resources
    if rec is None:
        return ""
    parts = [
        fmt.plural(rec.get("cpu") or 1, "CPU"),
        f"{fmt.quantity(rec.get('memory'), 'MiB')} memory",
    ]
    if rec.get("gpu"):
        parts += [fmt.plural(rec["gpu"], "GPU"), f"{fmt.quantity(rec.get('vram'), 'MiB')} VRAM"]
    basis = "this run"
    if summary.tuned_from:  # the tuned request, as the card's "Next run" line gives it
        basis = f"tuned by @track_resources from {fmt.plural(summary.tuned_from, 'run')}"
    elif summary.history and summary.history.stats:
        basis += f" and {fmt.plural(len(summary.history.stats), 'earlier run')}"
    line = resources_line(rec)
    if summary.run.status == "failed":
        basis += " (cut short by its failure: it may need more than it reached)"
    return (
        '<div class="rt-answer" id="rt-recommended"><div class="rt-tile-title">Recommended '
        f'for the next run</div><div class="rt-answer-value">{_esc(" · ".join(parts))}</div>'
        f'<pre class="rt-code"><code>{_esc(line)}</code></pre>'
        f'<div class="rt-tile-sub">from {_esc(basis)}</div></div>'
    )


def server_name(server: object) -> str:
    if not isinstance(server, dict):
        return _esc(server)
    vendor = server.get("vendor")
    vendor_name = vendor.get("name") if isinstance(vendor, dict) else None
    vendor_name = vendor_name or server.get("vendor_id") or ""
    name = server.get("display_name") or server.get("server_id") or server.get("api_reference")
    text = f"{_esc(vendor_name)} <code>{_esc(name)}</code>"
    region = server.get("price_region_id") or server.get("region_id") or server.get("region")
    if isinstance(region, str) and region:
        text += f" in {_esc(region)}"
    return text


def _price(server: object) -> Optional[float]:
    for key in ("price", "min_price", "min_price_ondemand"):
        if isinstance(server, dict) and server.get(key) is not None:
            return server.get(key)
    return None


def server_price(server: object) -> str:
    """The hourly price of a catalog record, with its allocation (spot/on-demand)."""
    text = _esc(fmt.money(_price(server), "h"))
    kind = _esc(fmt.price_allocation(server))
    if kind and text != fmt.NA:
        text += f' <span class="rt-nowrap">({kind})</span>'
    return f'<span class="rt-nowrap">{text}</span>' if " " not in text else text


def server_shape(server: object) -> str:
    if not isinstance(server, dict):
        return fmt.NA
    parts = [
        fmt.plural(server.get("vcpus"), "vCPU"),
        fmt.quantity(server.get("memory_amount"), "MiB"),
    ]
    if server.get("gpu_count"):
        parts.append(fmt.plural(server["gpu_count"], "GPU"))
    return _esc(" · ".join(parts))


def server_caveats(server: object, summary: RunSummary) -> str:
    """The caveats of a pick (architecture, burstable, no GPU; the region is in its name) as
    HTML, with a warning when its architecture is not the run's."""
    run_arch = (summary.server_info or {}).get("architecture")
    parts, mismatch = fmt.server_caveats(server, run_arch, region=False)
    text = _esc(" · ".join(parts))
    if mismatch:
        text += f' <span class="rt-caveat-warn">{_esc(mismatch[0].upper() + mismatch[1:])}</span>'
    return text


def _server(summary: RunSummary) -> str:
    best = summary.server.best
    if best is None:
        return ""
    source = best.get("price_source") if isinstance(best, dict) else None
    return (
        '<div class="rt-answer" id="rt-best-server"><div class="rt-tile-title">Cheapest '
        f'fitting server</div><div class="rt-answer-value">{server_name(best)}</div>'
        f"<div>{server_shape(best)} · <b>{server_price(best)}</b></div>"
        f'<div class="rt-caveats">{server_caveats(best, summary)}</div>'
        + _alternative(summary)
        + (f'<div class="rt-tile-sub">Prices: {_esc(source)}</div>' if source else "")
        + "</div>"
    )


def _alternative(summary: RunSummary) -> str:
    """The other architecture's cheaper server, when there is one (HTML)."""
    text = fmt.alternative_server(getattr(summary.server, "alternative", None))
    return f'<div class="rt-tile-sub" id="rt-alternative">{_esc(text)}</div>' if text else ""


def _cost(summary: RunSummary) -> str:
    costs = summary.server.costs or {}
    ran, rec = costs.get("run_cost_usd"), costs.get("recommended_run_cost_usd")
    if ran is None and rec is None:
        return ""
    lines = []
    if ran is not None:
        lines.append(f"<b>{_esc(fmt.money(ran))}</b> as it ran")
    if rec is not None:
        lines.append(f"<b>{_esc(fmt.money(rec))}</b> on the recommended server")
    saving = costs.get("saving_usd")
    sub = ""
    if saving is not None and ran:
        sub = f"saving {fmt.money(saving)} ({fmt.percent(saving / ran)}) per run like this"
    elif ran is None and costs.get("current_price_note"):
        sub = f"cost where it ran unknown: {costs['current_price_note']}"
    return (
        '<div class="rt-answer" id="rt-cost"><div class="rt-tile-title">Cost of this run</div>'
        f'<div class="rt-answer-value">{"<br>".join(lines)}</div>'
        + (f'<div class="rt-tile-sub">{_esc(sub)}</div>' if sub else "")
        + "</div>"
    )


def _energy(summary: RunSummary) -> str:
    """The run's energy beside its cost: the machine's (measured) and the process's share
    (an estimate); nothing when no source measured any (the data-quality note says why)."""
    shown = energy_lines((summary.stats or {}).get("energy"))
    if shown is None:
        return ""
    return (
        '<div class="rt-answer" id="rt-energy"><div class="rt-tile-title">Energy of this run</div>'
        f'<div class="rt-answer-value"><b>{_esc(shown[0])}</b></div>'
        f'<div class="rt-tile-sub">{_esc(shown[1])}</div></div>'
    )


def _field(item: object, name: str, default: object = None) -> object:
    if isinstance(item, dict):
        return item.get(name, default)
    return getattr(item, name, default)


def insights_html(summary: RunSummary) -> str:
    """summary.insights (issue 17's Insight values, or their dicts), one line each with its
    severity, the most severe first; nothing when there are none."""
    items = list(getattr(summary, "insights", ()) or ())
    if not items:
        return ""

    def rank(item: object) -> int:
        sev = str(_field(item, "severity", "info"))
        return _SEVERITIES.index(sev) if sev in _SEVERITIES else len(_SEVERITIES)

    lines = []
    for item in sorted(items, key=rank):
        sev = str(_field(item, "severity", "info"))
        sev_cls = sev if sev in _SEVERITIES else "info"
        lines.append(
            f'<li class="rt-insight rt-sev-{sev_cls}" data-kind="{_esc(_field(item, "kind"))}">'
            f'<span class="rt-badge">{_esc(sev)}</span> {_esc(_field(item, "message"))}</li>'
        )
    return f'<ul class="rt-insights" id="rt-insights">{"".join(lines)}</ul>'


def catalog_problem(text: str) -> str:
    """A catalog warning as one short line (formatting.catalog_problem), as HTML."""
    line = _esc(fmt.catalog_problem(text))
    code = _esc("`resource-tracker catalog update`")
    return line.replace(code, "<code>resource-tracker catalog update</code>")


def problems(summary: RunSummary) -> List[str]:
    """One line (HTML) per problem of the recommendation, the catalog or the server choice."""
    lines = [_esc(t) for t in summary.warnings_about("recommendation")]
    catalog = summary.warnings_about("catalog")
    if catalog and "not consulted" not in catalog[0]:
        lines.append(catalog_problem(catalog[0]))
    elif catalog:
        lines.append("Server prices were not looked up (lookup_server=False).")
    lines += [_esc(t) for t in summary.warnings_about("server")]
    return lines


def headline(summary: RunSummary) -> str:
    """The headline band (HTML)."""
    answers = _recommendation(summary) + _server(summary) + _cost(summary) + _energy(summary)
    out = [
        '<section id="rt-headline" class="rt-headline" aria-label="Summary">',
        f'<div class="rt-tiles">{"".join(_usage_tiles(summary))}</div>',
        f'<div class="rt-answers">{answers}</div>' if answers else "",
        insights_html(summary),
    ]
    out += [f'<p class="rt-note rt-warn rt-problem">{line}</p>' for line in problems(summary)]
    out.append("</section>")
    return "".join(out)
