"""The dashboard's Prometheus source against addresses and servers that cannot work: a bad
URL, nothing listening, hostile answers (endless, a byte-a-second drip, a redirect) and a
server that is no Prometheus: each one a ValueError saying what happened, within the
deadline and the bound; a run whose figures cannot be read is skipped, the others kept."""

from __future__ import annotations

import http.server
import json
import time
import urllib.parse

import pytest
from loopback import LoopbackHTTPServer
from servers import HostileServer, free_port

from resource_tracker.dashboard._prometheus import END_METRIC, load_prometheus


@pytest.mark.parametrize(
    "url, fault",
    [
        ("javascript:alert(1)", "not http"),
        ("ftp://prometheus:9090", "not http"),
        ("http://", "names no host"),
        ("http://prometheus:99999", "invalid port"),
    ],
)
def test_bad_url_is_an_error_naming_the_option(url, fault):
    with pytest.raises(ValueError, match="--prometheus") as error:
        load_prometheus(url, 3600)
    assert fault in str(error.value) and "http://prometheus:9090" in str(error.value)


def test_bad_window_is_an_error():
    with pytest.raises(ValueError, match="--since"):
        load_prometheus("http://127.0.0.1:9", 0.5)


def test_nothing_listening():
    with pytest.raises(ValueError, match="the server could not be read.*(refused|Connection)"):
        load_prometheus(f"http://127.0.0.1:{free_port()}", 3600)


@pytest.mark.parametrize(
    "mode, fault", [("endless", "longer than 65,536 bytes"), ("drip", "timed out|did not answer")]
)
def test_hostile_answers_end_by_the_bound_and_the_deadline(mode, fault):
    server = HostileServer(mode, drip=0.5)
    try:
        began = time.monotonic()
        with pytest.raises(ValueError, match=fault):
            load_prometheus(server.url, 3600, timeout=1.0, max_bytes=65536)
        assert time.monotonic() - began < 30  # not the endless body, not the drip's end
    finally:
        server.close()


def test_redirect_is_not_followed():
    server = HostileServer("redirect-away", location="http://metadata.invalid/latest")
    try:
        with pytest.raises(ValueError, match="redirects to http://metadata.invalid/latest"):
            load_prometheus(server.url, 3600)
    finally:
        server.close()


def _answering(answer_of):
    """A loopback server answering /api/v1/query_range with answer_of(query)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["query"][0]
            body = json.dumps(answer_of(query)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return LoopbackHTTPServer(Handler)


def test_not_prometheus_is_an_error():
    with _answering(lambda query: {"hello": "world"}) as server:
        with pytest.raises(ValueError, match="not a Prometheus query_range result"):
            load_prometheus(server.url, 3600)


def _matrix(series):
    result = [{"metric": labels, "values": [[1000.0, value]]} for labels, value in series]
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def test_a_bad_run_is_skipped_the_others_kept():
    """Prometheus's answer format (a stand-in server): a run whose duration is negative is
    skipped with a line naming its series; a non-number value is no figure."""
    good, bad = {"job": "etl", "pid": "1"}, {"job": "etl", "pid": "2"}

    def answer(query):
        if END_METRIC in query:
            return _matrix([(good, "990"), (bad, "995")])
        if "duration" in query:
            return _matrix([(good, "30"), (bad, "-5")])
        if "memory_peak" in query:
            return _matrix([(good, "NaN"), (bad, "1048576")])
        return _matrix([])

    with _answering(answer) as server:
        loaded = load_prometheus(server.url, 3600)
    assert [(r.step, r.started, r.duration_s, r.peak_memory_mib) for r in loaded.records] == [
        ("etl", 960.0, 30.0, None)
    ]
    assert loaded.skipped == ['Prometheus series {job="etl",pid="2"}: duration_s is negative (-5)']


def test_a_deeply_nested_answer_is_one_error():
    """An answer 200,000 arrays deep (the old reader: an uncaught RecursionError)."""
    body = b"[" * 200_000 + b"]" * 200_000

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with LoopbackHTTPServer(Handler) as server:
        with pytest.raises(ValueError, match="the answer is nested too deeply"):
            load_prometheus(server.url, 3600)


@pytest.mark.parametrize(
    "metric, value, fault",
    [
        ("memory_peak", "1.797e308", "peak_memory_mib is out of range"),
        ("memory_peak", "+Inf", "peak_memory_mib is out of range (inf"),
        ("duration", "1e300", "duration_s is out of range"),
        ("oom_kills", "5e-324", "oom_kills is subnormal (4.94066e-324)"),
        ("oom_kills", "1.5", "oom_kills is not a whole count (1.5)"),
    ],
)
def test_an_overflowing_or_subnormal_figure_skips_its_run_with_one_line(metric, value, fault):
    """A figure of 1.797e308 (the old page writer: "Out of range float values are not JSON
    compliant", and "The kernel killed 179,769,313,... processes"), an infinity, an
    ``oom_kills`` of 5e-324 (the old fleet: a false at-risk alert): the run is skipped with a
    line naming the figure, the good run of the same answer kept without an alert."""
    from resource_tracker.dashboard._fleet import build_fleet

    good, bad = {"job": "etl", "pid": "1"}, {"job": "etl", "pid": "2"}

    def answer(query):
        if END_METRIC in query:
            return _matrix([(good, "990"), (bad, "995")])
        if "duration" in query:
            return _matrix([(good, "30"), (bad, value if metric == "duration" else "30")])
        if metric in query:
            return _matrix([(good, "0" if metric == "oom_kills" else "1048576"), (bad, value)])
        return _matrix([])

    with _answering(answer) as server:
        loaded = load_prometheus(server.url, 3600)
    assert [r.labels["pid"] for r in loaded.records] == ["1"]
    assert len(loaded.skipped) == 1 and loaded.skipped[0].startswith(
        'Prometheus series {job="etl",pid="2"}: ' + fault
    ), loaded.skipped
    fleet = build_fleet(loaded.records, None, loaded.skipped)
    assert not fleet.alerting and len(fleet.steps) == 1


@pytest.mark.parametrize(("cpu_p90", "names_kept"),
                         [("0.5", True), ("1e308", True), ("0.5", False)])  # fmt: skip
def test_forged_tuning_figures_never_raise(cpu_p90, names_kept):
    """A tuned run's pushed tuning (metrics.TUNING) forged or corrupt: an infinite number of
    runs, guardrails min above max, an odd CPU step, a code label with control characters,
    a CPU percentile of 1e308 (the record skipped): the fleet is built, the notes say what
    was ignored (issue 37: one rule, never raising, whatever the store holds). Read in one
    query, or metric by metric from a store whose ``last_over_time`` drops the names."""
    from resource_tracker.dashboard._fleet import build_fleet
    from resource_tracker.dashboard._prometheus import TUNING_NAMES
    from resource_tracker.export.metrics import TUNING, TUNING_CODE

    run = {"job": "j", "flow": "F", "run_id": "7", "step": "s", "task_id": "1"}
    forged = {"settings.runs": "+Inf", "cpu_p90": cpu_p90, "memory_peak_mib": "524288000",
              "settings.bounds.min_memory": "9e9", "settings.bounds.max_memory": "1",
              "settings.cpu_step": "0.3"}  # fmt: skip
    by_metric = {TUNING[key][0]: value for key, value in forged.items()}
    coded = dict(run, code="\x1b[31mred")

    def answer(query):
        if END_METRIC in query:
            return _matrix([(run, "990")])
        if "run_duration" in query:
            return _matrix([(run, "30")])
        if TUNING_NAMES in query:  # the names kept, as Prometheus keeps them, or dropped
            named = [(dict(run, __name__=m), v) for m, v in by_metric.items()]
            named.append((dict(coded, __name__=TUNING_CODE[0]), "1"))
            return _matrix(named if names_kept else [(run, "1")])
        if TUNING_CODE[0] in query:
            return _matrix([(coded, "1")])
        for metric, value in by_metric.items():
            if f"({metric}[" in query:
                return _matrix([(run, value)])
        return _matrix([])

    with _answering(answer) as server:
        loaded = load_prometheus(server.url, 3600)
    (record,) = loaded.records
    assert record.tuning_settings["code"].isprintable()
    (view,) = build_fleet(loaded.records, None, loaded.skipped).steps
    assert "cpu_step" in view.note and "bounds ignored" in view.note, view.note
    if cpu_p90 == "0.5":  # 500 MiB peak: sized from it, whole vCPUs
        assert view.need["memory"] >= 500 and view.need["cpu"] == 1, view
    else:
        assert not view.need and "record of run 7 skipped" in view.note, view.note


def test_tuning_names_match_every_tuning_figure():
    import re

    from resource_tracker.dashboard._prometheus import TUNING_NAMES
    from resource_tracker.export.metrics import TUNING, TUNING_CODE

    pattern = re.search(r'=~"(.+)"', TUNING_NAMES).group(1)
    names = [prom for prom, _, _, _ in TUNING.values()] + [TUNING_CODE[0]]
    assert all(re.fullmatch(pattern, name) for name in names)
    assert not re.fullmatch(pattern, "resource_tracker_run_duration_seconds")
