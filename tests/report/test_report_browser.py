"""The report in a real headless Chromium (Debian `chromium`, a fresh profile per browser, the
network off: a dead proxy on 127.0.0.1:9 and no host names resolve). Driven over the
DevTools protocol (--remote-debugging-pipe) for console errors, requests, real mouse input
and screenshots; `--dump-dom` for the plain command-line path."""

from __future__ import annotations

import os
import time

import pytest
from report_browser import Browser, chromium_path, dump_dom, png_colors
from report_data import PEAK_CPU, XSS, long_run_snapshot, tracked_xss_run

from resource_tracker import ResourceTracker

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (make test installs it)"
)

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
#: where the screenshot is kept: RESOURCE_TRACKER_TEST_ARTIFACTS (CI can keep it), else the
#: test's temporary directory (never the working tree)
ARTIFACTS_ENV = "RESOURCE_TRACKER_TEST_ARTIFACTS"


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    """The report of a real tracked workload whose command line holds an XSS string."""
    tracker = tracked_xss_run()
    assert XSS in tracker.command
    path = str(tmp_path_factory.mktemp("report") / "report.html")
    report = tracker.report()
    # rendered in a module fixture: the catalog lookup must have stayed on loopback
    assert "keeper.sparecores.net" not in report
    report.save(path)
    return path


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


def _chart_boxes(b):
    return b.eval(
        "Array.from(document.querySelectorAll('.rt-chart')).map(function (c) {"
        " return {id: c.id, readout: c.querySelector('.rt-readout').textContent,"
        " cursor: c.querySelector('.rt-cursor').getAttribute('visibility'),"
        " paths: Array.from(c.querySelectorAll('path.rt-line')).map(function (p) {"
        "   return [p.getAttribute('data-series'), +p.getAttribute('data-points'),"
        "           p.getAttribute('d').length]; })}; })"
    )


def _rect(b, selector):
    return b.eval(
        f"(function () {{ var e = document.querySelector({selector!r}); "
        "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect(); "
        "return {x: r.left, y: r.top, w: r.width, h: r.height}; })()"
    )


def test_report_real_workload_in_chromium(browser, real_report):
    b = browser
    b.events.clear()
    seconds = b.load("file://" + real_report, READY)
    rendered_ms = float(b.eval(READY))
    print(
        f"\n[report] real workload report: charts drawn {rendered_ms:.0f} ms after navigation "
        f"({seconds:.2f} s wall)"
    )
    b.pump(0.3)
    assert b.console_errors() == []
    assert [u for u in b.requests() if not u.startswith("file://")] == []
    assert b.requests() == ["file://" + real_report]
    charts = _chart_boxes(b)
    # no GPU on this machine (no NVML): no GPU or VRAM chart of flat zeros
    gpu = ["rt-chart-gpu", "rt-chart-vram"] if os.path.exists("/dev/nvidiactl") else []
    assert [c["id"] for c in charts] == [
        "rt-chart-cpu",
        "rt-chart-memory",
        *gpu,
        "rt-chart-diskio",
        "rt-chart-diskspace",
        "rt-chart-network",
    ]
    n = len(open(real_report).read().split('"t":[', 1)[1].split("]", 1)[0].split(","))
    for c in charts:
        assert c["paths"], c
        for name, points, dlen in c["paths"]:
            assert points >= 5 and points == n and dlen > 20, (c["id"], name, points)
    # the XSS command line: shown as text, never run
    assert b.eval("document.querySelector('.rt-cmd').textContent").endswith(XSS)
    assert b.eval("document.querySelectorAll('script').length") == 2
    assert not any(e.get("method") == "Page.javascriptDialogOpening" for e in b.events)
    # times were turned into the viewer's local time
    assert "UTC" in b.eval("document.querySelector('time.rt-time').textContent")


def test_report_hover_zoom_and_screenshot(browser, real_report, tmp_path):
    b = browser
    b.load("file://" + real_report, READY)
    before = _chart_boxes(b)
    assert all(c["cursor"] == "hidden" for c in before)
    r = _rect(b, "#rt-chart-memory svg")
    b.mouse("mouseMoved", r["x"] + r["w"] * 0.5, r["y"] + r["h"] * 0.5)
    mid = _chart_boxes(b)
    b.mouse("mouseMoved", r["x"] + r["w"] * 0.9, r["y"] + r["h"] * 0.5)
    late = _chart_boxes(b)
    for c0, c1 in zip(before, mid):
        assert c1["cursor"] == "visible", c1["id"]  # the cursor shows on every chart
        assert c1["readout"] != c0["readout"], c1["id"]  # the readout moved to a time
        assert c1["readout"][:2].isdigit() and ":" in c1["readout"][:8]
    assert any(c1["readout"] != c2["readout"] for c1, c2 in zip(mid, late))
    # drag to zoom (all charts), double-click to reset
    full = b.eval("document.documentElement.getAttribute('data-rt-view')")
    x0, x1, y = r["x"] + r["w"] * 0.3, r["x"] + r["w"] * 0.6, r["y"] + r["h"] * 0.5
    b.mouse("mousePressed", x0, y, buttons=1, button="left", click_count=1)
    b.mouse("mouseMoved", (x0 + x1) / 2, y, buttons=1)
    b.mouse("mouseMoved", x1, y, buttons=1)
    b.mouse("mouseReleased", x1, y, button="left", click_count=1)
    zoomed = b.eval("document.documentElement.getAttribute('data-rt-view')")
    f0, f1 = map(float, full.split())
    z0, z1 = map(float, zoomed.split())
    assert f0 < z0 < z1 < f1 and (z1 - z0) < 0.5 * (f1 - f0)
    n = max(p[1] for c in before for p in c["paths"])
    assert all(p[1] < n for c in _chart_boxes(b) for p in c["paths"])  # redrawn: fewer points
    b.mouse("mousePressed", x0, y, buttons=1, button="left", click_count=1)
    b.mouse("mouseReleased", x0, y, button="left", click_count=1)
    b.mouse("mousePressed", x0, y, buttons=1, button="left", click_count=2)
    b.mouse("mouseReleased", x0, y, button="left", click_count=2)
    assert b.eval("document.documentElement.getAttribute('data-rt-view')") == full
    # screenshot artifact: the whole page, and a non-blank chart
    artifacts = os.environ.get(ARTIFACTS_ENV) or str(tmp_path)
    os.makedirs(artifacts, exist_ok=True)
    page_png = os.path.abspath(os.path.join(artifacts, "report-screenshot.png"))
    b.eval("window.scrollTo(0, 0)")
    b.screenshot(page_png)
    r = _rect(b, "#rt-chart-cpu")
    scroll = b.eval("window.scrollY")
    png = b.screenshot(clip={"x": r["x"], "y": r["y"] + scroll, "width": r["w"], "height": r["h"]})
    colors = png_colors(png)
    print(
        f"\n[report] screenshot {page_png} ({os.path.getsize(page_png):,} bytes); "
        f"CPU chart: {colors} colours"
    )
    assert os.path.getsize(page_png) > 20_000
    assert colors > 20  # lines, text and grid: not a blank image


def test_report_24h_run_time_and_size(browser, tmp_path):
    snap = long_run_snapshot()  # 86,400 rows: 24 h at 1 s
    tracker = ResourceTracker.from_snapshot(snap)
    start = time.perf_counter()
    report = tracker.report()
    py_s = time.perf_counter() - start
    path = report.save(tmp_path / "long.html")
    size = os.path.getsize(path)
    b = browser
    b.events.clear()
    wall = b.load("file://" + path, READY)
    rendered_ms = float(b.eval(READY))
    print(
        f"\n[report] 86,400 rows: file {size / 1e6:.3f} MB; Python render {py_s:.2f} s; "
        f"Chromium: charts drawn {rendered_ms:.0f} ms after navigation, {wall:.2f} s wall"
    )
    assert size < 2_000_000
    assert rendered_ms < 2000 and wall < 2.0
    assert b.console_errors() == []
    assert b.requests() == ["file://" + path]
    dom, cold = dump_dom(path)  # a cold browser: start, load, draw, dump, exit
    print(f"[report] 86,400 rows: chromium --dump-dom (cold start included) {cold:.2f} s")
    assert 'data-rt-charts="7"' in dom
    cpu = b.eval("document.querySelector('#rt-chart-cpu .rt-readout').textContent")
    # the one-second peak is drawn (3 digits): the legend's max of the process line
    assert cpu.startswith("Processmin ") and f"max {PEAK_CPU:g} coresSystem" in cpu, cpu
    assert all(p[1] == 2400 for c in _chart_boxes(b) for p in c["paths"])


@pytest.mark.parametrize("rows", [0, 1])
def test_report_not_enough_data_in_chromium(browser, tmp_path, rows):
    if rows == 0:
        tracker = ResourceTracker(autostart=False, discover_cloud=False)
    else:
        tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=1))
    path = tracker.report().save(tmp_path / f"r{rows}.html")
    b = browser
    b.events.clear()
    b.load("file://" + path, READY)
    assert b.eval("document.documentElement.getAttribute('data-rt-charts')") == "0"
    text = b.eval("document.body.innerText")
    assert f"Not enough data: {rows} sample" in text
    assert b.console_errors() == []


def test_report_dump_dom_offline(real_report):
    """The plain `chromium --headless --dump-dom` path (what a CI shell script would do)."""
    dom, seconds = dump_dom(real_report)
    print(f"\n[report] chromium --dump-dom: {seconds:.2f} s")
    charts = 7 if os.path.exists("/dev/nvidiactl") else 5  # GPU charts only with a GPU
    assert f'data-rt-charts="{charts}"' in dom
    assert dom.count('class="rt-line"') >= 2 * charts
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
