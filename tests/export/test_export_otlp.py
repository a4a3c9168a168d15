"""OTLP/HTTP export through the OpenTelemetry SDK, received by a loopback receiver that
decodes each request with the official opentelemetry-proto message class
(ExportMetricsServiceRequest) — a stand-in for an OpenTelemetry Collector that speaks the
real protocol (servers.OtlpReceiver)."""

from __future__ import annotations

import os
import sys

import pytest
from servers import OtlpReceiver, data_points
from typed_dict_check import assert_typed
from workloads import Workload

from resource_tracker import ResourceTracker
from resource_tracker.export.metrics import EXPORTED, SEMCONV
from resource_tracker.results_types import ExportReport

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

SECRET = "token=hunter2-not-for-the-collector"
WORK = f"""
# {SECRET}
block = bytearray(64 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
with open(os.devnull, "wb") as sink:
    sink.write(b"x" * 1024)
spin(0.3)
report(done=True)
sys.stdin.readline()
"""


@pytest.fixture
def receiver():
    rec = OtlpReceiver()
    yield rec
    rec.close()


def _tracked_run(monkeypatch, receiver, **env):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    work = Workload(WORK)
    try:
        tracker = ResourceTracker(pid=work.pid, interval=0.2, export="otlp")
        work.go()
        assert work.read_report()["done"]
        tracker.wait_for_samples(tracker.n_samples + 8, timeout=30)
        work.send("exit\n")
        work.proc.wait(30)
    finally:
        if work.proc.poll() is None:
            work.proc.kill()
    tracker.stop()
    return tracker, work.pid


def _final(points):
    """The newest data point per (name, attributes)."""
    newest = {}
    for p in points:
        newest[(p["name"], tuple(sorted(p["attributes"].items())))] = p
    return newest


def test_otlp_names_units_attributes_and_values(monkeypatch, receiver):
    """Semantic-convention names and units where one exists, ours under resource_tracker.*
    otherwise; the values of the final export equal the tracker's own data."""
    tracker, pid = _tracked_run(monkeypatch, receiver)
    report = tracker.stats()["export"]["targets"]["otlp"]
    assert report["final"] == "sent" and report["failures"] == 0, report
    assert report["sent"] >= 2  # live exports before the final one
    final = _final(data_points(receiver.requests))
    stats = tracker.stats()

    memory = final[("process.memory.usage", ())]
    assert memory["unit"] == "By" and memory["kind"] == "sum" and memory["monotonic"] is False
    # the newest point folds the rows since the one before by the registry's rule (peak)
    rows = [kib * 1024 for kib in tracker.process_metrics["memory"]]
    assert any(memory["value"] == pytest.approx(row, rel=1e-9) for row in rows)
    assert memory["value"] >= rows[-1] - 1e-6

    cpu_user = final[("process.cpu.time", (("cpu.mode", "user"),))]
    assert cpu_user["unit"] == "s" and cpu_user["monotonic"] is True
    assert cpu_user["value"] == pytest.approx(sum(tracker.process_metrics["utime"]), abs=1e-6)
    cpu_system = final[("process.cpu.time", (("cpu.mode", "system"),))]
    assert cpu_user["value"] + cpu_system["value"] > 0.1  # the child spun 0.3 s of CPU

    read = final[("process.disk.io", (("disk.io.direction", "read"),))]
    assert read["value"] == pytest.approx(stats["process_read_bytes"]["sum"], abs=1)
    rx = final[("system.network.io", (("network.io.direction", "receive"),))]
    assert rx["unit"] == "By" and rx["monotonic"] is True
    for state in ("used", "free", "cached", "buffers"):
        assert final[("system.memory.usage", (("system.memory.state", state),))]["unit"] == "By"

    util = final[("process.cpu.utilization", ())]
    assert util["unit"] == "1" and util["kind"] == "gauge"
    assert 0 <= util["value"] <= 1.0

    peak = final[("resource_tracker.run.process.memory.peak", ())]
    assert peak["unit"] == "By"
    assert peak["value"] == pytest.approx(stats["process_memory"]["max"] * 1024, rel=1e-9)
    assert peak["value"] > 64 * 1024 * 1024
    children = final[("resource_tracker.process.children", ())]
    assert children["unit"] == "{process}"
    recommended = final[("resource_tracker.recommended.memory", ())]
    assert recommended["value"] == tracker.recommend_resources()["memory"] * 1024 * 1024

    # every exported column arrived, under its one name
    names = {name for name, _ in final}
    assert {m.otlp_name for m in EXPORTED} <= names
    assert all(conv.name in names for conv in SEMCONV.values())


def test_otlp_resource_and_standard_variables(monkeypatch, receiver):
    """host.name, process.pid, process.executable.name on the resource (not the command
    line: see the next test); OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win over ours;
    OTEL_EXPORTER_OTLP_HEADERS goes on every request; OTEL_EXPORTER_OTLP_METRICS_ENDPOINT
    takes precedence over OTEL_EXPORTER_OTLP_ENDPOINT."""
    import socket

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", receiver.url + "/v1/metrics")
    tracker, pid = _tracked_run(
        monkeypatch,
        receiver,
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",  # overridden by the metrics one
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=ci,team=ml",
        OTEL_SERVICE_NAME="training-job",
        OTEL_EXPORTER_OTLP_HEADERS="x-api-key=s3cret,x-team=ml%20ops",
        RESOURCE_TRACKER_JOB="nightly-etl",
    )
    assert receiver.requests, tracker.stats()["export"]
    resource = data_points(receiver.requests)[0]["resource"]
    assert resource["resource_tracker.job"] == "nightly-etl"  # the job's name
    assert resource["host.name"] == socket.gethostname()
    assert resource["process.pid"] == pid
    assert resource["process.executable.name"] == os.path.basename(os.path.realpath(sys.executable))
    assert resource["service.name"] == "training-job"
    assert resource["team"] == "ml" and resource["deployment.environment.name"] == "ci"
    assert all(h.get("x-api-key") == "s3cret" for h in receiver.headers)
    assert all(h.get("x-team") == "ml ops" for h in receiver.headers)  # percent-decoded


@pytest.mark.parametrize("opt_in", [None, "1"])
def test_otlp_sends_the_command_line_only_when_asked(monkeypatch, receiver, opt_in):
    """argv may hold secrets: the executable's name goes, the whole command line only with
    RESOURCE_TRACKER_EXPORT_COMMAND_LINE=1."""
    if opt_in:
        monkeypatch.setenv("RESOURCE_TRACKER_EXPORT_COMMAND_LINE", opt_in)
    tracker, pid = _tracked_run(monkeypatch, receiver)
    assert receiver.requests, tracker.stats()["export"]
    secret = SECRET.encode()
    sent = [r.SerializeToString() for r in receiver.requests]
    resource = data_points(receiver.requests)[0]["resource"]
    assert resource["process.executable.name"] == os.path.basename(os.path.realpath(sys.executable))
    if opt_in:
        assert SECRET in resource["process.command_line"]
        assert all(secret in body for body in sent)
    else:
        assert "process.command_line" not in resource
        assert not any(secret in body for body in sent)


def test_semconv_names_are_the_official_ones():
    """Every name of the mapping table is a metric of the OpenTelemetry semantic conventions
    (the opentelemetry-semantic-conventions package the SDK brings)."""
    from opentelemetry.semconv._incubating.metrics import (
        hw_metrics,
        process_metrics,
        system_metrics,
    )

    official = {
        value
        for module in (process_metrics, system_metrics, hw_metrics)
        for key, value in vars(module).items()
        if key.isupper() and isinstance(value, str)
    }
    assert {conv.name for conv in SEMCONV.values()} <= official
    assert os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") is None


def test_otlp_from_resource_tracker_run_knows_the_command_failed(monkeypatch, receiver):
    """ResourceTracker.run() of a command exiting 3, with export="otlp": the final export's
    resource_tracker.run.failed is 1 and its duration the tracker's."""
    import sys

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    code = "import time, sys; time.sleep(1.0); sys.exit(3)"
    run = ResourceTracker.run([sys.executable, "-c", code], interval=0.2, export="otlp")
    assert run.status == 3
    assert run.tracker.stats()["export"]["targets"]["otlp"]["final"] == "sent"
    final = _final(data_points(receiver.requests))
    assert final[("resource_tracker.run.failed", ())]["value"] == 1
    duration = final[("resource_tracker.run.duration", ())]["value"]
    assert duration == pytest.approx(run.tracker.stats()["timestamp"]["duration"], rel=1e-9)


def test_otlp_final_export_counts_the_runs_findings(monkeypatch, receiver):
    """A run that asked for 8 CPUs and 16000 MiB (as a Metaflow step's @resources would) and
    used a fraction: the final export carries resource_tracker.run.insights by kind and
    severity, the counts of the run summary's findings (decoded with the official proto
    classes by the loopback receiver)."""
    import time

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    # the export's summary is not priced (no catalog lookup at the final push): info; the
    # run summary's is priced at a few cents a month: info too with no money floor
    monkeypatch.setenv("RESOURCE_TRACKER_OVER_MIN_USD_MONTH", "0")
    tracker = ResourceTracker(interval=0.1, export="otlp")
    tracker.extra["resources_asked"] = {"cpu": 8, "memory": 16000}
    time.sleep(0.5)
    tracker.stop()
    assert tracker.stats()["export"]["targets"]["otlp"]["final"] == "sent"
    assert_typed(ExportReport, tracker.export_report(), "export_report()")  # the typed contract
    assert tracker.stats()["export"] == tracker.export_report()
    final = _final(data_points(receiver.requests))
    got = {
        (dict(attrs)["kind"], dict(attrs)["severity"]): point["value"]
        for (name, attrs), point in final.items()
        if name == "resource_tracker.run.insights"
    }
    expected = {}
    for insight in tracker.summary().insights:
        key = (insight.kind, insight.severity)
        expected[key] = expected.get(key, 0) + 1
    assert ("over_provisioned", "info") in got and got == expected
