"""Where the time and memory went: the code profile (docs/code_profile.md).

The C core records stack samples (csrc/stacks.c: interned frames, a prefix tree of stacks,
one sample per thread and tick with the thread's own CPU). This module holds the one rule that
turns them into figures: each interval's CPU-seconds, memory change and GPU use of the process
tree are attributed to the stacks sampled at its end and rolled up to every caller. The record
is the snapshot's ``code_profile`` entry; every view here is recomputed from it.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import os
import sysconfig
from array import array
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import _core
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
    "processes",
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


@functools.lru_cache(maxsize=65536)  # a file's origin never changes: asked once a frame
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
        samples = record.get("samples") or ()  # bytes: a sampler's compact record
        self.samples: Any = samples if isinstance(samples, bytes) else list(samples)
        self.timestamps = _doubles(columns.get("timestamp") or ())
        n = len(self.timestamps)
        self.cpu = _column_sum(columns, ("utime", "stime"), n)
        self.memory = _column_sum(columns, ("memory",), n)
        self.gpu = _column_sum(columns, ("gpu_usage",), n)
        self.start_time = float(start_time or (self.timestamps[0] if n else 0.0))
        self._locations: Dict[Tuple[int, str], Key] = {}

    def location(self, frame: int, by: str) -> Key:
        found = self._locations.get((frame, by))
        if found is None:
            function, file, line, first_line = self.frames[frame]
            found = (str(function), str(file), int(first_line if by == "function" else line))
            self._locations[(frame, by)] = found
        return found

    def frames_of(self, stack: int) -> List[int]:
        """The frame ids of a stack, root first."""
        chain = []
        while stack >= 0:
            stack, frame = self.stacks[stack]
            chain.append(frame)
        return chain[::-1]


def _doubles(values: Sequence[float]) -> Sequence[float]:
    """The column as float64 values: itself when it holds them (the C core reads it in
    place), else a copy."""
    if (isinstance(values, memoryview) and values.format == "d" and values.c_contiguous) or (
        isinstance(values, array) and values.typecode == "d"
    ):
        return values
    return array("d", values)


def _column_sum(
    columns: Mapping[str, Sequence[float]], names: Iterable[str], n: int
) -> Sequence[float]:
    """The named columns added row by row (those absent or of another length left out)."""
    found = [v for v in (columns.get(name) for name in names) if v is not None and len(v) == n]
    if not found:
        return array("d", bytes(8 * n))
    if len(found) == 1:
        return _doubles(found[0])
    return array("d", map(operator.add, *found[:2]))


# -- the attribution rule (csrc/attribution.c) -----------------------------------------------


def folded(source: _Source, stack: int, by: str, user_code: bool) -> List[Key]:
    """The code locations of a stack, root first; ``user_code``: only the user's (the
    standard library, site-packages and resource-tracker folded into the user code that
    called them), or the top one when the stack holds no user frame."""
    keys = [source.location(f, by) for f in source.frames_of(stack)]
    if user_code:
        keys = [k for k in keys if origin_of(k[1]) == "user"] or keys[-1:]
    return keys


class _Keys:
    """The code locations of a source's stacks for one way of naming them (``by``, folded to
    user code or not), as the C totals read them: each stack's locations (once each), its top
    location, and whether it holds a user frame."""

    def __init__(self, source: _Source, used: Iterable[int], by: str, user_code: bool) -> None:
        self.names: List[Key] = []
        ids: Dict[Key, int] = {}
        per_stack: Dict[int, Tuple[List[int], int]] = {}
        for stack in used:
            keys = folded(source, stack, by, user_code)
            numbers = [ids.setdefault(k, len(ids)) for k in keys]
            per_stack[stack] = (list(dict.fromkeys(numbers)), numbers[-1] if numbers else -1)
        self.names = list(ids)
        self.first, self.keys, self.top = array("d", [0.0]), array("d"), array("d")
        for stack in range(len(source.stacks)):
            numbers, top = per_stack.get(stack, ([], -1))
            self.keys.extend(numbers)
            self.first.append(len(self.keys))
            self.top.append(top)


class _Attributed:
    """One source's segments, attributed once (``_core.code_segments``): per segment its end
    row, end time, wall seconds, CPU-seconds (shared), largest memory and first entry; per
    entry (a sampled thread's share) its stack, CPU-seconds, memory change, GPU-seconds and
    thread."""

    SEGMENT, ENTRY = 6, 5  # values a segment, an entry (csrc/attribution.h)

    def __init__(
        self, source: _Source, others: Sequence[_Attributed] = (), agent: bool = False
    ) -> None:
        self.source = source
        mains = array("d", (1.0 if t[1] else 0.0 for t in source.threads))
        times, cumulative = _cpu_of(others)
        segments, entries = _core.code_segments(
            source.samples, mains, len(source.stacks), source.timestamps, source.cpu,
            source.memory, source.gpu, source.start_time, agent,
            times, cumulative,
        )  # fmt: skip
        self.segments = memoryview(segments).cast("d")
        self.entries = memoryview(entries).cast("d")
        self.n = len(self.segments) // self.SEGMENT
        self._keys: Dict[Tuple[str, bool], _Keys] = {}
        self._busiest: Optional[memoryview[float]] = None
        self._fields: Dict[int, array[float]] = {}
        self.used = sorted(int(s) for s in set(self.entries[:: self.ENTRY]))  # stacks sampled

    def field(self, index: int) -> array[float]:
        """One value of every segment: 0 end row, 1 end time, 2 wall seconds, 3 CPU-seconds,
        4 largest memory (a copy, kept: the C sums read contiguous columns)."""
        found = self._fields.get(index)
        if found is None:
            found = self._fields[index] = array("d", self.segments[index :: self.SEGMENT])
        return found

    def keys(self, by: str, user_code: bool) -> _Keys:
        found = self._keys.get((by, user_code))
        if found is None:
            found = self._keys[(by, user_code)] = _Keys(self.source, self.used, by, user_code)
        return found

    def busiest(self) -> memoryview[float]:
        """Each segment's running code: the stack of its busiest sampled thread whose stack
        holds user code, or of its busiest thread when none does (docs/code_profile.md)."""
        if self._busiest is None:
            user = self.keys("line", True)
            preferred = array("d", bytes(8 * len(self.source.stacks)))
            for stack, top in enumerate(user.top):
                if top >= 0 and origin_of(user.names[int(top)][1]) == "user":
                    preferred[stack] = 1.0
            made = _core.code_busiest(self.segments, self.entries, preferred)
            self._busiest = memoryview(made).cast("d")
        return self._busiest

    def totals(
        self, by: str, user_code: bool, start: Optional[float], end: Optional[float]
    ) -> Iterable[Tuple[Key, memoryview[float]]]:
        """(location, its 8 figures) of each location on a stack in (start, end]."""
        keys = self.keys(by, user_code)
        low = -math.inf if start is None else float(start)
        high = math.inf if end is None else float(end)
        raw = _core.code_totals(
            self.segments, self.entries, keys.first, keys.keys, keys.top, len(keys.names),
            low, high,
        )  # fmt: skip
        figures = memoryview(raw).cast("d")
        for i, key in enumerate(keys.names):
            row = figures[i * _FIGURES : (i + 1) * _FIGURES]
            if row[_SAMPLES] > 0:
                yield key, row


#: the figures of a location from code_totals: cpu, self cpu, on stack, peak, growth, gpu,
#: samples, processes (1 a process: summed over the sources; csrc/attribution.h)
_FIGURES, _PEAK, _SAMPLES = 8, 3, 6


def _cpu_of(others: Sequence[_Attributed]) -> Tuple[array[float], array[float]]:
    """The other sources' segments' end times (sorted) and their CPU-seconds summed up to
    each (one more value, the first 0): what the tracked process's rule leaves to them."""
    ends = sorted(pair for a in others for pair in zip(a.field(1), a.field(3)))
    cumulative = array("d", [0.0])
    for _, cpu in ends:
        cumulative.append(cumulative[-1] + cpu)
    return array("d", (t for t, _ in ends)), cumulative


def _table(
    totals: Mapping[Key, List[float]], total_cpu: float, limit: Optional[int]
) -> TinyDataFrame:
    order = sorted(totals.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    if limit is not None:
        order = order[: max(int(limit), 0)]
    rows = [
        {
            "function": key[0],
            "file": key[1],
            "line": key[2],
            "origin": origin_of(key[1]),
            "cpu_seconds": t[0],
            "cpu_self_seconds": t[1],
            "cpu_share": t[0] / total_cpu if total_cpu > 0 else 0.0,
            "seconds_on_stack": t[2],
            "memory_peak": t[3],
            "memory_growth": t[4],
            "gpu_seconds": t[5],
            "samples": int(t[6]),
            "processes": int(t[7]),
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


class Attribution:
    """The code profile of a run's sources, attributed once: every view (``profile``,
    ``timeline``, ``peak``) reads the same segments (docs/code_profile.md)."""

    def __init__(self, found: Sequence[_Source]) -> None:
        self.sources = list(found)
        agents = [_Attributed(s, agent=True) for s in self.sources[1:]]
        tracked = [_Attributed(self.sources[0], agents)] if self.sources else []
        self.attributed = tracked + agents

    def profile(
        self,
        by: str = "function",
        user_code: bool = False,
        limit: Optional[int] = None,
        start: Optional[float] = None,
        end: Optional[float] = None,
    ) -> TinyDataFrame:
        """The code_profile() table, over the intervals ending in (start, end] when given.
        Shares are of the tracked tree's CPU-seconds in those intervals (the first source's
        columns), which include its agent processes' own."""
        check_by(by)
        totals: Dict[Key, List[float]] = {}
        for attributed in self.attributed:
            for key, row in attributed.totals(by, user_code, start, end):
                found = totals.get(key)
                if found is None:
                    totals[key] = list(row)
                    continue
                for i in range(_FIGURES):
                    found[i] = max(found[i], row[i]) if i == _PEAK else found[i] + row[i]
        return _table(totals, self._tree_cpu(start, end), limit)

    def _tree_cpu(self, start: Optional[float], end: Optional[float]) -> float:
        if not self.sources:
            return 0.0
        tree = self.sources[0]
        if start is None and end is None:
            return float(sum(tree.cpu))
        return float(
            sum(
                cpu
                for t, cpu in zip(tree.timestamps, tree.cpu)
                if (start is None or t > start) and (end is None or t <= end)
            )
        )

    def _moments(self) -> _Moments:
        if not hasattr(self, "_made_moments"):
            self._made_moments = _Moments(self)
        return self._made_moments

    def timeline(self) -> TinyDataFrame:
        """One row per interval of the tree whose code is known: the user code of the tracked
        process's running thread, or of an agent's process (docs/code_profile.md,
        ``code_timeline``)."""
        moments = self._moments()
        times, memory, codes, name_of = self.running()
        rows = [i for i, code in enumerate(codes) if code >= 0 and name_of[int(code)]]
        where = [name_of[int(codes[i])] or ("", "", 0) for i in rows]
        columns: Dict[str, Iterable[Any]] = {
            "timestamp": array("d", (times[i] for i in rows)),
            "function": [w[0] for w in where],
            "file": [w[1] for w in where],
            "line": array("q", (w[2] for w in where)),
            "cpu_seconds": array("d", (moments.cpu[i] for i in rows)),
            "memory": array("d", (memory[i] for i in rows)),
        }
        return TinyDataFrame(columns, columns=TIMELINE_COLUMNS)

    def running(
        self,
    ) -> Tuple[Sequence[float], Sequence[float], Sequence[float], List[Optional[Key]]]:
        """The timeline without its rows: each interval's end time and largest memory (KiB),
        the id of the code running then (-1: none known), and each id's user code (folded as
        ``user_code=True``; None: no code)."""
        moments = self._moments()
        if moments.tracked is not None:  # the ids are the tracked process's stacks
            keys = moments.tracked.keys("line", True)
            of_stack = [keys.names[int(t)] if t >= 0 else None for t in keys.top]
            return moments.timestamps, moments.memory, moments.stacks, of_stack
        ids: Dict[Tuple[int, int], int] = {}  # agents: (source, stack) -> id
        codes = array("d")
        for owner, stack in zip(moments.agent_of, moments.stacks):
            key = (-1, -1) if owner is None else (id(owner), int(stack))
            codes.append(-1 if owner is None else ids.setdefault(key, len(ids)))
        owners = {id(a): a for a in moments.owners()}
        name_of: List[Optional[Key]] = [None] * len(ids)
        for (owner_id, stack), i in ids.items():
            name_of[i] = folded(owners[owner_id].source, stack, "line", True)[-1]
        return moments.timestamps, moments.memory, codes, name_of

    def peak(self) -> Optional[Dict[str, Any]]:
        """The code running when the tree's memory was at its peak, or None without samples
        (or, with agents only, when no agent process was sampled then)."""
        moments = self._moments()
        memory = moments.memory
        if not len(memory):
            return None
        top = list(memory).index(max(memory))  # the first interval at the peak
        owner = moments.tracked or moments.agent_of[top]
        if owner is None:
            return None
        keys = folded(owner.source, int(moments.stacks[top]), "line", True)
        function, file, line = keys[-1]
        return {
            "memory_peak": memory[top],
            "timestamp": moments.timestamps[top],
            "function": function,
            "file": file,
            "line": line,
            "origin": origin_of(file),
            "stack": [list(k) for k in keys],
        }


class _Moments:
    """The tree's intervals with their code: end times, CPU-seconds, largest memory (KiB),
    and the code running then (a stack of ``tracked``, or of ``agent_of[i]``; None where none
    is known): the tracked process's sampled intervals (its running thread), or, when it was
    not sampled (``run --code``), each row of the tree with the code of an agent process
    sampled then (``_AgentCode``)."""

    def __init__(self, attribution: Attribution) -> None:
        self.tracked: Optional[_Attributed] = None
        self.agent_of: List[Optional[_Attributed]] = []
        self.timestamps: Sequence[float] = ()
        self.cpu: Sequence[float] = ()
        self.memory: Sequence[float] = ()
        self.stacks: Sequence[float] = ()
        found = attribution.attributed
        if not found:
            return
        tracked = found[0]
        if len(found) > 1 and tracked.n:  # the moments' CPU: the tracked process's own rule
            tracked = _Attributed(tracked.source)
        if tracked.n:
            self.tracked = tracked
            self.timestamps, self.cpu, self.memory = (tracked.field(i) for i in (1, 3, 4))
            self.stacks = tracked.busiest()
            return
        tree, agents = tracked.source, _AgentCode(found[1:])
        self.timestamps, self.cpu, self.memory = tree.timestamps, tree.cpu, tree.memory
        before = [tree.start_time, *tree.timestamps]
        code = [agents.at(t, t - b) for t, b in zip(tree.timestamps, before)]
        self.agent_of = [c[0] if c else None for c in code]
        self.stacks = array("d", (c[1] if c else -1 for c in code))

    def owners(self) -> List[_Attributed]:
        """The attributed sources whose stacks name the code."""
        if self.tracked is not None:
            return [self.tracked]
        return list({id(a): a for a in self.agent_of if a is not None}.values())


class _AgentCode:
    """The code of the agent processes at a time of the tree: each process's sample nearest
    it, when that sample's interval meets the tree's row (at most a row and a sample apart);
    of those, the one of the process holding the most memory at its sample (the peak's
    likeliest owner), the nearest on a tie."""

    def __init__(self, agents: Sequence[_Attributed]) -> None:
        self.agents = [a for a in agents if a.n]
        self.times = [a.field(1) for a in self.agents]
        self.seconds = [a.field(2) for a in self.agents]
        self.rows = [a.field(0) for a in self.agents]

    def at(self, t: float, span: float) -> Optional[Tuple[_Attributed, int]]:
        found = []  # (-memory, distance, index, segment)
        for index, (agent, times) in enumerate(zip(self.agents, self.times)):
            i = bisect.bisect_left(times, t)
            near = min(range(max(i - 1, 0), min(i + 1, agent.n)), key=lambda s: abs(times[s] - t))
            distance = abs(times[near] - t)
            if distance <= max(span, 0.0) + self.seconds[index][near]:
                memory = agent.source.memory[int(self.rows[index][near])]
                found.append((-memory, distance, index, near))
        if not found:
            return None
        best = min(found, key=lambda f: (f[0], f[1]))
        agent = self.agents[best[2]]
        return agent, int(agent.busiest()[best[3]])


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
