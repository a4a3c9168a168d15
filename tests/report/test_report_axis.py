"""The memory chart's axis is the workload's (issue 40): a real child process holding 300 MiB,
tracked on a machine using several times that (another real child holds 1 GiB beside it),
drawn in a real headless Chromium (network off, as report_browser sets it) at 1280 and
390 px, light and dark. The process line fills at least half the plot's height and its peak
reads, on the axis, as the workload's own RSS; the machine's line, above the axis, is named
at its top with its peak (the tracker's own figure) in its colour, and "Fit all lines" puts
it back on the axis. The Metaflow card (the same renderer) of the run as a step that asked
4 GiB too. Screenshots go under $RESOURCE_TRACKER_TEST_ARTIFACTS, else the test's temporary
directory."""

from __future__ import annotations

import os
import time

import pytest
from report_browser import Browser, artifacts_dir, chromium_path
from workloads import Workload, wait_for_baseline

from resource_tracker import ResourceTracker

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (make test installs it)"
)

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
HELD_MIB = 300
#: samples the tracker takes while the workload holds its memory
HELD_SAMPLES = 8
#: memory held meanwhile by another, untracked process (the machine's use beside the workload)
BALLAST_MIB = 1024
#: the page's colour of the machine's line (report.css), light and dark
SYSTEM_FILL = {False: "rgb(188, 76, 0)", True: "rgb(219, 109, 40)"}
#: Metaflow's default @resources memory, as the step's ask
ASKED = {"cpu": 1, "memory": 4096, "source": "@resources"}

HOLD = f"""
buf = touched({HELD_MIB})
report(rss_kib=rss_kib())
sys.stdin.readline()  # until the test has its samples
"""

#: the memory chart as drawn: the plot's top and floor (its y axis), the process line's
#: highest point, the y ticks, the labels above the axis, the "Fit all lines" button
_MEMORY = """(function () {
  var c = document.getElementById('rt-chart-memory');
  c.scrollIntoView({block: 'center'});
  var axis = Array.from(c.querySelectorAll('line.rt-axis')).filter(function (l) {
    return l.getAttribute('x1') === l.getAttribute('x2'); })[0];
  var line = function (name) {
    var p = c.querySelector('path.rt-line[data-series="' + name + '"]');
    return p ? p.getBBox().y : null; };
  var ticks = {};
  c.querySelectorAll('text.rt-ytick').forEach(function (t) {
    ticks[t.textContent] = +t.getAttribute('y') - 4; });
  var fit = c.querySelector('button.rt-fit-all');
  var svg = c.querySelector('svg').getBoundingClientRect(), box = c.getBoundingClientRect();
  return {top: +axis.getAttribute('y1'), floor: +axis.getAttribute('y2'),
    process: line('Process'), system: line('System'), ticks: ticks,
    unit: c.querySelector('text.rt-unit').textContent,
    above: Array.from(c.querySelectorAll('text.rt-above')).map(function (t) {
      var r = t.getBoundingClientRect();
      return {name: t.getAttribute('data-series'), value: +t.getAttribute('data-value'),
        text: t.textContent, fill: getComputedStyle(t).fill,
        inside: r.left >= svg.left && r.right <= svg.right && r.top >= svg.top &&
          r.bottom <= svg.bottom}; }),
    fit: fit && !fit.hidden ? fit.textContent : null,
    legend: c.querySelector('.rt-key[data-series="System"] .rt-val').textContent,
    box: {x: box.left + scrollX, y: box.top + scrollY, width: box.width, height: box.height}};
})()"""


@pytest.fixture(scope="module")
def held_run(tmp_path_factory):
    """(report path, the workload's RSS in MiB, the tracker's peaks in MiB: process, system,
    the tracker's snapshot) of a real child holding HELD_MIB MiB for HELD_SAMPLES samples.
    Beside it, untracked, a second child holds BALLAST_MIB MiB: whatever else the machine
    runs, it uses several times the workload's memory."""
    ballast = Workload(f"buf = touched({BALLAST_MIB})\nreport(held=True)\nsys.stdin.readline()")
    workload = Workload(HOLD)
    tracker = ResourceTracker(pid=workload.pid, interval=0.1, discover_cloud=False)
    try:
        ballast.go()
        assert ballast.read_report() == {"held": True}
        wait_for_baseline(tracker)
        workload.go()
        rss_mib = workload.read_report()["rss_kib"] / 1024
        taken = tracker._sampler.samples_taken
        deadline = time.monotonic() + 60
        while tracker._sampler.samples_taken < taken + HELD_SAMPLES:
            assert time.monotonic() < deadline, "the tracker took no samples"
            time.sleep(0.02)
        workload.send("done")
        workload.finish()
    finally:
        tracker.stop()
        workload.kill()
        ballast.kill()
    process = max(tracker.process_metrics["memory"]) / 1024
    system = max(tracker.system_metrics["memory_used"]) / 1024
    path = str(tmp_path_factory.mktemp("axis") / "report.html")
    tracker.report().save(path)
    return path, rss_mib, process, system, tracker.snapshot()


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


def _open(b, path, width, dark=False):
    b.viewport(width, 900, dark=dark)
    b.events.clear()
    b.load(f"file://{path}", READY)
    return b.eval(_MEMORY)


def _shot(b, path):
    """Saves a screenshot of the memory chart. Chromium's screenshot beyond the viewport
    drops the page's scroll bar, and the page reflows at the wider width: the box is taken
    again until it is the one the screenshot showed."""
    box = None
    for _ in range(5):
        last, box = box, b.eval(_MEMORY)["box"]
        if box == last:
            break
        b.screenshot(path, clip=box)


def _value_at(chart, y):
    """The axis' reading (in its unit) at height y, from two of its ticks."""
    (v0, y0), (v1, y1) = sorted(
        (float(text.replace(",", "")), ty) for text, ty in chart["ticks"].items()
    )[-2:]
    return v0 + (y - y0) * (v1 - v0) / (y1 - y0)


def _mib(value, unit):
    return value * 1024 if unit == "GiB" else value


@pytest.mark.parametrize(("width", "dark"), [(1280, False), (390, False), (390, True)])
def test_the_workload_fills_the_memory_axis_and_the_machine_is_named_above_it(
    browser, held_run, tmp_path_factory, width, dark
):
    path, rss_mib, process_mib, system_mib, _ = held_run
    # the tracker saw what the workload holds; the machine uses several times that
    assert 0.9 * rss_mib <= process_mib <= 1.3 * rss_mib, (rss_mib, process_mib)
    assert system_mib >= 3 * process_mib, (process_mib, system_mib)
    chart = _open(browser, path, width, dark)
    height = chart["floor"] - chart["top"]
    filled = (chart["floor"] - chart["process"]) / height
    artifacts = artifacts_dir(tmp_path_factory, "axis")
    shot = os.path.join(artifacts, f"memory-{width}{'-dark' if dark else ''}.png")
    _shot(browser, shot)
    assert filled >= 0.5, (filled, chart)
    # the process line's peak reads on the axis as the workload's own RSS
    peak = _mib(_value_at(chart, chart["process"]), chart["unit"])
    assert 0.85 * rss_mib <= peak <= 1.35 * rss_mib, (peak, rss_mib, chart)
    # the machine: above the axis, named at its top with its peak, in its colour, readable
    assert [a["name"] for a in chart["above"]] == ["System"], chart
    above = chart["above"][0]
    assert abs(above["value"] - system_mib) <= 0.01 * system_mib, (above, system_mib)
    # ... the figure its legend entry shows as the run's peak
    assert above["text"] == "↑ System, max " + chart["legend"].split(" · max ")[1], chart
    assert above["fill"] == SYSTEM_FILL[dark] and above["inside"], above
    assert chart["fit"] == "Fit all lines"
    # "Fit all lines": the machine's line on the axis, the process below half; and back
    browser.eval("document.querySelector('#rt-chart-memory button.rt-fit-all').click()")
    fitted = browser.eval(_MEMORY)
    assert fitted["above"] == [] and fitted["fit"] == "Fit the process", fitted
    assert fitted["system"] >= fitted["top"] - 0.5, fitted
    assert (fitted["floor"] - fitted["process"]) / height < 0.5, fitted
    _shot(browser, shot.replace(".png", "-fit-all.png"))
    browser.eval("document.querySelector('#rt-chart-memory button.rt-fit-all').click()")
    assert browser.eval(_MEMORY)["process"] == chart["process"]
    assert browser.console_errors() == []


def test_the_metaflow_card_of_a_step_that_asked_4_gib_fills_the_axis_too(
    browser, held_run, tmp_path
):
    """The card (the same renderer) of the run as a Metaflow step with Metaflow's default
    @resources(memory=4096): the ask, 13 times the step's use, is named above the axis with
    the machine; the process line still fills at least half the chart, at 390 px in dark."""
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        build_artifact,
    )

    snap = held_run[4]
    snap = dict(snap, extra={"integration": "Metaflow", "resources_asked": ASKED})
    data = build_artifact(ResourceTracker.from_snapshot(snap), None, failed=False, label="F/1/s/2")
    path = tmp_path / "card.html"
    path.write_text(card.render_artifact(data, label="F/1/s/2"), encoding="utf-8")
    chart = _open(browser, str(path), 390, dark=True)
    _shot(browser, str(tmp_path / "card-memory-390-dark.png"))
    assert (chart["floor"] - chart["process"]) / (chart["floor"] - chart["top"]) >= 0.5, chart
    assert [(a["name"], a["inside"]) for a in chart["above"]] == [
        ("System", True),
        ("asked (@resources)", True),
    ], chart
    assert chart["above"][1]["text"] == "↑ asked (@resources) 4 GiB", chart
    assert browser.console_errors() == []
