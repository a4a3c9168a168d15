"""``--prometheus URL``: the run summaries our export pushed (docs/export.md), read back from
Prometheus's HTTP API.

Every run pushes its summary once, at its end, into a Pushgateway group of its own (job,
instance and the Metaflow ids with the ``@retry`` attempt, else the pid); Prometheus scrapes
it from then on. A run that ended without its summary leaves only its live gauges: once it
missed two live pushes (:data:`MISSED_PUSHES`, its period pushed live), it is listed as
``killed`` when they show an OOM kill's evidence (its cgroup counted one, or its last memory
reading was near its limit), with what it had (ask, limits) and the peaks they show; without
evidence (a final push that failed, a kill that was no OOM kill) it is one skipped line, not
a kill. One
``query_range`` per summary metric, evaluated at the end of the window, asks for
``last_over_time(METRIC[SINCE])``: every series seen within ``--since`` once, with its final
value (the answer grows with the runs, not with the window's length or the scrape interval).
The series of the end timestamp are the runs; the other metrics are joined on the same
labels. A tuned step's run pushed its tuning record and its step's tuning settings
(``metrics.TUNING``, the code's fingerprint as a label): its RunRecord carries them, so the
fleet tunes over them as the card does (``tuning.step_tuning``). The group key (the
dashboard's step) is ``flow/step`` for a Metaflow step, else the ``job`` label, with the
values of the ``--group-by`` labels appended.

Every request goes through the export's bounded client (export/transport.py): the URL is
checked first, all queries share one deadline, an answer is read up to a bound and never
followed through a redirect. A server that cannot be read is a ValueError saying what
happened; a run whose figures cannot be read is skipped with one line saying why.
"""

from __future__ import annotations

import math
import time
import urllib.parse
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

from .._stored import TooDeep, strict_json
from .._text import printable
from ..export.config import base_url
from ..export.metrics import (
    EXPORT_PERIOD,
    SIZING,
    TUNING,
    TUNING_CODE,
    exported,
    live_metric,
    summary_metric,
)
from ..export.pipeline import SEND_TIMEOUT_S
from ..export.transport import Sender, SendError
from ..registry import column
from ..tuning import NEAR_LIMIT  # a stopped run this near its limit (else its ask) was OOM killed
from ._model import Loaded, RunRecord, check_figures

#: seconds all the queries of one load may take together
TIMEOUT_S = 30.0
#: the longest answer read (bytes) per query
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: the end timestamp's metric: one series per run
END_METRIC = "resource_tracker_run_end_timestamp_seconds"
#: the newest live sample's time: one series per run, finished or not
LIVE_METRIC = "resource_tracker_last_sample_timestamp_seconds"
#: the names of a tuned run's tuning figures (metrics.TUNING and TUNING_CODE): one query
TUNING_NAMES = '{__name__=~"resource_tracker_run_tuning_.+"}'
#: the Pushgateway's own gauge of each group's last push
PUSH_TIME_METRIC = "push_time_seconds"
#: a live group without a summary that missed this many pushes (its period, pushed live,
#: each; plus the send timeout) stopped: the run ended without its summary
MISSED_PUSHES = 2
#: the same for a run of a version that pushed no period
KILLED_AFTER_S = 600.0
_MIB = 1024.0 * 1024.0
#: the live gauges of what a run had: (metrics.SIZING key, figure, scale to the record's unit)
LIVE_FIGURES = (
    ("asked_cpu", "ask_cpu", 1.0),
    ("asked_memory", "ask_memory_mib", 1 / _MIB),
    ("limit_cpu", "limit_cpu_cores", 1.0),
    ("limit_memory", "limit_memory_mib", 1 / _MIB),
    ("oom_kills", "oom_kills", 1.0),
)

Key = FrozenSet[Tuple[str, str]]


def _figures() -> Dict[str, Tuple[str, float]]:
    """RunRecord field (or ``ask_*``) -> (Prometheus metric, scale to the record's unit)."""

    def run(name: str, stat: str) -> str:
        return summary_metric(column("process", name), stat)[0]

    return {
        "duration_s": ("resource_tracker_run_duration_seconds", 1.0),
        "failed": ("resource_tracker_run_failed", 1.0),
        "peak_memory_mib": (run("memory", "max"), 1 / _MIB),
        "mean_cpu_cores": (run("cpu_usage", "mean"), 1.0),
        "peak_cpu_cores": (run("cpu_usage", "max"), 1.0),
        "peak_gpu_count": (run("gpu_utilized", "max"), 1.0),
        "peak_vram_mib": (run("gpu_vram", "max"), 1 / _MIB),
        "ask_cpu": (SIZING["asked_cpu"][0], 1.0),
        "ask_memory_mib": (SIZING["asked_memory"][0], 1 / _MIB),
        "ask_gpu": (SIZING["asked_gpu"][0], 1.0),
        "limit_memory_mib": (SIZING["limit_memory"][0], 1 / _MIB),
        "limit_cpu_cores": (SIZING["limit_cpu"][0], 1.0),
        "oom_kills": (SIZING["oom_kills"][0], 1.0),
        "throttled_share": (SIZING["cpu_throttled_share"][0], 1.0),
    }


def prometheus_url(text: str) -> str:
    """The server's base URL (``host:port`` taken as ``http://host:port``), or ValueError
    naming --prometheus when it is no http(s) address with a host and a valid port."""
    return base_url(text, "--prometheus", "http://prometheus:9090").rstrip("/")


def load_prometheus(
    url: str,
    since_s: float,
    group_by: Union[str, Sequence[str], None] = (),
    *,
    now: Optional[float] = None,
    timeout: float = TIMEOUT_S,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> Loaded:
    """The runs whose summaries Prometheus (at ``url``) saw in the last ``since_s`` seconds
    (up to ``now``, default: the clock), grouped by ``flow/step`` or ``job`` and the
    ``group_by`` labels. ValueError for a bad URL or window, or a server that cannot be read
    (the message says why)."""
    base = prometheus_url(url)
    if not (isinstance(since_s, (int, float)) and math.isfinite(since_s) and since_s >= 1):
        raise ValueError(f"--since {since_s!r}: give a window of at least 1 s, e.g. 30d")
    labels = [group_by] if isinstance(group_by, str) else list(group_by or ())
    query = _Query(base, time.time() if now is None else float(now), since_s, timeout, max_bytes)
    runs = query.values(END_METRIC, 1.0)
    figures = {name: query.values(*spec) for name, spec in _figures().items()}
    tuned = _tuning(query)
    loaded = _killed(query, runs, labels)
    for key, end in sorted(runs.items(), key=lambda item: item[1]):
        try:
            loaded.records.append(_record(dict(key), end, figures, labels, tuned))
        except ValueError as exc:
            loaded.skipped.append(f"Prometheus series {_describe(dict(key))}: {exc}")
    return loaded


def _killed(query: _Query, runs: Mapping[Key, float], group_by: Sequence[str]) -> Loaded:
    """The runs whose live pushes stopped without a summary (:func:`_stopped`): killed when
    their live gauges show the evidence of an OOM kill (:func:`_oom_evidence`), with what
    they had (ask, limits), their peaks from the live gauges and their span from the live
    samples' times; the others (a final push that failed, a kill with no sign of an OOM
    kill) and those whose figures are no measurements one line each, not counted."""
    last = query.values(LIVE_METRIC, 1.0)
    silent = {k: t for k, t in last.items() if k not in runs}
    stopped = _stopped(query, silent) if silent else {}
    loaded = Loaded()
    if not stopped:
        return loaded
    live = _live_figures(query)
    for key, end in sorted(stopped.items(), key=lambda item: item[1]):
        got = {name: values[key] for name, values in live.items() if key in values}
        try:
            _check(dict(got, end_time=end))
        except ValueError as exc:
            loaded.skipped.append(f"Prometheus series {_describe(dict(key))}: {exc}")
            continue
        if not _oom_evidence(got):
            loaded.skipped.append(
                f"Prometheus series {_describe(dict(key))}: its live pushes stopped "
                f"{query.now - end:.0f} s ago without a run summary or a sign of an OOM kill "
                "(its final push failed, or it was stopped otherwise): not counted as killed"
            )
            continue
        loaded.records.append(_killed_record(dict(key), end, got, group_by))
    return loaded


def _stopped(query: _Query, silent: Mapping[Key, float]) -> Dict[Key, float]:
    """The live groups (without a summary) whose pushes stopped: no push for
    :data:`MISSED_PUSHES` of their push period plus the send timeout (the Pushgateway's own
    ``push_time_seconds``, else the newest sample's time); a run of a version that pushed no
    period: :data:`KILLED_AFTER_S`. {key: the newest live sample's time}."""
    pushed = query.values(PUSH_TIME_METRIC, 1.0)
    period = query.values(EXPORT_PERIOD[0], 1.0)
    stopped = {}
    for key, newest in silent.items():
        every = period.get(key)
        quiet = KILLED_AFTER_S if every is None else MISSED_PUSHES * every + SEND_TIMEOUT_S
        if query.now - max(pushed.get(key, newest), newest) >= quiet:
            stopped[key] = newest
    return stopped


def _live_figures(query: _Query) -> Dict[str, Dict[Key, float]]:
    """{figure: {live group: value}} of the live gauges a killed run is judged by."""
    live = {m.column.name: m.prometheus_name for m in exported(["process"])}
    figures = {
        "start_time": query.values(LIVE_METRIC, 1.0, "min_over_time"),
        "peak_memory_mib": query.values(live["memory"], 1 / _MIB, "max_over_time"),
        "last_memory_mib": query.values(live["memory"], 1 / _MIB),
        "peak_cpu_cores": query.values(live["cpu_usage"], 1.0, "max_over_time"),
    }
    for key, name, scale in LIVE_FIGURES:
        figures[name] = query.values(live_metric(key), scale)
    return figures


def _oom_evidence(got: Mapping[str, float]) -> str:
    """Why a stopped run counts as OOM killed ('' when nothing says so): its cgroup counted
    an OOM kill, or its last memory reading was at :data:`NEAR_LIMIT` of its limit (else
    of its ask)."""
    if got.get("oom_kills", 0.0) > 0:
        return "its cgroup counted an OOM kill"
    had = got.get("limit_memory_mib") or got.get("ask_memory_mib")
    last = got.get("last_memory_mib")
    if had and last is not None and last >= NEAR_LIMIT * had:
        return "its last memory reading was near its limit"
    return ""


def _killed_record(
    labels: Dict[str, str], end: float, got: Mapping[str, float], group_by: Sequence[str]
) -> RunRecord:
    started = min(got.get("start_time", end), end)
    ask = {k: got[f"ask_{k}"] for k in ("cpu", "memory_mib") if got.get(f"ask_{k}")}
    return RunRecord(
        step=group_key(labels, group_by),
        run_id=_run_id(labels, end),
        started=started,
        duration_s=end - started,
        status="killed",
        source="prometheus",
        peak_memory_mib=got.get("peak_memory_mib"),
        peak_cpu_cores=got.get("peak_cpu_cores"),
        ask=ask,
        limit_memory_mib=got.get("limit_memory_mib"),
        limit_cpu_cores=got.get("limit_cpu_cores"),
        oom_kills=got.get("oom_kills", 0.0),
        labels={k: printable(v, 200) for k, v in labels.items()},
    )


def _check(figures: Mapping[str, Optional[float]]) -> None:
    """ValueError naming the first figure that is negative or no measurement
    (``_model.check_figures``)."""
    for name, value in figures.items():
        if value is not None and value < 0:
            raise ValueError(f"{name} is negative ({value:g})")
    check_figures(figures)


class _Query:
    """The queries of one load: one deadline, bounded answers."""

    def __init__(self, base: str, now: float, since_s: float, timeout: float, max_bytes: int):
        self.base, self.now, self.max_bytes = base, now, max_bytes
        self.window = f"{int(math.ceil(since_s))}s"
        self.deadline = time.monotonic() + timeout
        self.sender = Sender()

    def values(
        self, metric: str, scale: float, function: str = "last_over_time"
    ) -> Dict[Key, float]:
        """{labels (without the name): ``function`` of the series over the window (its last
        value; ``min_over_time``, ``max_over_time``), scaled}."""
        params = {
            "query": f"{function}({metric}[{self.window}])",
            "start": f"{self.now:.3f}",
            "end": f"{self.now:.3f}",
            "step": "1",
        }
        body = self._get("/api/v1/query_range?" + urllib.parse.urlencode(params))
        return answer_values(body, self.base, scale)

    def named(self, selector: str) -> Optional[List[Tuple[str, Dict[str, str], float]]]:
        """[(metric name, labels, its last value over the window)] of the series ``selector``
        matches, in one query; None when the answer is no result or a series lost its name
        (a store that drops it: the caller asks metric by metric)."""
        params = {"query": f"last_over_time({selector}[{self.window}])", "start": f"{self.now:.3f}",
                  "end": f"{self.now:.3f}", "step": "1"}  # fmt: skip
        try:
            result = _result(self._get("/api/v1/query_range?" + urllib.parse.urlencode(params)),
                             self.base)  # fmt: skip
        except ValueError:
            return None
        found = []
        for series in result:
            metric = series.get("metric") if isinstance(series, Mapping) else None
            name = metric.get("__name__") if isinstance(metric, Mapping) else None
            if not isinstance(name, str):
                return None
            labels, values = _series(series)
            value = _number(values[-1][1]) if values else None
            if value is not None:
                found.append((name, labels, value))
        return found

    def _get(self, path: str) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ValueError(f"--prometheus {self.base}: no answer within the time allowed")
        try:
            body = self.sender.fetch(self.base + path, left, self.max_bytes)
        except (SendError, OSError) as exc:
            reason = printable(f"{type(exc).__name__}: {exc}", 300)
            raise ValueError(
                f"--prometheus {self.base}: the server could not be read ({reason})"
            ) from None
        return body


def answer_values(body: bytes, base: str, scale: float = 1.0) -> Dict[Key, float]:
    """{labels (without the name): the last value of the series, scaled} of one query_range
    answer (a value that is no number, NaN among them, is no figure: left out); ValueError
    when the answer is no query_range result. The figures are checked by the record
    (_check)."""
    found: Dict[Key, float] = {}
    for series in _result(body, base):
        labels, values = _series(series)
        value = _number(values[-1][1]) if values else None
        if value is not None:
            found[frozenset(labels.items())] = value * scale
    return found


def _result(body: bytes, base: str) -> List[Any]:
    """The ``data.result`` list of a query_range answer, or ValueError saying what it is."""
    try:
        answer = strict_json(body.decode("utf-8"))
        data = answer["data"]
        if answer.get("status") != "success" or data.get("resultType") != "matrix":
            raise ValueError
        result = data["result"]
        if not isinstance(result, list):
            raise ValueError
    except TooDeep:
        raise ValueError(f"--prometheus {base}: the answer is nested too deeply") from None
    except (ValueError, KeyError, TypeError, AttributeError):  # UnicodeDecodeError among them
        raise ValueError(
            f"--prometheus {base}: the answer is not a Prometheus query_range result "
            "(give the server's base URL, e.g. http://prometheus:9090)"
        ) from None
    return result


def _series(series: Any) -> Tuple[Dict[str, str], List[Any]]:
    if not isinstance(series, Mapping):
        return {}, []
    metric, values = series.get("metric"), series.get("values")
    labels = {
        k: v
        for k, v in (metric.items() if isinstance(metric, Mapping) else ())
        if k != "__name__" and isinstance(v, str)
    }
    if not isinstance(values, list) or not all(isinstance(v, list) and len(v) == 2 for v in values):
        return labels, []
    return labels, values


def _number(text: Any) -> Optional[float]:
    """The value of a sample (Prometheus writes it as text): None for no number or NaN (no
    figure); an infinity is kept for _check to refuse."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _describe(labels: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return printable("{" + inner + "}", 300)


def group_key(labels: Mapping[str, str], group_by: Sequence[str]) -> str:
    """The dashboard's step of a run: ``flow/step`` (Metaflow), else its job, with the
    ``group_by`` labels' values appended (``train [instance=gpu-1]``)."""
    flow, step = labels.get("flow"), labels.get("step")
    name = f"{flow}/{step}" if flow and step else labels.get("job") or "resource_tracker"
    extra = [f"{g}={labels[g]}" for g in group_by if labels.get(g)]
    return printable(name + (f" [{', '.join(extra)}]" if extra else ""), 300)


def _run_id(labels: Mapping[str, str], end: float) -> str:
    ids = [labels.get(k) for k in ("flow", "run_id", "step", "task_id")]
    if all(ids):
        attempt = labels.get("attempt")
        tail = f" (attempt {attempt})" if attempt and attempt != "0" else ""
        return printable("/".join(str(i) for i in ids) + tail, 300)
    where = "/".join(labels.get(k) or "?" for k in ("job", "instance", "pid"))
    return printable(f"{where}@{end:.0f}", 300)


def _tuning(query: _Query) -> Tuple[Dict[str, Dict[Key, float]], Dict[Key, str]]:
    """The tuned steps' pushed tuning: ({metrics.TUNING key: {run: value in the record's
    unit}}, {run: its code's fingerprint}). One query reads every figure (the series keep
    their names through ``last_over_time`` in Prometheus); a store that drops the names is
    asked once a figure."""
    by_name = {prom: (key, 1 / scale) for key, (prom, _, _, scale) in TUNING.items()}
    found = query.named(TUNING_NAMES)
    if found is None:  # a store that drops the names
        found = [(name, dict(labels), value)
                 for name in [*by_name, TUNING_CODE[0]]
                 for labels, value in query.values(name, 1.0).items()]  # fmt: skip
    figures: Dict[str, Dict[Key, float]] = {key: {} for key, _ in by_name.values()}
    codes = {}
    for name, labels, value in found:
        if name == TUNING_CODE[0]:
            code = labels.pop("code", "")
            codes[frozenset(labels.items())] = printable(code, 80)
        elif name in by_name:
            key, scale = by_name[name]
            figures[key][frozenset(labels.items())] = value * scale
    return figures, codes


def _tuning_parts(
    run: str, status: str, end: float, figures: Mapping[str, float], code: Optional[str]
) -> Tuple[Tuple[Dict[str, Any], ...], Dict[str, Any]]:
    """A tuned run's records and its step's settings, as the card reads them
    (``tuning.run_record``'s record, ``tuning_input``), from its pushed figures (the keys of
    metrics.TUNING); nothing for a run that pushed none."""
    if not figures and not code:
        return (), {}
    record: Dict[str, Any] = {"version": 1, "run": run, "status": status, "updated": end,
                              "measured": True}  # fmt: skip
    settings: Dict[str, Any] = {"asked": {}, "bounds": {}, "run": run}
    for key, value in figures.items():
        *path, last = key.split(".")
        target = record
        if path[:1] == ["settings"]:
            target, path = settings, path[1:]
        for part in path:
            target = target.setdefault(part, {})
        target[last] = value
    if code:
        record["code"] = settings["code"] = code
    return (record,), settings


def _record(
    labels: Dict[str, str],
    end: float,
    figures: Mapping[str, Mapping[Key, float]],
    group_by: Sequence[str],
    tuned: Tuple[Mapping[str, Mapping[Key, float]], Mapping[Key, str]] = ({}, {}),
) -> RunRecord:
    """The run of one end-timestamp series (ValueError when its figures cannot be)."""
    key = frozenset(labels.items())
    got = {name: values[key] for name, values in figures.items() if key in values}
    duration = got.get("duration_s")
    if duration is None:
        raise ValueError("no duration (a summary pushed by another tool?)")
    _check(dict(got, end_time=end))
    ask = {k: got[f"ask_{k}"] for k in ("cpu", "memory_mib", "gpu") if got.get(f"ask_{k}")}
    status = "failed" if got.get("failed") == 1 else "ok"
    run_id = _run_id(labels, end)
    tuning = {name: values[key] for name, values in tuned[0].items() if key in values}
    records, settings = _tuning_parts(labels.get("run_id") or run_id, status, end, tuning,
                                      tuned[1].get(key))  # fmt: skip
    return RunRecord(
        step=group_key(labels, group_by),
        run_id=run_id,
        started=end - duration,
        duration_s=duration,
        status=status,
        source="prometheus",
        peak_memory_mib=got.get("peak_memory_mib"),
        mean_cpu_cores=got.get("mean_cpu_cores"),
        peak_cpu_cores=got.get("peak_cpu_cores"),
        peak_gpu_count=got.get("peak_gpu_count"),
        peak_vram_mib=got.get("peak_vram_mib"),
        ask=ask,
        limit_memory_mib=got.get("limit_memory_mib"),
        limit_cpu_cores=got.get("limit_cpu_cores"),
        oom_kills=got.get("oom_kills", 0.0),
        throttled_share=got.get("throttled_share", 0.0),
        labels={k: printable(v, 200) for k, v in labels.items()},
        records=records,
        tuning_settings=settings,
    )
