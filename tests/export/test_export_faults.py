"""Faults of the export endpoints: down (nothing listens), answering 500, hanging (accepts
and never answers). The tracked job never sees them: nothing raises, stop() returns within
its bound, and the summary (stats()['export'] and the data-quality notes) reports the
failed sends and the dropped samples. The servers are loopback stand-ins (servers.py); the
cost to the job's wall time and CPU is measured by bench/bench_export.py."""

from __future__ import annotations

import time

import pytest
from servers import OtlpReceiver

from resource_tracker import ResourceTracker
from resource_tracker.export import pipeline
from resource_tracker.tracker import data_quality_notes

pytest.importorskip("prometheus_client")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

DEAD = "http://127.0.0.1:9"


@pytest.fixture(params=["down", "fail", "hang"])
def endpoint(request):
    """The faulty endpoint's URL."""
    if request.param == "down":
        yield request.param, DEAD
        return
    server = OtlpReceiver(mode=request.param)
    yield request.param, server.url
    server.close()


def _until_points_pile_up(tracker, target, fault, timeout=60.0):
    """Returns once the live export report shows the fault at work (the queue overflowed:
    points dropped; a failed send's error, except for the hang, whose first send never ends)
    and the sampler stored 10 rows, however slowly a busy machine gets there."""
    deadline = time.monotonic() + timeout
    while True:
        report = tracker.export_report()["targets"][target]
        failed = fault == "hang" or report["last_error"]
        if report["dropped_points"] > 0 and failed and tracker.n_samples >= 10:
            return
        assert time.monotonic() < deadline, report
        time.sleep(0.02)


@pytest.mark.parametrize("target", ["otlp", "pushgateway"])
def test_faulty_endpoint_costs_the_job_nothing(target, endpoint, monkeypatch):
    fault, url = endpoint
    monkeypatch.setattr(pipeline, "QUEUE_POINTS", 2)  # overflow within seconds, not minutes
    monkeypatch.setattr(pipeline, "MIN_PERIOD_S", 0.2)
    # the final push's bound, well below a send's timeout: a stop that waited for the hanging
    # send shows, however slowly a busy machine runs the rest of stop()
    monkeypatch.setattr(pipeline, "FINISH_TIMEOUT_S", 0.5)
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    began = time.monotonic()
    tracker = ResourceTracker(interval=0.1, export=target)
    started = time.monotonic() - began
    _until_points_pile_up(tracker, target, fault)
    began = time.monotonic()
    tracker.stop()
    stopped = time.monotonic() - began
    # a start or a stop that waited for the endpoint would take a send's timeout (hang) or
    # more; the final push gets FINISH_TIMEOUT_S, the rest is the sampler's stop and summary
    assert started < pipeline.SEND_TIMEOUT_S
    assert stopped < pipeline.SEND_TIMEOUT_S
    report = tracker.stats()["export"]["targets"][target]
    assert report["final"] != "sent", report
    # a send blocks (hang: its 5 s timeout; OTLP retries within it) or backs off after a
    # failure: points pile up in the 2-point queue and the oldest are dropped
    assert report["dropped_points"] > 0 and report["dropped_rows"] > 0, report
    if fault == "hang":
        assert report["final"] == "timed out", report
    else:
        assert report["last_error"] or report["final"] == "timed out", report
    notes = data_quality_notes(tracker.stats())
    assert any(note.startswith(f"export to {target}:") for note in notes), notes
    assert len(tracker.process_metrics) >= 10  # sampling went on unharmed
