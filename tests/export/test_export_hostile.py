"""Hostile export endpoints (issue 25, items 1 and 8): an endless or huge answer body, an
answer dripping a byte a second, redirect loops and redirects elsewhere, bad addresses, a
secret in argv, a forked child. The endpoints are real HTTP servers on loopback, in a process
of their own (servers.HostileServer); the timeouts are injected (pipeline.SEND_TIMEOUT_S,
FINISH_TIMEOUT_S), never waited out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time

import pytest
from servers import HostileServer, OtlpReceiver

from resource_tracker import ResourceTracker
from resource_tracker.export import pipeline

pytest.importorskip("prometheus_client")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

#: what a hostile endpoint may add to the tracked process's memory at most
RSS_BOUND_KIB = 16 * 1024


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _export_threads():
    return [t for t in threading.enumerate() if t.name.startswith("resource-tracker-export")]


def _sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count


@pytest.fixture
def fast(monkeypatch):
    """Short send and finish timeouts and period: seconds of test, not minutes."""
    monkeypatch.setattr(pipeline, "MIN_PERIOD_S", 0.1)
    monkeypatch.setattr(pipeline, "SEND_TIMEOUT_S", 1.0)
    monkeypatch.setattr(pipeline, "FINISH_TIMEOUT_S", 0.5)
    monkeypatch.setattr(pipeline, "MAX_BACKOFF_S", 0.1)


def _point_at(monkeypatch, target: str, url: str) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", url)


def _preload_sdk():
    """The SDK's modules imported before the baseline (their memory is not the endpoint's),
    and a run summary made once (as the final push makes)."""
    import opentelemetry.exporter.otlp.proto.common.metrics_encoder  # noqa: F401
    import opentelemetry.exporter.otlp.proto.http.metric_exporter  # noqa: F401
    import opentelemetry.sdk.metrics  # noqa: F401
    import prometheus_client  # noqa: F401

    from resource_tracker.export import otlp, pushgateway  # noqa: F401
    from resource_tracker.export.summary import run_summary

    # the final push's run summary once (its modules, the catalog): its memory is not the
    # endpoint's either (it took the process to the bound's edge: +15 MiB of 16)
    warm = ResourceTracker(interval=0.05)
    warm.wait_for_samples(2)
    warm.stop()
    run_summary(warm, lookup_seconds=1.0)


@pytest.mark.parametrize("mode", ["endless", "huge"])
def test_a_huge_answer_costs_the_job_no_memory(mode, monkeypatch, fast):
    """An endpoint answering 200 with an endless chunked body or a 2 GiB one: the tracked
    process (this one) grows by at most 16 MiB over several sends, and the sends count."""
    server = HostileServer(mode)
    try:
        _point_at(monkeypatch, "otlp", server.url)
        _preload_sdk()
        baseline = peak = _rss_kib()
        tracker = ResourceTracker(interval=0.05, export="otlp")
        deadline = time.monotonic() + 30
        while server.requests < 4 and time.monotonic() < deadline:
            peak = max(peak, _rss_kib())
            if peak - baseline > RSS_BOUND_KIB:
                break  # the old code: the body read whole (GiBs); no need to wait further
            time.sleep(0.01)
        tracker.stop()
        peak = max(peak, _rss_kib())
    finally:
        server.close()
    assert peak - baseline <= RSS_BOUND_KIB, f"+{(peak - baseline) / 1024:.0f} MiB"
    report = tracker.stats()["export"]["targets"]["otlp"]
    assert server.requests >= 4 and report["sent"] >= 3, report


@pytest.mark.parametrize("target", ["otlp", "pushgateway"])
def test_a_dripping_endpoint_leaves_no_thread_or_socket(target, monkeypatch, fast):
    """8 trackers whose endpoint drips a byte a second: their sends time out (counted as
    failures), and after stop() their sender threads and sockets are gone."""
    server = HostileServer("drip", drip=0.2)
    try:
        _point_at(monkeypatch, target, server.url)
        _preload_sdk()
        threads, sockets = len(_export_threads()), _sockets()
        trackers = [
            ResourceTracker(interval=0.1, export=target, discover_cloud=False) for _ in range(8)
        ]
        server.wait_requests(8)  # every tracker's sender is in a dripping send
        for tracker in trackers:
            tracker.stop()
        deadline = time.monotonic() + 10  # bounded: the aborted sends end at once
        while (len(_export_threads()), _sockets()) != (threads, sockets):
            assert time.monotonic() < deadline, (_export_threads(), _sockets(), sockets)
            time.sleep(0.02)
    finally:
        server.close()
    for tracker in trackers:
        report = tracker.stats()["export"]["targets"][target]
        assert report["sent"] == 0 and report["final"] in ("failed", "timed out"), report


def _redirected(mode: str, requests: int, monkeypatch) -> tuple:
    """(OTLP export report, server, receiver) of a tracker exporting to a HostileServer in
    `mode` (redirecting to a working receiver) until the server saw `requests` requests; the
    tracker is stopped whatever happens (it must not outlive the test)."""
    receiver = OtlpReceiver()
    server = HostileServer(mode, location=receiver.url + "/v1/metrics")
    tracker = None
    try:
        _point_at(monkeypatch, "otlp", server.url)
        tracker = ResourceTracker(interval=0.1, export="otlp")
        server.wait_requests(requests)
    finally:
        if tracker is not None:
            tracker.stop()
        server.close()
        receiver.close()
    return tracker.stats()["export"]["targets"]["otlp"], server, receiver


def test_a_send_that_stop_cut_short_keeps_the_endpoints_error(monkeypatch):
    """`last_error` is the endpoint's: an endpoint that redirected twice, then answered a byte
    a second: the send under way when stop() ends the export (and the final push it refuses)
    count as failures but leave the redirect as the error; `final` says it timed out."""
    monkeypatch.setattr(pipeline, "MIN_PERIOD_S", 0.1)
    monkeypatch.setattr(pipeline, "MAX_BACKOFF_S", 0.1)
    monkeypatch.setattr(pipeline, "SEND_TIMEOUT_S", 600.0)  # the drip is still under way
    monkeypatch.setattr(pipeline, "FINISH_TIMEOUT_S", 0.5)
    report, _, _ = _redirected("redirect-then-drip", 3, monkeypatch)  # and a send that drips
    assert report["sent"] == 0 and report["failures"] >= 3, report
    assert report["final"] == "timed out", report
    assert "redirect" in report["last_error"], report


@pytest.mark.parametrize("mode", ["redirect-loop", "redirect-away"])
def test_otlp_redirects_are_failures_not_sends(mode, monkeypatch, fast):
    """A 307 loop, or a 302 to a working receiver: not followed, counted as failed (the
    receiver gets nothing), the error naming where it pointed."""
    monkeypatch.setattr(pipeline, "SEND_TIMEOUT_S", 600.0)  # a loaded machine answers late: the
    # error must be the redirect's, not a send timeout's
    report, server, receiver = _redirected(mode, 2, monkeypatch)
    assert report["sent"] == 0 and report["failures"] >= 2, report
    assert report["final"] in ("failed", "timed out"), report
    assert "redirect" in report["last_error"], report
    expected = server.url if mode == "redirect-loop" else receiver.url
    assert expected in report["last_error"], report
    assert receiver.requests == [] and receiver.hits == 0


BAD_URLS = [
    ("javascript:alert(1)", "scheme"),
    ("http://127.0.0.1:99999", "port"),
    ("http://", "no host"),
    ("http:///v1/metrics", "no host"),
    ("ftp://collector:4318", "scheme"),
]


@pytest.mark.parametrize("url,what", BAD_URLS)
@pytest.mark.parametrize(
    "target,variable",
    [
        ("otlp", "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ("otlp", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
        ("pushgateway", "RESOURCE_TRACKER_PUSHGATEWAY_URL"),
    ],
)
def test_bad_addresses_fail_at_construction(target, variable, url, what, monkeypatch):
    """An address that cannot work is a ValueError at construction naming the variable,
    what is wrong and an example, and no tracker runs."""
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", "http://127.0.0.1:9")
    monkeypatch.setenv(variable, url)
    before = len(_export_threads())
    with pytest.raises(ValueError) as error:
        ResourceTracker(interval=0.1, export=target)
    message = str(error.value)
    assert variable in message and url.rstrip("/") in message, message
    assert what in message and "e.g. http" in message, message
    assert len(_export_threads()) == before


def test_good_addresses_are_accepted(monkeypatch):
    """host:port for the Pushgateway (as prometheus-client takes it), https, a path."""
    from resource_tracker.export import prepare_export

    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", "127.0.0.1:9")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://127.0.0.1:9/otlp/")
    settings = prepare_export("otlp,pushgateway")
    assert settings.otlp.endpoint == "https://127.0.0.1:9/otlp/v1/metrics"


def test_a_forked_childs_stop_returns_at_once(monkeypatch):
    """A child forked while export runs has no sender threads: its stop() does not wait for
    them (the old code waited the whole final timeout) and says the push is its parent's."""
    receiver = OtlpReceiver(mode="hang")
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        tracker = ResourceTracker(interval=0.1, export="otlp")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report how stop() went, then leave at once
            try:
                began = time.monotonic()
                tracker.stop()
                took = time.monotonic() - began
                final = tracker.stats()["export"]["targets"]["otlp"]["final"]
                os.write(write, json.dumps({"took": took, "final": final}).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            child = json.loads(pipe.read())
        os.waitpid(pid, 0)
        tracker.stop()
    finally:
        receiver.close()
    assert child["final"] == "not sent (forked child)", child
    assert child["took"] < pipeline.FINISH_TIMEOUT_S, child


def test_a_read_slowed_by_the_machine_does_not_space_the_points_out(monkeypatch, fast):
    """The exporter keeps its reading of the rows to a small share of its own CPU time: a read
    that takes long in wall time but little CPU (a loaded machine, a lock held elsewhere) does
    not push the next point far away (it did: 0.2 s of wall time put the next one 20 s
    later, and a loaded machine saw 1 request in 30 s)."""
    real = pipeline.RowReader._new_rows

    def slowed(self, table, final):
        time.sleep(0.2)  # wall time, no CPU: what a descheduled thread sees
        return real(self, table, final)

    monkeypatch.setattr(pipeline.RowReader, "_new_rows", slowed)
    receiver = OtlpReceiver()
    tracker = None
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        tracker = ResourceTracker(interval=0.1, export="otlp")
        _wait_report(tracker, lambda r: r["sent"] >= 4, timeout=30.0)
    finally:
        if tracker is not None:
            tracker.stop()
        receiver.close()


def _wait_report(tracker, done, target: str = "otlp", timeout: float = 60.0) -> None:
    """Until done(the target's live export report) holds (a loaded machine imports the SDK
    slowly: the first send may come late)."""
    deadline = time.monotonic() + timeout
    while not done(tracker.export_report()["targets"][target]):
        assert time.monotonic() < deadline, tracker.export_report()
        time.sleep(0.02)


def _self_signed(folder) -> tuple:
    """(certificate, key) files of a self-signed certificate for 127.0.0.1 (openssl)."""
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", key, "-out", cert],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_otlp_over_https_trusts_the_certificate_variable(tmp_path, monkeypatch):
    """The bounded client speaks TLS: an https receiver with a self-signed certificate gets
    every export when OTEL_EXPORTER_OTLP_CERTIFICATE names it, none without (the system's
    trust store does not hold it: a failure, counted)."""
    cert, key = _self_signed(tmp_path)
    receiver = OtlpReceiver(tls=(cert, key))
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        untrusted = ResourceTracker(interval=0.1, export="otlp")
        _wait_report(untrusted, lambda r: r["failures"] >= 1)
        refused = untrusted.export_report()["targets"]["otlp"]
        untrusted.stop()
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", cert)
        trusted = ResourceTracker(interval=0.1, export="otlp")
        _wait_report(trusted, lambda r: r["sent"] >= 1)
        trusted.stop()
    finally:
        receiver.close()
    assert untrusted.stats()["export"]["targets"]["otlp"]["sent"] == 0
    assert refused["sent"] == 0 and "CERTIFICATE_VERIFY_FAILED" in refused["last_error"], refused
    report = trusted.stats()["export"]["targets"]["otlp"]
    assert report["final"] == "sent" and report["failures"] == 0, report
    assert len(receiver.requests) == report["sent"] >= 1


@pytest.mark.parametrize("compression", ["gzip", "deflate"])
def test_otlp_compression_variable(compression, monkeypatch):
    """OTEL_EXPORTER_OTLP_COMPRESSION: the body is compressed and says so; the receiver
    decodes every export."""
    receiver = OtlpReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression.upper())
        tracker = ResourceTracker(interval=0.1, export="otlp")
        _wait_report(tracker, lambda r: r["sent"] >= 1)
        tracker.stop()
    finally:
        receiver.close()
    report = tracker.stats()["export"]["targets"]["otlp"]
    assert report["final"] == "sent" and len(receiver.requests) == report["sent"], report
    assert all(h["Content-Encoding"] == compression for h in receiver.headers)


@pytest.mark.parametrize(
    "variable,value,expected",
    [
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli", "gzip"),
        ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "soon", "seconds"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "inf", "seconds"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key", "key=value"),
    ],
)
def test_bad_otlp_variables_fail_at_construction(variable, value, expected, monkeypatch):
    """The other OTLP variables are checked at construction too: one ValueError naming the
    variable and what to give."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError) as error:
        ResourceTracker(interval=0.1, export="otlp")
    assert variable in str(error.value) and expected in str(error.value), str(error.value)
