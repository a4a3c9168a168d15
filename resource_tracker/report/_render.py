"""Builds the report page: HTML sections in Python, charts drawn in the browser by report.js.

Rendering is deterministic: the same tracker data (also after ``dumps()``/``loads()``) gives
the same page byte for byte. Times are written in UTC and turned into the viewer's local
time by the page's script. Every string that comes from outside (command lines, labels,
metadata answers, catalog records, error messages) goes through ``_esc``.
"""

from __future__ import annotations

import math
import os

from ..tracker import data_quality_notes

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


REPORT_STATUSES = ("finished", "failed", "running", "stopped")


def render_report(tracker, historical_stats=None, status=None, integration=None):
    """The HTML report of tracker (a ResourceTracker, also one loaded from a snapshot).

    Args:
        tracker: any object with the ResourceTracker attributes (process_metrics,
            system_metrics, stats(), recommend_resources(), server_info, cloud_info, ...).
        historical_stats: earlier runs to compare with: a list of ``stats()`` dicts, or the
            summary dict of the Metaflow extension (``avg_cpu_mean``, ``max_memory_max``, ...).
        status: the status to show in place of the tracker's own (one of REPORT_STATUSES).
        integration: the name of what ran the job (e.g. 'Metaflow'), shown on the page.

    Returns:
        Report (a str).
    """
    if status is not None and status not in REPORT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(REPORT_STATUSES)}, got {status!r}")
    if integration is not None and not isinstance(integration, str):
        raise ValueError(f"integration must be a name such as 'Metaflow', got {integration!r}")
    page = _Page(tracker, historical_stats)
    page.status_override = status
    page.integration = integration or page.extra.get("integration")
    return Report(page.html())


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


# -- the page -----------------------------------------------------------------------------


class _Page:
    """Collects what the report shows from a tracker, then writes the HTML."""

    def __init__(self, tracker, historical_stats):
        self.t = tracker
        self.notes = []
        self.process = self._metrics("process_metrics")
        self.system = self._metrics("system_metrics")
        self.n_process = len(self.process) if self.process is not None else 0
        self.n_system = len(self.system) if self.system is not None else 0
        self.n_samples = max(self.n_process, self.n_system)
        self.stats = self._call("stats", default=None)
        self.notes.extend(data_quality_notes(self.stats))
        self.server_info = _attr(tracker, "server_info")
        self.cloud_info = _attr(tracker, "cloud_info")
        self.extra = _attr(tracker, "extra") or {}
        if historical_stats is None:  # a run saved with its history (the Metaflow artifact)
            historical_stats = self.extra.get("historical_stats") or None
        self.history_list, self.history_summary = _history(historical_stats)
        self.duration = self._duration()
        self.resources, self.resources_error = self._resources()
        self.catalog = _CatalogView(self.resources, self.duration, self.cloud_info)

    def _metrics(self, name):
        try:
            return getattr(self.t, name)
        except Exception as exc:
            self.notes.append(f"{name} unavailable: {type(exc).__name__}: {exc}")
            return None

    def _call(self, name, default=None, **kwargs):
        try:
            return getattr(self.t, name)(**kwargs)
        except Exception as exc:
            self.notes.append(f"{name}() failed: {type(exc).__name__}: {exc}")
            return default

    def _duration(self):
        if self.n_samples == 0 and not _attr(self.t, "start_time"):
            return None  # never started
        if self.stats and (self.stats.get("timestamp") or {}).get("duration") is not None:
            return float(self.stats["timestamp"]["duration"])
        start, stop = _attr(self.t, "start_time"), _attr(self.t, "stop_time")
        if start and stop:
            return float(stop) - float(start)
        return None

    def _resources(self):
        try:
            if self.history_list:
                rec = self.t.recommend_resources(historical_stats=self.history_list)
            else:
                rec = self.t.recommend_resources()
            return rec, None
        except Exception as exc:
            return None, f"{exc}"

    # -- output --------------------------------------------------------------------------

    def html(self):
        import json

        title = f"Resource usage: {self._what()}"
        raws = []

        def raw(obj):
            raws.append(obj.text)
            return f"@@RAW{len(raws) - 1}@@"

        data = json.dumps(self._chart_data(), separators=(",", ":"), allow_nan=False, default=raw)
        for i, text in enumerate(raws):
            data = data.replace(f'"@@RAW{i}@@"', text, 1)
        body = "".join(
            [
                self._header(),
                self._server(),
                self._cgroup(),
                self._cloud(),
                self._usage(),
                self._recommendations(),
                self._charts(),
                self._footer(),
            ]
        )
        # inside <script>: no "</script>", no "<!--", no line separators
        data = (
            data.replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")
        )
        parts = {
            "TITLE": _esc(title),
            "CSS": _resource("report.css"),
            "BODY": body,
            "DATA": data,
            "JS": _resource("report.js"),
        }
        # one pass over the template: text put in cannot be taken for a placeholder
        import re

        page = re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], _resource("template.html"))
        return page

    def _what(self):
        label = _attr(self.t, "label")
        if label:
            return str(label)
        command = _attr(self.t, "command") or ""
        command = " ".join(str(command).split())
        if len(command) > 80:
            command = command[:77] + "..."
        return command or f"pid {_attr(self.t, 'pid')}"

    status_override = None
    integration = None

    def _status(self):
        if self.status_override:
            return self.status_override
        if self.extra.get("step_failed") or self.extra.get("failed"):
            return "failed"
        status = _attr(self.t, "status") or "unknown"
        return {"new": "not started"}.get(status, status)

    def _header(self):
        from .._version import __version__

        status = self._status()
        label = _attr(self.t, "label")
        command = _attr(self.t, "command")
        rows = []
        if label:
            rows.append(["Step", f"<code>{_esc(label)}</code>"])
        rows.append(
            [
                "Command",
                f'<code class="rt-cmd">{_esc(command)}</code>' if command else "n/a",
            ]
        )
        children = _attr(self.t, "children")
        pid_text = _esc(_attr(self.t, "pid"))
        if children is not None:
            pid_text += " (with its descendants)" if children else " (without descendants)"
        rows += [
            ["PID", pid_text],
            ["Start", _utc(_attr(self.t, "start_time"))],
            ["End", _utc(_attr(self.t, "stop_time")) if _attr(self.t, "stop_time") else status],
            ["Duration", _esc(_duration(self.duration))],
            ["Status", f'<span class="rt-status rt-status-{_esc(status)}">{_esc(status)}</span>'],
            ["Samples", f"{self.n_samples:,}"],
            ["Sampling interval", f"{_num(_attr(self.t, 'interval'), 3)} s"],
            ["Collection method", _esc(_attr(self.t, "method") or "n/a")],
            *([["Integration", _esc(self.integration)]] if self.integration else []),
            ["Tool", f"resource-tracker {_esc(__version__)}"],
        ]
        out = [
            '<header class="rt-header">',
            _LOGO,
            "<div><h1>Resource usage report</h1>",
            f'<p class="rt-sub">{_esc(self._what())}</p></div></header>',
        ]
        if status == "failed":
            out.append(_note("The run failed: the data covers it up to the failure.", "warn"))
        if self.n_samples < 2:
            out.append(
                _note(
                    f"Not enough data: {self.n_samples} sample"
                    f"{'' if self.n_samples == 1 else 's'} recorded. Charts need at least 2 "
                    "samples; track for longer than the sampling interval "
                    "(or use a shorter interval).",
                    "warn",
                )
            )
        for note in self.notes:
            out.append(_note(_esc(note), "warn"))
        out.append('<section id="rt-run"><h2>Run</h2>' + _table(rows) + "</section>")
        return "".join(out)

    def _server(self):
        info = self.server_info
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
                f"{_num(info.get('gpu_count') or 0)}"
                + (f" ({_esc(gpu_names)})" if gpu_names else ""),
            ],
            ["VRAM", _mib(info.get("gpu_memory_mb")) if info.get("gpu_memory_mb") else "none"],
            ["Architecture", _esc(info.get("architecture") or "n/a")],
            ["Operating system", _esc(info.get("os") or "n/a")],
        ]
        cgroup = info.get("cgroup") or {}
        cpu_limit, mem_limit = cgroup.get("cpu_limit_cores"), cgroup.get("memory_limit_mb")
        if cpu_limit or mem_limit:
            limits = []
            if cpu_limit:
                limits.append(f"CPU {_num(cpu_limit)} cores")
            if mem_limit:
                limits.append(f"memory {_mib(mem_limit)}")
            version = cgroup.get("version")
            text = ", ".join(limits) + (f" (cgroup v{_esc(version)})" if version else "")
            rows.append(["Container limits", f'<span class="rt-limits">{text}</span>'])
        else:
            rows.append(["Container limits", "none set"])
        out.append(_table(rows))
        return "".join(out) + "</section>"

    def _cgroup(self):
        """The container's own figures (stats()["cgroup"]), when the run had a cgroup."""
        cg = (self.stats or {}).get("cgroup")
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

        def seconds(value):
            return "n/a" if value is None else f"{_num(value)} s"

        throttled = cg.get("cpu_throttled_periods")
        periods = cg.get("cpu_periods")
        limit, quota = cg.get("memory_limit_mib"), cg.get("cpu_limit_cores")
        rows = [
            ["cgroup", f"<code>{_esc(cg.get('path'))}</code> (v{_esc(cg.get('version'))})"],
            ["Memory at the end", _mib(cg.get("memory_mib"))],
            ["Memory peak (kernel high-water mark)", _mib(cg.get("memory_peak_mib"))],
            ["Memory limit", _mib(limit) if limit else "none"],
            ["CPU quota", f"{_num(quota)} cores" if quota else "none"],
            ["CPU time", seconds(cg.get("cpu_seconds"))],
            [
                "CPU throttled",
                "n/a"
                if throttled is None
                else f"{_num(throttled, 0)} of {_num(periods, 0)} periods, "
                f"{seconds(cg.get('cpu_throttled_seconds'))}",
            ],
            ["OOM kills", "n/a" if cg.get("oom_kills") is None else _num(cg["oom_kills"], 0)],
        ]
        out.append(_table(rows))
        return "".join(out) + "</section>"

    def _cloud(self):
        info = self.cloud_info
        out = ['<section id="rt-cloud"><h2>Cloud</h2>']
        if not info or not info.get("vendor"):
            out.append(
                _note(
                    "No cloud detected: the run was not on a known cloud server, or cloud "
                    "discovery was off."
                )
            )
        else:
            rows = [
                ["Vendor", _esc(info.get("vendor"))],
                ["Region", _esc(info.get("region") or "n/a")],
                ["Instance type", f"<code>{_esc(info.get('instance_type') or 'n/a')}</code>"],
            ]
            costs = self.catalog.costs
            if costs:
                hourly = costs.get("current_hourly_usd")
                rows.append(["Hourly price", _usd(hourly, "/h")])
                rows.append(["Cost of this run", _usd(costs.get("run_cost_usd"))])
                if costs.get("current_price_note"):
                    rows.append(["Price note", _esc(costs["current_price_note"])])
            else:
                rows.append(["Hourly price", "n/a"])
            if info.get("discovery_time") is not None:
                rows.append(["Discovery took", f"{_num(info.get('discovery_time'), 3)} s"])
            out.append(_table(rows))
            if self.catalog.error:
                out.append(_note(_esc(self.catalog.error), "warn"))
        return "".join(out) + "</section>"

    def _usage(self):
        out = ['<section id="rt-usage"><h2>Usage statistics</h2>']
        s = self.stats
        if not s or self.n_samples == 0:
            out.append(_note("Not enough data: no samples, so there are no statistics."))
            return "".join(out) + "</section>"
        hist = self.history_summary
        head = ["Metric", "This run"]
        if hist:
            head += [f"Earlier runs ({hist['runs']})", "Change"]
        rows = []
        for label, key, field, kind, fmt in _USAGE_ROWS:
            value = _stat(s, key, field)
            if value is None and key != "timestamp":
                continue
            if kind == "mem":
                value = value / 1024.0  # KiB -> MiB
            row = [_esc(label), fmt(value)]
            if hist:
                past = hist["values"].get((key, field))
                if past is not None and kind == "mem":
                    past = past / 1024.0
                row += [fmt(past) if past is not None else "n/a", _change(value, past)]
            rows.append(row)
        out.append(_table(rows, head=head, cls="rt-stats"))
        if hist:
            out.append(
                _note(
                    "Earlier runs: the mean of their means, the highest of their peaks, the mean "
                    "of their totals and durations. Change: this run against them."
                )
            )
        return "".join(out) + "</section>"

    def _recommendations(self):
        out = ['<section id="rt-recommendations"><h2>Recommendations</h2>']
        rec = self.resources
        if rec is None:
            out.append(_note(f"No recommendation: {_esc(self.resources_error)}", "warn"))
            return "".join(out) + "</section>"
        basis = "this run"
        if self.history_list:
            basis += f" and {len(self.history_list)} earlier run(s)"
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
        out.append(self.catalog.html())
        return "".join(out) + "</section>"

    def _charts(self):
        out = ['<section id="rt-charts"><h2>Usage over time</h2>']
        if self.n_samples < 2:
            out.append(
                _note(
                    f"Not enough data to draw charts: {self.n_samples} sample"
                    f"{'' if self.n_samples == 1 else 's'}.",
                    "warn",
                )
            )
            return "".join(out) + "</section>"
        out.append(
            '<p class="rt-help">Hover a chart to read all charts at that time; drag across a '
            "chart to zoom in; double-click (or the button) to zoom out. Times are in your "
            'local time zone. <button type="button" id="rt-reset">Reset zoom</button></p>'
        )
        down = [
            f"{name}: {rows:,} samples shown as {pts:,} points (min and max of each interval)"
            for name, rows, pts in self._downsampled
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
        out.append(
            '<noscript><p class="rt-note rt-warn">The charts need JavaScript.</p></noscript>'
        )
        return "".join(out) + "</section>"

    def _footer(self):
        return (
            '<footer class="rt-footer">Made by resource-tracker. Server and price data: '
            "Spare Cores (CC BY-SA 4.0). This page works offline: it loads nothing from "
            "the network.</footer>"
        )

    # -- chart data ------------------------------------------------------------------------

    @property
    def _downsampled(self):
        return getattr(self, "_down_info", [])

    def _chart_data(self):
        tables = {}
        self._down_info = []
        if self.n_samples >= 2:
            if self.n_process >= 2:
                tables["p"] = self._table_data("process", self.process, _PROCESS_SERIES)
            if self.n_system >= 2:
                tables["s"] = self._table_data("system", self.system, _SYSTEM_SERIES)
        charts = []
        for chart in _CHARTS:
            series = [
                dict(name=name, table=table, key=key, color=color)
                for name, table, key, color in chart["series"]
                if table in tables
            ]
            if series:
                charts.append(
                    dict(id=chart["id"], title=chart["title"], unit=chart["unit"], series=series)
                )
        t0 = min((tab["t0"] for tab in tables.values()), default=0)
        return {"t0": t0, "tables": tables, "charts": charts}

    def _table_data(self, name, df, series):
        t = _column(df, "timestamp")
        n = len(t)
        cols = {}
        interval = float(_attr(self.t, "interval") or 1.0)
        dts = [interval] + [b - a for a, b in zip(t, t[1:])] if n else []
        for key, source, transform in series:
            col = _column(df, source)
            if len(col) != n:
                continue
            if transform == "mib":
                col = [v / 1024.0 for v in col]
            elif transform == "rate":
                col = [v / d if d > 0 else 0.0 for v, d in zip(col, dts)]
            cols[key] = col
        t_out, cols_out = _downsample(t, cols, MAX_POINTS)
        self._down_info.append((name, n, len(t_out)))
        t0 = math.floor(t[0]) if n else 0
        return {
            "t0": t0,
            "rows": n,
            "t": _RawJson("[" + ",".join(f"{v - t0:.3f}" for v in t_out) + "]"),
            "s": {k: _RawJson(_json_numbers(v)) for k, v in cols_out.items()},
        }


# -- catalog ------------------------------------------------------------------------------


class _CatalogView:
    """The recommended server, its alternatives and costs from resource_tracker.catalog."""

    def __init__(self, resources, duration, cloud_info):
        self.servers = []
        self.costs = None
        self.error = None
        self.match_error = None
        try:
            import importlib

            catalog = importlib.import_module("resource_tracker.catalog")
        except Exception as exc:  # the catalog package is not there (or broke on import)
            self.error = (
                "catalog unavailable: resource_tracker.catalog cannot be imported "
                f"({type(exc).__name__}: {exc})"
            )
            return
        if resources is not None:
            try:
                found = catalog.recommend_server(resources, n=4)
                self.servers = list(found) if isinstance(found, (list, tuple)) else [found]
            except Exception as exc:
                if type(exc).__name__ == "NoMatchingServerError":
                    self.match_error = f"no server in the catalog fits: {exc}"
                else:
                    self.error = f"catalog unavailable: {exc}"
                    return
        run_costs = getattr(catalog, "run_costs", None)
        if run_costs is not None and duration is not None:
            try:
                self.costs = run_costs(
                    duration, cloud_info, self.servers[0] if self.servers else None
                )
            except Exception as exc:
                self.error = f"catalog unavailable: costs failed: {type(exc).__name__}: {exc}"

    def html(self):
        out = ['<h3>Recommended cloud server</h3><div id="rt-servers">']
        if self.error or self.match_error:
            for text in (self.match_error, self.error):
                if text:
                    out.append(_note(_esc(text), "warn"))
            return "".join(out) + "</div>"
        if not self.servers:
            out.append(_note("No server recommendation (no resources to match)."))
            return "".join(out) + "</div>"
        best = self.servers[0]
        costs = self.costs or {}
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
        if len(self.servers) > 1:
            alt_rows = [
                [_server_name(s), _server_shape(s), _server_price(s)] for s in self.servers[1:4]
            ]
            out.append("<h3>Alternatives</h3>")
            out.append(
                _table(alt_rows, head=["Server", "vCPUs / memory / GPUs", "Hourly price"], cls="")
            )
        eur = any(
            isinstance(s, dict) and str(s.get("price_currency", "EUR")).upper() == "EUR"
            for s in self.servers[:4]
        )
        if eur and costs.get("eur_usd_rate"):
            out.append(_note(f"EUR prices converted at {_num(costs['eur_usd_rate'], 4)} USD/EUR."))
        return "".join(out) + "</div>"


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


# -- statistics rows and history ----------------------------------------------------------


def _f2(v):
    return _num(v, 2)


def _f0(v):
    return _num(v, 0)


def _mibf(v):
    return "n/a" if v is None else f"{float(v):,.1f} MiB"


def _gb(v):
    return "n/a" if v is None else f"{float(v):,.2f} GB"


def _bytesf(v):
    return _bytes(v)


def _durf(v):
    return _duration(v)


# label, stats key, field, kind ('mem': KiB -> MiB), formatter
_USAGE_ROWS = [
    ("Process CPU, mean (cores)", "process_cpu_usage", "mean", "", _f2),
    ("Process CPU, peak (cores)", "process_cpu_usage", "max", "", _f2),
    ("Process memory, mean", "process_memory", "mean", "mem", _mibf),
    ("Process memory, peak", "process_memory", "max", "mem", _mibf),
    ("One process's peak (kernel VmHWM)", "process_memory_hwm", "max", "mem", _mibf),
    ("Process GPU use, mean (GPUs)", "process_gpu_usage", "mean", "", _f2),
    ("Process GPU use, peak (GPUs)", "process_gpu_usage", "max", "", _f2),
    ("Process VRAM, mean (MiB)", "process_gpu_vram", "mean", "", _f2),
    ("Process VRAM, peak (MiB)", "process_gpu_vram", "max", "", _f2),
    ("GPUs in use, peak", "process_gpu_utilized", "max", "", _f0),
    ("Child processes, peak", "process_children", "max", "", _f0),
    ("Process disk read", "process_read_bytes", "sum", "", _bytesf),
    ("Process disk write", "process_write_bytes", "sum", "", _bytesf),
    ("System CPU, mean (cores)", "system_cpu_usage", "mean", "", _f2),
    ("System CPU, peak (cores)", "system_cpu_usage", "max", "", _f2),
    ("System memory used, peak", "system_memory_used", "max", "mem", _mibf),
    ("Disk space used, peak", "system_disk_space_used_gb", "max", "", _gb),
    ("Disk read (system)", "system_disk_read_bytes", "sum", "", _bytesf),
    ("Disk write (system)", "system_disk_write_bytes", "sum", "", _bytesf),
    ("Network in", "system_net_recv_bytes", "sum", "", _bytesf),
    ("Network out", "system_net_sent_bytes", "sum", "", _bytesf),
    ("Duration", "timestamp", "duration", "", _durf),
]

# Metaflow's historical_stats summary: (stats key, field) -> its key
_SUMMARY_KEYS = {
    ("process_cpu_usage", "mean"): "avg_cpu_mean",
    ("process_memory", "max"): "max_memory_max",
    ("process_gpu_usage", "mean"): "avg_gpu_mean",
    ("process_gpu_vram", "max"): "max_vram_max",
    ("process_gpu_utilized", "max"): "max_gpu_count",
    ("timestamp", "duration"): "avg_duration",
}


def _stat(stats, key, field):
    value = (stats.get(key) or {}).get(field) if isinstance(stats, dict) else None
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _history(historical_stats):
    """(list of stats dicts for recommend_resources, summary for the table or None)."""
    if not historical_stats:
        return None, None
    if isinstance(historical_stats, dict):
        if "format" in historical_stats or "timestamp" in historical_stats:
            historical_stats = [historical_stats]  # a single stats() dict
        else:
            runs = historical_stats.get("runs_analyzed")
            values = {}
            for pair, name in _SUMMARY_KEYS.items():
                v = historical_stats.get(name)
                if isinstance(v, (int, float)) and math.isfinite(v):
                    values[pair] = float(v)
            if not values or not runs:
                return None, None
            return None, {"runs": int(runs), "values": values}
    runs = [s for s in historical_stats if isinstance(s, dict)]
    if not runs:
        return None, None
    values = {}
    for _label, key, field, _kind, _fmt in _USAGE_ROWS:
        seen = [v for v in (_stat(s, key, field) for s in runs) if v is not None]
        if not seen:
            continue
        values[(key, field)] = max(seen) if field == "max" else sum(seen) / len(seen)
    return runs, {"runs": len(runs), "values": values}


def _change(now, past):
    """The change of now against past, in percent, as a table cell."""
    if now is None or past is None:
        return "n/a"
    if past == 0:
        return "0%" if now == 0 else '<span class="rt-up">new</span>'
    pct = (now - past) / abs(past) * 100.0
    cls = "rt-up" if pct > 0.5 else ("rt-down" if pct < -0.5 else "rt-same")
    return f'<span class="{cls}">{pct:+.1f}%</span>'


# -- chart definitions --------------------------------------------------------------------

# output key, source column, transform
_PROCESS_SERIES = [
    ("cpu", "cpu_usage", None),
    ("mem", "memory", "mib"),
    ("gpu", "gpu_usage", None),
    ("gpun", "gpu_utilized", None),
    ("vram", "gpu_vram", None),
    ("rd", "read_bytes", "rate"),
    ("wr", "write_bytes", "rate"),
]
_SYSTEM_SERIES = [
    ("cpu", "cpu_usage", None),
    ("mem", "memory_used", "mib"),
    ("gpu", "gpu_usage", None),
    ("gpun", "gpu_utilized", None),
    ("vram", "gpu_vram", None),
    ("rd", "disk_read_bytes", "rate"),
    ("wr", "disk_write_bytes", "rate"),
    ("disk", "disk_space_used_gb", None),
    ("disktot", "disk_space_total_gb", None),
    ("rx", "net_recv_bytes", "rate"),
    ("tx", "net_sent_bytes", "rate"),
]

_BLUE, _ORANGE, _GREEN, _PURPLE, _GREY = "#1f6feb", "#e36209", "#1a7f37", "#8250df", "#8c959f"

_CHARTS = [
    {
        "id": "cpu",
        "title": "CPU",
        "unit": "cores",
        "series": [("Process", "p", "cpu", _BLUE), ("System", "s", "cpu", _ORANGE)],
    },
    {
        "id": "memory",
        "title": "Memory",
        "unit": "mib",
        "series": [("Process", "p", "mem", _BLUE), ("System used", "s", "mem", _ORANGE)],
    },
    {
        "id": "gpu",
        "title": "GPU utilisation and GPUs in use",
        "unit": "gpus",
        "series": [
            ("Process GPU use", "p", "gpu", _BLUE),
            ("System GPU use", "s", "gpu", _ORANGE),
            ("Process GPUs in use", "p", "gpun", _GREEN),
            ("System GPUs in use", "s", "gpun", _PURPLE),
        ],
    },
    {
        "id": "vram",
        "title": "GPU memory (VRAM)",
        "unit": "mib",
        "series": [("Process", "p", "vram", _BLUE), ("System", "s", "vram", _ORANGE)],
    },
    {
        "id": "diskio",
        "title": "Disk I/O",
        "unit": "Bps",
        "series": [
            ("System read", "s", "rd", _BLUE),
            ("System write", "s", "wr", _ORANGE),
            ("Process read", "p", "rd", _GREEN),
            ("Process write", "p", "wr", _PURPLE),
        ],
    },
    {
        "id": "diskspace",
        "title": "Disk space",
        "unit": "gb",
        "series": [("Used", "s", "disk", _BLUE), ("Total", "s", "disktot", _GREY)],
    },
    {
        "id": "network",
        "title": "Network",
        "unit": "Bps",
        "series": [("In (received)", "s", "rx", _BLUE), ("Out (sent)", "s", "tx", _ORANGE)],
    },
]


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
