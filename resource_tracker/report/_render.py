"""Builds the report page: HTML sections in Python, charts drawn in the browser by report.js.

The page is written from the run's summary (``resource_tracker.summary.RunSummary``: the
statistics, the history, the recommendation, the servers and costs, the warnings) and the
two tables (for the charts); rendering asks no catalog and computes no statistic. Labels,
units and which statistics and charts there are come from the column registry. Rendering
is deterministic: the same summary and tables (also after ``dumps()``/``loads()``) give the
same page byte for byte. Times are written in UTC and turned into the viewer's local
time by the page's script. Every string that comes from outside (command lines, labels,
metadata answers, catalog records, error messages) goes through ``_esc``.
"""

from __future__ import annotations

import math
import os

from ..summary import DURATION

#: Most points per table sent to the browser; longer runs keep the min and max of each bucket.
MAX_POINTS = 2400

_HERE = os.path.dirname(os.path.abspath(__file__))


class Report(str):
    """The HTML report: a str with save(), browse() and inline display in notebooks."""

    def save(self, path):
        """Writes the page to path (UTF-8); returns the path."""
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self)
        return path

    def browse(self):
        """Writes the page to a temporary file and opens it in the web browser; returns the
        file's path.

        The browser is started as a process of its own before this returns, so
        ``tracker.report().browse()`` works as a script's last line. ``BROWSER`` picks the
        browser, as usual. With no browser to open, it says on stderr where the file is.
        """
        import pathlib
        import sys
        import tempfile

        from ._browse import open_in_browser

        fd, path = tempfile.mkstemp(prefix="resource-tracker-report-", suffix=".html")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self)
        if not open_in_browser(pathlib.Path(path).as_uri()):
            print(
                f"resource-tracker: no web browser found; the report is at {path}",
                file=sys.stderr,
            )
        return path

    def _repr_html_(self):
        """The page in an iframe (srcdoc), so its styles and scripts stay out of the notebook."""
        from html import escape

        return (
            '<iframe class="resource-tracker-report" title="resource-tracker report" '
            'style="width:100%;height:900px;border:1px solid #d0d7de;border-radius:6px" '
            f'srcdoc="{escape(str(self), quote=True)}"></iframe>'
        )

    def __repr__(self):
        return f"<Report: {len(self)} characters of HTML; save(path) or browse() to view>"


# -- small helpers ------------------------------------------------------------------------


def _esc(value):
    """value as text safe inside HTML elements and attribute values."""
    from html import escape

    return escape("" if value is None else str(value), quote=True)


def _num(value, digits=2):
    """A number for a table cell ('n/a' when unknown)."""
    if value is None:
        return "n/a"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return _esc(value)
    if not math.isfinite(value):
        return "n/a"
    if value == int(value) and abs(value) < 1e15 and digits <= 2:
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def _bytes(value, binary=False):
    """A byte count with a unit (decimal kB/MB/GB, or binary KiB/MiB/GiB)."""
    if value is None:
        return "n/a"
    value = float(value)
    base = 1024.0 if binary else 1000.0
    units = ["B", "KiB", "MiB", "GiB", "TiB"] if binary else ["B", "kB", "MB", "GB", "TB"]
    i = 0
    while abs(value) >= base and i < len(units) - 1:
        value /= base
        i += 1
    return f"{value:,.0f} {units[i]}" if i == 0 else f"{value:,.2f} {units[i]}"


def _mib(value_mib):
    """A MiB amount, shown in GiB from 1 GiB up."""
    if value_mib is None:
        return "n/a"
    value_mib = float(value_mib)
    if value_mib >= 1024:
        return f"{value_mib / 1024:,.1f} GiB"
    return f"{value_mib:,.0f} MiB"


def _duration(seconds):
    """Seconds as '1 h 02 min 03 s' (or '3.2 s')."""
    if seconds is None:
        return "n/a"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h} h {m:02d} min {sec:02d} s"
    return f"{m} min {sec:02d} s"


def _utc(epoch):
    """A <time> element: UTC text that the page's script rewrites to local time."""
    if not epoch:
        return "n/a"
    import datetime as _dt

    when = _dt.datetime.fromtimestamp(float(epoch), tz=_dt.timezone.utc)
    text = when.strftime("%Y-%m-%d %H:%M:%S UTC")
    iso = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f'<time class="rt-time" datetime="{iso}" data-epoch="{float(epoch):.3f}">{text}</time>'


def _table(rows, head=None, cls="rt-kv"):
    """An HTML table; rows are lists of cells that are already HTML."""
    out = [f'<table class="{cls}">']
    if head:
        out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead>")
    out.append("<tbody>")
    for row in rows:
        first, rest = row[0], row[1:]
        out.append(f"<tr><th>{first}</th>" + "".join(f"<td>{c}</td>" for c in rest) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _note(text, kind="info"):
    return f'<p class="rt-note rt-{kind}">{text}</p>'


def _column(df, name):
    """A column of a TinyDataFrame-like table as a sequence of floats (empty when absent)."""
    if df is None:
        return []
    try:
        if name not in df.columns:
            return []
    except Exception:
        return []
    getter = getattr(df, "column_array", None)
    return getter(name) if getter is not None else list(df[name])


def _resource(name):
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return f.read()


REPORT_STATUSES = ("finished", "failed", "running", "stopped")


def render_report(tracker, historical_stats=None, status=None, integration=None, summary=None):
    """The HTML report of tracker (a ResourceTracker, also one loaded from a snapshot).

    Args:
        tracker: any object with the ResourceTracker attributes (process_metrics,
            system_metrics, summary() or stats()/recommend_resources(), ...).
        historical_stats: earlier runs to compare with: a list of ``stats()`` dicts, or the
            summary dict of the Metaflow extension (``avg_cpu_mean``, ``max_memory_max``, ...).
        status: the status to show in place of the tracker's own (one of REPORT_STATUSES).
        integration: the name of what ran the job (e.g. 'Metaflow'), shown on the page.
        summary: the run's RunSummary when the caller has it (else ``tracker.summary()``).

    Returns:
        Report (a str).
    """
    _check_options(status, integration)
    if summary is None:
        if callable(getattr(tracker, "summary", None)):
            summary = tracker.summary(historical_stats)
        else:
            from ..summary import build_summary

            summary = build_summary(tracker, historical_stats)
    process, system = _attr(tracker, "process_metrics"), _attr(tracker, "system_metrics")
    return render_summary(summary, process, system, status=status, integration=integration)


def render_summary(summary, process=None, system=None, *, status=None, integration=None):
    """The HTML report of a RunSummary and the run's two tables (for the charts).

    Pure formatting: no catalog, no network, no file but the package's own template, and
    nothing recomputed; the same summary and tables give the same page byte for byte.
    """
    _check_options(status, integration)
    view = _View(summary, status, integration or summary.run.integration)
    return Report(_page_html(view, process, system))


def _check_options(status, integration):
    if status is not None and status not in REPORT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(REPORT_STATUSES)}, got {status!r}")
    if integration is not None and not isinstance(integration, str):
        raise ValueError(f"integration must be a name such as 'Metaflow', got {integration!r}")


class _View:
    """The summary with the page's own overrides (status, integration)."""

    def __init__(self, summary, status, integration):
        self.s = summary
        self.run = summary.run
        self.status = status or summary.run.status
        self.integration = integration


# -- the page -----------------------------------------------------------------------------


def _page_html(view, process, system):
    import json
    import re

    raws = []

    def raw(obj):
        raws.append(obj.text)
        return f"@@RAW{len(raws) - 1}@@"

    chart_data, downsampled = _chart_data(view.s, process, system)
    data = json.dumps(chart_data, separators=(",", ":"), allow_nan=False, default=raw)
    for i, text in enumerate(raws):
        data = data.replace(f'"@@RAW{i}@@"', text, 1)
    sections = (_header, _server, _cgroup, _cloud, _usage, _recommendations)
    body = "".join(section(view) for section in sections)
    body += _charts(view.s, downsampled) + _FOOTER
    # inside <script>: no "</script>", no "<!--", no line separators
    for char, escaped in _SCRIPT_ESCAPES:
        data = data.replace(char, escaped)
    parts = {
        "TITLE": _esc(f"Resource usage: {_what(view.run)}"),
        "CSS": _resource("report.css"),
        "BODY": body,
        "DATA": data,
        "JS": _resource("report.js"),
    }
    # one pass over the template: text put in cannot be taken for a placeholder
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], _resource("template.html"))


_SCRIPT_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _what(run):
    if run.label:
        return run.label
    command = " ".join((run.command or "").split())
    if len(command) > 80:
        command = command[:77] + "..."
    return command or f"pid {run.pid}"


def _samples_note(n):
    return f"{n} sample{'' if n == 1 else 's'}"


def _run_rows(view):
    from .._version import __version__

    run = view.run
    rows = [["Step", f"<code>{_esc(run.label)}</code>"]] if run.label else []
    command = f'<code class="rt-cmd">{_esc(run.command)}</code>' if run.command else "n/a"
    pid_text = _esc(run.pid)
    if run.children is not None:
        pid_text += " (with its descendants)" if run.children else " (without descendants)"
    status = _esc(view.status)
    rows += [
        ["Command", command],
        ["PID", pid_text],
        ["Start", _utc(run.start_time)],
        ["End", _utc(run.stop_time) if run.stop_time else status],
        ["Duration", _esc(_duration(view.s.duration))],
        ["Status", f'<span class="rt-status rt-status-{status}">{status}</span>'],
        ["Samples", f"{view.s.n_samples:,}"],
        ["Sampling interval", f"{_num(run.interval, 3)} s"],
        ["Collection method", _esc(run.method or "n/a")],
        *([["Integration", _esc(view.integration)]] if view.integration else []),
        ["Tool", f"resource-tracker {_esc(__version__)}"],
    ]
    return rows


def _header(view):
    n = view.s.n_samples
    out = [
        '<header class="rt-header">',
        _LOGO,
        "<div><h1>Resource usage report</h1>",
        f'<p class="rt-sub">{_esc(_what(view.run))}</p></div></header>',
    ]
    if view.status == "failed":
        out.append(_note("The run failed: the data covers it up to the failure.", "warn"))
    if n < 2:
        out.append(
            _note(
                f"Not enough data: {_samples_note(n)} recorded. Charts need at least 2 "
                "samples; track for longer than the sampling interval "
                "(or use a shorter interval).",
                "warn",
            )
        )
    for text in view.s.warnings_about("data"):
        out.append(_note(_esc(text), "warn"))
    out.append(_insights(view))
    out.append('<section id="rt-run"><h2>Run</h2>' + _table(_run_rows(view)) + "</section>")
    return "".join(out)


def _insights(view):
    """The summary's findings (resource_tracker.insights), one line each with its severity
    (a minimal rendering until the report's redesign shows them its own way)."""
    found = getattr(view.s, "insights", ())
    if not found:
        return ""
    items = "".join(
        f'<li class="rt-insight rt-{_esc(i.severity)}"><b>{_esc(i.severity)}</b>: '
        f"{_esc(i.message)}</li>"
        for i in found
    )
    return f'<section id="rt-insights"><h2>Insights</h2><ul>{items}</ul></section>'


def _server(view):
    info = view.s.server_info
    out = ['<section id="rt-server"><h2>Server</h2>']
    if not info:
        out.append(_note("Server information was not collected (discover_server=False)."))
        return "".join(out) + "</section>"
    if info.get("error"):
        out.append(_note(f"Server discovery failed: {_esc(info['error'])}", "warn"))
    gpu_names = info.get("gpu_names") or []
    if isinstance(gpu_names, (list, tuple)):
        gpu_names = ", ".join(str(g) for g in gpu_names)
    rows = [
        ["CPU", _esc(info.get("cpu_model") or "n/a")],
        ["vCPUs", _num(info.get("vcpus"))],
        ["Memory", _mib(info.get("memory_mb"))],
        [
            "GPUs",
            f"{_num(info.get('gpu_count') or 0)}" + (f" ({_esc(gpu_names)})" if gpu_names else ""),
        ],
        ["VRAM", _mib(info.get("gpu_memory_mb")) if info.get("gpu_memory_mb") else "none"],
        ["Architecture", _esc(info.get("architecture") or "n/a")],
        ["Operating system", _esc(info.get("os") or "n/a")],
        ["Container limits", _limits(info.get("cgroup") or {})],
    ]
    out.append(_table(rows))
    return "".join(out) + "</section>"


def _limits(cgroup):
    cpu_limit, mem_limit = cgroup.get("cpu_limit_cores"), cgroup.get("memory_limit_mb")
    if not (cpu_limit or mem_limit):
        return "none set"
    limits = []
    if cpu_limit:
        limits.append(f"CPU {_num(cpu_limit)} cores")
    if mem_limit:
        limits.append(f"memory {_mib(mem_limit)}")
    version = cgroup.get("version")
    text = ", ".join(limits) + (f" (cgroup v{_esc(version)})" if version else "")
    return f'<span class="rt-limits">{text}</span>'


def _seconds(value):
    return "n/a" if value is None else f"{_num(value)} s"


def _cgroup(view):
    """The container's own figures (stats()["cgroup"]), when the run had a cgroup."""
    cg = (view.s.stats or {}).get("cgroup")
    if not cg:
        return ""
    out = ['<section id="rt-cgroup"><h2>Container (cgroup)</h2>']
    if not cg.get("dedicated"):
        out.append(
            _note(
                "Other processes shared this cgroup: its figures cover them too, not only "
                "the tracked workload."
            )
        )
    throttled = cg.get("cpu_throttled_periods")
    limit, quota = cg.get("memory_limit_mib"), cg.get("cpu_limit_cores")
    throttling = (
        "n/a"
        if throttled is None
        else f"{_num(throttled, 0)} of {_num(cg.get('cpu_periods'), 0)} periods, "
        f"{_seconds(cg.get('cpu_throttled_seconds'))}"
    )
    rows = [
        ["cgroup", f"<code>{_esc(cg.get('path'))}</code> (v{_esc(cg.get('version'))})"],
        ["Memory at the end", _mib(cg.get("memory_mib"))],
        ["Memory peak (kernel high-water mark)", _mib(cg.get("memory_peak_mib"))],
        ["Memory limit", _mib(limit) if limit else "none"],
        ["CPU quota", f"{_num(quota)} cores" if quota else "none"],
        ["CPU time", _seconds(cg.get("cpu_seconds"))],
        ["CPU throttled", throttling],
        ["OOM kills", "n/a" if cg.get("oom_kills") is None else _num(cg["oom_kills"], 0)],
    ]
    out.append(_table(rows))
    return "".join(out) + "</section>"


def _cloud(view):
    info = view.s.cloud_info
    out = ['<section id="rt-cloud"><h2>Cloud</h2>']
    if not info or not info.get("vendor"):
        out.append(
            _note(
                "No cloud detected: the run was not on a known cloud server, or cloud "
                "discovery was off."
            )
        )
        return "".join(out) + "</section>"
    rows = [
        ["Vendor", _esc(info.get("vendor"))],
        ["Region", _esc(info.get("region") or "n/a")],
        ["Instance type", f"<code>{_esc(info.get('instance_type') or 'n/a')}</code>"],
    ]
    costs = view.s.server.costs
    if costs:
        rows.append(["Hourly price", _usd(costs.get("current_hourly_usd"), "/h")])
        rows.append(["Cost of this run", _usd(costs.get("run_cost_usd"))])
        if costs.get("current_price_note"):
            rows.append(["Price note", _esc(costs["current_price_note"])])
    else:
        rows.append(["Hourly price", "n/a"])
    if info.get("discovery_time") is not None:
        rows.append(["Discovery took", f"{_num(info.get('discovery_time'), 3)} s"])
    out.append(_table(rows))
    for text in view.s.warnings_about("catalog"):
        out.append(_note(_esc(text), "warn"))
    return "".join(out) + "</section>"


# -- statistics ---------------------------------------------------------------------------


def _f2(v):
    return _num(v, 2)


def _f0(v):
    return _num(v, 0)


def _kib_as_mib(v):
    return "n/a" if v is None else f"{float(v) / 1024.0:,.1f} MiB"


def _gb(v):
    return "n/a" if v is None else f"{float(v):,.2f} GB"


# registry unit -> (what the row's label adds, how a value is written)
_UNIT_FORMATS = {
    "cores": (" (cores)", _f2),
    "GPUs": (" (GPUs)", _f2),
    "MiB": (" (MiB)", _f2),
    "processes": ("", _f0),
    "KiB": ("", _kib_as_mib),
    "B": ("", _bytes),
    "GB": ("", _gb),
    "s": ("", _duration),
}


def _unit_format(unit):
    """(label suffix, formatter) of a registry unit; unknown units are written after the
    number."""
    if unit in _UNIT_FORMATS:
        return _UNIT_FORMATS[unit]
    return "", lambda v: "n/a" if v is None else f"{_num(v)} {_esc(unit)}".rstrip()


def _usage(view):
    out = ['<section id="rt-usage"><h2>Usage statistics</h2>']
    s = view.s
    if not s.stats or s.n_samples == 0:
        out.append(_note("Not enough data: no samples, so there are no statistics."))
        return "".join(out) + "</section>"
    hist = s.history
    head = ["Metric", "This run"]
    if hist:
        head += [f"Earlier runs ({hist.runs})", "Change"]
    duration = s.row(*DURATION)
    rows = []
    for row in s.rows:
        if row.value is None and row is not duration:
            continue
        suffix, fmt = _unit_format(row.unit)
        cells = [_esc(row.label + suffix), fmt(row.value)]
        if hist:
            cells += [
                fmt(row.past) if row.past is not None else "n/a",
                _change(row.value, row.past),
            ]
        rows.append(cells)
    out.append(_table(rows, head=head, cls="rt-stats"))
    if hist:
        out.append(
            _note(
                "Earlier runs: the mean of their means, the highest of their peaks, the mean "
                "of their totals and durations. Change: this run against them."
            )
        )
    return "".join(out) + "</section>"


def _recommendations(view):
    out = ['<section id="rt-recommendations"><h2>Recommendations</h2>']
    rec = view.s.resources
    if rec is None:
        for text in view.s.warnings_about("recommendation"):
            out.append(_note(_esc(text), "warn"))
        return "".join(out) + "</section>"
    basis = "this run"
    if view.s.history and view.s.history.stats:
        basis += f" and {len(view.s.history.stats)} earlier run(s)"
    rows = [
        ["CPU", f"{_num(rec.get('cpu'))} core{'' if rec.get('cpu') == 1 else 's'}"],
        ["Memory", f"{_num(rec.get('memory'))} MiB"],
        ["GPUs", _num(rec.get("gpu"))],
        ["VRAM", f"{_num(rec.get('vram'))} MiB"],
    ]
    out.append(f"<p>Resources for the next run (from {_esc(basis)}):</p>")
    out.append(_table(rows))
    line = (
        f"@resources(cpu={int(rec.get('cpu') or 1)}, memory={int(rec.get('memory') or 0)}, "
        f"gpu={int(rec.get('gpu') or 0)})"
    )
    out.append(
        f'<p>As a Metaflow decorator:</p><pre class="rt-code"><code>{_esc(line)}</code></pre>'
    )
    out.append(_servers(view.s))
    return "".join(out) + "</section>"


def _servers(summary):
    """The recommended server, its alternatives and costs (summary.server)."""
    out = ['<h3>Recommended cloud server</h3><div id="rt-servers">']
    problems = summary.warnings_about("server", "catalog")
    if problems:
        out.extend(_note(_esc(text), "warn") for text in problems)
        return "".join(out) + "</div>"
    choice = summary.server
    if not choice.servers:
        out.append(_note("No server recommendation (no resources to match)."))
        return "".join(out) + "</div>"
    best, costs = choice.servers[0], choice.costs or {}
    rows = [
        ["Server", _server_name(best)],
        ["vCPUs / memory / GPUs", _server_shape(best)],
        ["Hourly price", _server_price(best)],
        ["Cost of this run on it", _usd(costs.get("recommended_run_cost_usd"))],
    ]
    if costs.get("run_cost_usd") is not None:
        rows.append(["Cost of this run as it ran", _usd(costs.get("run_cost_usd"))])
    if costs.get("saving_usd") is not None:
        rows.append(["Saving", _usd(costs.get("saving_usd"))])
    out.append(_table(rows))
    if isinstance(best, dict) and best.get("price_source"):
        out.append(_note(f"Prices: {_esc(best['price_source'])}."))
    out.append(_alternatives(choice.servers))
    eur = any(
        isinstance(s, dict) and str(s.get("price_currency", "EUR")).upper() == "EUR"
        for s in choice.servers[:4]
    )
    if eur and costs.get("eur_usd_rate"):
        out.append(_note(f"EUR prices converted at {_num(costs['eur_usd_rate'], 4)} USD/EUR."))
    return "".join(out) + "</div>"


def _alternatives(servers):
    if len(servers) < 2:
        return ""
    rows = [[_server_name(s), _server_shape(s), _server_price(s)] for s in servers[1:4]]
    head = ["Server", "vCPUs / memory / GPUs", "Hourly price"]
    return "<h3>Alternatives</h3>" + _table(rows, head=head, cls="")


def _charts(summary, downsampled):
    out = ['<section id="rt-charts"><h2>Usage over time</h2>']
    n = summary.n_samples
    if n < 2:
        out.append(_note(f"Not enough data to draw charts: {_samples_note(n)}.", "warn"))
        return "".join(out) + "</section>"
    out.append(
        '<p class="rt-help">Hover a chart to read all charts at that time; drag across a '
        "chart to zoom in; double-click (or the button) to zoom out. Times are in your "
        'local time zone. <button type="button" id="rt-reset">Reset zoom</button></p>'
    )
    down = [
        f"{name}: {rows:,} samples shown as {pts:,} points (min and max of each interval)"
        for name, rows, pts in downsampled
        if pts < rows
    ]
    if down:
        out.append(
            _note(
                "Long run: "
                + "; ".join(_esc(d) for d in down)
                + ". Every peak is kept; the statistics use all samples."
            )
        )
    out.append('<div id="rt-chart-grid" class="rt-grid"></div>')
    out.append('<noscript><p class="rt-note rt-warn">The charts need JavaScript.</p></noscript>')
    return "".join(out) + "</section>"


_FOOTER = (
    '<footer class="rt-footer">Made by resource-tracker. Server and price data: '
    "Spare Cores (CC BY-SA 4.0). This page works offline: it loads nothing from "
    "the network.</footer>"
)


# -- charts: which registry columns each chart draws ---------------------------------------


def _is_network(col):
    return "network" in col.label


def _drawn(col):
    """Columns in stats() are drawn; of the gauges in GB, the capacity ("... total") too."""
    return col.aggregate != "none" or (col.unit == "GB" and col.label.endswith(" total"))


# id, title, axis unit (report.js), which columns
_CHARTS = (
    ("cpu", "CPU", "cores", lambda c: c.unit == "cores"),
    ("memory", "Memory", "mib", lambda c: c.unit == "KiB"),
    ("gpu", "GPU utilisation and GPUs in use", "gpus", lambda c: c.unit == "GPUs"),
    ("vram", "GPU memory (VRAM)", "mib", lambda c: c.unit == "MiB"),
    ("diskio", "Disk I/O", "Bps", lambda c: c.unit == "B" and not _is_network(c)),
    ("diskspace", "Disk space", "gb", lambda c: c.unit == "GB"),
    ("network", "Network", "Bps", lambda c: c.unit == "B" and _is_network(c)),
)

_COLORS = ("#1f6feb", "#e36209", "#1a7f37", "#8250df", "#8c959f")
_TABLE_KEYS = {"process": "p", "system": "s"}


def _chart_columns(select):
    from ..registry import COLUMNS

    return [c for c in COLUMNS if c.name != "timestamp" and _drawn(c) and select(c)]


def _series_name(col, cols):
    """The table's name when the chart has one column per table, else the column's label."""
    tables = [c.table for c in cols]
    if len(set(tables)) == len(tables):
        return col.table.capitalize()
    return col.label


def _chart_data(summary, process, system):
    """(the page's chart data, [(table, rows, points drawn)])."""
    tables, downsampled = {}, []
    interval = float(summary.run.interval or 1.0)
    if summary.n_samples >= 2:
        for name, df, n in (
            ("process", process, summary.n_process),
            ("system", system, summary.n_system),
        ):
            if n >= 2:
                data, points = _table_data(name, df, interval)
                tables[_TABLE_KEYS[name]] = data
                downsampled.append((name, data["rows"], points))
    charts = []
    for chart_id, title, unit, select in _CHARTS:
        cols = [c for c in _chart_columns(select) if _TABLE_KEYS[c.table] in tables]
        series = [
            dict(name=_series_name(c, cols), table=_TABLE_KEYS[c.table], key=c.name, color=color)
            for c, color in zip(cols, _COLORS)
        ]
        if series:
            charts.append(dict(id=chart_id, title=title, unit=unit, series=series))
    t0 = min((tab["t0"] for tab in tables.values()), default=0)
    return {"t0": t0, "tables": tables, "charts": charts}, downsampled


def _series_values(col, values, dts):
    """A column as drawn: KiB in MiB, amounts per interval as rates per second."""
    if col.unit == "KiB":
        return [v / 1024.0 for v in values]
    if col.fold == "sum":
        return [v / d if d > 0 else 0.0 for v, d in zip(values, dts)]
    return values


def _table_data(name, df, interval):
    """(one table's chart data, points drawn per series)."""
    from ..registry import columns

    t = _column(df, "timestamp")
    n = len(t)
    dts = [interval] + [b - a for a, b in zip(t, t[1:])] if n else []
    cols = {}
    for col in columns(name):
        if any(select(col) for *_, select in _CHARTS) and _drawn(col):
            values = _column(df, col.name)
            if len(values) == n:
                cols[col.name] = _series_values(col, values, dts)
    t_out, cols_out = _downsample(t, cols, MAX_POINTS)
    t0 = math.floor(t[0]) if n else 0
    data = {
        "t0": t0,
        "rows": n,
        "t": _RawJson("[" + ",".join(f"{v - t0:.3f}" for v in t_out) + "]"),
        "s": {k: _RawJson(_json_numbers(v)) for k, v in cols_out.items()},
    }
    return data, len(t_out)


# -- catalog records ---------------------------------------------------------------------


def _usd(value, suffix=""):
    if value is None:
        return "n/a"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return _esc(value)
    digits = 4 if abs(value) < 1 else 2
    return f"${value:,.{digits}f}{suffix}"


def _price(server):
    for key in ("price", "min_price", "min_price_ondemand"):
        if isinstance(server, dict) and server.get(key) is not None:
            return server.get(key)
    return None


def _server_name(server):
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


def _server_price(server):
    """The hourly price of a catalog record, with its allocation (spot/on-demand)."""
    text = _usd(_price(server), "/h")
    allocation = server.get("price_allocation") if isinstance(server, dict) else None
    if allocation and text != "n/a":
        text += f" ({_esc(str(allocation).lower().replace('ondemand', 'on-demand'))})"
    return text


def _server_shape(server):
    if not isinstance(server, dict):
        return "n/a"
    parts = [f"{_num(server.get('vcpus'))} vCPUs", _mib(server.get("memory_amount"))]
    gpus = server.get("gpu_count")
    if gpus:
        parts.append(f"{_num(gpus)} GPU{'' if gpus == 1 else 's'}")
    return " / ".join(parts)


def _change(now, past):
    """The change of now against past, in percent, as a table cell."""
    if now is None or past is None:
        return "n/a"
    if past == 0:
        return "0%" if now == 0 else '<span class="rt-up">new</span>'
    pct = (now - past) / abs(past) * 100.0
    cls = "rt-up" if pct > 0.5 else ("rt-down" if pct < -0.5 else "rt-same")
    return f'<span class="{cls}">{pct:+.1f}%</span>'


# -- downsampling and JSON ----------------------------------------------------------------


def _downsample(t, cols, max_points):
    """(timestamps, {key: values}) with at most max_points points: for longer series, each of
    max_points/2 buckets gives two points holding the bucket's min and max (in their order),
    at the bucket's first and last timestamp, so that no peak is lost."""
    n = len(t)
    if n <= max_points:
        return list(t), {k: list(v) for k, v in cols.items()}
    buckets = max_points // 2
    t_out = []
    out = {k: [] for k in cols}
    bounds = [b * n // buckets for b in range(buckets + 1)]
    for lo, hi in zip(bounds, bounds[1:]):
        t_out.append(t[lo])
        t_out.append(t[hi - 1])
        for k, col in cols.items():
            seg = list(col[lo:hi])  # (a stopped tracker's columns are memoryviews: no index())
            lo_v, hi_v = min(seg), max(seg)
            if seg.index(lo_v) <= seg.index(hi_v):
                out[k].append(lo_v)
                out[k].append(hi_v)
            else:
                out[k].append(hi_v)
                out[k].append(lo_v)
    return t_out, out


def _json_numbers(values):
    """A JSON array of numbers with 5 significant digits (null for NaN/inf)."""
    parts = []
    for v in values:
        if v != v or v in (math.inf, -math.inf):
            parts.append("null")
        elif v == 0:
            parts.append("0")
        else:
            parts.append(f"{v:.5g}")
    return "[" + ",".join(parts) + "]"


class _RawJson:
    """Already-encoded JSON text, put in place by _Page.html()."""

    def __init__(self, text):
        self.text = text


def _attr(obj, name, default=None):
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


_LOGO = (
    '<svg class="rt-logo" viewBox="0 0 32 32" width="40" height="40" aria-hidden="true">'
    '<rect x="1" y="1" width="30" height="30" rx="7" fill="#1f6feb"/>'
    '<polyline points="5,22 10,16 14,19 19,9 23,14 27,7" fill="none" stroke="#fff" '
    'stroke-width="2.5" stroke-linejoin="round" stroke-linecap="round"/>'
    '<line x1="5" y1="26" x2="27" y2="26" stroke="#fff" stroke-width="2" opacity=".6"/></svg>'
)
