"""One run summary: everything a page, a card, the CLI or an artifact says about a run.

``build_summary(tracker)`` (what ``ResourceTracker.summary()`` calls and caches) computes,
once per run: the statistics (``stats()``), the earlier runs with their one rule (the mean of
their means, totals and durations, the highest of their peaks: :func:`history_values`), the
recommendation (``recommend_resources``, i.e. the C recommender ``_core.recommend``), the
cheapest fitting servers and the run's costs (the catalog and the Keeper are asked HERE, in a
bounded time; their errors become warnings), the machine and the cloud, the data quality
and every warning. The result is a frozen :class:`RunSummary`: renderers (the report, the
Metaflow card, the CLI) format it and do no I/O; ``to_dict()`` / ``from_dict()`` store it
in a snapshot or an artifact as plain JSON values.

Which statistics there are, their labels and units come from the column registry
(:mod:`resource_tracker.registry`); no metric is named here.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _core
from . import formatting as fmt
from . import insights as ins
from ._background import tracker_thread
from ._run_data import data_quality_notes
from ._text import printable
from .code_view import code_view, label_phases, stored_view
from .insights import Insight
from .registry import Column, column, stat_columns, traffic_columns
from .tuning import next_tuning

__all__ = [
    "SUMMARY_VERSION",
    "SERVER_CHOICES",
    "SERVER_TIMEOUT_S",
    "DURATION",
    "StatRow",
    "History",
    "ServerChoice",
    "RunInfo",
    "SummaryWarning",
    "RunSummary",
    "build_summary",
    "history_values",
    "history_from",
    "stat_specs",
    "lookup_servers",
    "METAFLOW_HISTORY_KEYS",
    "traffic_columns",
    "cached_summary",
    "stored_summary",
    "summary_cache_key",
]

#: Version of the ``to_dict()`` form (stored in snapshots and Metaflow artifacts).
SUMMARY_VERSION = 1
#: How many servers the summary keeps: the cheapest and its alternatives.
SERVER_CHOICES = 4
#: Seconds the catalog lookup may take (the Keeper is online); a slower one is skipped.
SERVER_TIMEOUT_S = 10.0

#: The stats() key and field of the run's duration.
DURATION = ("timestamp", "duration")
#: stats() key suffix of the kernel's high-water mark beside a memory column.
_HWM_SUFFIX = "_hwm"
#: The fields of each aggregate a summary shows (the percentiles stay in stats()).
_SHOWN_FIELDS = {"dist": ("mean", "max"), "sum": ("sum",), "max": ("max",)}


# -- the value --------------------------------------------------------------------------


@dataclass(frozen=True)
class StatRow:
    """One statistic of the run: a registry column's field, this run's value and the value
    over earlier runs (None where unknown). ``unit`` is the registry's (e.g. ``KiB``,
    ``cores``, ``B``; ``s`` for the duration)."""

    key: str
    field: str
    label: str
    unit: str
    value: Optional[float] = None
    past: Optional[float] = None


@dataclass(frozen=True)
class History:
    """Earlier runs of the same job. ``values``: ``{stats key: {field: value}}`` by the one
    rule (:func:`history_values`); ``stats``: the earlier runs' ``stats()`` when they are
    known (the recommendation combines them with this run), empty when only a summary of
    them was given (the Metaflow artifact's ``historical_stats``)."""

    runs: int
    values: Dict[str, Dict[str, float]]
    stats: Tuple[Mapping[str, Any], ...] = ()
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerChoice:
    """The cheapest fitting servers (catalog records, best first) and the run's costs
    (``resource_tracker.catalog.run_costs``); ``unavailable`` / ``no_match`` say why there
    is none (the catalog could not be read / nothing fits)."""

    servers: Tuple[Dict[str, Any], ...] = ()
    costs: Optional[Dict[str, Any]] = None
    unavailable: Optional[str] = None
    no_match: Optional[str] = None
    #: the cheapest server of the other CPU architecture when it costs less than the best
    #: (the servers are the run's architecture): with ``saving_usd_per_hour``, ``saving_share``
    alternative: Optional[Dict[str, Any]] = None

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        """The cheapest fitting server, or None."""
        return self.servers[0] if self.servers else None


@dataclass(frozen=True)
class RunInfo:
    """What ran and how it was tracked (the tracker's attributes, as plain values)."""

    label: Optional[str] = None
    command: Optional[str] = None
    pid: Optional[int] = None
    children: Optional[bool] = None
    start_time: Optional[float] = None
    stop_time: Optional[float] = None
    interval: Optional[float] = None
    method: Optional[str] = None
    status: str = "unknown"
    integration: Optional[str] = None
    #: what the run asked for (``extra['resources_asked']``: cpu, memory MiB, gpu, source)
    asked: Optional[Dict[str, Any]] = None
    #: why a failed run failed: ``{"type": ..., "message": ...}`` (printable text), or None
    error: Optional[Dict[str, str]] = None
    job: Optional[str] = None


@dataclass(frozen=True)
class SummaryWarning:
    """One problem worth a line. ``topic``: ``data`` (samples, statistics, data quality),
    ``recommendation``, ``catalog`` (no catalog could be read) or ``server`` (nothing fits)."""

    topic: str
    text: str


@dataclass(frozen=True)
class RunSummary:
    """Everything said about one run, computed once (see the module's docstring)."""

    run: RunInfo
    n_samples: int
    n_process: int
    n_system: int
    duration: Optional[float]
    stats: Optional[Dict[str, Any]]
    rows: Tuple[StatRow, ...]
    history: Optional[History]
    resources: Optional[Dict[str, float]]  # whole numbers; a tuned CPU also in quarters
    server: ServerChoice
    server_info: Optional[Dict[str, Any]] = None
    cloud_info: Optional[Dict[str, Any]] = None
    data_quality: Dict[str, Any] = field(default_factory=dict)
    warnings: Tuple[SummaryWarning, ...] = ()
    cache_key: str = ""
    insights: Tuple[Insight, ...] = ()
    #: where the time and memory went (``resource_tracker.code_view.code_view``), or None
    code: Optional[Dict[str, Any]] = None
    #: the runs ``resources`` was tuned from (``@track_resources(tune=True)``), 0: not tuned
    tuned_from: int = 0

    def warnings_about(self, *topics: str) -> List[str]:
        """The warning texts of these topics, in order, each once."""
        seen: List[str] = []
        for w in self.warnings:
            if w.topic in topics and w.text not in seen:
                seen.append(w.text)
        return seen

    def row(self, key: str, field: str) -> Optional[StatRow]:
        """The row of stats key ``key`` and ``field`` (e.g. the duration), or None."""
        return next((r for r in self.rows if r.key == key and r.field == field), None)

    def to_dict(self) -> Dict[str, Any]:
        """The summary as plain JSON values (``from_dict`` turns it back)."""
        out = asdict(self)
        out["insights"] = [i.to_dict() for i in self.insights]
        out["version"] = SUMMARY_VERSION
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        """A summary from ``to_dict()`` (also after a JSON round trip); ValueError when
        ``data`` is not one (or of a newer version)."""
        if not isinstance(data, Mapping) or data.get("version") != SUMMARY_VERSION:
            raise ValueError("not a resource-tracker run summary (or of another version)")
        _check_stored(data)

        try:
            history = data.get("history")
            run = dict(data["run"])
            run["error"] = _run_error(run.get("error"))  # stored text: printable again
            return cls(
                run=RunInfo(**run),
                n_samples=int(data["n_samples"]),
                n_process=int(data["n_process"]),
                n_system=int(data["n_system"]),
                duration=data.get("duration"),
                stats=data.get("stats"),
                rows=tuple(StatRow(**r) for r in data["rows"]),
                history=None if history is None else _history_from_dict(history),
                resources=data.get("resources"),
                server=_server_from_dict(data["server"]),
                server_info=data.get("server_info"),
                cloud_info=data.get("cloud_info"),
                data_quality=dict(data.get("data_quality") or {}),
                warnings=tuple(SummaryWarning(**w) for w in data.get("warnings") or ()),
                cache_key=str(data.get("cache_key") or ""),
                insights=tuple(Insight.from_dict(i) for i in data.get("insights") or ()),
                code=stored_view(data.get("code")),
                tuned_from=_whole(data.get("tuned_from")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a resource-tracker run summary: damaged ({exc!r})") from None


def _whole(value: Any) -> int:
    """A stored count: a whole number >= 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _check_stored(data: Mapping[str, Any]) -> None:
    """ValueError when a stored summary holds values the renderers could not write (a
    damaged or hand-made snapshot): then a new summary is built from the data instead."""

    def bad(what: str) -> None:
        raise ValueError(f"not a resource-tracker run summary: {what}")

    for row in data.get("rows") or ():
        if not isinstance(row, Mapping):
            bad("a row is not an object")
        for name in ("value", "past"):
            value = row.get(name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                bad(f"row {name} {value!r:.40} is not a number")
        if not all(isinstance(row.get(name), str) for name in ("key", "field", "label", "unit")):
            bad("a row's key, field, label or unit is not text")
    server = data.get("server")
    if not isinstance(server, Mapping) or not all(
        isinstance(s, Mapping) for s in server.get("servers") or ()
    ):
        bad("server is not an object with a list of server records")
    for name in ("stats", "resources", "server_info", "cloud_info"):
        if data.get(name) is not None and not isinstance(data[name], Mapping):
            bad(f"{name} is not an object")


def _history_from_dict(data: Mapping[str, Any]) -> History:
    return History(
        runs=int(data["runs"]),
        values={k: dict(v) for k, v in data["values"].items()},
        stats=tuple(data.get("stats") or ()),
        notes=tuple(data.get("notes") or ()),
    )


def _server_from_dict(data: Mapping[str, Any]) -> ServerChoice:
    return ServerChoice(
        servers=tuple(data.get("servers") or ()),
        costs=data.get("costs"),
        unavailable=data.get("unavailable"),
        no_match=data.get("no_match"),
        alternative=data.get("alternative"),
    )


# -- the statistics and the history rule ------------------------------------------------


def _row_label(col: Column, field: str) -> str:
    if col.aggregate == "sum":
        return col.label
    return f"{col.label}, {'mean' if field == 'mean' else 'peak'}"


def stat_specs() -> Tuple[StatRow, ...]:
    """The statistics a summary shows, without values: each registry column in ``stats()``
    (mean and peak of a distribution, a total, a peak), the kernel's high-water mark beside
    the memory the recommendation sizes, and the duration."""
    specs = []
    for col in stat_columns():
        for fld in _SHOWN_FIELDS[col.aggregate]:
            specs.append(StatRow(col.key, fld, _row_label(col, fld), col.unit))
            if col.resource == "memory" and fld == "max":
                label = "One process's peak (kernel VmHWM)"
                specs.append(StatRow(col.key + _HWM_SUFFIX, "max", label, col.unit))
    specs.append(StatRow(DURATION[0], DURATION[1], "Duration", "s"))
    return tuple(specs)


def _number(stats: Any, key: str, fld: str) -> Optional[float]:
    """stats[key][fld] as a finite float, or None."""
    entry = stats.get(key) if isinstance(stats, Mapping) else None
    value = entry.get(fld) if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def history_values(runs: Sequence[Mapping[str, Any]]) -> Dict[str, Dict[str, float]]:
    """The one rule for earlier runs: for every statistic of :func:`stat_specs`, the highest
    of their peaks (``max``) and the mean of the rest (means, totals, durations), over the
    runs that have it. ``{stats key: {field: value}}``."""
    out: Dict[str, Dict[str, float]] = {}
    for spec in stat_specs():
        seen = [_number(s, spec.key, spec.field) for s in runs]
        value = _core.combine_runs(seen, spec.field == "max")  # the rule: csrc/stats.c
        if value is not None:
            out.setdefault(spec.key, {})[spec.field] = value
    return out


def _metaflow_history_keys() -> Dict[str, Tuple[str, str]]:
    by_resource = {c.resource: c for c in stat_columns("process") if c.resource}
    return {
        "avg_cpu_mean": (by_resource["cpu"].key, "mean"),
        "max_memory_max": (by_resource["memory"].key, "max"),
        "avg_gpu_mean": (column("process", "gpu_usage").key, "mean"),
        "max_vram_max": (by_resource["vram"].key, "max"),
        "max_gpu_count": (by_resource["gpu"].key, "max"),
        "avg_duration": DURATION,
    }


#: The Metaflow artifact's ``historical_stats`` keys: documented key -> (stats key, field).
METAFLOW_HISTORY_KEYS: Dict[str, Tuple[str, str]] = _metaflow_history_keys()


def history_from(historical_stats: Any) -> Optional[History]:
    """A History from what callers pass as ``historical_stats``: a list of ``stats()`` dicts,
    one ``stats()`` dict, or the Metaflow artifact's summary (``runs_analyzed``,
    ``avg_cpu_mean``, ...). None when there is no usable history."""
    if not historical_stats:
        return None
    if isinstance(historical_stats, Mapping):
        if "format" in historical_stats or "timestamp" in historical_stats:
            historical_stats = [historical_stats]  # a single stats() dict
        else:
            return _history_from_metaflow(historical_stats)
    runs = tuple(s for s in historical_stats if isinstance(s, Mapping))
    if not runs:
        return None
    return History(runs=len(runs), values=history_values(runs), stats=runs)


def _history_from_metaflow(summary: Mapping[str, Any]) -> Optional[History]:
    values: Dict[str, Dict[str, float]] = {}
    for name, (key, fld) in METAFLOW_HISTORY_KEYS.items():
        value = summary.get(name)
        if isinstance(value, (int, float)) and math.isfinite(value):
            values.setdefault(key, {})[fld] = float(value)
    runs = summary.get("runs_analyzed")
    if not values or not runs:
        return None
    return History(runs=int(runs), values=values, notes=tuple(summary.get("notes") or ()))


def _rows(stats: Optional[Mapping[str, Any]], history: Optional[History]) -> Tuple[StatRow, ...]:
    past = history.values if history else {}
    return tuple(
        replace(
            spec,
            value=_number(stats, spec.key, spec.field),
            past=(past.get(spec.key) or {}).get(spec.field),
        )
        for spec in stat_specs()
    )


# -- the catalog --------------------------------------------------------------------------


def lookup_servers(
    resources: Optional[Mapping[str, float]],
    duration: Optional[float],
    cloud_info: Optional[Mapping[str, Any]],
    *,
    n: int = SERVER_CHOICES,
    timeout: float = SERVER_TIMEOUT_S,
    architecture: Optional[str] = None,
) -> ServerChoice:
    """The cheapest ``n`` servers for ``resources`` of the run's CPU ``architecture`` (any
    when unknown; the other architecture's cheapest as the alternative when it costs less:
    ``resource_tracker.catalog.run_servers``) and the run's costs, from
    ``resource_tracker.catalog``, in at most ``timeout`` seconds (the lookup runs in a
    daemon thread; a slower one is left behind; in the caller when no thread can be made).
    Never raises: a missing catalog, nothing fitting or a failure is said in
    ``unavailable`` / ``no_match``."""
    result: Dict[str, ServerChoice] = {}

    def work() -> None:
        try:
            result["choice"] = _ask_catalog(resources, duration, cloud_info, n, architecture)
        except Exception as exc:  # an unexpected failure: a note, never a crash
            result["choice"] = ServerChoice(
                unavailable=f"catalog unavailable: {type(exc).__name__}: {exc}"
            )

    thread = threading.Thread(
        target=tracker_thread(work), name="resource-tracker-catalog", daemon=True
    )
    try:
        thread.start()
    except RuntimeError:  # no thread can be made (RLIMIT_NPROC, pids.max): ask here
        work()
        return result["choice"]
    thread.join(timeout)
    if thread.is_alive():
        return ServerChoice(
            unavailable=f"catalog unavailable: the lookup took longer than {timeout:g} s"
        )
    return result["choice"]


def _ask_catalog(
    resources: Optional[Mapping[str, float]],
    duration: Optional[float],
    cloud_info: Optional[Mapping[str, Any]],
    n: int,
    architecture: Optional[str] = None,
) -> ServerChoice:
    try:
        from .catalog import (
            CatalogUnavailableError,
            NoMatchingServerError,
            recommend_server,
            run_costs,
        )
    except ImportError as exc:  # an installation without the catalog (or without sqlite3)
        return ServerChoice(
            unavailable="catalog unavailable: resource_tracker.catalog cannot be imported "
            f"({type(exc).__name__}: {exc})"
        )
    servers: Tuple[Dict[str, Any], ...] = ()
    no_match = None
    arch = fmt.architecture(architecture)
    if resources is not None:
        try:
            servers = _run_servers(recommend_server, dict(resources), arch, n)
        except NoMatchingServerError as exc:
            no_match = f"no server in the catalog fits: {exc}"
        except CatalogUnavailableError as exc:
            return ServerChoice(unavailable=f"catalog unavailable: {exc}")
    costs = None
    if duration is not None:
        try:
            costs = run_costs(duration, cloud_info, servers[0] if servers else None)
        except Exception as exc:
            return ServerChoice(
                servers, None, f"catalog unavailable: costs failed: {type(exc).__name__}: {exc}"
            )
    alternative = None
    if arch in fmt.OTHER_ARCHITECTURE and servers:
        try:
            other = recommend_server(
                dict(resources or {}), architecture=fmt.OTHER_ARCHITECTURE[arch]
            )
            alternative = cheaper_alternative(servers[0], other, arch)
        except (NoMatchingServerError, CatalogUnavailableError):
            pass
    return ServerChoice(servers=servers, costs=costs, no_match=no_match, alternative=alternative)


def _run_servers(
    recommend: Any, resources: Dict[str, Any], arch: Optional[str], n: int
) -> Tuple[Dict[str, Any], ...]:
    """The n cheapest servers of the run's CPU architecture (``recommend``: the catalog's
    recommend_server); of any when it is unknown or none of its architecture fits."""
    from .catalog import NoMatchingServerError

    found = None
    if arch in fmt.OTHER_ARCHITECTURE:
        try:
            found = recommend(resources, n=n, architecture=arch)
        except NoMatchingServerError:
            pass
    if found is None:
        found = recommend(resources, n=n)
    return tuple(found) if isinstance(found, (list, tuple)) else (found,)


def cheaper_alternative(
    best: Mapping[str, Any], other: Any, arch: Optional[str]
) -> Optional[Dict[str, Any]]:
    """``other`` (the other architecture's cheapest server) with ``saving_usd_per_hour`` and
    ``saving_share`` against ``best`` when best is of the run's ``arch`` and other costs
    less; else None."""
    first, alt = _price_of(best), _price_of(other)
    if fmt.architecture(best.get("cpu_architecture")) != arch or first is None or alt is None:
        return None
    if alt >= first or first <= 0:
        return None
    return dict(other, saving_usd_per_hour=first - alt, saving_share=(first - alt) / first)


def _price_of(server: Any) -> Optional[float]:
    price = server.get("price") if isinstance(server, Mapping) else None
    if isinstance(price, bool) or not isinstance(price, (int, float)):
        return None
    return float(price) if math.isfinite(price) else None


# -- building it --------------------------------------------------------------------------


def _attr(obj: Any, name: str, default: Any = None) -> Any:
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


def _run_info(tracker: Any) -> RunInfo:
    extra = _attr(tracker, "extra") or {}
    status = _attr(tracker, "status") or "unknown"
    status = {"new": "not started"}.get(status, status)
    if extra.get("step_failed") or extra.get("failed"):
        status = "failed"
    command = _attr(tracker, "command")
    pid = _attr(tracker, "pid")
    interval = _attr(tracker, "interval")
    children = _attr(tracker, "children")
    return RunInfo(
        label=None if _attr(tracker, "label") is None else str(_attr(tracker, "label")),
        command=None if command is None else str(command),
        pid=pid if isinstance(pid, int) else None,
        children=None if children is None else bool(children),
        start_time=_attr(tracker, "start_time"),
        stop_time=_attr(tracker, "stop_time"),
        interval=None if interval is None else float(interval),
        method=_attr(tracker, "method"),
        status=str(status),
        integration=extra.get("integration"),
        asked=_asked_request(extra),
        error=_run_error(extra.get("step_error")),
        job=None if _attr(tracker, "job") is None else str(_attr(tracker, "job")),
    )


def _asked_request(extra: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The integration's request (``extra['resources_asked']``) as plain values, or None."""
    asked = extra.get("resources_asked")
    if not isinstance(asked, Mapping) or not asked:
        return None
    return {str(k): v if isinstance(v, (int, float, str)) else str(v) for k, v in asked.items()}


#: The most characters of a failure's message kept in the summary.
ERROR_MESSAGE_CHARS = 500


def _run_error(error: Any) -> Optional[Dict[str, str]]:
    """A failure's ``{"type", "message"}`` (``extra['step_error']``) as printable text of
    bounded length; None when there is none."""
    if not isinstance(error, Mapping):
        return None
    kind = printable(error.get("type") or "", 100).replace("\n", " ").strip()
    if not kind:
        return None
    return {"type": kind, "message": printable(error.get("message") or "", ERROR_MESSAGE_CHARS)}


class _Collector:
    """Reads what the summary needs from a tracker, turning failures into warnings."""

    def __init__(self, tracker: Any) -> None:
        self.t = tracker
        self.warnings: List[SummaryWarning] = []
        self.tuned_from = 0  # the runs the tuned request was made from (0: not tuned)

    def warn(self, topic: str, text: str) -> None:
        self.warnings.append(SummaryWarning(topic, text))

    def rows_of(self, name: str) -> int:
        try:
            table = getattr(self.t, name)
        except Exception as exc:
            self.warn("data", f"{name} unavailable: {type(exc).__name__}: {exc}")
            return 0
        return len(table) if table is not None else 0

    def stats(self) -> Optional[Dict[str, Any]]:
        try:
            found: Dict[str, Any] = self.t.stats()  # self.t: a tracker (Any)
            return found
        except Exception as exc:
            self.warn("data", f"stats() failed: {type(exc).__name__}: {exc}")
            return None

    def duration(self, stats: Optional[Mapping[str, Any]], n_samples: int) -> Optional[float]:
        if n_samples == 0 and not _attr(self.t, "start_time"):
            return None  # never started
        value = _number(stats, *DURATION)
        if value is not None:
            return value
        start, stop = _attr(self.t, "start_time"), _attr(self.t, "stop_time")
        return float(stop) - float(start) if start and stop else None

    def insights(self, *args: Any) -> Tuple[Insight, ...]:
        try:
            return _insights_of(self.t, *args)
        except Exception as exc:  # a finding that cannot be made is a note, never a crash
            self.warn("data", f"insights failed: {type(exc).__name__}: {exc}")
            return ()

    def resources(
        self, history: Optional[History], stats: Optional[Mapping[str, Any]] = None
    ) -> Optional[Dict[str, float]]:
        try:
            if history and history.stats:
                found = self.t.recommend_resources(historical_stats=list(history.stats))
            else:
                found = self.t.recommend_resources()
        except Exception as exc:
            self.warn("recommendation", f"No recommendation: {exc}")
            return None
        return self.tuned(found, stats)

    def tuned(self, found: Dict[str, int], stats: Optional[Mapping[str, Any]]) -> Dict[str, float]:
        """With ``@track_resources(tune=True)``: the tuned request of the next run in place
        of the recommendation's CPU, memory and GPUs (one rule: ``tuning.next_tuning``)."""
        try:
            tuning = next_tuning(_attr(self.t, "extra") or {}, stats or {},
                                 _attr(self.t, "server_info"))  # fmt: skip
        except Exception as exc:  # a tuning that cannot be made: a note, never a crash
            self.warn("recommendation", f"no tuned request: {type(exc).__name__}: {exc}")
            return dict(found)
        if tuning is None or not tuning.resources:
            return dict(found)
        self.tuned_from = tuning.runs
        return {**dict(found), **tuning.resources}


def _series(tracker: Any) -> Tuple[Sequence[float], Dict[str, Sequence[float]]]:
    """The process tree's samples for the phases: timestamps and the CPU (cores), memory
    (MiB) and GPU (GPUs in use) series, from the registry's resource columns (the stored
    columns themselves where no unit changes: no copy)."""
    table = _attr(tracker, "process_metrics")
    if table is None or not len(table):
        return [], {}
    by_resource = {c.resource: c for c in stat_columns("process") if c.resource}
    series: Dict[str, Sequence[float]] = {}
    for name in ("cpu", "memory", "gpu"):
        col = by_resource.get(name)
        if col is not None and col.name in table.columns:
            values = table.column_array(col.name)
            series[name] = [v / 1024 for v in values] if name == "memory" else values
    return table.column_array(column("process", "timestamp").name), series


def _asked(tracker: Any, stats: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """What the run asked for: the integration's request (``extra['resources_asked']``,
    e.g. Metaflow's @resources) or else the container's cgroup limits."""
    asked = (_attr(tracker, "extra") or {}).get("resources_asked")
    if isinstance(asked, Mapping) and asked:
        return dict(asked)
    cgroup = (stats or {}).get("cgroup")
    if isinstance(cgroup, Mapping):
        limits = {"cpu": cgroup.get("cpu_limit_cores"), "memory": cgroup.get("memory_limit_mib")}
        if any(v is not None for v in limits.values()):
            return {**limits, "source": "cgroup limits"}
    return None


def _gpus_busy(stats: Optional[Mapping[str, Any]], held: Optional[float]) -> Optional[float]:
    """The GPUs the run kept busy (``stats()["gpu_fit"]``), else the GPUs it held."""
    fit = (stats or {}).get("gpu_fit")
    busy = fit.get("gpus_busy") if isinstance(fit, Mapping) else None
    return float(busy) if isinstance(busy, int) and not isinstance(busy, bool) else held


def _insights_of(
    tracker: Any,
    stats: Optional[Mapping[str, Any]],
    history: Optional[History],
    resources: Optional[Mapping[str, Any]],
    server: ServerChoice,
    duration: Optional[float],
) -> Tuple[Insight, ...]:
    extra = _attr(tracker, "extra") or {}
    runs_per_month = _number(extra, "schedule", "runs_per_month")  # None: one a day assumed
    pricing = ins.Pricing.from_server(server.best)
    now = ins.run_metrics(stats)
    used = {
        "cpu": _number(stats, column("process", "cpu_usage").key, "max"),
        "memory": now.get("memory_peak_mib"),
        "gpu": _gpus_busy(stats, now.get("gpu_peak")),
    }
    asked = _asked(tracker, stats)
    found = ins.at_risk((stats or {}).get("cgroup"), duration)
    found += ins.above_ask(asked, used["memory"], now.get("cpu_mean_cores"))
    found += ins.over_provisioned(asked, used, resources, duration, pricing, runs_per_month)
    found += ins.held_unused_gpus((stats or {}).get("gpu_fit"))
    if history and history.stats:
        found += ins.changed(now, [ins.run_metrics(s) for s in history.stats])
    stamps, series = _series(tracker)
    found += ins.phases(stamps, series, pricing, runs_per_month)
    return tuple(found)


def build_summary(
    tracker: Any,
    historical_stats: Any = None,
    *,
    lookup_server: bool = True,
    server_timeout: float = SERVER_TIMEOUT_S,
) -> RunSummary:
    """The summary of ``tracker`` (a ResourceTracker, also one loaded from a snapshot).

    Args:
        historical_stats: earlier runs (see :func:`history_from`); default: the ones the
            run was saved with (``tracker.extra['historical_stats']``, Metaflow).
        lookup_server: ask the catalog for servers and costs (False: no catalog I/O at all,
            the server choice says it was not looked up).
        server_timeout: seconds the catalog lookup may take.
    """
    get = _Collector(tracker)
    n_process, n_system = get.rows_of("process_metrics"), get.rows_of("system_metrics")
    n_samples = max(n_process, n_system)
    stats = get.stats()
    for note in data_quality_notes(stats):
        get.warn("data", note)
    if historical_stats is None:
        historical_stats = (_attr(tracker, "extra") or {}).get("historical_stats") or None
    history = history_from(historical_stats)
    duration = get.duration(stats, n_samples)
    resources = get.resources(history, stats)
    cloud_info = _attr(tracker, "cloud_info")
    if lookup_server:
        arch = (_attr(tracker, "server_info") or {}).get("architecture")
        server = lookup_servers(resources, duration, cloud_info, timeout=server_timeout,
                                architecture=arch)  # fmt: skip
    else:
        server = ServerChoice(unavailable="catalog not consulted (lookup_server=False)")
    for topic, text in (("catalog", server.unavailable), ("server", server.no_match)):
        if text:
            get.warn(topic, text)
    insights = get.insights(stats, history, resources, server, duration)
    code = code_view(tracker, insights)
    return RunSummary(
        run=_run_info(tracker),
        n_samples=n_samples,
        n_process=n_process,
        n_system=n_system,
        duration=duration,
        stats=stats,
        rows=_rows(stats, history),
        history=history,
        resources=resources,
        server=server,
        server_info=_attr(tracker, "server_info"),
        cloud_info=cloud_info,
        data_quality=dict((stats or {}).get("data_quality") or {}),
        warnings=tuple(get.warnings),
        insights=label_phases(insights, code),
        code=code,
        tuned_from=get.tuned_from,
    )


def summary_cache_key(tracker: Any, historical_stats: Any, lookup_server: bool) -> str:
    """What a cached summary of ``tracker`` depends on, as one short text: the samples so
    far, the status, the label and extras (Metaflow sets them), the history and whether the
    catalog is asked. A summary stored in a snapshot keeps its key, so the tracker loaded
    from that snapshot reuses it instead of asking the catalog again."""
    import hashlib
    import json

    parts = [
        _attr(tracker, "n_samples"),
        _attr(tracker, "status"),
        _attr(tracker, "stop_time"),
        _attr(tracker, "label"),
        _attr(tracker, "job"),
        _attr(tracker, "extra"),
        historical_stats,
        bool(lookup_server),
    ]
    text = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def cached_summary(
    tracker: Any, historical_stats: Any = None, *, lookup_server: bool = True
) -> RunSummary:
    """``tracker``'s summary, built once per state (see :func:`summary_cache_key`) and kept
    on the tracker (``tracker._summary``)."""
    key = summary_cache_key(tracker, historical_stats, lookup_server)
    cached = getattr(tracker, "_summary", None)
    if isinstance(cached, RunSummary) and cached.cache_key == key:
        return cached
    summary = replace(
        build_summary(tracker, historical_stats, lookup_server=lookup_server), cache_key=key
    )
    tracker._summary = summary
    return summary


def stored_summary(data: Any) -> Optional[RunSummary]:
    """The summary a snapshot or an artifact stored (``to_dict()``), or None when there is
    none or it cannot be read (then a new one is built when asked for)."""
    if data is None:
        return None
    try:
        return RunSummary.from_dict(data)
    except ValueError:
        return None
