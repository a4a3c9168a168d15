"""The report's content and its Report object, checked on the HTML text (the browser tests
check what Chromium makes of it). Trackers here are real: a tracked child process, or a
stopped tracker made by ResourceTracker.from_snapshot from snapshot data."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import stat
import sys
import time
import types

import pytest
from report_data import CLOUD_INFO, PEAK_CPU, PEAK_NET, XSS, long_run_snapshot, tracked_xss_run

from resource_tracker import ResourceTracker, _core
from resource_tracker import formatting as fmt
from resource_tracker.report import Report, render_report
from resource_tracker.report._render import MAX_POINTS


def _data(page):
    """The chart data embedded in a report page."""
    m = re.search(r'<script type="application/json" id="rt-data">(.*?)</script>', page, re.S)
    assert m, "no chart data in the page"
    return json.loads(m.group(1))


def _text(page):
    """The visible text of the page body, roughly (tags dropped, entities decoded)."""
    body = page.split('<main class="rt-page">', 1)[1].split("</main>", 1)[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


@pytest.fixture(scope="module")
def real_run():
    """A real tracked child process (see report_data.tracked_xss_run)."""
    tracker = tracked_xss_run()
    assert tracker.n_samples >= 5
    return tracker


def test_report_is_a_str_and_saves(real_run, tmp_path):
    report = real_run.report()
    assert isinstance(report, Report) and isinstance(report, str)
    assert report.startswith("<!DOCTYPE html>")
    path = report.save(tmp_path / "r.html")
    assert open(path, encoding="utf-8").read() == report
    assert "save(path)" in repr(report)


def test_report_header_server_and_statistics(real_run):
    page = real_run.report()
    text = " ".join(_text(page).split())
    stats = real_run.stats()
    assert f"{real_run.n_samples:,}" in text
    # numbers as resource_tracker.formatting shows them, the same in the headline and table
    assert f"Peak CPU {fmt.quantity(stats['process_cpu_usage']['max'], 'cores')}" in text
    assert f"Peak memory {fmt.quantity(stats['process_memory']['max'], 'KiB')}" in text
    assert "Finished" in text and "procfs" in text and "Sampling interval 0.1 s" in text
    assert str(real_run.pid) in text
    info = real_run.server_info
    assert f"{info['vcpus']:,}" in text and info["cpu_model"] in text
    rec = real_run.recommend_resources()
    line = f"@resources(cpu={rec['cpu']}, memory={rec['memory']})"  # no gpu=0
    assert rec["gpu"] == 0 and line in text
    # the peak memory is about the 80 MiB the child touched
    assert 80 * 1024 <= stats["process_memory"]["max"] <= 160 * 1024


def test_report_escapes_untrusted_strings(real_run):
    page = real_run.report()
    assert XSS in real_run.command
    assert XSS not in page  # nowhere raw: not in the HTML, not in the data
    assert html.escape(XSS) in page
    assert XSS in _text(page)


def test_report_escapes_metadata_and_labels():
    snap = long_run_snapshot(rows=50, command="run " + XSS + " {{JS}} {{DATA}} {{BODY}}")
    snap["label"] = '"><img src=x onerror=alert(2)>'
    snap["cloud_info"] = dict(CLOUD_INFO, region="</script><script>alert(3)</script>")
    page = render_report(ResourceTracker.from_snapshot(snap))
    for raw in (XSS, "<img src=x", "<script>alert(3)"):
        assert raw not in page
    text = _text(page)
    assert "NVIDIA <b>T4</b>" in text  # the GPU name from server_info, shown as text
    assert "<img src=x onerror=alert(2)>" in text
    assert "{{JS}} {{DATA}} {{BODY}}" in text  # template placeholders in data stay text
    assert page.count("use strict") == 1


def test_report_shows_container_limits_and_cloud():
    page = render_report(ResourceTracker.from_snapshot(long_run_snapshot(rows=100)))
    text = _text(page)
    assert "CPU 4 cores, memory 16 GiB (cgroup v2)" in " ".join(text.split())
    assert "g4dn.2xlarge" in text and "us-east-1" in text and "aws" in text


def test_report_without_server_cloud_or_catalog(monkeypatch):
    snap = long_run_snapshot(rows=30)
    snap["server_info"] = None
    snap["cloud_info"] = None
    monkeypatch.setitem(sys.modules, "resource_tracker.catalog", None)  # import fails
    text = " ".join(_text(render_report(ResourceTracker.from_snapshot(snap))).split())
    assert "Server information was not collected" in text
    assert "No cloud detected" in text
    # one short line with the fix, said once (not in the cloud section again)
    assert text.count("No server prices:") == 1
    assert "No server prices: resource_tracker.catalog cannot be imported" in text
    assert "Fix: run resource-tracker catalog update once while online." in text
    assert "catalog unavailable" not in text


def _catalog_standin(servers=None, error=None):
    """A stand-in for resource_tracker.catalog speaking its interface (recommend_server,
    run_costs, the exception classes): the real module is written in parallel (issue 4);
    these tests check what the report shows of its answers, not the catalog itself."""
    mod = types.ModuleType("resource_tracker.catalog")

    class CatalogUnavailableError(RuntimeError):
        pass

    class NoMatchingServerError(ValueError):
        pass

    calls = []

    def recommend_server(resources, *, n=None, **filters):
        calls.append((dict(resources), n))
        if error is not None:
            raise error(CatalogUnavailableError, NoMatchingServerError)
        return servers[:n]

    def run_costs(duration_s, cloud_info, server, catalog=None):
        calls.append(("costs", duration_s, cloud_info, server and server["server_id"]))
        hours = duration_s / 3600.0
        if server is None:
            return dict.fromkeys(
                ["recommended_hourly_usd", "recommended_run_cost_usd", "saving_usd"],
                None,
            ) | {
                "current_hourly_usd": 0.752,
                "current_price_note": None,
                "run_cost_usd": 0.752 * hours,
                "eur_usd_rate": None,
            }
        return {
            "current_hourly_usd": 0.752,
            "current_price_note": "on-demand, us-east-1",
            "run_cost_usd": 0.752 * hours,
            "recommended_hourly_usd": server["price"],
            "recommended_run_cost_usd": server["price"] * hours,
            "saving_usd": (0.752 - server["price"]) * hours,
            "eur_usd_rate": None,
        }

    mod.CatalogUnavailableError = CatalogUnavailableError
    mod.NoMatchingServerError = NoMatchingServerError
    mod.recommend_server = recommend_server
    mod.run_costs = run_costs
    mod.calls = calls
    return mod


SERVERS = [
    {
        "vendor_id": "hcloud",
        "server_id": "cx32",
        "vcpus": 4,
        "memory_amount": 8192,
        "gpu_count": 0,
        "price": 0.0123,
        "vendor": {"name": "Hetzner <Cloud>"},
    },
    {
        "vendor_id": "aws",
        "server_id": "t4g.large",
        "vcpus": 2,
        "memory_amount": 8192,
        "gpu_count": 0,
        "price": 0.0672,
        "vendor": {"name": "Amazon Web Services"},
    },
    {
        "vendor_id": "gcp",
        "server_id": "e2-standard-4",
        "vcpus": 4,
        "memory_amount": 16384,
        "gpu_count": 0,
        "price": 0.134,
        "vendor": {"name": "Google Cloud"},
    },
    {
        "vendor_id": "azure",
        "server_id": "Standard_D4s_v5",
        "vcpus": 4,
        "memory_amount": 16384,
        "gpu_count": 0,
        "price": 0.192,
        "vendor": {"name": "Azure"},
    },
]


def test_report_recommended_server_alternatives_and_costs(monkeypatch):
    mod = _catalog_standin(SERVERS)
    monkeypatch.setitem(sys.modules, "resource_tracker.catalog", mod)
    snap = long_run_snapshot(rows=3600)  # one hour
    tracker = ResourceTracker.from_snapshot(snap)
    page = render_report(tracker)
    text = " ".join(_text(page).split())
    assert mod.calls[0] == (tracker.recommend_resources(), 4)
    assert mod.calls[1][0] == "costs" and mod.calls[1][3] == "cx32"
    assert "Hetzner <Cloud> cx32" in text  # escaped catalog text
    assert "<Cloud>" not in page
    assert "$0.0123/h" in text
    # (0.752 - 0.0123) per hour, for one hour: money to the cent, never "$0.0000"
    assert "$0.75 as it ran $0.01 on the recommended server saving $0.74 (98%)" in text
    assert "Hourly price $0.752/h" in text  # the cloud section: the current server
    fitting = page.split('id="rt-servers"', 1)[1].split("</table>", 1)[0]
    for s in SERVERS:
        assert s["server_id"] in fitting
    assert fitting.count("<tr>") == 5  # head + the cheapest + 3 alternatives


@pytest.mark.parametrize(
    "raise_it, expected",
    [
        (
            lambda unavailable, nomatch: unavailable(
                "no catalog: run 'resource-tracker catalog update'"
            ),
            "No server prices: no catalog: run 'resource-tracker catalog update'. Fix: run "
            "resource-tracker catalog update once while online.",
        ),
        (
            lambda unavailable, nomatch: nomatch("nothing with 64 GPUs"),
            "no server in the catalog fits: nothing with 64 GPUs",
        ),
    ],
)
def test_report_catalog_errors_are_plain_notes(monkeypatch, raise_it, expected):
    monkeypatch.setitem(sys.modules, "resource_tracker.catalog", _catalog_standin(error=raise_it))
    page = render_report(ResourceTracker.from_snapshot(long_run_snapshot(rows=20)))
    assert expected in " ".join(_text(page).split())


def test_report_historical_comparison_list_and_metaflow_summary():
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=600))
    now = tracker.stats()
    past = json.loads(json.dumps(now))
    past["process_cpu_usage"]["mean"] = now["process_cpu_usage"]["mean"] / 2  # +100%
    past["process_memory"]["max"] = now["process_memory"]["max"] * 2  # -50%
    page = render_report(tracker, historical_stats=[past, past])
    text = " ".join(_text(page).split())
    assert "Earlier runs (2)" in text
    cpu_row = re.search(r"Process CPU usage, mean ([\d.]+) cores ([\d.]+) cores ([+-]\d+%)", text)
    assert cpu_row and cpu_row.group(3) == "+100%", text
    mem_row = re.search(r"Process memory usage, peak ([\d,.]+) GiB ([\d,.]+) GiB ([+-]\d+%)", text)
    assert mem_row and mem_row.group(3) == "-50%"
    assert "from this run and 2 earlier runs" in text
    # the Metaflow extension's summary dict
    summary = {
        "available": True,
        "runs_analyzed": 5,
        "avg_cpu_mean": now["process_cpu_usage"]["mean"] * 4,
        "max_memory_max": now["process_memory"]["max"],
        "avg_gpu_mean": 0.0,
        "max_vram_max": 0.0,
        "max_gpu_count": 1.0,
        "avg_duration": 300.0,
        "runs": [],
        "notes": [],
    }
    text = " ".join(_text(render_report(tracker, historical_stats=summary)).split())
    assert "Earlier runs (5)" in text
    assert re.search(r"Process CPU usage, mean [\d.]+ cores [\d.]+ cores -75%", text)
    assert re.search(r"Process memory usage, peak [\d,.]+ GiB [\d,.]+ GiB no change", text)
    assert re.search(r"Duration 10 min 00 s 5 min 00 s \+100%", text)


def test_report_not_enough_data_for_empty_and_one_sample():
    empty = ResourceTracker(autostart=False, discover_cloud=False)
    text = " ".join(_text(empty.report()).split())
    assert "Not enough data: 0 samples recorded" in text
    assert "No recommendation: not enough data" in text
    assert _data(empty.report())["charts"] == []
    one = ResourceTracker.from_snapshot(long_run_snapshot(rows=1))
    page = one.report()
    text = " ".join(_text(page).split())
    assert "Not enough data: 1 sample recorded" in text
    assert text.count("Not enough data") == 1 and "Charts need at least 2 samples" in text
    assert "Process CPU usage, peak 1.5 cores" in text  # statistics of the one sample still shown


def test_report_downsampling_keeps_peaks_and_bounds(capsys):
    snap = long_run_snapshot()
    tracker = ResourceTracker.from_snapshot(snap)
    start = time.perf_counter()
    page = tracker.report()
    seconds = time.perf_counter() - start
    size = len(page.encode("utf-8"))
    with capsys.disabled():
        print(
            f"\n[report] 86,400-row report: {size / 1e6:.3f} MB, rendered by Python in "
            f"{seconds:.2f} s"
        )
    assert size < 2_000_000
    data = _data(page)
    for key in ("p", "s"):
        assert data["tables"][key]["rows"] == 86_400
        assert len(data["tables"][key]["t"]) == MAX_POINTS
    assert max(data["tables"]["p"]["s"]["cpu_usage"]) == PEAK_CPU  # the one-sample peak survives
    assert max(data["tables"]["s"]["s"]["net_recv_bytes"]) == pytest.approx(PEAK_NET, rel=1e-4)
    # the statistics use every sample
    assert tracker.stats()["process_cpu_usage"]["max"] == PEAK_CPU
    mean = tracker.stats()["process_cpu_usage"]["mean"]
    assert f"Process CPU usage, mean {fmt.quantity(mean, 'cores')}" in " ".join(_text(page).split())


def test_downsample_min_max_per_bucket():
    t = [float(i) for i in range(10_000)]
    col = [float(i % 7) for i in range(10_000)]
    col[1234] = 99.0
    col[8765] = -5.0
    out = json.loads(_core.chart_series(col, "as_is", 100))
    t2 = json.loads(_core.chart_times(t, 0.0, 100))
    assert len(t2) == 100 and len(out) == 100
    assert max(out) == 99.0 and min(out) == -5.0
    assert t2 == sorted(t2)
    short_t = json.loads(_core.chart_times(t[:50], 0.0, 100))
    short = json.loads(_core.chart_series(col[:50], "as_is", 100))
    assert short_t == t[:50] and short == col[:50]


def test_report_same_after_snapshot_round_trip(real_run):
    first = real_run.report()
    again = ResourceTracker.loads(real_run.dumps()).report()
    assert again == first
    assert real_run.report() == first  # deterministic


def test_report_repr_html_is_an_iframe(real_run):
    report = real_run.report()
    out = report._repr_html_()
    assert out.startswith("<iframe") and out.endswith("</iframe>")
    srcdoc = re.search(r'srcdoc="([^"]*)"', out).group(1)
    assert html.unescape(srcdoc) == report
    assert "<script" not in out  # the page's scripts stay inside srcdoc


def test_report_browse_returns_at_once_and_opens_the_file(real_run, tmp_path, monkeypatch):
    """browse() through the real webbrowser module: BROWSER names a program that records the
    URL it was given once the test lets it go (up to 30 s): browse() returned before that, so
    it did not wait for the program."""
    seen, go = tmp_path / "seen.txt", tmp_path / "go"
    opener = tmp_path / "opener.sh"
    opener.write_text(
        f"#!/bin/sh\nn=0\nwhile [ ! -e {go} ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done\n"
        f'echo "$1" > {seen}\n'
    )
    opener.chmod(opener.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("BROWSER", str(opener))
    import webbrowser

    monkeypatch.setattr(webbrowser, "_tryorder", None)  # re-read BROWSER
    report = real_run.report()
    path = report.browse()
    assert not seen.exists()  # the program still waits for the test
    go.touch()
    assert open(path, encoding="utf-8").read() == report
    deadline = time.monotonic() + 60
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert seen.read_text().strip() == "file://" + path
    finally:
        os.unlink(path)


def test_report_with_the_real_catalog_module():
    """When resource_tracker.catalog exists (issue 4), the report calls it through its real
    interface: it shows a server, or a plain catalog note that is not an interface error."""
    try:
        import resource_tracker.catalog  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"resource_tracker.catalog is not there yet ({exc})")
    page = render_report(ResourceTracker.from_snapshot(long_run_snapshot(rows=600)))
    section = page.split('<section id="rt-headline"', 1)[1].split("</section>", 1)[0]
    text = " ".join(_text('<main class="rt-page"><div ' + section + "</div></main>").split())
    if "No server prices" in text or "no server in the catalog fits" in text:
        for wrong in ("TypeError", "AttributeError", "KeyError", "cannot be imported"):
            assert wrong not in text, text
    else:
        assert "Cheapest fitting server" in text and "/h" in text, text


def test_report_status_failed_and_running():
    snap = long_run_snapshot(rows=20)
    snap["extra"] = {"step_failed": True}
    snap["label"] = "TrainFlow/17/train/3"
    text = " ".join(_text(render_report(ResourceTracker.from_snapshot(snap))).split())
    assert "Status Failed" in text and "The run failed" in text
    assert "Step TrainFlow/17/train/3" in text
    live = ResourceTracker(interval=0.05, discover_cloud=False)
    try:
        assert live.wait_for_samples(3, timeout=10)
        text = " ".join(_text(live.report()).split())
    finally:
        live.stop()
    assert "Status Pending" in text and "End Pending" in text  # the original's words


def test_report_failed_run_says_when_and_the_memory_clue():
    """A failed run's page opens with when it failed, what the figures cover, the kernel's
    OOM kills and a memory peak at the container's limit (not just "The run failed")."""
    snap = long_run_snapshot(rows=60)
    snap["extra"] = {"step_failed": True}
    snap["cgroup_metrics"] = {"oom_kills": 2, "dedicated": True, "version": 2, "path": "/x"}
    limits = {"version": 2, "cpu_limit_cores": 4.0, "memory_limit_mb": 2600}
    snap["server_info"] = dict(snap["server_info"], cgroup=limits)
    text = " ".join(_text(render_report(ResourceTracker.from_snapshot(snap))).split())
    assert (
        "The run failed after 1 min 00 s (60 samples); the figures cover it up to the failure. "
        "The kernel's OOM killer ended 2 processes: it ran out of memory. Peak memory 2.39 GiB "
        "was near the container limit (2.54 GiB)."
    ) in text
    assert text.count("failed after") == 1


def test_report_with_a_real_catalog_file(tmp_path, monkeypatch):
    """The real resource_tracker.catalog on a Spare Cores SQLite catalog built at test time by
    the catalog tests' builder (real 2026-01 server records and real 2024-02 AWS on-demand
    prices; other vendors' prices are the builder's marked test values)."""
    try:
        import resource_tracker.catalog as catalog
    except ImportError as exc:
        pytest.skip(f"resource_tracker.catalog is not there yet ({exc})")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "catalog"))
    try:
        from catalog_fixture import build
    except ImportError as exc:
        pytest.skip(f"tests/catalog/catalog_fixture.py is not there ({exc})")
    finally:
        sys.path.pop(0)
    db = tmp_path / "catalog.db"
    build(str(db))
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", str(db))
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=3600))  # 1 h on g4dn.2xlarge
    page = render_report(tracker)
    arch = tracker.server_info["architecture"]  # the servers are of the run's architecture
    servers = catalog.recommend_server(tracker.recommend_resources(), n=4, architecture=arch)
    costs = catalog.run_costs(3600.0, tracker.cloud_info, servers[0])
    text = " ".join(_text(page).split())
    best = servers[0]
    assert f"{best['vendor']['name']} {best['server_id']}" in text
    assert fmt.money(best["price"], "h") in text
    assert f"Hourly price {fmt.money(costs['current_hourly_usd'], 'h')}" in text  # where it ran
    assert f"saving {fmt.money(costs['saving_usd'])}" in text
    fitting = page.split('id="rt-servers"', 1)[1].split("</table>", 1)[0]
    for s in servers:
        assert _esc_id(s["server_id"]) in fitting
    assert ResourceTracker.loads(tracker.dumps()).report() == page


def _esc_id(text):
    return html.escape(text, quote=True)


def test_report_renders_the_summarys_insights_most_severe_first():
    """summary.insights (issue 17's Insight values, or their dicts after a JSON trip) are
    rendered one line each with their severity, escaped; none -> no insights list."""
    from report_states import InsightLike

    from resource_tracker.report._render import render_summary

    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=60))
    summary = tracker.summary(lookup_server=False)
    assert 'id="rt-insights"' not in render_summary(summary)
    insights = (
        InsightLike("phases", "info", "Two phases: <b>load</b> then train.", {"phases": 2}),
        {"kind": "at_risk", "severity": "critical", "message": "Memory at 97% of the limit.",
         "numbers": {"ratio": 0.97}},
    )  # fmt: skip
    page = render_summary(dataclasses.replace(summary, insights=insights))
    text = " ".join(_text(page).split())
    assert "critical Memory at 97% of the limit. info Two phases: <b>load</b> then train." in text
    assert "<b>load</b>" not in page  # escaped
    assert page.index('id="rt-insights"') < page.index('id="rt-charts"')  # in the headline


@pytest.mark.parametrize("rows, bar", [(60, 300_000), (86_400, 2_000_000)])
def test_card_size_and_no_network(rows, bar):
    """The Metaflow card's page (its own renderer) for a short step and a 24 h step stays
    under the bars (300 KB, 2 MB) and refers to nothing on the network."""
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )

    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=rows))
    data = {"tracker": {"summary": tracker.summary(lookup_server=False).to_dict()}}
    html_text = card._report_html(tracker, data)
    size = len(html_text.encode("utf-8"))
    print(f"\n[report] card of {rows:,} samples: {size / 1e3:,.0f} kB (bar {bar / 1e3:,.0f} kB)")
    assert size < bar
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html_text)
    assert "@import" not in html_text and not re.search(r"url\((?!#)", html_text)
