"""OTLP/HTTP metrics export through the OpenTelemetry SDK.

Install with ``pip install 'resource-tracker[otlp]'``.

The SDK's own OTLP/HTTP exporter sends, so the standard variables hold:
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` (where),
``OTEL_EXPORTER_OTLP_HEADERS`` (e.g. an API key), ``OTEL_EXPORTER_OTLP_TIMEOUT``,
``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` (they win over ours). Collection is on
demand (a MetricReader that exports when our sender thread calls ``collect``): the SDK
starts no thread of its own and registers no exit hook.

Instruments are observable (the values are read from the newest point at collection):
semantic-convention names where metrics.SEMCONV has one, ``resource_tracker.*`` otherwise;
the run summary (``resource_tracker.run.*``, ``resource_tracker.recommended.*``) appears in
the final export.
"""

from __future__ import annotations

from typing import Dict, List

from .context import Identity
from .metrics import INSIGHTS, RECOMMENDATION, SUMMARY_FIELDS, cpu_count, exported, summary_metric

SEND_TIMEOUT_S = 5.0
SERVICE_NAME = "resource-tracker"


def _quiet_sdk_logs() -> None:
    """The SDK logs every failed export; without logging set up Python would print each to
    stderr (its last-resort handler). A NullHandler (what a library adds) keeps the job's
    output clean; an application that configures logging still gets the records, and
    stats()['export'] counts the failures either way."""
    import logging

    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.metrics"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


def _reader_class():
    from opentelemetry.sdk.metrics.export import MetricExportResult, MetricReader

    class OnDemandReader(MetricReader):
        """Exports what ``collect()`` gathers, in the calling thread; raises on failure."""

        def __init__(self, exporter):
            super().__init__(
                preferred_temporality=exporter._preferred_temporality,
                preferred_aggregation=exporter._preferred_aggregation,
            )
            self._exporter = exporter

        def _receive_metrics(self, metrics_data, timeout_millis=10_000, **kwargs):
            if metrics_data is None:
                return
            result = self._exporter.export(metrics_data, timeout_millis=timeout_millis)
            if result != MetricExportResult.SUCCESS:
                raise ConnectionError("the OTLP endpoint did not accept the metrics")

        def shutdown(self, timeout_millis=30_000, **kwargs):
            self._exporter.shutdown(timeout_millis=timeout_millis)

    return OnDemandReader


def make_resource(identity: Identity):
    """Our resource attributes, under what OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME say."""
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    ours = dict(identity.resource_attributes(), **{"service.name": SERVICE_NAME})
    return Resource.create(ours).merge(OTELResourceDetector().detect())


def _timeout_from_env() -> bool:
    """True when the user set the OTLP timeout (the SDK reads it); else ours applies."""
    from .. import settings

    names = ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT")
    return any(settings.foreign(name) for name in names)


class OtlpSink:
    name = "otlp"

    def __init__(self, identity: Identity, tables):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider

        from .. import __version__

        _quiet_sdk_logs()
        exporter = OTLPMetricExporter(timeout=None if _timeout_from_env() else SEND_TIMEOUT_S)
        self._reader = _reader_class()(exporter)
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=make_resource(identity),
            shutdown_on_exit=False,
        )
        self._meter = self._provider.get_meter("resource_tracker", __version__)
        self._point = None
        self._summary = None
        self._cpus = {t: cpu_count(t) for t in ("process", "system")}
        self._instruments(exported(tables))

    # -- instruments -------------------------------------------------------------------

    def _instruments(self, metrics) -> None:
        by_name: Dict[str, List] = {}
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

    def _point_callback(self, members):
        from opentelemetry.metrics import Observation

        def observe(options):
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

        def gauge(name, unit, description, value_of):
            def observe(options):
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
                    lambda s, k=key, st=stat, sc=scale: _figure(s, k, st, sc),
                )

        def insights(options):
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
        for key, (_, otlp_name, unit, scale) in RECOMMENDATION.items():
            gauge(
                otlp_name,
                unit,
                f"Recommended {key}",
                lambda s, k=key, sc=scale: (
                    s.recommendation[k] * sc if k in s.recommendation else None
                ),
            )

    # -- sending -----------------------------------------------------------------------

    def send(self, point, timeout: float) -> None:
        self._point = point
        self._reader.collect(timeout_millis=timeout * 1000)

    def send_final(self, point, summary, timeout: float, report=None) -> None:
        if point is not None:
            self._point = point
        self._summary = summary
        self._reader.collect(timeout_millis=timeout * 1000)

    def close(self) -> None:
        self._provider.shutdown(timeout_millis=500)


def _stat_columns():
    from ..registry import stat_columns

    return [(c.key, c) for c in stat_columns()]


def exported_unit(col) -> str:
    from .metrics import UNITS

    return UNITS.get(col.unit, (1.0, "1", ""))[1]


def _figure(summary, key, stat, scale):
    value = (summary.figures.get(key) or {}).get(stat)
    return None if value is None else value * scale
