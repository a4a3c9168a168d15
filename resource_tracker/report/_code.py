"""The report's section "Where the time and memory went": the code facts of the run summary
(``RunSummary.code``, made by ``resource_tracker.code_view``): the code at the memory peak,
the code of each phase, the top functions by CPU and by memory. Pure formatting: numbers
through resource_tracker.formatting, every name and path escaped. No section for a run
without a code profile (switched off); a note when it could not be recorded."""

from __future__ import annotations

from html import escape
from typing import Any, List, Mapping, Optional

from .. import code_view as cv
from .. import formatting as fmt

__all__ = ["section"]

TITLE = "Where the time and memory went"


def _esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _code(text: str) -> str:
    return f"<code>{_esc(text)}</code>"


def section(summary: Any) -> str:
    """The section's HTML ('' when the run has no code view)."""
    view = getattr(summary, "code", None)
    if not isinstance(view, Mapping):
        return ""
    out = [f'<section id="rt-codeview"><h2>{TITLE}</h2>']
    if view.get("status") != "recorded":
        note = view.get("note") or "the code profile was not recorded"
        out.append(_note(f"No code profile for this run: {_esc(note)}."))
        return "".join(out) + "</section>"
    out.append(_facts(view, summary))
    out.append('<div class="rt-grid">')
    out.append(_cpu_table(view.get("cpu") or []))
    out.append(_memory_table(view.get("memory") or []))
    out.append("</div>")
    out.append(_note(_how(view, summary)))
    return "".join(out) + "</section>"


def _note(html: str) -> str:
    return f'<p class="rt-note">{html}</p>'


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _facts(view: Mapping[str, Any], summary: Any) -> str:
    """The sentences first: the peak, the CPU, the phases and where to split."""
    items = [cv.peak_text(view, _code), cv.top_cpu_text(view, _code)]
    phases = cv.phase_texts(view, _code)
    if phases:
        items.append("phases: " + "; ".join(phases))
        if _split_advised(summary):
            split = cv.split_text(view, _code)
            items.append(f"split advice: {split}" if split else None)
    shown = [f"<li>{_capital(text)}.</li>" for text in items if text]
    if not shown:
        return _note(_esc(view.get("note") or "No stack sample was taken."))
    return f'<ul class="rt-codeview-facts">{"".join(shown)}</ul>'


def _split_advised(summary: Any) -> bool:
    found = [i for i in getattr(summary, "insights", ()) if i.kind == "phases"]
    return bool(found) and found[0].severity != "info"


def _table(title: str, head: List[str], rows: List[List[str]], empty: str) -> str:
    out = [f'<div class="rt-codeview-table"><h3>{title}</h3>']
    if not rows:
        return "".join(out) + f"<p>{_esc(empty)}</p></div>"
    out.append('<div class="rt-scroll"><table class="rt-stats">')
    out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>")
    for first, *rest in rows:
        out.append(f"<tr><th>{first}</th>" + "".join(f"<td>{c}</td>" for c in rest) + "</tr>")
    return "".join(out) + "</tbody></table></div></div>"


def _where(item: Mapping[str, Any]) -> str:
    return _code(cv.name(str(item.get("function")))) + f"<br>{_code(cv.place(item))}"


def _cpu_table(rows: List[Mapping[str, Any]]) -> str:
    cells = [
        [
            _where(r) + (f"<br>{_esc(cv.in_processes(r))}" if cv.in_processes(r) else ""),
            _esc(fmt.percent(r.get("share"))),
            _esc(fmt.duration(r.get("cpu_self_seconds"))),
            _esc(fmt.duration(r.get("cpu_seconds"))),
            _esc(fmt.duration(r.get("seconds_on_stack"))),
        ]
        for r in rows
    ]
    head = ["Function", "Share of CPU", "CPU time", "With callees", "Time on stack"]
    return _table("Top functions by CPU", head, cells, "No CPU time was attributed to code.")


def _memory_table(rows: List[Mapping[str, Any]]) -> str:
    cells = [
        [
            _where(r),
            _esc(fmt.quantity(r.get("memory_peak"), "KiB")),
            _esc(_signed(r.get("memory_growth"))),
        ]
        for r in rows
    ]
    head = ["Function", "Memory peak while it ran", "Memory change while it ran"]
    empty = "No memory figures per function: no interval of the run had a stack sample."
    return _table("Top functions by memory", head, cells, empty)


def _signed(kib: Optional[float]) -> str:
    text = fmt.quantity(kib, "KiB")
    return f"+{text}" if isinstance(kib, (int, float)) and kib > 0 else text


def _how(view: Mapping[str, Any], summary: Any) -> str:
    interval = getattr(getattr(summary, "run", None), "interval", None)
    base = view.get("base_dir")
    text = (
        f"Sampled with the resources, every {_esc(fmt.duration(interval))}: each "
        "interval's CPU time and memory change go to the code running at its end. "
        "Standard-library and site-packages code is counted in the function of your code "
        "that called it. CPU time: the function's own code and the library code it called; "
        "with callees: also the functions of yours it called."
    )
    if base:
        text += f" Files are relative to {_code(base)}."
    return text
