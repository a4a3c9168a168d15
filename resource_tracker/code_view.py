"""Where the time and memory went, as the run summary says it: the few facts of the code
profile (docs/code_profile.md) that a page, a card and the CLI show beside the resources.

:func:`code_view` picks them once, when the summary is built, as plain JSON values (stored
with the summary, so a loaded run shows the same): the top functions by CPU and by memory,
the code running at the memory peak, and the code that ran for most of each phase of the
phases finding (:func:`label_phases` adds it to that finding, so the split advice names the
code to split at). Functions are the user's: standard-library, site-packages and
resource-tracker frames are folded into the first user frame that called them
(``user_code=True``). Files are shown relative to the run's code directory: the deepest
directory holding every user file seen (the script's or the flow file's directory, the
project's when the code spans folders).

The texts (:func:`peak_text`, :func:`phase_texts`, :func:`top_cpu_text`) are written once
here for the report, the card and the CLI; ``code`` wraps each code name (HTML: a
``<code>`` element, escaped; the terminal: the name as it is).
"""

from __future__ import annotations

import math
import os
from array import array
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _core
from . import formatting as fmt
from .code_profile import origin_of, phase_code
from .insights import Insight

__all__ = [
    "TOP",
    "code_view",
    "stored_view",
    "label_phases",
    "peak_text",
    "phase_texts",
    "top_cpu_text",
    "in_processes",
    "split_text",
]

#: Functions shown in each top list.
TOP = 5
#: The Metaflow extension's own code, where it is not in site-packages (a checkout installed
#: in development mode): never the user's code, so never listed nor a base for the paths.
_EXTENSION_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "metaflow_extensions", ""
)
_CPU_KEYS = ("cpu_self_seconds", "cpu_seconds", "seconds_on_stack")


def code_view(tracker: Any, insights: Sequence[Insight] = ()) -> Optional[Dict[str, Any]]:
    """The code facts of ``tracker``'s run, or None when no code profile was asked for (it
    was off, or the tracker has none). A run where it could not be recorded gives only
    ``status`` and ``note``. Never raises: a damaged record gives that note."""
    status_of = getattr(tracker, "code_profile_status", None)
    if not callable(status_of):
        return None
    try:
        status = status_of()
        if status.get("status") == "off":
            return None
        if status.get("status") != "recorded":
            return {"status": str(status.get("status")), "note": _text(status.get("note"))}
        return _recorded(tracker, insights)
    except Exception as exc:  # the summary of the run must not fail for its code profile
        return {"status": "damaged", "note": f"the code profile could not be read ({exc!r})"}


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _recorded(tracker: Any, insights: Sequence[Insight]) -> Dict[str, Any]:
    attribution = tracker._code_attribution()  # attributed once for every fact below
    rows = [r for r in attribution.profile("function", True).rows() if _users(r)]
    peak = attribution.peak()
    base = _code_dir([r["file"] for r in rows])
    timeline = _Timeline(*attribution.running())
    found = _Found(rows, timeline, base, float(getattr(tracker, "interval", 0) or 0))
    where = found.where
    view: Dict[str, Any] = {"status": "recorded", "note": None, "base_dir": base}
    view["cpu"] = _top_cpu(rows, where)
    view["memory"] = _top_memory(timeline, where)
    start = getattr(tracker, "start_time", None) or 0.0
    if peak:
        view["peak"] = {
            "function": peak["function"],
            "file": where(peak["file"]),
            "line": peak["line"],
            "memory_kib": peak["memory_peak"],
            "at_s": max(float(peak["timestamp"]) - start, 0.0),
        }
    view["phases"] = _phases(tracker, insights, found)
    if not rows:
        view["note"] = "no stack sample was taken (the run was shorter than one interval)"
    return view


class _Timeline:
    """The user code running in each interval (``code_timeline`` without its rows, from
    ``Attribution.running``), grouped by function (its name and file) for the C sums
    (``_core.code_groups``)."""

    def __init__(
        self,
        times: Sequence[float],
        memory: Sequence[float],
        codes: Sequence[float],
        name_of: List[Any],
    ) -> None:
        self.times, self.memory, self.codes, self.name_of = times, memory, codes, name_of
        self.group_of, self.groups = self._grouped(2)
        self._by_line: Optional[Tuple[Any, List[Tuple[Any, ...]]]] = None  # made when asked

    def _grouped(self, width: int) -> Tuple[Any, List[Tuple[Any, ...]]]:
        """Each code's group (-1: not user code) and the groups: the first ``width`` parts of
        its name (2: the function and its file; 3: its line too)."""
        groups: Dict[Tuple[Any, ...], int] = {}
        group_of = array("d", [-1.0]) * len(self.name_of)
        for code, name in enumerate(self.name_of):
            if name is not None and _users({"file": name[1]}):
                group_of[code] = groups.setdefault(tuple(name[:width]), len(groups))
        return group_of, list(groups)

    def sums(
        self, interval: float, began: float, ended: float, by_line: bool = False
    ) -> List[Dict[str, Any]]:
        """Each function that ran in (began, ended], in the order it first ran there: its
        ``function``, ``file``, ``line`` (of its first interval), ``seconds`` (wall),
        ``memory_peak`` (KiB) and ``peak_line`` (the line then), ``memory_growth`` (KiB)."""
        group_of, groups = self.group_of, self.groups
        if by_line:
            self._by_line = self._by_line or self._grouped(3)
            group_of, groups = self._by_line
        raw = _core.code_groups(
            self.codes, self.times, self.memory, group_of, len(groups), interval, began, ended
        )
        figures = memoryview(raw).cast("d")
        found = []
        for g, (function, file, *_) in enumerate(groups):
            count, first, seconds, peak, peak_at, growth = figures[g * 6 : g * 6 + 6]
            if count > 0:
                line = self.name_of[int(self.codes[int(first)])][2]
                peak_line = self.name_of[int(self.codes[int(peak_at)])][2]
                found.append(
                    {"function": function, "file": file, "line": line, "seconds": seconds,
                     "memory_peak": peak, "peak_line": peak_line, "memory_growth": growth,
                     "first": first}
                )  # fmt: skip
        return sorted(found, key=lambda item: item["first"])


def _users(row: Mapping[str, Any]) -> bool:
    """User code: not the tracker's own (a stack without a user frame keeps its top frame,
    e.g. an agent's stop at exit), nor its Metaflow extension's threads and hooks."""
    file = str(row.get("file"))
    return origin_of(file) == "user" and not file.startswith(_EXTENSION_DIR)


def _code_dir(files: Sequence[str]) -> str:
    """The deepest directory holding every absolute user file ('' when there is none)."""
    dirs = [os.path.dirname(f) for f in files if os.path.isabs(f)]
    if not dirs:
        return ""
    try:
        common = os.path.commonpath(dirs)
    except ValueError:
        return ""
    return "" if common == os.path.dirname(common) else common  # never the root


def _relative(file: str, base: str) -> str:
    if base and file.startswith(os.path.join(base, "")):
        return os.path.relpath(file, base)
    return file


def _top_cpu(rows: Sequence[Mapping[str, Any]], where: Callable[[str], str]) -> List[Any]:
    """The functions that used the most CPU themselves (their own code and the library code
    they called, not the user functions they called), with their share of the run's CPU."""
    total = sum(r["cpu_self_seconds"] for r in rows)
    ranked = sorted(rows, key=lambda r: -r["cpu_self_seconds"])
    return [
        {
            "function": r["function"],
            "file": where(r["file"]),
            "line": r["line"],
            **{k: r[k] for k in _CPU_KEYS},
            "share": r["cpu_self_seconds"] / total if total > 0 else 0.0,
            "processes": r["processes"],
        }
        for r in ranked[:TOP]
        if r["cpu_self_seconds"] > 0
    ]


def _top_memory(timeline: _Timeline, where: Callable[[str], str]) -> List[Any]:
    """The functions that were running (the user code of the busiest thread) when the
    memory was highest: the memory at its highest while each ran (KiB, and the line then),
    the change of memory over the intervals it ran (KiB; the first interval's change is
    unknown: 0)."""
    found = timeline.sums(0.0, -math.inf, math.inf)
    ranked = sorted(found, key=lambda i: (-i["memory_peak"], -i["memory_growth"]))
    return [
        {"function": i["function"], "file": where(i["file"]), "line": i["peak_line"],
         "memory_peak": i["memory_peak"], "memory_growth": i["memory_growth"]}
        for i in ranked[:TOP]
    ]  # fmt: skip


def _phases(tracker: Any, insights: Sequence[Insight], found: _Found) -> List[Any]:
    """The code of each phase of the phases finding: the user function that was the running
    code (of the busiest thread, ``code_timeline``) for the most wall seconds of the phase;
    where the timeline has no interval there (processes run with the agent), the one with
    the most CPU of its own (``code_profile.phase_code``)."""
    finding = next((i for i in insights if i.kind == "phases"), None)
    if finding is None:
        return []
    numbers, out, spans = finding.numbers, [], []
    for i in range(1, int(numbers.get("phases") or 0) + 1):
        keys = (f"phase{i}_start_time", f"phase{i}_duration_s", f"phase{i}_start_s")
        if any(numbers.get(k) is None for k in keys):
            continue
        began, lasted, start_s = (float(numbers[k]) for k in keys)
        item: Dict[str, Any] = {"phase": i, "start_s": start_s, "end_s": start_s + lasted}
        code = found.running(began, began + lasted) or phase_code(tracker, began, began + lasted)
        if code:
            item.update(function=code["function"], file=found.where(code["file"]))
            item["line"] = found.def_lines.get((code["function"], code["file"]), code["line"])
        out.append(item)
        spans.append((began, lasted))
        _line_apart(out, spans, found)
    return out


def _line_apart(out: List[Dict[str, Any]], spans: List[Tuple[float, float]], found: _Found) -> None:
    """Where the last phase's function is the previous phase's (one function doing both):
    each named at the line it ran for most of its phase, so the two are told apart, or the
    last ``same_as`` the previous phase when the timeline shows the same line too."""
    if len(out) < 2 or "function" not in out[-1]:
        return
    before, item = out[-2], out[-1]
    if (before.get("function"), before.get("file")) != (item["function"], item["file"]):
        return
    lines = [found.running(b, b + d, by_line=True) for b, d in spans[-2:]]
    if lines[0] is None or lines[1] is None or lines[0]["line"] == lines[1]["line"]:
        item["same_as"] = before["phase"]
        return
    before["line"], item["line"] = lines[0]["line"], lines[1]["line"]


class _Found:
    """The rows a view is made of: the user functions (``code_profile``), the timeline of the
    running code, and where their files are shown from."""

    def __init__(self, rows: List[Any], timeline: _Timeline, base: str, interval: float):
        self.def_lines = {(r["function"], r["file"]): r["line"] for r in rows}
        self.timeline, self.base, self.interval = timeline, base, interval

    def where(self, file: str) -> str:
        return _relative(file, self.base)

    def running(
        self, began: float, ended: float, by_line: bool = False
    ) -> Optional[Dict[str, Any]]:
        """The code (function, file, line of its first interval there; its line too when
        ``by_line``) that ran for the most wall seconds in (began, ended] (None when no interval
        ends there)."""
        found = self.timeline.sums(self.interval, began, ended, by_line)
        if not found:
            return None
        return max(found, key=lambda item: item["seconds"])


def stored_view(data: Any) -> Optional[Dict[str, Any]]:
    """A stored code view (``RunSummary.to_dict()["code"]``) when it has the shape the
    renderers write, else None (a damaged or hand-made snapshot: the page shows no code)."""
    if not isinstance(data, dict) or not isinstance(data.get("status"), str):
        return None
    items = [*(data.get("cpu") or ()), *(data.get("memory") or ()), *(data.get("phases") or ())]
    if data.get("peak") is not None:
        items.append(data["peak"])
    for item in items:
        if not isinstance(item, dict):
            return None
        for key, value in item.items():
            text = key in ("function", "file")
            if text and not isinstance(value, str):
                return None
            if not text and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return None
    return data


# -- the texts ------------------------------------------------------------------------------

Code = Callable[[str], str]


def name(function: str) -> str:
    """A function as people write it: 'train()', 'Model.fit()'; module code as '<module>'."""
    return function if function.startswith("<") else f"{function}()"


def place(item: Mapping[str, Any]) -> str:
    """'train.py:88'."""
    return f"{item.get('file')}:{item.get('line')}"


def _span(item: Mapping[str, Any]) -> str:
    """'0 s to 7.5 s', as the phases finding writes its spans."""
    return f"{fmt.duration(item['start_s'])} to {fmt.duration(item['end_s'])}"


def peak_text(view: Mapping[str, Any], code: Code) -> Optional[str]:
    """'peak 800 MiB reached in load_dataset() at train.py:88, 12.5 s into the run'."""
    peak = view.get("peak")
    if not peak:
        return None
    return (
        f"peak {fmt.quantity(peak['memory_kib'], 'KiB')} reached in "
        f"{code(name(peak['function']))} at {code(place(peak))}, "
        f"{fmt.duration(peak['at_s'])} into the run"
    )


def top_cpu_text(view: Mapping[str, Any], code: Code) -> Optional[str]:
    """'most CPU in train_model() at train.py:40 (50%), then parse() (30%)'; a function that
    ran in several processes (the tracked one's workers) says in how many: 'work() at
    job.py:4 (90% of the run's CPU, in 4 processes)'."""
    cpu = view.get("cpu") or []
    if not cpu:
        return None
    first = cpu[0]
    text = f"most CPU in {code(name(first['function']))} at {code(place(first))}"
    text += f" ({fmt.percent(first['share'])} of the run's CPU{in_processes(first, ', ')})"
    rest = [
        f"{code(name(r['function']))} ({fmt.percent(r['share'])}{in_processes(r, ', ')})"
        for r in cpu[1:3]
    ]
    return text + (", then " + ", ".join(rest) if rest else "")


def in_processes(item: Mapping[str, Any], before: str = "") -> str:
    """'in 4 processes' for code that ran in more than one process ('' otherwise; a view
    stored before the count was kept has none), after ``before``."""
    count = item.get("processes")
    if not isinstance(count, int) or count < 2:
        return ""
    return f"{before}in {count} processes"


def phase_texts(view: Mapping[str, Any], code: Code) -> List[str]:
    """One text a phase: 'phase 2, 16 s to 23.5 s: train() at train.py:40' (a phase whose code
    is the previous one's, to its line: 'the same code as phase 1')."""
    texts = []
    for item in view.get("phases") or ():
        text = f"phase {item['phase']}, {_span(item)}: "
        if item.get("same_as"):
            text += f"the same code as phase {item['same_as']}"
        elif item.get("function"):
            text += f"{code(name(item['function']))} at {code(place(item))}"
        else:
            text += "no stack sample"
        texts.append(text)
    return texts


def split_text(view: Mapping[str, Any], code: Code) -> Optional[str]:
    """Where a split into steps starts (the code of the second phase), or None."""
    phases = view.get("phases") or []
    second = phases[1] if len(phases) > 1 else None
    if not second or not second.get("function") or second.get("same_as"):
        return None
    return (
        f"the second step would start with {code(name(second['function']))} ({code(place(second))})"
    )


def label_phases(insights: Sequence[Insight], view: Optional[Mapping[str, Any]]) -> Tuple[Any, ...]:
    """The findings with the phases finding naming the code of each phase (its message and
    its numbers ``phase{i}_code``); the others as they are."""
    phases = (view or {}).get("phases") or []
    if not any(p.get("function") for p in phases):
        return tuple(insights)
    plain = lambda text: text  # noqa: E731
    out = []
    for insight in insights:
        if insight.kind == "phases":
            numbers = dict(insight.numbers)
            for item in phases:
                if item.get("function"):
                    numbers[f"phase{item['phase']}_code"] = (
                        f"{name(item['function'])} {place(item)}"
                    )
            texts = phase_texts(view or {}, plain)
            message = insight.message + " Code: " + "; ".join(texts) + "."
            split = split_text(view or {}, plain) if insight.severity != "info" else None
            if split:
                message += f" Split: {split}."
            insight = replace(insight, message=message, numbers=numbers)
        out.append(insight)
    return tuple(out)
