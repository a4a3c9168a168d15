"""The ``tracked_resources`` card: the resource-tracker report of a step.

``render`` (end of the task, also for a failed step) reads the step's artifact and shows
``ResourceTracker.report()``; ``render_runtime`` (while the step runs) shows the same report
from the data so far, passed in by the live thread of @track_resources. When the report
package cannot be used, a small escaped HTML summary takes its place.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from metaflow.plugins.cards.card_modules.card import MetaflowCard

if TYPE_CHECKING:
    from metaflow.client import Task

    from resource_tracker import ResourceTracker
    from resource_tracker.summary import RunSummary

DEFAULT_ARTIFACT = "resource_tracker_data"

# Lets `python flow.py card server` follow live renders: it reloads the card when the
# token of the latest data update differs from the page's token.
_LIVE_SCRIPT = (
    '<script>var METAFLOW_RELOAD_TOKEN = "[METAFLOW_RELOAD_TOKEN]";'
    "window.metaflow_card_update = function (data) { return true; };</script>"
)


# Metaflow's classes are untyped (pyproject.toml: metaflow is Any to mypy)
class TrackedResourcesCard(MetaflowCard):  # type: ignore[misc]
    """Resource use of the step, recommendations and history (from @track_resources)."""

    type = "tracked_resources"
    RUNTIME_UPDATABLE = True
    RELOAD_POLICY = MetaflowCard.RELOAD_POLICY_ALWAYS

    def __init__(
        self,
        options: Optional[Mapping[str, Any]] = None,
        components: object = None,
        graph: object = None,
        flow: object = None,
        **kwargs: object,
    ) -> None:
        self._artifact_name = (options or {}).get("artifact_name") or DEFAULT_ARTIFACT

    def render(self, task: Task) -> str:
        try:
            data = task[self._artifact_name].data
        except Exception as exc:
            return _page(
                "Resource tracking",
                f"<p>No {_esc(self._artifact_name)} artifact in this task "
                f"({_esc(type(exc).__name__)}).</p>",
            )
        return render_artifact(data, label=getattr(task, "pathspec", None))

    def render_runtime(self, task: Task, data: Optional[Mapping[str, Any]]) -> str:
        user = (data or {}).get("user") or {}
        snapshot = user.get("snapshot")
        if not snapshot:
            return _page("Resource tracking", "<p>The step is starting.</p>") + _LIVE_SCRIPT
        from resource_tracker import ResourceTracker
        from resource_tracker.formatting import plural

        tracker = ResourceTracker.loads(snapshot)
        banner = (
            f"Live view: the step is running ({plural(tracker.n_samples, 'sample')} so far, "
            f"update {user.get('seq')}). The final report, with server prices, replaces this "
            "page when it ends."
        )
        html = _report_html(tracker, None, banner=banner, live=True)
        return _with_script(html, _LIVE_SCRIPT)

    def refresh(self, task: Task, data: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        data = data or {}
        if data.get("render_seq") == "final":
            return {"status": "finished"}
        user = data.get("user") or {}
        return {"status": user.get("status", "running"), "seq": user.get("seq")}


def _esc(value: object) -> str:
    import html

    return html.escape(str(value), quote=True)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_esc(title)}</title></head><body>{body}</body></html>"
    )


def _with_script(html: str, script: str) -> str:
    index = html.rfind("</body>")
    if index < 0:
        return html + script
    return html[:index] + script + html[index:]


def _with_banner(html: str, banner: str, failed: bool, details: Sequence[str] = ()) -> str:
    """html with the banner (one sentence) at the top of the report's content, its
    ``details`` folded under it."""
    color = "#b00020" if failed else "#0b5394"
    folded = ""
    if details:
        items = "".join(f"<li>{_esc(d)}</li>" for d in details)
        folded = (
            '<details class="rt-banner-details" style="margin-top:4px"><summary '
            'style="cursor:pointer">Details</summary>'
            f'<ul style="margin:4px 0 0 0;padding-left:20px">{items}</ul></details>'
        )
    div = (
        f'<div role="status" id="rt-card-banner" style="padding:8px 12px;margin:0 0 8px 0;'
        f'color:#fff;background:{color};font-family:sans-serif">'
        f'<span class="rt-banner-text">{_esc(banner)}</span>{folded}</div>'
    )
    lower = html.lower()
    start = lower.find('<main class="rt-page"')  # the report's content column
    if start < 0:
        start = lower.find("<body")
    if start < 0:
        return div + html
    end = html.find(">", start) + 1
    return html[:end] + div + html[end:]


def tracker_from_artifact(data: Mapping[str, Any]) -> ResourceTracker:
    """A stopped ResourceTracker holding the data of a @track_resources artifact."""
    from resource_tracker import ResourceTracker
    from resource_tracker.tracker import SNAPSHOT_FORMAT, SNAPSHOT_VERSION

    meta = data.get("tracker") or {}
    if meta.get("format") == SNAPSHOT_FORMAT:  # the artifact holds the run's snapshot
        return ResourceTracker.from_snapshot(meta)
    # artifacts of earlier versions: a few fields beside the tables
    stats = data.get("detailed_stats") or data.get("stats") or {}
    return ResourceTracker.from_snapshot(
        {
            "format": SNAPSHOT_FORMAT,
            "format_version": SNAPSHOT_VERSION,
            "pid": meta.get("pid"),
            "children": True,
            "interval": meta.get("interval"),
            "method": meta.get("method"),
            "command": meta.get("command"),
            "label": None,
            "start_time": meta.get("start_time"),
            "stop_time": meta.get("stop_time"),
            "track_processes": True,
            "track_system": True,
            "server_info": data.get("server_info"),
            "cloud_info": data.get("cloud_info"),
            "extra": {"step_failed": bool(data.get("step_failed"))},
            # the kernel's figures: in the artifact's stats (the two tables are the seeds')
            "cgroup_metrics": stats.get("cgroup"),
            "memory_hwm": (stats.get("process_memory_hwm") or {}).get("max"),
            "process_metrics": data["process_metrics"],  # the frames: from_snapshot copies
            "system_metrics": data["system_metrics"],
        }
    )


def artifact_problem(data: object) -> Optional[str]:
    """What makes data no @track_resources artifact the card can read (None: nothing): the
    artifact is a dict, its ``tracker`` (when there) a snapshot dict."""
    if not isinstance(data, dict):
        return f"the artifact is a {type(data).__name__}, not the dict @track_resources stores"
    meta = data.get("tracker")
    if meta is not None and not isinstance(meta, dict):
        return f"its 'tracker' is a {type(meta).__name__}, not a snapshot (a dict)"
    return None


def _unreadable_page(problem: str) -> str:
    return _page(
        "Resource tracking",
        "<h2>Resource tracking</h2>"
        f"<p>This step's resource data cannot be shown: {_esc(problem)}.</p>",
    )


def render_artifact(data: Any, label: Optional[str] = None) -> str:
    """The card HTML for a @track_resources artifact dict (a page saying what is wrong when
    the artifact cannot be read: the card never raises). ``data``: whatever the client read
    (any value until ``artifact_problem`` has checked it)."""
    problem = artifact_problem(data)
    if problem is not None:
        return _unreadable_page(problem)
    failed = bool(data.get("step_failed"))
    tuning, details = tuning_banner(data.get("tuning"), failed=failed)
    if data.get("process_metrics") is None:
        body = "<h2>Resource tracking</h2>"
        if failed:
            body += "<p><b>Status: failed</b></p>"
        body += f"<p>No data: {_esc(data.get('error') or 'tracking did not run')}</p>"
        return _page("Resource tracking", body)
    try:
        tracker = tracker_from_artifact(data)
    except Exception as exc:  # a damaged snapshot or table: say so, never raise
        return _unreadable_page(f"{type(exc).__name__}: {exc}")
    tracker.label = tracker.label or label
    return _report_html(tracker, data, banner=tuning or None, failed=failed, details=details)


#: The banner of a failed step whose report cannot be rendered (the report says it itself)
_FAILED_LINE = "The step failed: resource use up to the failure."

_RUN_NOTE = re.compile(r"run (\S+) (was|had) (.+)")


def distinct_notes(*notes: object) -> List[str]:
    """The ``; ``-separated notes of tuning, each once: the same note on several runs
    ('run 7 was starved by ...', 'run 8 was starved by ...') becomes one line naming the
    runs ('runs 7 and 8 were starved by ...'), in the order first seen."""
    runs: Dict[Tuple[str, str], List[str]] = {}
    order: List[Tuple[str, str]] = []
    for note in notes:
        for part in str(note or "").split("; "):
            part = part.strip().rstrip(".")
            match = _RUN_NOTE.fullmatch(part)
            key = (match.group(2), match.group(3)) if match else ("", part)
            if not part or (not match and key in runs):
                continue
            if key not in runs:
                runs[key] = []
                order.append(key)
            if match and match.group(1) not in runs[key]:
                runs[key].append(match.group(1))
    out = []
    for verb, rest in order:
        ids = runs[(verb, rest)]
        if len(ids) <= 1:
            out.append(f"run {ids[0]} {verb} {rest}" if ids else rest)
        else:
            out.append(f"runs {run_names(ids)} {'were' if verb == 'was' else verb} {rest}")
    return out


def run_names(ids: Sequence[str]) -> str:
    """Several run ids in a few words: '7 and 8', '100 to 106' (consecutive numbers, as
    Metaflow's local runs), '3, 9, 12 and 5 more' (more than four otherwise)."""
    numbers = [int(i) for i in ids if i.isdigit()]
    if (
        len(ids) > 2
        and len(numbers) == len(ids)
        and numbers == list(range(numbers[0], numbers[0] + len(ids)))
    ):
        return f"{ids[0]} to {ids[-1]}"
    if len(ids) > 4:
        return f"{', '.join(ids[:3])} and {len(ids) - 3} more"
    return ", ".join(ids[:-1]) + f" and {ids[-1]}"


def tuning_banner(tuning: object, failed: bool = False) -> Tuple[str, List[str]]:
    """@track_resources(tune=True) in one sentence, what it changed and the one reason
    ('' without tuning), and the details to fold under it (each note once, why the ask may
    differ from recommend_resources(), the next run's ask; a ``failed`` step's next ask is
    marked as coming from a run cut short)."""
    if not isinstance(tuning, dict):
        return "", []
    changes = ", ".join(str(c) for c in tuning.get("changes") or ())
    notes = distinct_notes(tuning.get("note"))
    reason = notes[0] if notes else ""
    if changes:
        sentence = f"Resources tuned by @track_resources: {changes}"
    else:
        sentence = "@track_resources(tune=True) changed nothing"
    sentence += f" ({reason})." if reason and changes else (f": {reason}." if reason else ".")
    details = notes[1:]
    if tuning.get("why"):  # why the tuned ask may differ from recommend_resources()
        details.append(f"Why it may differ from recommend_resources(): {tuning['why']}")
    if isinstance(tuning.get("next"), dict):
        from resource_tracker.tuning import resources_line

        upcoming = [n for n in distinct_notes(tuning.get("next_note")) if n not in notes]
        if failed:
            upcoming.append("from a run cut short by its failure: it may need more")
        line = f"Next run: {resources_line(tuning['next'])}"
        details.append(line + (f" ({'; '.join(upcoming)})" if upcoming else ""))
    return sentence, details


def _live_summary(tracker: ResourceTracker, history: object) -> RunSummary:
    """The summary of a live render: no catalog asked (no I/O in the step's process), and
    no warning about it (the live banner says the final report brings the prices)."""
    summary = tracker.summary(historical_stats=history, lookup_server=False)
    kept = tuple(w for w in summary.warnings if w.topic != "catalog")
    return replace(summary, warnings=kept)


def _report_html(
    tracker: ResourceTracker,
    data: Optional[Mapping[str, Any]],
    banner: Optional[str] = None,
    failed: bool = False,
    live: bool = False,
    details: Sequence[str] = (),
) -> str:
    """The report HTML of the run's summary (with a banner), or a minimal page when the
    report cannot be rendered.

    The summary stored with the artifact (in its ``tracker`` snapshot) is rendered as it
    is: the card asks no catalog. Artifacts without one (earlier versions) get a summary
    built here; live renders (in the task process) one without servers and prices.
    """
    history = (data or {}).get("historical_runs_stats") or None
    summary = None
    try:
        from resource_tracker.report import render_report
        from resource_tracker.summary import stored_summary

        summary = stored_summary(((data or {}).get("tracker") or {}).get("summary"))
        if summary is None:
            summary = _live_summary(tracker, history) if live else tracker.summary(history)
        shown = "running" if live else None  # a snapshot of a running tracker loads as stopped
        html = str(render_report(tracker, summary=summary, status=shown, integration="Metaflow"))
        note = None  # a failed step's report opens with "The step failed after ...": once
    except Exception as exc:  # the report package is missing or broke: still show the data
        status = "running" if live else ("failed" if failed else "finished")
        html = _summary_html(tracker, summary, data, status)
        note = f"(full report unavailable: {type(exc).__name__}: {exc})"
        if failed:
            banner = " ".join(t for t in (_FAILED_LINE, banner) if t)
    if banner or note:
        text = " ".join(t for t in (banner, note) if t)
        alarm = failed and note is not None  # red: only the banner says the step failed
        html = _with_banner(html, text, alarm, details)
    return html


def _summary_html(
    tracker: ResourceTracker,
    summary: Optional[RunSummary],
    data: Optional[Mapping[str, Any]],
    status: str,
) -> str:
    """A small self-contained HTML page (when the full report cannot be rendered): the
    summary's statistics of the resources the recommendation sizes, as plain numbers with
    the registry's labels and units."""
    from resource_tracker import formatting as fmt
    from resource_tracker._text import printable

    command = fmt.user_command(getattr(tracker, "command", None), "Metaflow")
    rows: List[Tuple[str, object]] = [("Status", status), ("Command", command)]
    step_error = (data or {}).get("step_error")
    if isinstance(step_error, dict) and step_error.get("type"):
        rows.append(("Failed with", f"{step_error['type']}: {step_error.get('message') or ''}"))
    if summary is not None:
        from resource_tracker.registry import COLUMNS

        sized = {c.key for c in COLUMNS if c.resource}
        rows.append(("Duration", fmt.duration(summary.duration)))
        rows.append(("Samples", f"{summary.n_samples:,}"))
        rows += [(r.label, fmt.quantity(r.value, r.unit)) for r in summary.rows if r.key in sized]
        if summary.resources:
            text = ", ".join(f"{k}={v}" for k, v in summary.resources.items())
            if status == "failed":
                text += " (from a run cut short by its failure: it may need more)"
            rows.append(("Recommended resources", text))
        if summary.history:
            rows.append(("Earlier runs", f"{summary.history.runs:,}"))
    error = (data or {}).get("error")
    if error:
        rows.append(("Error", error))
    shown = [(k, printable("n/a" if v is None else v, 2000)) for k, v in rows]
    table = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in shown)
    return _page(
        "Resource tracking",
        f"<h2>Resource tracking</h2><table>{table}</table>",
    )
