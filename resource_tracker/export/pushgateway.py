"""Prometheus Pushgateway export (``pip install 'resource-tracker[prometheus]'``).

Every point replaces the run's group on the Pushgateway (HTTP PUT, prometheus-client's
``push_to_gateway``, its request made by our bounded transport.Sender): live gauges of the
newest values, cumulative counters, what the run has (its ask, its cgroup's limits, the OOM
kills its cgroup counted: a run killed before its summary leaves them as its evidence) and
the live push period while the job runs. The final push replaces them with the run summary
(duration, peaks, means, totals, recommendation, whether it failed, rows the export
dropped): no live series of a finished run is left on the Pushgateway. The group is ``job``
(the tracker's job name) and ``instance`` (the host name), plus the Metaflow ids (flow,
run_id, step, task_id and the ``@retry`` attempt) inside a Metaflow task, else the tracked
pid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ..registry import column
from .context import Identity
from .metrics import (
    EXPORT_PERIOD,
    INSIGHTS,
    LIVE_SIZING,
    RECOMMENDATION,
    SIZING,
    SUMMARY_FIELDS,
    TUNING,
    TUNING_CODE,
    exported,
    live_metric,
    summary_metric,
)
from .transport import Sender

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from .pipeline import Point
    from .summary import RunSummary


def grouping_key(identity: Identity) -> Dict[str, str]:
    """The Pushgateway grouping labels besides ``job``."""
    key = {"instance": identity.host_name}
    if identity.metaflow:
        key.update(identity.metaflow)
    else:
        key["pid"] = str(identity.pid)
    return key


class _Snapshot:
    """A prometheus-client collector yielding the metric families of one push."""

    def __init__(self, families: Iterable[Metric]):
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


class PushgatewaySink:
    name = "pushgateway"

    def __init__(self, url: str, identity: Identity, tables: Iterable[str], sender: Sender):
        import prometheus_client  # noqa: F401 (fails here, not in the sender, when missing)

        self._sender = sender
        self._url = url
        self._job = identity.job
        self._key = grouping_key(identity)
        self._metrics = exported(tables)

    def send(self, point: Point, timeout: float) -> None:
        self._push(self._point_families(point), timeout)

    def send_final(
        self,
        point: Optional[Point],
        summary: Optional[RunSummary],
        timeout: float,
        report: Optional[Mapping[str, object]] = None,
    ) -> None:
        families: List[Metric] = []
        if summary is not None:  # replaces the live gauges (the run is over)
            families += self._summary_families(summary)
        elif point is not None:  # no summary: the newest values at least
            families += self._point_families(point)
        if report is not None:
            families.append(
                self._gauge(
                    "resource_tracker_export_dropped_rows",
                    "Samples this export dropped while the job ran (endpoint slow or down)",
                    _count(report.get("dropped_rows")),
                )
            )
        self._push(families, timeout)

    def close(self) -> None:
        pass

    # -- families ----------------------------------------------------------------------

    def _push(self, families: List[Metric], timeout: float) -> None:
        from prometheus_client import CollectorRegistry, push_to_gateway

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Snapshot(families))
        push_to_gateway(
            self._url,
            job=self._job,
            registry=registry,
            grouping_key=self._key,
            timeout=timeout,
            handler=self._handler,
        )

    def _handler(
        self,
        url: str,
        method: str,
        timeout: float,
        headers: List[Tuple[str, str]],
        data: bytes,
    ) -> Callable[[], object]:
        """prometheus-client's request hook: the push goes through our bounded Sender (one
        deadline, no body read, no redirect followed, abortable at stop())."""
        return lambda: self._sender.request(method, url, data, dict(headers), timeout)

    @staticmethod
    def _gauge(name: str, documentation: str, value: float) -> Metric:
        from prometheus_client.core import GaugeMetricFamily

        return GaugeMetricFamily(name, documentation, value=float(value))

    def _point_families(self, point: Point) -> List[Metric]:
        from prometheus_client.core import CounterMetricFamily

        families: List[Metric] = []
        for m in self._metrics:
            if m.kind == "counter":
                total = point.totals.get(m.key)
                if total is not None:
                    name = m.prometheus_name[: -len("_total")]
                    doc = f"{m.column.label} since the start ({m.column.unit} scaled to base units)"
                    families.append(CounterMetricFamily(name, doc, value=total * m.scale))
                continue
            value = point.table(m.column.table).get(m.column.name)
            if value is not None:
                families.append(self._gauge(m.prometheus_name, m.column.label, value * m.scale))
        stamp = point.system.get("timestamp") or point.process.get("timestamp")
        if stamp:
            families.append(
                self._gauge(
                    "resource_tracker_last_sample_timestamp_seconds",
                    "When the newest sample exported was taken",
                    stamp,
                )
            )
        return families + self._live_sizing_families(point)

    def _live_sizing_families(self, point: Point) -> List[Metric]:
        """What the run has (ask, limits, OOM kills) and the push period, as live gauges."""
        families = []
        for key in LIVE_SIZING:
            if key in point.sizing:
                scale, doc = SIZING[key][3], f"{SIZING[key][4]} (live)"
                families.append(self._gauge(live_metric(key), doc, point.sizing[key] * scale))
        if point.period > 0:
            families.append(self._gauge(*EXPORT_PERIOD, point.period))
        return families

    def _summary_families(self, summary: RunSummary) -> List[Metric]:
        families: List[Metric] = [
            self._gauge(
                "resource_tracker_run_duration_seconds", "Duration of the run", summary.duration
            ),
            self._gauge(
                "resource_tracker_run_end_timestamp_seconds",
                "When the run ended (seconds since the epoch)",
                summary.end_time,
            ),
        ]
        if summary.failed is not None:
            families.append(
                self._gauge(
                    "resource_tracker_run_failed", "1 when the job failed", int(summary.failed)
                )
            )
        for key, figures in summary.figures.items():
            table, name = key.split("_", 1)
            col = column(table, name)
            for stat, _ in SUMMARY_FIELDS:
                if stat in figures:
                    prom, _, scale = summary_metric(col, stat)
                    doc = f"{col.label}: {stat} over the run"
                    families.append(self._gauge(prom, doc, figures[stat] * scale))
        for key, value in summary.recommendation.items():
            if key in RECOMMENDATION:
                prom, _, _, scale = RECOMMENDATION[key]
                families.append(self._gauge(prom, f"Recommended {key}", value * scale))
        for key, value in summary.sizing.items():
            prom, _, _, scale, doc = SIZING[key]
            families.append(self._gauge(prom, doc, value * scale))
        if summary.insights:
            families.append(self._insights(summary.insights))
        return families + self._tuning_families(summary)

    def _tuning_families(self, summary: RunSummary) -> List[Metric]:
        """A tuned step's tuning record and settings (``dashboard --prometheus`` tunes over
        them as the card does) and its code fingerprint as the ``code`` label."""
        from prometheus_client.core import GaugeMetricFamily

        families = []
        for key, value in summary.tuning.items():
            prom, _, _, scale = TUNING[key]
            families.append(self._gauge(prom, f"Tuning: {key}", value * scale))
        if summary.tuning_code:
            family = GaugeMetricFamily(*TUNING_CODE, labels=["code"])
            family.add_metric([summary.tuning_code], 1.0)
            families.append(family)
        return families

    @staticmethod
    def _insights(counts: Mapping[Tuple[str, str], int]) -> Metric:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(
            INSIGHTS[0],
            "Findings of the run (resource_tracker.insights) by kind and severity",
            labels=["kind", "severity"],
        )
        for (kind, severity), n in sorted(counts.items()):
            family.add_metric([kind, severity], float(n))
        return family


def _count(value: object) -> float:
    """A count from the export's report (0 when it is not a number)."""
    return float(value) if isinstance(value, (int, float)) else 0.0
