"""The tracker's own rich display in Jupyter (``ResourceTracker._repr_html_``): what it tracks,
its state, its samples, and the headline figures so far (CPU, memory peak, GPU, the Metaflow
decorator it would recommend), each in the report's units and words. Small and cheap: the
full page is ``tracker.report()``. Never raises: a figure that cannot be read is ``n/a``."""

from __future__ import annotations

import html
import time
from typing import Any, List, Mapping, Optional, Tuple

from . import formatting as fmt
from .registry import column
from .tuning import resources_line


def _figure(stats: Mapping[str, Any], key: str, what: str) -> Optional[float]:
    value = (stats.get(key) or {}).get(what)
    return float(value) if isinstance(value, (int, float)) else None


def _usage_rows(tracker: Any) -> List[Tuple[str, str]]:
    """CPU (mean and peak), memory peak, GPU: the process tree's, as the report's headline."""
    try:
        stats = tracker.stats() if tracker.n_samples else {}
    except Exception:  # a figure never breaks the display
        stats = {}
    if not stats:
        return []
    cpu_unit, memory_unit = column("process", "cpu_usage").unit, column("process", "memory").unit
    mean, peak = (
        _figure(stats, "process_cpu_usage", "mean"),
        _figure(stats, "process_cpu_usage", "max"),
    )
    rows = [
        (
            "CPU",
            f"{fmt.quantity(mean, cpu_unit)} on average, {fmt.quantity(peak, cpu_unit)} at peak",
        ),
        ("Memory peak", fmt.quantity(_figure(stats, "process_memory", "max"), memory_unit)),
    ]
    gpus = _figure(stats, "process_gpu_usage", "max")
    if gpus:
        rows.append(("GPU peak", fmt.quantity(gpus, column("process", "gpu_usage").unit)))
    try:
        rows.append(("Recommended", resources_line(tracker.recommend_resources())))
    except Exception:
        pass
    return rows


def _run_rows(tracker: Any) -> List[Tuple[str, str]]:
    status = str(tracker.status)
    start, stop = tracker.start_time, tracker.stop_time
    command = " ".join((fmt.user_command(tracker.command) or "n/a").split())
    command = command if len(command) <= 80 else command[:77] + "..."
    rows = [("Tracking", f"{command} (pid {tracker.pid})")]
    rows.append(("Status", status))
    samples = fmt.plural(tracker.n_samples, "sample")
    rows.append(("Samples", f"{samples}, every {fmt.duration(tracker.interval)}"))
    if start:
        ended = stop or time.time()
        rows.append(("Duration", fmt.duration(ended - start) + ("" if stop else " so far")))
    return rows


def tracker_html(tracker: Any) -> str:
    """The tracker as a small HTML table (its state and the headline figures so far)."""
    rows = _run_rows(tracker) + _usage_rows(tracker)
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    hint = "the full report: <code>tracker.report()</code>"
    return (
        f"<div class='resource-tracker-status' data-status='{html.escape(str(tracker.status))}'>"
        f"<strong>ResourceTracker</strong><table>{body}</table><small>{hint}</small></div>"
    )
