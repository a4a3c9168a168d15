"""OTLP/HTTP metrics export: the OpenTelemetry SDK gathers and encodes, our bounded
transport.Sender sends.

Install with ``pip install 'resource-tracker[otlp]'``.

The standard variables hold (read and checked at construction by config.read_otlp_settings):
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` (where),
``OTEL_EXPORTER_OTLP_HEADERS`` (e.g. an API key), ``OTEL_EXPORTER_OTLP_TIMEOUT``,
``..._COMPRESSION``, ``..._CERTIFICATE``, ``..._CLIENT_CERTIFICATE`` / ``..._CLIENT_KEY``;
``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` (they win over ours) and the
temporality preference are the SDK's. The SDK's own HTTP exporter is not used to send: it
reads whole response bodies and counts a redirect as sent (docs/reliability.md). Collection
is on demand (a MetricReader that exports when our sender thread calls ``collect``): the SDK
starts no thread of its own and registers no exit hook.

Instruments are observable (the values are read from the newest point at collection):
semantic-convention names where metrics.SEMCONV has one, ``resource_tracker.*`` otherwise;
the run summary (``resource_tracker.run.*``, ``resource_tracker.recommended.*``) appears in
the final export.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .._version import __version__
from ..registry import stat_columns
from .config import OtlpSettings
from .context import Identity
from .metrics import (
    INSIGHTS,
    RECOMMENDATION,
    SIZING,
    SUMMARY_FIELDS,
    TUNING,
    UNITS,
    cpu_count,
    exported,
    summary_metric,
)
from .transport import Sender

if TYPE_CHECKING:
    import ssl

    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.sdk.metrics.export import MetricReader, MetricsData
    from opentelemetry.sdk.resources import Resource

    from ..registry import Column
    from .metrics import ExportedMetric
    from .pipeline import Point
    from .summary import RunSummary

    #: sends what one collection gathered (seconds left); raises on failure
    Post = Callable[[MetricsData, float], None]
    #: an observable instrument's callback
    Callback = Callable[[CallbackOptions], Iterable[Observation]]
    #: declares a gauge of the run summary: (name, unit, description, its value or None)
    Gauge = Callable[[str, str, str, Callable[[RunSummary], Optional[float]]], None]

SERVICE_NAME = "resource-tracker"


def _quiet_sdk_logs() -> None:
    """The SDK logs failures (e.g. of a callback); without logging set up Python would print
    each to stderr (its last-resort handler). A NullHandler (what a library adds) keeps the
    job's output clean; an application that configures logging still gets the records, and
    stats()['export'] counts the failures either way."""
    import logging

    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.metrics"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


def _reader_class() -> Callable[[Post, OTLPMetricExporter], MetricReader]:
    """The class of the on-demand reader (the SDK imported on first use)."""
    from opentelemetry.sdk.metrics.export import MetricReader

    class OnDemandReader(MetricReader):
        """Hands what ``collect()`` gathers to ``post`` (in the calling thread), which
        raises on failure; temporality and aggregation as the SDK's OTLP exporter prefers
        (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE)."""

        def __init__(self, post: Post, preferences: OTLPMetricExporter):
            super().__init__(
                preferred_temporality=preferences._preferred_temporality,
                preferred_aggregation=preferences._preferred_aggregation,
            )
            self._post = post

        def _receive_metrics(
            self,
            metrics_data: Optional[MetricsData],
            timeout_millis: float = 10_000,
            **kwargs: object,
        ) -> None:
            if metrics_data is not None:
                self._post(metrics_data, timeout_millis / 1000)

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
            pass

    return OnDemandReader


def _preferences(endpoint: str) -> OTLPMetricExporter:
    """The SDK's OTLP exporter, built only for its temporality and aggregation preferences
    (it never sends; its session is closed at once)."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    exporter = OTLPMetricExporter(endpoint=endpoint)
    exporter.shutdown()
    return exporter


def _tls_context(settings: OtlpSettings) -> Optional[ssl.SSLContext]:
    """The TLS context of the OTLP certificate variables (None: the system's default)."""
    import ssl

    if not (settings.certificate or settings.client_certificate):
        return None
    context = ssl.create_default_context(cafile=settings.certificate)
    if settings.client_certificate:
        context.load_cert_chain(settings.client_certificate, settings.client_key)
    return context


def make_resource(identity: Identity) -> Resource:
    """Our resource attributes, under what OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME say."""
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    ours = dict(identity.resource_attributes(), **{"service.name": SERVICE_NAME})
    return Resource.create(ours).merge(OTELResourceDetector().detect())


class OtlpSink:
    name = "otlp"

    def __init__(
        self, identity: Identity, tables: Iterable[str], settings: OtlpSettings, sender: Sender
    ):
        from opentelemetry.sdk.metrics import MeterProvider

        _quiet_sdk_logs()
        self._settings = settings
        self._sender = sender
        sender.context = _tls_context(settings)
        self._headers = {
            "Content-Type": "application/x-protobuf",
            "User-Agent": f"resource-tracker/{__version__}",
            **settings.headers,
        }
        if settings.compression != "none":
            self._headers["Content-Encoding"] = settings.compression
        self._reader = _reader_class()(self._post, _preferences(settings.endpoint))
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=make_resource(identity),
            shutdown_on_exit=False,
        )
        self._meter = self._provider.get_meter("resource_tracker", __version__)
        self._point: Optional[Point] = None
        self._summary: Optional[RunSummary] = None
        self._cpus = {t: cpu_count(t) for t in ("process", "system")}
        self._instruments(exported(tables))

    # -- instruments -------------------------------------------------------------------

    def _instruments(self, metrics: Iterable[ExportedMetric]) -> None:
        by_name: Dict[str, List[ExportedMetric]] = {}
        for m in metrics:
            by_name.setdefault(m.otlp_name, []).append(m)
        for name, members in by_name.items():
            first = members[0]
            create = {
                "counter": self._meter.create_observable_counter,
                "updowncounter": self._meter.create_observable_up_down_counter,
                "gauge": self._meter.create_observable_gauge,
            }[first.otlp_instrument]
            create(
                name,
                callbacks=[self._point_callback(members)],
                unit=first.otlp_unit,
                description=first.column.label,
            )
        self._summary_instruments()

    def _point_callback(self, members: Sequence[ExportedMetric]) -> Callback:
        from opentelemetry.metrics import Observation

        def observe(options: CallbackOptions) -> List[Observation]:
            point = self._point
            if point is None:
                return []
            out = []
            for m in members:
                if m.kind == "counter":
                    value = point.totals.get(m.key)
                else:
                    value = point.table(m.column.table).get(m.column.name)
                if value is None:
                    continue
                value *= m.scale
                if m.per_cpu:
                    value /= self._cpus[m.column.table]
                out.append(Observation(value, dict(m.otlp_attributes)))
            return out

        return observe

    def _summary_instruments(self) -> None:
        from opentelemetry.metrics import Observation

        def gauge(
            name: str,
            unit: str,
            description: str,
            value_of: Callable[[RunSummary], Optional[float]],
        ) -> None:
            def observe(options: CallbackOptions) -> List[Observation]:
                if self._summary is None:
                    return []
                value = value_of(self._summary)
                return [] if value is None else [Observation(value)]

            self._meter.create_observable_gauge(
                name, callbacks=[observe], unit=unit, description=description
            )

        gauge("resource_tracker.run.duration", "s", "Duration of the run", lambda s: s.duration)
        gauge(
            "resource_tracker.run.failed",
            "1",
            "1 when the job failed",
            lambda s: None if s.failed is None else int(s.failed),
        )
        for key, col in _stat_columns():
            for stat, _ in SUMMARY_FIELDS:
                if stat not in col.fields:
                    continue
                _, otlp_name, scale = summary_metric(col, stat)
                unit = exported_unit(col)
                gauge(
                    otlp_name,
                    unit,
                    f"{col.label}: {stat} over the run",
                    functools.partial(_figure, key=key, stat=stat, scale=scale),
                )

        def insights(options: CallbackOptions) -> List[Observation]:
            if self._summary is None:
                return []
            return [
                Observation(n, {"kind": kind, "severity": severity})
                for (kind, severity), n in sorted(self._summary.insights.items())
            ]

        self._meter.create_observable_gauge(
            INSIGHTS[1],
            callbacks=[insights],
            unit="{finding}",
            description="Findings of the run (resource_tracker.insights) by kind and severity",
        )
        _keyed_gauges(gauge)

    # -- sending -----------------------------------------------------------------------

    def _post(self, metrics_data: MetricsData, timeout: float) -> None:
        """Encodes (the SDK's OTLP protobuf encoder) and sends; raises on failure."""
        import zlib

        from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics

        body = encode_metrics(metrics_data).SerializeToString()
        if self._settings.compression == "gzip":
            import gzip

            body = gzip.compress(body)
        elif self._settings.compression == "deflate":
            body = zlib.compress(body)
        if self._settings.timeout is not None:
            timeout = min(timeout, self._settings.timeout)
        self._sender.request("POST", self._settings.endpoint, body, self._headers, timeout)

    def send(self, point: Point, timeout: float) -> None:
        self._point = point
        self._reader.collect(timeout_millis=timeout * 1000)

    def send_final(
        self,
        point: Optional[Point],
        summary: Optional[RunSummary],
        timeout: float,
        report: Optional[Mapping[str, object]] = None,
    ) -> None:
        if point is not None:
            self._point = point
        self._summary = summary
        self._reader.collect(timeout_millis=timeout * 1000)

    def close(self) -> None:
        self._provider.shutdown(timeout_millis=500)


def _stat_columns() -> List[Tuple[str, Column]]:
    return [(c.key, c) for c in stat_columns()]


def exported_unit(col: Column) -> str:
    return UNITS.get(col.unit, (1.0, "1", ""))[1]


def _figure(summary: RunSummary, key: str, stat: str, scale: float) -> Optional[float]:
    value = (summary.figures.get(key) or {}).get(stat)
    return None if value is None else value * scale


def _recommended(summary: RunSummary, key: str, scale: float) -> Optional[float]:
    value = summary.recommendation.get(key)
    return None if value is None else value * scale


def _sized(summary: RunSummary, key: str, scale: float) -> Optional[float]:
    value = summary.sizing.get(key)
    return None if value is None else value * scale


def _tuned(summary: RunSummary, key: str, scale: float) -> Optional[float]:
    value = summary.tuning.get(key)
    return None if value is None else value * scale


def _keyed_gauges(gauge: Gauge) -> None:
    """The gauges of the summary's keyed figures: the recommendation, the ask and limits."""
    for key, (_, otlp_name, unit, scale) in RECOMMENDATION.items():
        gauge(
            otlp_name,
            unit,
            f"Recommended {key}",
            functools.partial(_recommended, key=key, scale=scale),
        )
    for key, (_, otlp_name, unit, scale, doc) in SIZING.items():
        gauge(
            otlp_name,
            unit,
            doc,
            functools.partial(_sized, key=key, scale=scale),
        )
    for key, (_, otlp_name, unit, scale) in TUNING.items():
        gauge(otlp_name, unit, f"Tuning: {key}", functools.partial(_tuned, key=key, scale=scale))
