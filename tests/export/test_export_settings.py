"""Export settings and names: opt-in only, one way of parsing the targets (argument,
RESOURCE_TRACKER_EXPORT, decorator, CLI), clear errors, names derived from the column
registry; and the pipeline on the psutil backend (the sampler interface, not the C core)."""

from __future__ import annotations

import pytest
from servers import OtlpReceiver, data_points

from resource_tracker import ResourceTracker
from resource_tracker.export import parse_targets, read_settings
from resource_tracker.export.metrics import EXPORTED, NOT_METRICS, SEMCONV, UNITS
from resource_tracker.registry import COLUMNS


def test_export_is_off_by_default():
    tracker = ResourceTracker(interval=0.1)
    tracker.wait_for_samples(2, timeout=10)
    tracker.stop()
    assert tracker._exporter is None
    assert "export" not in tracker.stats()
    assert read_settings().targets == ()


def test_targets_parse_one_way():
    assert parse_targets("pushgateway, OTLP") == ("otlp", "pushgateway")
    assert parse_targets(["otlp", "otlp"]) == ("otlp",)
    assert parse_targets("") == parse_targets("none") == parse_targets(None) == ()
    with pytest.raises(ValueError, match="unknown export target 'kafka'.*otlp, pushgateway"):
        parse_targets("otlp,kafka")


def test_argument_wins_over_the_variable(monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_EXPORT", "otlp")
    assert read_settings().targets == ("otlp",)
    assert read_settings("").targets == ()
    assert read_settings("pushgateway").targets == ("pushgateway",)
    monkeypatch.setenv("RESOURCE_TRACKER_EXPORT", "statsd")
    with pytest.raises(ValueError, match="RESOURCE_TRACKER_EXPORT='statsd' is not valid"):
        ResourceTracker(autostart=False)


def test_pushgateway_without_address_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("RESOURCE_TRACKER_PUSHGATEWAY_URL")
    with pytest.raises(ValueError, match="set RESOURCE_TRACKER_PUSHGATEWAY_URL"):
        ResourceTracker(autostart=False, export="pushgateway")


def test_unchecked_settings_without_address_fail_to_start_with_the_variable_named():
    """Settings that did not go through prepare_export() (no Pushgateway address): the
    target says which variable is missing instead of failing every push on None."""
    pytest.importorskip("prometheus_client")
    from resource_tracker.export import ExportSettings, start_export

    tracker = ResourceTracker(interval=0.1)
    tracker.wait_for_samples(2, timeout=10)
    exporter = start_export(tracker, ExportSettings(("pushgateway",), None))
    assert exporter is not None
    tracker.stop()
    exporter.finish(timeout=5.0)
    sink = exporter.report()["targets"]["pushgateway"]
    assert sink["final"] == "failed" and sink["sent"] == 0
    assert "RESOURCE_TRACKER_PUSHGATEWAY_URL" in sink["last_error"]


def test_decorator_attribute_is_checked_the_same_way():
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        _check_export,
    )

    assert _check_export(None) is None
    assert _check_export("pushgateway,otlp") == "otlp,pushgateway"
    assert _check_export("none") == ""
    with pytest.raises(ValueError, match=r"@track_resources\(export=...\): unknown"):
        _check_export("kafka")


def test_every_registry_column_is_exported_once_under_registry_units():
    wanted = [c for c in COLUMNS if (c.table, c.name) not in NOT_METRICS]
    assert [m.column for m in EXPORTED] == wanted
    prometheus = [m.prometheus_name for m in EXPORTED]
    assert len(set(prometheus)) == len(prometheus)
    otlp = [(m.otlp_name, tuple(sorted(m.otlp_attributes.items()))) for m in EXPORTED]
    assert len(set(otlp)) == len(otlp)
    for m in EXPORTED:
        assert m.column.unit in UNITS, m.column  # a new unit needs its base-unit factor
        assert (m.kind == "counter") == (m.column.fold == "sum")
        assert m.prometheus_name.endswith("_total") == (m.kind == "counter")
    assert set(SEMCONV) <= {(m.column.table, m.column.name) for m in EXPORTED}
    memory = next(m for m in EXPORTED if m.key == "process_memory")
    assert (
        memory.scale == 1024 and memory.prometheus_name == "resource_tracker_process_memory_bytes"
    )


def test_export_with_the_psutil_backend(monkeypatch):
    """The pipeline reads through the sampler interface: the psutil sampler feeds it too."""
    pytest.importorskip("psutil")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    receiver = OtlpReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        tracker = ResourceTracker(interval=0.2, method="psutil", export="otlp")
        tracker.wait_for_samples(6, timeout=30)
        tracker.stop()
    finally:
        receiver.close()
    assert tracker.stats()["export"]["targets"]["otlp"]["final"] == "sent"
    final = {p["name"]: p for p in data_points(receiver.requests) if not p["attributes"]}
    _assert_folded_peak(final["process.memory.usage"]["value"], tracker.process_metrics["memory"])


def _assert_folded_peak(value, kib_rows):
    """The newest point of a peak-folded column: one row's value, the highest of the rows
    it folded (so at least the last row's)."""
    rows = [kib * 1024 for kib in kib_rows]
    assert any(value == pytest.approx(row) for row in rows), (value, rows[-5:])
    assert value >= rows[-1] - 1e-6


def test_rows_fold_into_a_point_by_the_registry_rules():
    """Real rows of a tracked run, folded as the exporter folds the rows between two points:
    peak columns their highest, sum columns their sum, latest columns the last, CPU usage
    the CPU seconds over the time covered."""
    from resource_tracker.export.metrics import fold_rows

    tracker = ResourceTracker(interval=0.05)
    junk = [bytearray(1024 * 1024) for _ in range(20)]
    tracker.wait_for_samples(8, timeout=30)
    tracker.stop()
    del junk
    df = tracker.process_metrics
    rows = {name: list(df[name][2:7]) for name in df.columns}
    point = fold_rows("process", rows, previous_time=df["timestamp"][1])
    assert point["memory"] == max(rows["memory"])
    assert point["read_bytes"] == sum(rows["read_bytes"])
    assert point["pid"] == rows["pid"][-1] and point["timestamp"] == rows["timestamp"][-1]
    cpu = sum(rows["utime"]) + sum(rows["stime"])
    elapsed = rows["timestamp"][-1] - df["timestamp"][1]
    assert point["cpu_usage"] == pytest.approx(cpu / elapsed)
