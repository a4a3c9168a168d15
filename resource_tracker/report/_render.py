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
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .. import _core
from .. import formatting as fmt
from .._identity import DEFAULT_JOB
from .._text import well_formed, well_formed_data
from .._version import __version__
from ..cloud import found_cloud_info
from ..registry import by_chart
from ..registry import columns as table_columns
from ..summary import DURATION, RunSummary, build_summary
from . import _code, _headline

if TYPE_CHECKING:
    from typing import TypedDict

    from ..registry import Column
    from ..summary import RunInfo, StatRow
    from ..tiny_data_frame import TinyDataFrame

    #: a stored column as the tables give it: an array('d'), a float64 memoryview, a list
    Values = Union[Sequence[float], memoryview]
    #: a run's per-GPU series (``_gpu_devices()``): index, name, utilization, ...
    GpuSeries = Sequence[Mapping[str, Any]]
    #: what report.js reads (JSON values)
    JsonDict = Dict[str, object]

    class TableData(TypedDict):
        """One table's chart data: first time (s), rows, times and series (JSON made in C)."""

        t0: int
        rows: int
        t: _RawJson
        s: Dict[str, _RawJson]


#: Most points per table sent to the browser; longer runs keep the min and max of each bucket.
MAX_POINTS = 2400

_HERE = os.path.dirname(os.path.abspath(__file__))


class Report(str):
    """The HTML report: a str with save(), browse() and inline display in notebooks."""

    def save(self, path: Union[str, os.PathLike[str]]) -> str:
        """Writes the page to path (UTF-8); returns the path."""
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self)
        return path

    def browse(self) -> str:
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

    def _repr_html_(self) -> str:
        """The page in an iframe (srcdoc), so its styles and scripts stay out of the notebook."""
        from html import escape

        return (
            '<iframe class="resource-tracker-report" title="resource-tracker report" '
            'style="width:100%;height:900px;border:1px solid #d0d7de;border-radius:6px" '
            f'srcdoc="{escape(str(self), quote=True)}"></iframe>'
        )

    def __repr__(self) -> str:
        return f"<Report: {len(self)} characters of HTML; save(path) or browse() to view>"


# -- small helpers ------------------------------------------------------------------------


def _esc(value: object) -> str:
    """value as text safe inside HTML elements and attribute values."""
    from html import escape

    return escape("" if value is None else well_formed(str(value)), quote=True)


def _num(value: object, digits: int = 3) -> str:
    """A plain number for a table cell ('n/a' when unknown): `digits` significant digits."""
    return _esc(fmt.number(value, digits))


def _mib(value_mib: object) -> str:
    """A MiB amount in binary units ('512 MiB', '1.5 GiB')."""
    return fmt.quantity(value_mib, "MiB")


def _duration(seconds: object) -> str:
    return fmt.duration(seconds)


def _utc(epoch: Optional[float]) -> str:
    """A <time> element: UTC text that the page's script rewrites to local time."""
    if not epoch:
        return "n/a"
    import datetime as _dt

    when = _dt.datetime.fromtimestamp(float(epoch), tz=_dt.timezone.utc)
    text = when.strftime("%Y-%m-%d %H:%M:%S UTC")
    iso = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f'<time class="rt-time" datetime="{iso}" data-epoch="{float(epoch):.3f}">{text}</time>'


def _table(
    rows: Sequence[Sequence[str]], head: Optional[Sequence[str]] = None, cls: str = "rt-kv"
) -> str:
    """An HTML table; rows are lists of cells that are already HTML."""
    out = [f'<div class="rt-scroll"><table class="{cls}">']
    if head:
        out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead>")
    out.append("<tbody>")
    for row in rows:
        first, rest = row[0], row[1:]
        out.append(f"<tr><th>{first}</th>" + "".join(f"<td>{c}</td>" for c in rest) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _note(text: str, kind: str = "info") -> str:
    return f'<p class="rt-note rt-{kind}">{text}</p>'


def _column(df: Optional[TinyDataFrame], name: str) -> Values:
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


def _resource(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return f.read()


REPORT_STATUSES = ("finished", "failed", "running", "stopped")

#: The words the page shows for a status (the original package's: Pending, Finished, Failed).
STATUS_WORDS = {
    "finished": "Finished",
    "failed": "Failed",
    "running": "Pending",
    "stopped": "Stopped",
}


def _status_badge(status: str) -> str:
    """The status as the page shows it (a span whose class names the status)."""
    word = STATUS_WORDS.get(status, status)
    return f'<span class="rt-status rt-status-{_esc(status)}">{_esc(word)}</span>'


def render_report(
    tracker: object,
    historical_stats: object = None,
    status: Optional[str] = None,
    integration: Optional[str] = None,
    summary: Optional[RunSummary] = None,
) -> Report:
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
        summary = _summary_of(tracker, historical_stats)
    process, system = _attr(tracker, "process_metrics"), _attr(tracker, "system_metrics")
    gpu_devices = _attr(tracker, "_gpu_devices")
    gpus = gpu_devices() if callable(gpu_devices) else None
    return render_summary(
        summary, process, system, status=status, integration=integration, gpus=gpus
    )


def _summary_of(tracker: object, historical_stats: object) -> RunSummary:
    """The tracker's own ``summary()`` (cached there), else one built here."""
    summarize = getattr(tracker, "summary", None)
    made = summarize(historical_stats) if callable(summarize) else None
    if isinstance(made, RunSummary):
        return made

    return build_summary(tracker, historical_stats)


def render_summary(
    summary: RunSummary,
    process: Optional[TinyDataFrame] = None,
    system: Optional[TinyDataFrame] = None,
    *,
    status: Optional[str] = None,
    integration: Optional[str] = None,
    gpus: Optional[GpuSeries] = None,
) -> Report:
    """The HTML report of a RunSummary and the run's two tables (for the charts); gpus: the
    run's per-GPU series (``_gpu_series``), drawn as one utilisation line per GPU.

    Pure formatting: no catalog, no network, no file but the package's own template, and
    nothing recomputed; the same summary and tables give the same page byte for byte.
    """
    _check_options(status, integration)
    view = _View(summary, status, integration or summary.run.integration)
    return Report(_page_html(view, process, system, gpus))


def _check_options(status: Optional[str], integration: object) -> None:
    if status is not None and status not in REPORT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(REPORT_STATUSES)}, got {status!r}")
    if integration is not None and not isinstance(integration, str):
        raise ValueError(f"integration must be a name such as 'Metaflow', got {integration!r}")


class _View:
    """The summary with the page's own overrides (status, integration)."""

    def __init__(
        self, summary: RunSummary, status: Optional[str], integration: Optional[str]
    ) -> None:
        self.s = summary
        self.run = summary.run
        self.status = status or summary.run.status
        self.integration = integration


# -- the page -----------------------------------------------------------------------------


def _page_html(
    view: _View,
    process: Optional[TinyDataFrame],
    system: Optional[TinyDataFrame],
    gpus: Optional[GpuSeries] = None,
) -> str:
    import json
    import re

    raws: List[str] = []

    def raw(obj: _RawJson) -> str:
        raws.append(obj.text)
        return f"@@RAW{len(raws) - 1}@@"

    chart_data, downsampled = _chart_data(view.s, process, system, gpus)
    data = json.dumps(
        well_formed_data(chart_data), separators=(",", ":"), allow_nan=False, default=raw
    )
    for i, text in enumerate(raws):
        data = data.replace(f'"@@RAW{i}@@"', text, 1)
    body = _header(view) + _headline.headline(view.s) + _charts(view.s, downsampled)
    body += _code.section(view.s)  # where the time and memory went (report/_code.py)
    body += '<h2 class="rt-details-title">Details</h2>'
    details = (_usage, _servers, _run, _server, _cgroup, _cloud)
    body += '<div class="rt-details">' + "".join(section(view) for section in details)
    body += "</div>" + _FOOTER
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


def _what(run: RunInfo) -> str:
    if run.label:
        return run.label
    if run.job and run.job != DEFAULT_JOB:
        return run.job
    command = " ".join((fmt.user_command(run.command) or "").split())
    if len(command) > 80:
        command = command[:77] + "..."
    return command or f"pid {run.pid}"


def _samples_note(n: int) -> str:
    return fmt.plural(n, "sample")


def _fold(
    section_id: str, title: str, content: str, summary_extra: str = "", open_: bool = False
) -> str:
    """A folded section: <details> with a <summary> heading (print opens it)."""
    extra = f' <span class="rt-fold-note">{summary_extra}</span>' if summary_extra else ""
    return (
        f'<details class="rt-fold" id="{section_id}"{" open" if open_ else ""}>'
        f"<summary><h2>{title}</h2>{extra}</summary>{content}</details>"
    )


def _run_rows(view: _View) -> List[List[str]]:
    run = view.run
    rows = [["Step", f"<code>{_esc(run.label)}</code>"]] if run.label else []
    if getattr(run, "job", None):
        rows.append(["Job", f"<code>{_esc(run.job)}</code>"])
    shown = fmt.user_command(run.command, view.integration)
    command = f'<code class="rt-cmd">{_esc(shown)}</code>' if shown else "n/a"
    pid_text = _esc(run.pid)
    if run.children is not None:
        pid_text += " (with its descendants)" if run.children else " (without descendants)"
    rows += [
        ["Command", command],
        ["PID", pid_text],
        ["Start", _utc(run.start_time)],
        [
            "End",
            _utc(run.stop_time)
            if run.stop_time
            else _esc(STATUS_WORDS.get(view.status, view.status)),
        ],
        ["Duration", _esc(_duration(view.s.duration))],
        ["Status", _status_badge(view.status)],
        ["Samples", f"{view.s.n_samples:,}"],
        ["Sampling interval", _esc(fmt.duration(run.interval))],
        ["Collection method", _esc(run.method or "n/a")],
        *([["Integration", _esc(view.integration)]] if view.integration else []),
        ["Tool", f"resource-tracker {_esc(__version__)}"],
    ]
    return rows


def _run(view: _View) -> str:
    return _fold("rt-run", "Run", _table(_run_rows(view)), _esc(_what(view.run)))


def _header(view: _View) -> str:
    n = view.s.n_samples
    out = [
        '<header class="rt-header">',
        _LOGO,
        '<div class="rt-title"><h1>Resource usage report</h1>',
        f'<p class="rt-sub">{_esc(_what(view.run))} '
        f"{_status_badge(view.status)}</p></div></header>",
    ]
    if view.status == "failed":
        out.append(_note(_failure_text(view), "warn rt-failed"))
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
    return "".join(out)


def _failure_text(view: _View) -> str:
    """What a failed run's page says first: when it failed, what the figures cover, and the
    memory clue (the kernel's OOM kills, a peak at the limit) when there is one."""
    what = "step" if (view.integration or "").lower() == "metaflow" else "run"
    s = view.s
    text = f"The {what} failed after {_esc(fmt.duration(s.duration))}"
    error = s.run.error
    if error:
        message = " ".join(error.get("message", "").split())
        text += f' with <code class="rt-error">{_esc(error["type"])}'
        text += f": {_esc(message)}</code>" if message else "</code>"
    text += f" ({_esc(_samples_note(s.n_samples))}); the figures cover it up to the failure."
    cg = (s.stats or {}).get("cgroup") or {}
    if cg.get("oom_kills"):
        killed = fmt.plural(cg["oom_kills"], "process", "processes")
        text += f" The kernel's OOM killer ended {_esc(killed)}: it ran out of memory."
    _, mem_mib, _, where = _headline.capacity(s)
    peak = _headline._stat(s, "process", "max", resource="memory")
    if mem_mib and peak and peak / 1024.0 >= 0.9 * mem_mib:
        text += (
            f" Peak memory {_esc(fmt.quantity(peak, 'KiB'))} was near the {_esc(where)} "
            f"({_esc(fmt.quantity(mem_mib, 'MiB'))})."
        )
    return text


def _server(view: _View) -> str:
    info = view.s.server_info
    if not info:
        return _fold(
            "rt-server",
            "Server",
            _note("Server information was not collected (discover_server=False)."),
        )
    out = []
    if info.get("error"):
        out.append(_note(f"Server discovery failed: {_esc(info['error'])}", "warn"))
    gpu_names = info.get("gpu_names") or []
    if isinstance(gpu_names, (list, tuple)):
        gpu_names = ", ".join(str(g) for g in gpu_names)
    gpus = info.get("gpu_count") or 0
    rows = [
        ["CPU", _esc(info.get("cpu_model") or "n/a")],
        ["vCPUs", _num(info.get("vcpus"))],
        ["Memory", _mib(info.get("memory_mb"))],
        ["GPUs", f"{_num(gpus)}" + (f" ({_esc(gpu_names)})" if gpu_names else "")],
        ["VRAM", _mib(info.get("gpu_memory_mb")) if info.get("gpu_memory_mb") else "none"],
        ["Architecture", _esc(info.get("architecture") or "n/a")],
        ["Operating system", _esc(info.get("os") or "n/a")],
        ["Container limits", _limits(info.get("cgroup") or {})],
    ]
    out.append(_table(rows))
    shape = f"{fmt.plural(info.get('vcpus'), 'vCPU')}, {_mib(info.get('memory_mb'))}"
    return _fold("rt-server", "Server", "".join(out), _esc(shape))


def _limits(cgroup: Mapping[str, Any]) -> str:
    cpu_limit, mem_limit = cgroup.get("cpu_limit_cores"), cgroup.get("memory_limit_mb")
    if not (cpu_limit or mem_limit):
        return "none set"
    limits = []
    if cpu_limit:
        limits.append(f"CPU {fmt.quantity(cpu_limit, 'cores')}")
    if mem_limit:
        limits.append(f"memory {_mib(mem_limit)}")
    version = cgroup.get("version")
    text = ", ".join(limits) + (f" (cgroup v{_esc(version)})" if version else "")
    return f'<span class="rt-limits">{text}</span>'


def _seconds(value: object) -> str:
    return _esc(fmt.duration(value))


def _cgroup(view: _View) -> str:
    """The container's own figures (stats()["cgroup"]), when the run had a cgroup."""
    cg = (view.s.stats or {}).get("cgroup")
    if not cg:
        return ""
    out = []
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
        else f"{_num(throttled, 6)} of {_esc(fmt.plural(cg.get('cpu_periods'), 'period'))}, "
        f"{_seconds(cg.get('cpu_throttled_seconds'))}"
    )
    rows = [
        ["cgroup", f"<code>{_esc(cg.get('path'))}</code> (v{_esc(cg.get('version'))})"],
        ["Memory at the end", _mib(cg.get("memory_mib"))],
        ["Memory peak (kernel high-water mark)", _mib(cg.get("memory_peak_mib"))],
        ["Memory limit", _mib(limit) if limit else "none"],
        ["CPU quota", fmt.quantity(quota, "cores") if quota else "none"],
        ["CPU time", _seconds(cg.get("cpu_seconds"))],
        ["CPU throttled", throttling],
        ["OOM kills", "n/a" if cg.get("oom_kills") is None else _num(cg["oom_kills"], 6)],
    ]
    source = _tree_source((view.s.stats or {}).get("tree_source"))
    if source:
        rows.append(["Workload figures read from", source])
    out.append(_table(rows))
    return _fold("rt-cgroup", "Container (cgroup)", "".join(out))


def _tree_source(info: object) -> str:
    """Where the tree's CPU, memory and I/O came from (stats()["tree_source"]), or ''."""
    if not isinstance(info, dict) or not isinstance(info.get("columns"), dict):
        return ""
    columns = info["columns"]
    where = {"cgroup": "the container's totals", "procfs": "each process of the tree"}
    if len(set(columns.values())) == 1:
        text = where.get(next(iter(columns.values())), "n/a")
    else:
        text = "; ".join(f"{k}: {where.get(v, v)}" for k, v in columns.items())
    note = info.get("note")  # the sampler's own account: for us, kept out of the text
    return f'<span title="{_esc(note)}">{_esc(text)}</span>' if note else _esc(text)


def _cloud(view: _View) -> str:
    info = view.s.cloud_info
    if not info or not info.get("vendor"):
        return _fold(
            "rt-cloud",
            "Cloud",
            _note(
                "No cloud detected: the run was not on a known cloud server, or cloud "
                "discovery was off."
            ),
            "none detected",
        )
    rows = [
        ["Vendor", _esc(info.get("vendor"))],
        ["Region", _esc(info.get("region") or "n/a")],
        ["Instance type", f"<code>{_esc(info.get('instance_type') or 'n/a')}</code>"],
    ]
    costs = view.s.server.costs
    if costs:
        rows.append(["Hourly price", _usd(costs.get("current_hourly_usd"), "h")])
        rows.append(["Cost of this run", _usd(costs.get("run_cost_usd"))])
        if costs.get("current_price_note"):
            rows.append(["Price note", _esc(costs["current_price_note"])])
    else:
        rows.append(["Hourly price", "n/a"])
    found = found_cloud_info(info)
    where = f"{info.get('vendor')} {found['instance_type'] or ''}".strip()
    return _fold("rt-cloud", "Cloud", _table(rows), _esc(where))


# -- statistics ---------------------------------------------------------------------------


def _shown_rows(summary: RunSummary) -> Iterator[StatRow]:
    """The statistics rows shown: those with a value (and the duration); no GPU rows when no
    GPU was seen."""
    gpu = _headline.gpu_seen(summary)
    duration = summary.row(*DURATION)
    for row in summary.rows:
        if row.value is None and row is not duration:
            continue
        if not gpu and _headline.gpu_row(row):
            continue
        yield row


def _row_value(summary: RunSummary, row: StatRow, value: Optional[float]) -> str:
    """A statistic as shown (HTML): see _row_text."""
    return _esc(_row_text(summary, row, value))


def _row_text(summary: RunSummary, row: StatRow, value: Optional[float]) -> str:
    """A statistic as text: CPU (the machine's and the workload's) never above the
    machine's vCPUs (sampling jitter), as in the headline and the charts."""
    vcpus = (summary.server_info or {}).get("vcpus")
    if value is not None and vcpus and row.unit == "cores":
        value = min(value, float(vcpus))
    return fmt.quantity(value, row.unit)


def _usage(view: _View) -> str:
    s = view.s
    if not s.stats or s.n_samples == 0:
        note = _note("No statistics: no samples were recorded.")
        return _fold("rt-usage", "Usage statistics", note, "none", open_=True)
    hist = s.history
    head = ["Metric", "This run"]
    if hist:
        head += [f"Earlier runs ({hist.runs:,})", "Change"]
    rows, changed = [], 0
    for row in _shown_rows(s):
        cells = [_esc(row.label), _row_value(s, row, row.value)]
        if hist:
            delta = fmt.change(row.value, row.past, row.unit)
            changed += delta is not None and delta.direction != "same"
            cells += [_row_value(s, row, row.past), _change_cell(delta)]
        rows.append(cells)
    content = _table(rows, head=head, cls="rt-stats")
    extra = fmt.plural(len(rows), "figure")
    if hist:
        extra += f", {changed:,} changed against {fmt.plural(hist.runs, 'earlier run')}"
        content += _note(
            "Earlier runs: the mean of their means, the highest of their peaks, the mean "
            "of their totals and durations. Change: this run against them, shown when it "
            f"exceeds the noise (at least {fmt.CHANGE_MIN_RATIO:.0%} and a floor per unit)."
        )
    return _fold("rt-usage", "Usage statistics", content, _esc(extra))


def _change_cell(delta: Optional[fmt.Change]) -> str:
    if delta is None:
        return "n/a"
    return f'<span class="rt-{delta.direction}">{_esc(delta.text)}</span>'


def _servers(view: _View) -> str:
    """The fitting servers (the cheapest is in the headline) with their prices."""
    choice = view.s.server
    if len(choice.servers) < 1:
        return ""
    rows = [
        [_server_name(srv),
         f'{_server_shape(srv)}<div class="rt-caveats">{_headline.server_caveats(srv, view.s)}'
         "</div>",
         _server_price(srv)]
        for srv in choice.servers[:4]
    ]  # fmt: skip
    head = ["Server", "Shape and caveats", "Hourly price"]
    content = _table(rows, head=head, cls="rt-servers")
    costs = choice.costs or {}
    eur = any(
        isinstance(srv, dict) and str(srv.get("price_currency", "EUR")).upper() == "EUR"
        for srv in choice.servers[:4]
    )
    if eur and costs.get("eur_usd_rate"):
        content += _note(f"EUR prices converted at {_num(costs['eur_usd_rate'])} USD/EUR.")
    extra = f"the cheapest and {fmt.plural(len(rows) - 1, 'alternative')}"
    return _fold("rt-servers", "Fitting cloud servers", content, _esc(extra))


def _charts(summary: RunSummary, downsampled: Sequence[Tuple[str, int, int]]) -> str:
    if summary.n_samples < 2:
        return ""  # the header's note says why there are no charts, once
    out = ['<section id="rt-charts"><h2>Usage over time</h2>']
    out.append(
        '<p class="rt-help">Hover a chart to read all charts at that time; drag across a '
        "chart to zoom in; double-click (or the button) to zoom out; click a legend entry to "
        "hide or show its line. Times are in your local time zone. "
        '<button type="button" id="rt-reset" class="rt-button" hidden>Reset zoom</button></p>'
    )
    down = sorted({(rows, pts) for _, rows, pts in downsampled if pts < rows})
    if down:
        drawn = "; ".join(f"{rows:,} samples drawn as {pts:,} points" for rows, pts in down)
        out.append(
            _note(
                f"Long run: {_esc(drawn)} (the lowest and highest of each interval: every "
                "peak is kept; the statistics use all samples)."
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


def _is_capacity(col: Column) -> bool:
    """The disk's size: drawn as a capacity line."""
    return col.role == "disk_space_total"


# id (the registry's ``chart``: which columns it draws), title, axis unit (report.js)
_CHARTS = (
    ("cpu", "CPU", "cores"),
    ("memory", "Memory", "mib"),
    ("gpu", "GPU utilisation", "pct"),
    ("vram", "GPU memory (VRAM)", "mib"),
    ("diskio", "Disk I/O", "Bps"),
    ("diskspace", "Disk space", "gb"),
    ("network", "Network", "Bps"),
)

_GPU_CHARTS = ("gpu", "vram")
#: charts drawn in another unit than the statistics table's (GPUs as % of a GPU)
_RESCALED = ("gpu",)
#: charts drawn short when their lines are flat (a disk's size, an idle network)
_COMPACT_WHEN_FLAT = ("diskio", "diskspace", "network")
_TABLE_KEYS = {"process": "p", "system": "s"}


def _chart_columns(chart_id: str) -> List[Column]:
    return list(by_chart(chart_id))


def _series_name(col: Column, cols: Sequence[Column]) -> str:
    """The table's name when the chart has one column per table, else the column's label."""
    tables = [c.table for c in cols]
    if len(set(tables)) == len(tables):
        return col.table.capitalize()
    return col.label


def _series_defs(summary: RunSummary, cols: Sequence[Column], stats: bool = True) -> List[JsonDict]:
    """The series of one chart: name, where its values are, what it means (``role``: the
    process tree or the machine, one colour each on every chart) and its line style
    (``dash``: the table's second column in the chart, e.g. writes after reads), with its
    mean and peak over the whole run as the statistics table shows them (``stats``: the
    chart's unit is the table's)."""
    out: List[JsonDict] = []
    seen: Dict[str, int] = {}
    for col in cols:
        dash = seen.get(col.table, 0)
        seen[col.table] = dash + (not _is_capacity(col))
        out.append(
            dict(
                name=_series_name(col, cols),
                table=_TABLE_KEYS[col.table],
                key=col.name,
                role="capacity" if _is_capacity(col) else col.table,
                dash=2 if _is_capacity(col) else dash,
                stat=_stat_texts(summary, col) if stats else {},
            )
        )
    return out


def _stat_texts(summary: RunSummary, col: Column) -> Dict[str, str]:
    """{field: text} of the run's mean and peak of col, formatted as in the statistics table
    (the legend shows them while the whole run is in view)."""
    texts = {}
    for field in ("mean", "max"):
        row = summary.row(col.key, field) if field in col.fields else None
        if row is not None and row.value is not None:
            texts[field] = _row_text(summary, row, row.value)
    return texts


def _marks(summary: RunSummary, chart_id: str) -> List[JsonDict]:
    """The reference lines of a chart (in its drawn unit): what the run asked for (e.g.
    Metaflow's @resources, with tuning the tuned ask), the container's limit, and the GPUs'
    memory on the VRAM chart. Each {name, kind ('ask', 'limit', 'capacity'), value}."""
    info = summary.server_info or {}
    cgroup = info.get("cgroup") or {}
    stats_cg = (summary.stats or {}).get("cgroup") or {}
    asked = summary.run.asked or {}
    source = str(asked.get("source") or "the request")
    picks = {
        "cpu": (
            ("ask", f"asked ({source})", asked.get("cpu")),
            ("limit", "container limit",
             cgroup.get("cpu_limit_cores") or stats_cg.get("cpu_limit_cores")),
        ),
        "memory": (
            ("ask", f"asked ({source})", asked.get("memory")),
            ("limit", "container limit",
             cgroup.get("memory_limit_mb") or stats_cg.get("memory_limit_mib")),
        ),
        "vram": (("capacity", "GPU memory", info.get("gpu_memory_mb")),),
    }  # fmt: skip
    marks = []
    for kind, name, value in picks.get(chart_id, ()):
        value = _positive(value)
        if value is not None:
            marks.append(dict(name=name, kind=kind, value=value))
    return marks


def _positive(value: object) -> Optional[float]:
    """value as a float when it is a finite number above 0 (a figure from outside), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def _chart_def(
    summary: RunSummary, chart_id: str, title: str, unit: str, series: List[JsonDict]
) -> JsonDict:
    """One chart's definition for report.js. The GPU chart shows utilisation in % of one
    GPU, averaged over the machine's GPUs (100% = every GPU busy), as nvidia-smi users read
    it; the sampler's figures are in GPUs (0..N)."""
    chart: JsonDict = dict(id=chart_id, title=title, unit=unit, series=series)
    marks = _marks(summary, chart_id)
    if marks:
        chart["marks"] = marks
    if chart_id == "gpu":
        gpus = _positive((summary.server_info or {}).get("gpu_count")) or 1.0
        chart["factor"] = 100.0 / gpus
        if gpus > 1:
            chart["title"] = f"{title} (mean of {fmt.plural(gpus, 'GPU')})"
    if chart_id in _COMPACT_WHEN_FLAT:
        chart["compact"] = True  # flat lines get a short panel
    return chart


def _chart_data(
    summary: RunSummary,
    process: Optional[TinyDataFrame],
    system: Optional[TinyDataFrame],
    gpus: Optional[GpuSeries] = None,
) -> Tuple[JsonDict, List[Tuple[str, int, int]]]:
    """(the page's chart data, [(table, rows, points drawn)])."""
    tables: Dict[str, TableData] = {}
    downsampled: List[Tuple[str, int, int]] = []
    interval = float(summary.run.interval or 1.0)
    if summary.n_samples >= 2:
        for name, df, n in (
            ("process", process, summary.n_process),
            ("system", system, summary.n_system),
        ):
            if n >= 2:
                data, points = _table_data(name, df, interval, _vcpus(summary))
                tables[_TABLE_KEYS[name]] = data
                downsampled.append((name, data["rows"], points))
    charts = []
    gpu = _headline.gpu_seen(summary)
    for chart_id, title, unit in _CHARTS:
        if chart_id in _GPU_CHARTS and not gpu:
            continue  # no flat-zero charts of hardware that is not there
        cols = [c for c in _chart_columns(chart_id) if _TABLE_KEYS[c.table] in tables]
        series = _series_defs(summary, cols, stats=chart_id not in _RESCALED)
        if chart_id == "gpu" and gpus and _add_gpu_table(tables, system, gpus, interval):
            charts.append(_per_gpu_chart(summary, title, unit, series, gpus))
        elif series:
            charts.append(_chart_def(summary, chart_id, title, unit, series))
    t0 = min((tab["t0"] for tab in tables.values()), default=0)
    return {"t0": t0, "tables": tables, "charts": charts}, downsampled


def _add_gpu_table(
    tables: Dict[str, TableData],
    system: Optional[TinyDataFrame],
    gpus: GpuSeries,
    interval: float,
) -> bool:
    """Adds the per-GPU series to the chart data as table ``g`` (the system table's times,
    one series ``gpu<index>`` of utilisation % a GPU): True, or False when the run has none
    that fit the system table drawn (an older snapshot, the psutil backend, no GPU)."""
    if not gpus or "s" not in tables:
        return False
    t = _column(system, "timestamp")
    if any(len(dev["utilization"]) < len(t) for dev in gpus):
        return False  # (read after the table while running: the same rows, maybe one more)
    series = {
        f"gpu{dev['index']}": _RawJson(
            _core.chart_series(dev["utilization"][: len(t)], "as_is", MAX_POINTS, t, interval, 0.0)
        )
        for dev in gpus
    }
    t0 = math.floor(t[0]) if len(t) else 0
    times = _RawJson(_core.chart_times(t, t0, MAX_POINTS))
    tables["g"] = {"t0": t0, "rows": len(t), "t": times, "s": series}
    return True


def _per_gpu_chart(
    summary: RunSummary, title: str, unit: str, series: List[JsonDict], gpus: GpuSeries
) -> JsonDict:
    """The GPU chart of a run with per-GPU series: one line per GPU (0-100 % of that GPU,
    machine-wide, as nvidia-smi shows it; the machine's colour, a dash each), named "GPU 0"
    and its name, and the process tree's line (its use of all the GPUs, in % of them)."""
    chart = _chart_def(summary, "gpu", title, unit, [])
    share = chart.pop("factor")  # the process's use of the machine's GPUs, in %
    chart["title"] = f"{title} (per GPU)"
    process = [dict(s, name="Process (of all GPUs)", factor=share) for s in series
               if s["role"] == "process"]  # fmt: skip
    chart["series"] = process + [
        dict(
            name=f"GPU {dev['index']}" + (f" · {dev['name']}" if dev["name"] else ""),
            table="g", key=f"gpu{dev['index']}", role="system", dash=i % 3, stat={},
        )
        for i, dev in enumerate(gpus)
    ]  # fmt: skip
    return chart


def _vcpus(summary: RunSummary) -> Optional[float]:
    vcpus = (summary.server_info or {}).get("vcpus")
    return float(vcpus) if isinstance(vcpus, (int, float)) and vcpus > 0 else None


def _drawing(col: Column, vcpus: Optional[float] = None) -> str:
    """How a column is drawn (``_core.chart_series``): KiB as MiB, amounts per interval as
    rates per second, CPU never above the machine's vCPUs (sampling jitter)."""
    if col.role == "cpu" and vcpus:
        return "at_most"
    if col.unit == "KiB":
        return "kib_as_mib"
    if col.fold == "sum":
        return "per_second"
    return "as_is"


def _table_data(
    name: str, df: Optional[TinyDataFrame], interval: float, vcpus: Optional[float] = None
) -> Tuple[TableData, int]:
    """(one table's chart data, points drawn per series). Each series is drawn, downsampled
    to at most MAX_POINTS points (each of MAX_POINTS / 2 buckets gives its lowest and highest
    value, in their order, at the bucket's first and last timestamp: no peak is lost) and
    written as JSON numbers with 5 significant digits (null for NaN and infinities) in C,
    over the stored columns without copying them."""
    t = _column(df, "timestamp")
    n = len(t)
    series = {}
    for col in table_columns(name):
        if col.chart is not None:
            values = _column(df, col.name)
            if len(values) == n:
                text = _core.chart_series(
                    values, _drawing(col, vcpus), MAX_POINTS, t, interval, vcpus or 0.0
                )
                series[col.name] = _RawJson(text)
    t0 = math.floor(t[0]) if n else 0
    data: TableData = {
        "t0": t0,
        "rows": n,
        "t": _RawJson(_core.chart_times(t, t0, MAX_POINTS)),
        "s": series,
    }
    return data, min(n, MAX_POINTS // 2 * 2)


# -- catalog records ---------------------------------------------------------------------


def _usd(value: object, per: str = "") -> str:
    return _esc(fmt.money(value, per))


_server_name = _headline.server_name
_server_price = _headline.server_price
_server_shape = _headline.server_shape


# -- JSON ---------------------------------------------------------------------------------


class _RawJson:
    """Already-encoded JSON text, put in place by _Page.html()."""

    def __init__(self, text: str) -> None:
        self.text = text


def _attr(obj: object, name: str, default: object = None) -> Any:
    """obj's attribute (any value: read from an object of any type), default when it has
    none or reading it fails."""
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
