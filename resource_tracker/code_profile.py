"""Where the time and memory went: the code profile (docs/code_profile.md).

The C core records stack samples (csrc/stacks.c: interned frames, a prefix tree of stacks,
one sample per thread and tick with the thread's own CPU). This module holds the one rule that
turns them into figures: each interval's CPU-seconds, memory change and GPU use of the process
tree are attributed to the stacks sampled at its end and rolled up to every caller. The record
is the snapshot's ``code_profile`` entry; every view here is recomputed from it.
"""

from __future__ import annotations

import bisect
import os
import sysconfig
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .tiny_data_frame import TinyDataFrame

if TYPE_CHECKING:
    Key = Tuple[str, str, int]  # (function, file, line)

RECORD_VERSION = 1
BY = ("function", "line")
#: the columns of code_profile(), in order (units in docs/code_profile.md)
COLUMNS = (
    "function",
    "file",
    "line",
    "origin",
    "cpu_seconds",
    "cpu_self_seconds",
    "cpu_share",
    "seconds_on_stack",
    "memory_peak",
    "memory_growth",
    "gpu_seconds",
    "samples",
)
TIMELINE_COLUMNS = ("timestamp", "function", "file", "line", "cpu_seconds", "memory")
#: The frames a captured stack keeps at most (the C capture's ``STACKS_MAX_DEPTH``, also
#: ``_core.STACKS_MAX_DEPTH`` where the capture is built): a deeper stack keeps those nearest
#: the running code under one ``<truncated>`` frame, so no real chain is longer than this + 1.
STACK_MAX_DEPTH = 128
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _stdlib_dirs() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get("stdlib"), paths.get("platstdlib")}
    return tuple(sorted(os.path.join(d, "") for d in dirs if d))


_STDLIB_DIRS = _stdlib_dirs()


def origin_of(file: str) -> str:
    """``user``, ``stdlib``, ``site-packages`` or ``resource_tracker``: where a frame's file is
    (a frozen module is stdlib; ``<string>``, ``<stdin>``, notebooks' cells are user code)."""
    if file.startswith("<frozen"):
        return "stdlib"
    if file.startswith(os.path.join(_PACKAGE_DIR, "")):
        return "resource_tracker"
    if any(marker in file for marker in _LIBRARY_MARKERS):
        return "site-packages"
    if file.startswith(_STDLIB_DIRS):
        return "stdlib"
    return "user"


def off_record(status: str, note: Optional[str]) -> Dict[str, Any]:
    """The record of a run without stack samples: ``status`` 'off' or 'not supported'."""
    return {"version": RECORD_VERSION, "status": status, "note": note}


def check_by(by: str) -> str:
    """``by``, or ValueError saying what it may be."""
    if by not in BY:
        raise ValueError(f"code_profile: by must be 'function' or 'line', got {by!r}")
    return by


def _bad(path: str, what: str) -> ValueError:
    return ValueError(f"not a resource-tracker snapshot: code_profile.{path} must be {what}")


def _check_rows(record: Mapping[str, Any], key: str, kinds: Tuple[type, ...]) -> List[Any]:
    rows = record.get(key) or []
    if not isinstance(rows, list):
        raise _bad(key, "a list")
    for i, row in enumerate(rows):
        if not (
            isinstance(row, list)
            and len(row) == len(kinds)
            and all(isinstance(v, k) and not isinstance(v, bool) for v, k in zip(row, kinds))
        ):
            names = ", ".join(k.__name__ for k in kinds)
            raise _bad(f"{key}[{i}]", f"a list of {names}")
    return rows


def validate_record(record: Dict[str, Any]) -> Dict[str, Any]:
    """The record of a snapshot, checked (frames, stacks, threads and samples well formed,
    every id in range); ValueError naming the first bad entry."""
    frames = _check_rows(record, "frames", (str, str, int, int))
    stacks = _check_rows(record, "stacks", (int, int))
    threads = _check_rows(record, "threads", (int, int))
    _check_stack_chains(stacks, len(frames))
    for i, (row, thread, stack, cpu_us) in enumerate(_check_rows(record, "samples", (int,) * 4)):
        if not (
            row >= 0 and 0 <= thread < len(threads) and 0 <= stack < len(stacks) and cpu_us >= 0
        ):
            raise _bad(f"samples[{i}]", "[row, thread id, stack id, CPU microseconds >= 0]")
    processes = record.get("processes") or []
    if not isinstance(processes, list) or not all(isinstance(p, dict) for p in processes):
        raise _bad("processes", "a list of records")
    for i, child in enumerate(processes):
        _check_process_columns(i, child.get("columns"))
        start = child.get("start_time")
        if start is not None and not (
            isinstance(start, (int, float)) and not isinstance(start, bool) and start >= 0
        ):
            raise _bad(f"processes[{i}].start_time", "seconds since the epoch (or null)")
        validate_record(child)
    return record


def _check_stack_chains(stacks: List[Any], frames: int) -> None:
    """Each stack names an earlier stack (or -1) and a frame, in a chain no longer than a
    capture makes (:data:`STACK_MAX_DEPTH` frames and a ``<truncated>`` one): a forged
    longer chain would exhaust the recursion of the views."""
    depth = [0] * len(stacks)
    for i, (parent, frame) in enumerate(stacks):
        if not (-1 <= parent < i and 0 <= frame < frames):
            raise _bad(f"stacks[{i}]", "[an earlier stack or -1, a frame id]")
        depth[i] = 1 + (depth[parent] if parent >= 0 else 0)
        if depth[i] > STACK_MAX_DEPTH + 1:
            raise _bad(f"stacks[{i}]", f"a chain of at most {STACK_MAX_DEPTH + 1} frames")


def validate_agent_record(record: Dict[str, Any]) -> Dict[str, Any]:
    """An agent's record (``run --code``) checked as the run's snapshot will hold it: as
    ``processes[0]`` of the run's record, its columns included; ValueError naming the first
    bad entry."""
    validate_record({"processes": [record]})
    return record


#: the columns an agent's record must hold: its samples' times and its memory (the code at
#: the tree's memory peak, ``peak``), of the same length
_AGENT_COLUMNS = ("timestamp", "memory")


def _check_process_columns(i: int, columns: Any) -> None:
    if not isinstance(columns, dict) or not all(
        isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)
        for v in columns.values()
    ):
        raise _bad(f"processes[{i}].columns", "an object of lists of numbers")
    for name in _AGENT_COLUMNS:
        if name not in columns:
            raise _bad(f"processes[{i}].columns.{name}", "present (a number per row)")
    if len(columns["memory"]) != len(columns["timestamp"]):
        raise _bad(f"processes[{i}].columns.memory", "as long as its columns.timestamp")


# -- one source: the tracked process, or one agent's process --------------------------------


class _Source:
    """One process's record with the columns its attribution needs (per row)."""

    def __init__(
        self, record: Mapping[str, Any], columns: Mapping[str, Sequence[float]], start_time: float
    ) -> None:
        self.frames: List[Any] = list(record.get("frames") or ())
        self.stacks: List[Any] = list(record.get("stacks") or ())
        self.threads: List[Any] = list(record.get("threads") or ())
        self.samples: List[Any] = list(record.get("samples") or ())
        self.timestamps = [float(t) for t in columns.get("timestamp") or ()]
        n = len(self.timestamps)
        self.cpu = _column_sum(columns, ("utime", "stime"), n)
        self.memory = _column_sum(columns, ("memory",), n)
        self.gpu = _column_sum(columns, ("gpu_usage",), n)
        self.start_time = float(start_time or (self.timestamps[0] if n else 0.0))
        self._frames_of: Dict[int, List[int]] = {}

    def frames_of(self, stack: int) -> List[int]:
        """The frame ids of a stack, root first."""
        cached = self._frames_of.get(stack)
        if cached is None:
            parent, frame = self.stacks[stack]
            cached = (self.frames_of(parent) if parent >= 0 else []) + [frame]
            self._frames_of[stack] = cached
        return cached

    def location(self, frame: int, by: str) -> Key:
        function, file, line, first_line = self.frames[frame]
        return (str(function), str(file), int(first_line if by == "function" else line))

    def keys_of(self, stack: int, by: str, user_code: bool) -> List[Key]:
        """The code locations of a stack, root first (folded to user code when asked)."""
        keys = [self.location(f, by) for f in self.frames_of(stack)]
        if user_code:
            user = [k for k in keys if origin_of(k[1]) == "user"]
            keys = user or keys[-1:]
        return keys


def _column_sum(
    columns: Mapping[str, Sequence[float]], names: Iterable[str], n: int
) -> List[float]:
    total = [0.0] * n
    for name in names:
        values = columns.get(name)
        if values is not None and len(values) == n:
            total = [a + float(b) for a, b in zip(total, values)]
    return total


# -- the attribution rule --------------------------------------------------------------------


class _Segment:
    """The rows from the one after the last sampled row to a sampled row: their CPU-seconds,
    memory change, GPU-seconds and wall seconds, and the shares of the sampled threads."""

    def __init__(self, source: _Source, first: int, last: int) -> None:
        before = source.timestamps[first - 1] if first else source.start_time
        self.end = last
        self.timestamp = source.timestamps[last]
        self.seconds = max(source.timestamps[last] - before, 0.0)
        self.cpu = sum(source.cpu[first : last + 1])
        self.gpu = sum(
            g
            * max(
                source.timestamps[r] - (source.timestamps[r - 1] if r else source.start_time), 0.0
            )
            for r, g in enumerate(source.gpu[first : last + 1], first)
        )
        start_memory = source.memory[first - 1] if first else source.memory[first]
        self.memory_change = source.memory[last] - start_memory
        self.memory_peak = max(source.memory[first : last + 1])
        self.entries: List[Tuple[int, float, float, float]] = []  # (stack, cpu, memory, gpu)

    def attribute(self, samples: List[Tuple[int, float, bool]], remainder: float) -> None:
        """Shares this segment among samples ``(stack, own CPU-seconds, is_main)``: each
        thread its own CPU, ``remainder`` (the tree's CPU no sampled thread used) to the main
        thread (else the busiest); memory and GPU by CPU share (to that thread when none
        ran)."""
        heir = next((i for i, s in enumerate(samples) if s[2]), None)
        if heir is None:
            heir = max(range(len(samples)), key=lambda i: samples[i][1])
        self.cpu = sum(cpu for _, cpu, _ in samples) + remainder
        for i, (stack, cpu, _) in enumerate(samples):
            part = cpu + (remainder if i == heir else 0.0)
            weight = part / self.cpu if self.cpu > 0 else float(i == heir)
            self.entries.append((stack, part, self.memory_change * weight, self.gpu * weight))

    def busiest(self) -> int:
        """The stack with the most CPU-seconds here (the first on a tie)."""
        return max(self.entries, key=lambda e: e[1])[0]


def _segments(
    source: _Source, elsewhere: Optional[Any] = None, agent: bool = False
) -> List[_Segment]:
    """The attributed segments of a source: a sampled row takes in the rows without samples
    before it (their thread CPU is in its samples); rows after the last sample are left out.
    Each thread gets its own CPU; the tree's CPU that no sampled thread used (child
    processes, threads without Python, a thread's last moments) goes to the main thread,
    counted over the run (the tree's figures are in clock ticks, the threads' in ns).
    ``elsewhere(t0, t1)``: CPU-seconds in (t0, t1] that other sources attribute themselves;
    ``agent``: an agent's process: its threads' own CPU only (its table also counts the
    children it reaped)."""
    by_row: Dict[int, List[Tuple[int, float, bool]]] = {}
    n = len(source.timestamps)
    for row, thread, stack, cpu_us in source.samples:
        if 0 <= row < n and 0 <= stack < len(source.stacks):
            is_main = bool(source.threads[thread][1]) if thread < len(source.threads) else False
            by_row.setdefault(int(row), []).append((int(stack), cpu_us / 1e6, is_main))
    segments, first = [], 0
    unexplained = 0.0  # the tree's CPU so far that no sampled thread used, not yet given
    for row in sorted(by_row):
        segment = _Segment(source, first, row)
        before = source.timestamps[first - 1] if first else source.start_time
        own = sum(cpu for _, cpu, _ in by_row[row])
        if not agent:  # counted over the run: the tree's clock-tick rounding evens out
            unexplained += (
                segment.cpu - own - (elsewhere(before, segment.timestamp) if elsewhere else 0.0)
            )
        remainder = max(unexplained, 0.0)
        unexplained -= remainder
        segment.attribute(by_row[row], remainder)
        segments.append(segment)
        first = row + 1
    return segments


class _Totals:
    """The figures of one code location, summed over segments (and processes)."""

    __slots__ = ("cpu", "self_cpu", "on_stack", "peak", "growth", "gpu", "samples")

    def __init__(self) -> None:
        self.cpu = self.self_cpu = self.on_stack = self.growth = self.gpu = 0.0
        self.peak = 0.0
        self.samples = 0


def _add_segment(
    totals: Dict[Key, _Totals], source: _Source, segment: _Segment, by: str, user_code: bool
) -> None:
    seen: Set[Key] = set()
    for stack, cpu, memory, gpu in segment.entries:
        keys = source.keys_of(stack, by, user_code)
        for key in dict.fromkeys(keys):  # once per stack, however deep the recursion
            t = totals.get(key) or totals.setdefault(key, _Totals())
            t.cpu += cpu
            t.growth += memory
            t.gpu += gpu
            t.samples += 1
            t.peak = max(t.peak, segment.memory_peak)
            if key not in seen:
                t.on_stack += segment.seconds
                seen.add(key)
        if keys:
            totals[keys[-1]].self_cpu += cpu


def _in_span(segment: _Segment, start: Optional[float], end: Optional[float]) -> bool:
    return (start is None or segment.timestamp > start) and (
        end is None or segment.timestamp <= end
    )


def _table(totals: Mapping[Key, _Totals], total_cpu: float, limit: Optional[int]) -> TinyDataFrame:
    order = sorted(totals.items(), key=lambda kv: (-kv[1].cpu, -kv[1].self_cpu, kv[0]))
    if limit is not None:
        order = order[: max(int(limit), 0)]
    rows = [
        {
            "function": key[0],
            "file": key[1],
            "line": key[2],
            "origin": origin_of(key[1]),
            "cpu_seconds": t.cpu,
            "cpu_self_seconds": t.self_cpu,
            "cpu_share": t.cpu / total_cpu if total_cpu > 0 else 0.0,
            "seconds_on_stack": t.on_stack,
            "memory_peak": t.peak,
            "memory_growth": t.growth,
            "gpu_seconds": t.gpu,
            "samples": t.samples,
        }
        for key, t in order
    ]
    return TinyDataFrame(rows, columns=COLUMNS)


# -- the views -------------------------------------------------------------------------------


def sources(
    record: Optional[Mapping[str, Any]], columns: Mapping[str, Sequence[float]], start_time: float
) -> List[_Source]:
    """The tracked process's source (the tree's columns; no samples when it was not sampled,
    e.g. ``run --code``), then one per agent process (each with its own columns)."""
    if not record or record.get("status") != "recorded":
        return []
    found = [_Source(record, columns, start_time)]
    for child in record.get("processes") or ():
        if isinstance(child, dict):
            found.append(_Source(child, child.get("columns") or {}, child.get("start_time") or 0.0))
    return found


def _cpu_of(others: Sequence[_Source]) -> Any:
    """A function (t0, t1) -> the CPU-seconds the other sources' samples cover in (t0, t1]
    (each segment's CPU, by its end time)."""
    ends = sorted((seg.timestamp, seg.cpu) for src in others for seg in _segments(src, agent=True))
    times = [t for t, _ in ends]
    cumulative = [0.0]
    for _, cpu in ends:
        cumulative.append(cumulative[-1] + cpu)

    def between(t0: float, t1: float) -> float:
        return (
            cumulative[bisect.bisect_right(times, t1)] - cumulative[bisect.bisect_right(times, t0)]
        )

    return between


def profile(
    found: Sequence[_Source],
    by: str = "function",
    user_code: bool = False,
    limit: Optional[int] = None,
    start: Optional[float] = None,
    end: Optional[float] = None,
) -> TinyDataFrame:
    """The code_profile() table of the sources (docs/code_profile.md), over the intervals
    ending in (start, end] when given. Shares are of the tracked tree's CPU-seconds in
    those intervals (the first source's columns), which include its agent processes' own."""
    check_by(by)
    totals: Dict[Key, _Totals] = {}
    for index, source in enumerate(found):
        for segment in _segments(source, _cpu_of(found[1:]) if index == 0 else None, index > 0):
            if _in_span(segment, start, end):
                _add_segment(totals, source, segment, by, user_code)
    tree = found[0] if found else None
    total_cpu = (
        sum(
            cpu
            for t, cpu in zip(tree.timestamps, tree.cpu)
            if (start is None or t > start) and (end is None or t <= end)
        )
        if tree
        else 0.0
    )
    return _table(totals, total_cpu, limit)


class _Moment:
    """One interval of the tree: its end, CPU-seconds and memory (KiB), and the code running
    then (``source``'s ``stack``; None when no sample names it)."""

    __slots__ = ("timestamp", "cpu", "memory", "source", "stack")

    def __init__(
        self, timestamp: float, cpu: float, memory: float, code: Optional[Tuple[_Source, int]]
    ) -> None:
        self.timestamp, self.cpu, self.memory = timestamp, cpu, memory
        source, stack = code if code else (None, -1)
        self.source: Optional[_Source] = source
        self.stack: int = stack

    def keys(self) -> List[Key]:
        """The user code of the stack, root first (empty without one)."""
        return self.source.keys_of(self.stack, "line", True) if self.source else []


def _moments(found: Sequence[_Source]) -> List[_Moment]:
    """The tree's intervals with their code: the tracked process's sampled intervals (its
    busiest thread), or, when it was not sampled (``run --code``), each row of the tree with
    the code of an agent process sampled then (``_AgentCode``)."""
    if not found:
        return []
    segments = _segments(found[0])
    if segments:
        return [
            _Moment(s.timestamp, s.cpu, s.memory_peak, (found[0], s.busiest())) for s in segments
        ]
    tree, agents = found[0], _AgentCode(found[1:])
    return [
        _Moment(t, tree.cpu[r], tree.memory[r], agents.at(t, t - before))
        for r, (t, before) in enumerate(zip(tree.timestamps, [tree.start_time, *tree.timestamps]))
    ]


class _AgentCode:
    """The code of the agent processes at a time of the tree: each process's sample nearest
    it, when that sample's interval meets the tree's row (at most a row and a sample apart);
    of those, the one of the process holding the most memory at its sample (the peak's
    likeliest owner), the nearest on a tie."""

    def __init__(self, agents: Sequence[_Source]) -> None:
        self.agents = [(a, _segments(a, agent=True)) for a in agents]
        self.agents = [(a, segs) for a, segs in self.agents if segs]
        self.times = [[s.timestamp for s in segs] for _, segs in self.agents]

    def at(self, t: float, span: float) -> Optional[Tuple[_Source, int]]:
        found = []  # (distance, -memory, index, segment)
        for index, ((source, segs), times) in enumerate(zip(self.agents, self.times)):
            i = bisect.bisect_left(times, t)
            near = min(segs[max(i - 1, 0) : i + 1], key=lambda s: abs(s.timestamp - t))
            distance = abs(near.timestamp - t)
            if distance <= max(span, 0.0) + near.seconds:
                found.append((distance, -source.memory[near.end], index, near))
        if not found:
            return None
        best = min(found, key=lambda f: (f[1], f[0]))
        return self.agents[best[2]][0], best[3].busiest()


def timeline(found: Sequence[_Source]) -> TinyDataFrame:
    """One row per interval of the tree whose code is known: the user code of the tracked
    process's busiest thread, or of an agent's process (docs/code_profile.md,
    ``code_timeline``)."""
    rows = []
    for moment in _moments(found):
        if moment.source is None:
            continue
        function, file, line = moment.keys()[-1]
        rows.append(
            {
                "timestamp": moment.timestamp,
                "function": function,
                "file": file,
                "line": line,
                "cpu_seconds": moment.cpu,
                "memory": moment.memory,
            }
        )
    return TinyDataFrame(rows, columns=TIMELINE_COLUMNS)


def peak(found: Sequence[_Source]) -> Optional[Dict[str, Any]]:
    """The code running when the tree's memory was at its peak, or None without samples (or,
    with agents only, when no agent process was sampled then)."""
    moments = _moments(found)
    if not moments:
        return None
    top = max(moments, key=lambda m: m.memory)
    keys = top.keys()
    if not keys:
        return None
    function, file, line = keys[-1]
    return {
        "memory_peak": top.memory,
        "timestamp": top.timestamp,
        "function": function,
        "file": file,
        "line": line,
        "origin": origin_of(file),
        "stack": [list(k) for k in keys],
    }


def phase_code(tracker: Any, start: float, end: float) -> Optional[Dict[str, Any]]:
    """The user function with the most self CPU-seconds in the intervals ending in
    (start, end] (seconds since the epoch): ``{"function", "file", "line", "cpu_share"}``
    (its share of that span's CPU), or None when no sample falls there."""
    table = tracker.code_between(start, end, by="function", user_code=True)
    best = None
    for row in table.rows():
        if best is None or row["cpu_self_seconds"] > best["cpu_self_seconds"]:
            best = row
    if best is None:
        return None
    return {k: best[k] for k in ("function", "file", "line", "cpu_share")}


def status(record: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """code_profile_status(): the record's status, note and counters."""
    if not record:
        return {"status": "off", "note": "no stack samples in this run"}
    stats = dict(record.get("stats") or {})
    stats.update(
        status=record.get("status", "off"),
        note=record.get("note"),
        samples=len(record.get("samples") or ()),
    )
    return stats


def quality_note(record: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The data_quality() sentence of a record, None when nothing is wrong with it."""
    if not record or (record.get("status") != "recorded" and not record.get("data_quality")):
        return None  # switched off, another process, the psutil backend: nothing is missing
    if record.get("status") != "recorded":
        return str(record.get("note") or record.get("status"))
    dropped = int((record.get("stats") or {}).get("dropped") or 0)
    if dropped:
        return (
            f"{dropped} stack samples were dropped (the frame table's memory bound was "
            "reached): the code profile covers the run up to then"
        )
    return None


def artifact_entry(tracker: Any, top: int = 20) -> Dict[str, Any]:
    """The Metaflow artifact's ``code_profile``: status, top functions and lines (user code),
    the peak's code and the timeline, as plain lists of dicts."""
    entry: Dict[str, Any] = {
        k: v for k, v in tracker.code_profile_status().items() if k in ("status", "note")
    }
    entry["functions"] = list(tracker.code_profile("function", True, top).rows())
    entry["lines"] = list(tracker.code_profile("line", True, top).rows())
    entry["peak"] = tracker.code_peak()
    entry["timeline"] = list(tracker.code_timeline().rows())
    return entry
