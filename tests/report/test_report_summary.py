"""The run summary (resource_tracker.summary): built once, with the catalog and the Keeper
asked while BUILDING it; the report, the Metaflow artifact and card and a stored snapshot
render it without asking them again.

The Keeper here is a real HTTP server on 127.0.0.1 that counts the requests it gets and
answers 503 (or answers late): the real Keeper cannot be reached from the tests. The catalog
is the real one (the snapshot embedded in the package, or a path that does not exist)."""

from __future__ import annotations

import json
import pickle
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from report_data import long_run_snapshot

from resource_tracker import ResourceTracker
from resource_tracker.report import render_report
from resource_tracker.report._render import render_summary
from resource_tracker.summary import (
    RunSummary,
    build_summary,
    history_values,
    lookup_servers,
    stat_specs,
)

MISSING_CATALOG = "/nonexistent/resource-tracker/catalog.db"


class _CountingKeeper:
    """A loopback HTTP server counting every request; answers 503 after `delay` seconds."""

    def __init__(self, delay=0.0):
        owner = self
        self.requests = 0
        self.delay = delay
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                with owner.lock:
                    owner.requests += 1
                time.sleep(delay)
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def keeper(monkeypatch):
    server = _CountingKeeper()
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
    monkeypatch.delenv("RESOURCE_TRACKER_CATALOG", raising=False)
    yield server
    server.close()


def _break_the_catalog(monkeypatch):
    """From here on, any catalog lookup fails: no catalog file, no embedded snapshot."""
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", MISSING_CATALOG)
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "off")


def test_rendering_asks_neither_catalog_nor_keeper(keeper, monkeypatch):
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=600))
    summary = tracker.summary()
    asked = keeper.requests
    assert asked > 0, "building the summary asks the Keeper (then the embedded catalog)"
    assert summary.server.best is not None and summary.server.costs is not None
    page = tracker.report()
    _break_the_catalog(monkeypatch)
    # the same page from the cached summary, from the summary given, and after a JSON trip
    assert tracker.report() == page
    assert render_report(tracker, summary=summary) == page
    assert render_summary(summary, tracker.process_metrics, tracker.system_metrics) == page
    again = ResourceTracker.loads(tracker.dumps())
    assert again.report() == page
    assert keeper.requests == asked  # not one request while rendering
    best = summary.server.best
    assert best["server_id"] in page and "catalog unavailable" not in page
    # a summary built now (not rendered from the stored one) shows the broken catalog
    fresh = build_summary(tracker)
    assert fresh.server.best is None
    assert fresh.warnings_about("catalog") == [fresh.server.unavailable]
    assert MISSING_CATALOG in fresh.server.unavailable


def test_metaflow_artifact_and_card_render_the_stored_summary(keeper, monkeypatch):
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        build_artifact,
    )

    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=300))
    data = build_artifact(tracker, None, failed=False, label="Flow/1/train/2")
    asked = keeper.requests
    assert asked > 0
    assert data["recommendations"]["server"] == tracker.summary().server.best
    data = pickle.loads(pickle.dumps(data))  # as Metaflow stores it
    _break_the_catalog(monkeypatch)
    html = card.render_artifact(data, label="Flow/1/train/2")
    assert keeper.requests == asked
    assert data["recommendations"]["server"]["server_id"] in html
    assert "catalog unavailable" not in html and "full report unavailable" not in html


def test_a_slow_keeper_is_left_behind(monkeypatch):
    slow = _CountingKeeper(delay=3.0)
    try:
        monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", slow.url)
        monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", "keeper")
        began = time.monotonic()
        choice = lookup_servers(
            {"cpu": 1, "memory": 512, "gpu": 0, "vram": 0}, 10.0, None, timeout=0.5
        )
        took = time.monotonic() - began
    finally:
        slow.close()
    assert took < slow.delay  # bounded by its own 0.5 s timeout, not by the Keeper's answer
    assert choice.servers == () and "took longer than 0.5 s" in choice.unavailable


def test_catalog_errors_become_warnings_with_the_real_exception_classes(monkeypatch):
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=60))
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    past = json.loads(json.dumps(tracker.stats()))
    past["process_memory"]["max"] = 2.0**40  # KiB: 1 PiB, no server has that
    nothing_fits = build_summary(tracker, [past])
    assert nothing_fits.server.no_match.startswith("no server in the catalog fits: ")
    assert nothing_fits.warnings_about("server") == [nothing_fits.server.no_match]
    _break_the_catalog(monkeypatch)
    unavailable = build_summary(tracker)
    assert unavailable.server.unavailable.startswith("catalog unavailable: no catalog file")
    page = render_summary(unavailable, tracker.process_metrics, tracker.system_metrics)
    # one short line: the first sentence of why, and the fix once
    assert page.count("No server prices: no catalog file") == 1
    assert page.count("resource-tracker catalog update") == 1
    offline = build_summary(tracker, lookup_server=False)
    assert offline.server.servers == () and offline.resources == tracker.recommend_resources()


def test_history_rule_mean_of_means_highest_of_peaks():
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=120))
    now = tracker.stats()
    runs = []
    for scale in (1.0, 2.0, 4.0):
        run = json.loads(json.dumps(now))
        run["process_cpu_usage"]["mean"] = now["process_cpu_usage"]["mean"] * scale
        run["process_memory"]["max"] = now["process_memory"]["max"] * scale
        runs.append(run)
    values = history_values(runs)
    mean_cpu = now["process_cpu_usage"]["mean"] * 7 / 3
    assert values["process_cpu_usage"]["mean"] == pytest.approx(mean_cpu)
    assert values["process_memory"]["max"] == now["process_memory"]["max"] * 4
    assert values["timestamp"]["duration"] == pytest.approx(now["timestamp"]["duration"])
    summary = tracker.summary(runs)
    cpu = summary.row("process_cpu_usage", "mean")
    assert cpu.value == now["process_cpu_usage"]["mean"] and cpu.past == pytest.approx(mean_cpu)
    # the recommendation is the C recommender's over this run and the earlier ones
    assert summary.resources == tracker.recommend_resources(historical_stats=runs)
    assert summary.history.runs == 3 and len(summary.history.stats) == 3


def test_metaflow_history_summary_uses_the_same_rule():
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.track_resources_history import (
        summarize_history,
    )

    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=120))
    runs = [tracker.stats(), ResourceTracker.from_snapshot(long_run_snapshot(rows=60)).stats()]
    values = history_values(runs)
    documented = summarize_history(runs)
    assert documented["avg_cpu_mean"] == round(values["process_cpu_usage"]["mean"], 2)
    assert documented["max_memory_max"] == round(values["process_memory"]["max"])
    # and the report reads that documented summary back into the same rows
    summary = tracker.summary(documented)
    assert summary.history.runs == 2
    assert summary.row("process_memory", "max").past == documented["max_memory_max"]


def test_summary_is_cached_until_the_run_changes():
    live = ResourceTracker(interval=0.05, discover_cloud=False)
    try:
        assert live.wait_for_samples(3, timeout=10)
        first = live.summary(lookup_server=False)
        assert live.wait_for_samples(first.n_samples + 1, timeout=10)
        assert live.summary(lookup_server=False).n_samples > first.n_samples  # not the cache
    finally:
        live.stop()
    stopped = live.summary(lookup_server=False)
    assert stopped.run.status == "finished"
    assert live.summary(lookup_server=False) is stopped
    assert live.summary([live.stats()], lookup_server=False) is not stopped


def test_summary_round_trips_through_json_and_rows_follow_the_registry():
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=60))
    summary = tracker.summary([tracker.stats()], lookup_server=False)
    text = json.dumps(summary.to_dict(), allow_nan=False)
    assert RunSummary.from_dict(json.loads(text)) == summary
    with pytest.raises(ValueError, match="not a resource-tracker run summary"):
        RunSummary.from_dict({"version": 1, "run": {}})
    from resource_tracker.registry import stat_columns

    keys = {row.key for row in stat_specs()}
    assert {c.key for c in stat_columns()} <= keys
    labels = {c.key: c.label for c in stat_columns()}
    for row in summary.rows:
        if row.key in labels:
            assert row.label.startswith(labels[row.key])


def test_a_damaged_stored_summary_is_rebuilt_not_rendered():
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=60))
    tracker.summary()
    snap = json.loads(tracker.dumps())
    assert snap["summary"]["cache_key"]
    good = ResourceTracker.loads(json.dumps(snap)).report()  # the stored summary
    snap["summary"]["rows"][0]["value"] = "<script>1</script>"
    with pytest.raises(ValueError, match="row value"):
        RunSummary.from_dict(snap["summary"])
    loaded = ResourceTracker.loads(json.dumps(snap))
    assert loaded.report() == good  # rebuilt from the tables, same figures
    assert isinstance(loaded.summary().rows[0].value, float)


def test_cli_run_looks_up_once_and_report_renders_the_stored_summary(keeper, tmp_path):
    """`resource-tracker run` builds the summary once (its lines, the page and the JSON share
    it); `resource-tracker report` of that JSON renders it with the catalog broken."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    burn = "import time\nend = time.time() + 0.6\nwhile time.time() < end: pass"
    cmd = [sys.executable, "-m", "resource_tracker"]
    out = subprocess.run(
        cmd + ["run", "--interval", "0.1", "--output", str(tmp_path), "--format", "json,html",
               "--", sys.executable, "-c", burn],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    asked = keeper.requests
    # two Keeper requests: the servers of the run's architecture and the other's cheapest
    # (the alternative); no cloud, so no price lookup
    assert asked == 2, "two Keeper requests (servers, the other architecture's cheapest)"
    saved = ResourceTracker.loads((tmp_path / "resource-tracker.json").read_text())
    best = saved.summary().server.best
    assert keeper.requests == asked  # the stored summary
    assert f"server      {best['vendor_id']} {best['server_id']} " in out.stderr
    env.update(RESOURCE_TRACKER_CATALOG=MISSING_CATALOG, RESOURCE_TRACKER_EMBEDDED_CATALOG="off")
    page = tmp_path / "again.html"
    again = subprocess.run(
        cmd + ["report", str(tmp_path / "resource-tracker.json"), "-o", str(page)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert keeper.requests == asked
    assert page.read_text() == (tmp_path / "resource-tracker.html").read_text()


def test_a_stored_failure_is_made_printable_and_a_damaged_one_dropped():
    """A snapshot's step error (from outside: a user's exception, a hostile file) reaches the
    page printable, bounded and escaped; one of the wrong shape is dropped, never a crash."""
    snap = long_run_snapshot(rows=30)
    snap["status"] = "failed"
    snap["extra"] = {"step_failed": True, "step_error": {"type": "KeyError\x1b[2J", "message":
                     "<img src=x onerror=alert(1)>\x07" + "x" * 5000}}  # fmt: skip
    tracker = ResourceTracker.from_snapshot(snap)
    summary = tracker.summary(lookup_server=False)
    assert summary.run.error["type"] == "KeyError"
    assert len(summary.run.error["message"]) <= 503 and "\x07" not in summary.run.error["message"]
    page = str(render_summary(summary))
    assert 'with <code class="rt-error">KeyError: &lt;img src=x onerror=alert(1)&gt;' in page
    stored = json.loads(json.dumps(summary.to_dict()))
    for damaged in ([1, 2], "text", {"message": "no type"}, {"type": "\x1b[31m"}):
        stored["run"]["error"] = damaged
        again = RunSummary.from_dict(stored)
        assert again.run.error is None
        assert "The run failed after" in str(render_summary(again))
    stored["run"]["error"] = {"type": "OSError", "message": "\x1b]0;title\x07disk full"}
    assert RunSummary.from_dict(stored).run.error == {"type": "OSError", "message": "disk full"}
