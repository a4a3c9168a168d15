"""The report's charts as people read them (issue 27), in one real headless Chromium (network
off, as report_browser sets it; time zone UTC so that midnight is where the test puts it):
the process tree's line over the machine's with min/max bands on a long run, legends with
min/mean/max that hide and show their line, one colour per meaning on every chart, GPU
utilisation in % and VRAM against the GPUs' memory, the ask and the container limit drawn
as lines, the date on the time axis of a run across midnight, the copy button, "Reset zoom"
only when zoomed, a flat disk chart drawn short, and print: a one- or two-page A4 / Letter
summary whose charts are redrawn for the paper (tick labels measured at their printed size).
Pages are real reports of snapshots (ResourceTracker.from_snapshot) and of one real tracked
workload; screenshots go under $RESOURCE_TRACKER_TEST_ARTIFACTS, else the test's temporary
directory (never the working tree)."""

from __future__ import annotations

import base64
import os
import re
from array import array

import pytest
from report_browser import Browser, artifacts_dir, chromium_path, png_pixels
from report_data import long_run_snapshot, tracked_xss_run
from report_states import NO_GPU_SERVER

from resource_tracker import ResourceTracker

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (make test installs it)"
)

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
MIDNIGHT = 1_790_035_200.0  # 2026-09-22 00:00:00 UTC
ASKED = {"cpu": 2.0, "memory": 4096.0, "source": "@resources"}
#: the page's colours of the two meanings (report.css, light): process blue, system orange
PROCESS_RGB, SYSTEM_RGB = (31, 111, 235), (188, 76, 0)
#: paper sizes (inches) and the content width in CSS px at the 12 mm margins report.css asks
PAPERS = {"A4": (8.27, 11.69), "Letter": (8.5, 11.0)}
MARGIN_IN = 12 / 25.4


def _shift(snap, start):
    """The snapshot moved in time to start at `start`."""
    delta = start - snap["start_time"]
    for table in ("process_metrics", "system_metrics"):
        ts = snap[table]["timestamp"]
        snap[table]["timestamp"] = array("d", (t + delta for t in ts))
    snap["start_time"] += delta
    snap["stop_time"] += delta
    return snap


def _asked_snapshot():
    """20 min at 1 s across midnight (UTC), a Metaflow step that asked for 2 CPUs and 4 GiB,
    in a container limited to 4 cores and 16 GiB (report_data.SERVER_INFO); the disk's use
    does not change."""
    snap = _shift(long_run_snapshot(rows=1200), MIDNIGHT - 600)
    snap["extra"] = {"integration": "Metaflow", "resources_asked": dict(ASKED)}
    rows = len(snap["system_metrics"]["timestamp"])
    snap["system_metrics"]["disk_space_used_gb"] = array("d", [120.0]) * rows
    snap["system_metrics"]["disk_space_free_gb"] = array("d", [380.0]) * rows
    return snap


#: an ask as a damaged or hand-made snapshot may hold it: markup, text, a number as text
ODD_ASK = {"cpu": "3", "memory": "lots", "source": "<b>@resources</b>"}


def _no_limits_snapshot():
    """No cgroup limit, and an odd ask (ODD_ASK)."""
    snap = long_run_snapshot(rows=300)
    snap["server_info"] = NO_GPU_SERVER
    snap["extra"] = {"resources_asked": dict(ODD_ASK)}
    return snap


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: path}: 'asked' (above), 'long' (6 h at 1 s: drawn as min/max pairs),
    'no-limits' (no ask, no cgroup limit) and 'real' (a real tracked workload)."""
    folder = tmp_path_factory.mktemp("charts")
    trackers = {
        "asked": ResourceTracker.from_snapshot(_asked_snapshot()),
        "long": ResourceTracker.from_snapshot(long_run_snapshot(rows=6 * 3600)),
        "no-limits": ResourceTracker.from_snapshot(_no_limits_snapshot()),
        "real": tracked_xss_run(),
    }
    return {name: t.report().save(folder / f"{name}.html") for name, t in trackers.items()}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    return artifacts_dir(tmp_path_factory, "charts")


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        b.call("Emulation.setTimezoneOverride", timezoneId="UTC")
        yield b


def _open(b, path, width=1280, dark=False):
    b.viewport(width, 900, dark=dark)
    b.events.clear()
    b.load("file://" + path, READY)
    return b


def _center(b, selector):
    """The viewport coordinates of an element's centre (scrolled into view)."""
    r = b.eval(
        f"(function () {{ var e = document.querySelector({selector!r}); "
        "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect(); "
        "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
    )
    return r


def _click(b, selector):
    x, y = _center(b, selector)
    b.mouse("mousePressed", x, y, buttons=1, button="left", click_count=1)
    b.mouse("mouseReleased", x, y, button="left", click_count=1)


def _drag(b, selector, f0, f1):
    r = b.eval(
        f"(function () {{ var e = document.querySelector({selector!r}); "
        "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect(); "
        "return [r.left, r.top, r.width, r.height]; })()"
    )
    x0, x1, y = r[0] + r[2] * f0, r[0] + r[2] * f1, r[1] + r[3] / 2
    b.mouse("mousePressed", x0, y, buttons=1, button="left", click_count=1)
    b.mouse("mouseMoved", (x0 + x1) / 2, y, buttons=1)
    b.mouse("mouseMoved", x1, y, buttons=1)
    b.mouse("mouseReleased", x1, y, button="left", click_count=1)


def _pixels_near(b, selector, rgb, tolerance=30):
    """How many pixels of the element's screenshot are within `tolerance` of colour rgb."""
    r = b.eval(
        f"(function () {{ var e = document.querySelector({selector!r}); "
        "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect(); "
        "return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()"
    )
    png = b.settled_screenshot(r)
    return sum(all(abs(p[i] - rgb[i]) <= tolerance for i in range(3)) for p in png_pixels(png))


_LINES = """Array.from(document.querySelectorAll('.rt-chart')).map(function (c) {
  return {id: c.id, lines: Array.from(c.querySelectorAll('path.rt-line')).map(function (p) {
    return {name: p.getAttribute('data-series'), role: p.getAttribute('data-role'),
            stroke: getComputedStyle(p).stroke}; }),
          bands: Array.from(c.querySelectorAll('path.rt-band')).map(function (p) {
    return getComputedStyle(p).fill; })}; })"""


def test_process_drawn_over_system_with_bands_one_colour_per_meaning(browser, pages):
    b = _open(browser, pages["long"])
    charts = b.eval(_LINES)
    strokes = {"process": set(), "system": set()}
    for chart in charts:
        roles = [line["role"] for line in chart["lines"]]
        if "process" in roles and "system" in roles:  # the process tree on top
            last_system = max(i for i, r in enumerate(roles) if r == "system")
            assert last_system < roles.index("process"), chart
        # 6 h at 1 s is drawn as each interval's lowest and highest: one band per line
        assert len(chart["bands"]) == len(chart["lines"]), chart
        for line in chart["lines"]:
            if line["role"] in strokes:
                strokes[line["role"]].add(line["stroke"])
    assert strokes["process"] == {"rgb(31, 111, 235)"}, strokes
    assert strokes["system"] == {"rgb(188, 76, 0)"}, strokes
    # the process line shows through the machine's band (pixels of its colour on the chart)
    assert _pixels_near(b, "#rt-chart-cpu svg", PROCESS_RGB) > 200
    # the same meaning, the same (dark) colour in dark mode too
    b = _open(browser, pages["long"], dark=True)
    dark = {line["role"]: line["stroke"] for c in b.eval(_LINES) for line in c["lines"]}
    assert dark["process"] == "rgb(68, 147, 248)" and dark["system"] == "rgb(219, 109, 40)"
    assert b.console_errors() == []
    # a run short enough to draw every sample: lines, no bands
    b = _open(browser, pages["asked"])
    assert all(not c["bands"] for c in b.eval(_LINES))


def test_legend_toggles_its_line_and_shows_min_mean_max(browser, pages, artifacts):
    b = _open(browser, pages["long"])
    sel = '#rt-chart-cpu .rt-key[data-series="System"]'
    drawn = "document.querySelector('#rt-chart-cpu svg').outerHTML"
    before, svg_before = _pixels_near(b, "#rt-chart-cpu svg", SYSTEM_RGB), b.eval(drawn)
    b.screenshot(os.path.join(artifacts, "cpu-legend-both.png"), clip=_box(b, "#rt-chart-cpu"))
    _click(b, sel)
    assert b.eval(f"document.querySelector({sel!r}).getAttribute('aria-pressed')") == "false"
    names = b.eval(
        "Array.from(document.querySelectorAll('#rt-chart-cpu path.rt-line'))"
        ".map(function (p) { return p.getAttribute('data-series'); })"
    )
    assert names == ["Process"]
    after = _pixels_near(b, "#rt-chart-cpu svg", SYSTEM_RGB)
    b.screenshot(os.path.join(artifacts, "cpu-legend-hidden.png"), clip=_box(b, "#rt-chart-cpu"))
    assert before > 200 and after == 0, (before, after)
    _click(b, sel)  # and back: the same drawing, the same pixels
    assert b.eval(drawn) == svg_before
    assert _pixels_near(b, "#rt-chart-cpu svg", SYSTEM_RGB) == before
    # the legend: min, mean and max in view; the whole run's mean and peak read as the
    # statistics table has them
    legend = b.eval(
        "document.querySelector('#rt-chart-cpu .rt-key[data-series=\"Process\"] .rt-val')"
        ".textContent"
    )
    m = re.fullmatch(r"min (.+) · mean (.+) · max (.+)", legend)
    assert m, legend
    table = b.eval(
        "Object.fromEntries(Array.from(document.querySelectorAll('#rt-usage tbody tr'))"
        ".map(function (r) { return [r.cells[0].textContent, r.cells[1].textContent]; }))"
    )
    assert m.group(2) == table["Process CPU usage, mean"], (legend, table)
    assert m.group(3) == table["Process CPU usage, peak"], (legend, table)
    # zoomed in: the figures of the view; a mean of min/max pairs says it is approximate
    _drag(b, "#rt-chart-cpu svg", 0.3, 0.4)
    zoomed = b.eval(
        "document.querySelector('#rt-chart-cpu .rt-key[data-series=\"Process\"] .rt-val')"
        ".textContent"
    )
    assert zoomed != legend and " · mean ≈" in zoomed, zoomed


def test_a_resize_that_keeps_the_width_redraws_nothing(browser, pages):
    """The charts take their size from the page's width: a resize of the height alone (a
    phone's address bar hiding as the page scrolls) leaves every drawn line in place; a new
    width redraws them at that width."""
    b = _open(browser, pages["long"])
    line = "document.querySelector('#rt-chart-cpu path.rt-line')"
    width = "document.querySelector('#rt-chart-cpu svg').getAttribute('width')"
    b.resized(1280, 700)  # (any resize the load armed has run by then)
    b.eval(f"window.rtLine = {line}; true")
    wide = b.eval(width)
    b.resized(1280, 600)
    assert b.eval("document.contains(window.rtLine)")
    b.resized(900, 600)
    assert not b.eval("document.contains(window.rtLine)")
    assert b.eval(width) != wide  # (two columns of charts at 1280 px, one at 900)


def _box(b, selector):
    return b.eval(
        f"(function () {{ var r = document.querySelector({selector!r}).getBoundingClientRect();"
        " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};"
        " })()"
    )


_MARKS = """(function (id) {
  var c = document.getElementById(id);
  if (!c) { return null; }
  var ticks = {};
  c.querySelectorAll('text.rt-ytick').forEach(function (t) {
    ticks[t.textContent] = +t.getAttribute('y') - 4; });
  return {ticks: ticks, unit: c.querySelector('text.rt-unit').textContent,
    names: Array.from(c.querySelectorAll('path.rt-line')).map(function (p) {
      return p.getAttribute('data-series'); }),
    marks: Array.from(c.querySelectorAll('line.rt-mark')).map(function (l) {
      return {name: l.getAttribute('data-series'), value: +l.getAttribute('data-value'),
              y: +l.getAttribute('y1')}; }),
    labels: Array.from(c.querySelectorAll('text.rt-mark-label')).map(function (t) {
      return t.textContent; }),
    above: Array.from(c.querySelectorAll('text.rt-above')).map(function (t) {
      return t.textContent; })};
})"""


def _fit_all(b, chart):
    """Clicks the chart's "Fit all lines": its axis taken to every line and mark."""
    _click(b, f"#rt-chart-{chart} button.rt-fit-all")
    assert b.eval(f"document.querySelector('#rt-chart-{chart} button.rt-fit-all').textContent") == (
        "Fit the process"
    )


def _marks(b, chart):
    return b.eval(f"{_MARKS}('rt-chart-{chart}')")


def test_ask_and_container_limit_drawn_on_cpu_and_memory(browser, pages, artifacts):
    b = _open(browser, pages["asked"])
    # the axis is the workload's (CPU peak 2 cores, memory 2.86 GiB): the ask of 2 cores
    # near it is drawn; the limits and the 4 GiB ask far above it are named at its top
    cpu = _marks(b, "cpu")
    assert [m["name"] for m in cpu["marks"]] == ["asked (@resources)"], cpu
    assert cpu["above"] == ["↑ container limit 4 cores"], cpu
    memory = _marks(b, "memory")
    assert memory["marks"] == [], memory
    assert memory["above"] == [
        "↑ System, max 6.67 GiB",
        "↑ asked (@resources) 4 GiB",
        "↑ container limit 16 GiB",
    ], memory
    # "Fit all lines": every mark on the axis, at its height
    _fit_all(b, "cpu")
    _fit_all(b, "memory")
    cpu = _marks(b, "cpu")
    assert cpu["above"] == [], cpu
    assert {m["name"]: m["value"] for m in cpu["marks"]} == {
        "asked (@resources)": 2.0,
        "container limit": 4.0,
    }
    # drawn at their height on the axis: the lines sit on the ticks 2 and 4 (cores)
    for m in cpu["marks"]:
        assert abs(m["y"] - cpu["ticks"][f"{m['value']:g}"]) < 0.6, cpu
    memory = _marks(b, "memory")
    assert {m["name"]: m["value"] for m in memory["marks"]} == {
        "asked (@resources)": 4096.0,
        "container limit": 16384.0,
    }
    assert "container limit 16 GiB" in memory["labels"] and memory["above"] == [], memory
    b.screenshot(os.path.join(artifacts, "asked-and-limit.png"), clip=_box(b, "#rt-chart-grid"))
    # no limit; of the odd ask only the number is drawn, its source shown as text
    b = _open(browser, pages["no-limits"])
    cpu = _marks(b, "cpu")
    assert cpu["above"] == ["↑ asked (<b>@resources</b>) 3 cores"], cpu
    _fit_all(b, "cpu")
    cpu = _marks(b, "cpu")
    assert [(m["name"], m["value"]) for m in cpu["marks"]] == [("asked (<b>@resources</b>)", 3.0)]
    assert cpu["labels"] == ["asked (<b>@resources</b>) 3 cores"]
    assert _marks(b, "memory")["marks"] == []
    assert b.eval("document.querySelectorAll('#rt-charts b').length") == 0
    assert b.console_errors() == []


def test_gpu_in_percent_and_vram_against_the_gpus_memory(browser, pages):
    b = _open(browser, pages["long"])
    gpu = _marks(b, "gpu")
    # utilisation in % of the GPU (the snapshot's process peak: 0.8 GPUs of 1), and the
    # count of GPUs in use is not drawn on the same axis
    assert gpu["unit"] == "%" and sorted(gpu["names"]) == ["Process", "System"], gpu
    legend = b.eval(
        "document.querySelector('#rt-chart-gpu .rt-key[data-series=\"Process\"]').textContent"
    )
    assert legend.endswith("max 80%"), legend
    # the GPUs' 15 GiB far above the process's 4.88 GiB peak: named at the axis' top; on it
    # with "Fit all lines"
    vram = _marks(b, "vram")
    assert vram["marks"] == [] and vram["above"] == ["↑ GPU memory 15 GiB"], vram
    _fit_all(b, "vram")
    vram = _marks(b, "vram")
    assert vram["marks"] == [{"name": "GPU memory", "value": 15360.0, "y": vram["marks"][0]["y"]}]
    assert vram["labels"] == ["GPU memory 15 GiB"]
    assert vram["marks"][0]["y"] == pytest.approx(vram["ticks"]["15"], abs=0.6)


@pytest.fixture(scope="module")
def nvml_run(tmp_path_factory):
    """A real tracked process on two GPUs of the NVML stand-in (tests/gpu_cloud/nvml_stub.c,
    through the real dlopen path): GPU 0 16 GiB, 1024 MiB used, at 25 %; GPU 1 24 GiB, 2048 MiB
    used, at 40 %; the tracked process on GPU 1 at 40 % (0.4 GPUs), the machine 0.65 GPUs.
    {"tracker": the stopped tracker, "page": its report, "folder": a folder for more pages}."""
    import shutil
    import subprocess
    import sys

    if shutil.which("gcc") is None:
        pytest.skip("needs gcc for the NVML stand-in")
    folder = tmp_path_factory.mktemp("nvml")
    stub = str(folder / "libnvidia-ml-stub.so.1")
    source = os.path.join(os.path.dirname(__file__), "..", "gpu_cloud", "nvml_stub.c")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-o", stub, source],
                   check=True)  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    control = folder / "control"
    control.write_text(f"tree_pid={proc.pid}\nother_pid=1\nmode=\n")
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("NVML_STUB_CONTROL", str(control))
        mp.setenv("RESOURCE_TRACKER_NVML_LIBRARY", stub)
        tracker = ResourceTracker(pid=proc.pid, interval=0.05, discover_cloud=False)
        try:
            assert tracker.wait_for_samples(5, 10.0)
        finally:
            tracker.stop()
        page = tracker.report().save(folder / "gpu.html")  # server_info read with the stub
        return {"tracker": tracker, "page": page, "folder": folder}
    finally:
        mp.undo()
        proc.kill()
        proc.wait()


#: what the NVML stand-in reports for its two GPUs: (name, total MiB, utilisation %, used MiB)
STUB_GPUS = [("Stub NVML GPU 0", 16384.0, 25.0, 1024.0), ("Stub NVML GPU 1", 24576.0, 40.0, 2048.0)]


def _gpu_figures(tracker):
    """[(index, name, total MiB, set of utilisations, set of used MiB, rows)] of a run."""
    return [
        (d["index"], d["name"], d["memory_total_mib"], set(d["utilization"]),
         set(d["memory_used_mib"]), len(d["utilization"]))
        for d in tracker._gpu_devices()
    ]  # fmt: skip


def test_per_gpu_series_are_what_nvml_reported_and_survive_a_snapshot(nvml_run):
    """One utilisation and memory series per GPU, one value per system sample, equal to the
    stand-in's figures; snapshot()/from_snapshot() and dumps()/loads() keep them."""
    tracker = nvml_run["tracker"]
    rows = len(tracker.system_metrics)
    assert rows >= 5
    expected = [(i, name, total, {util}, {used}, rows)
                for i, (name, total, util, used) in enumerate(STUB_GPUS)]  # fmt: skip
    assert _gpu_figures(tracker) == expected
    # bounded: 8 bytes a value, 2 values a GPU a sample (nothing more is kept)
    assert all(d["utilization"].nbytes == 8 * rows for d in tracker._gpu_devices())
    for loaded in (
        ResourceTracker.from_snapshot(tracker.snapshot()),
        ResourceTracker.loads(tracker.dumps()),
    ):
        assert _gpu_figures(loaded) == expected


def test_hostile_per_gpu_series_are_refused_by_name(nvml_run):
    snap = nvml_run["tracker"].snapshot()
    rows = len(nvml_run["tracker"].system_metrics)
    bad = {
        "gpu_devices": ("x", "gpu_devices must be a list"),
        "gpu_devices[0]": (["x"], "gpu_devices[0] must be an object"),
        "index": ([dict(snap["gpu_devices"][0], index=99)], "gpu_devices[0].index must be"),
        "twice": ([snap["gpu_devices"][0]] * 2, "gpu_devices[1].index must be"),
        "name": ([dict(snap["gpu_devices"][0], name=7)], "gpu_devices[0].name must be"),
        "total": ([dict(snap["gpu_devices"][0], memory_total_mib="16 GiB")],
                  "gpu_devices[0].memory_total_mib must be"),
        "short": ([dict(snap["gpu_devices"][0], utilization=[25.0])],
                  f"gpu_devices[0].utilization must be {rows} float64 values"),
        "over": ([dict(snap["gpu_devices"][0], utilization=[25.0] * (rows - 1) + [1e300])],
                 "gpu_devices[0].utilization must be values from 0 to 100"),
        "text": ([dict(snap["gpu_devices"][0], memory_used_mib="not base64!")],
                 "gpu_devices[0].memory_used_mib must be"),
    }  # fmt: skip
    for value, message in bad.values():
        with pytest.raises(ValueError, match=re.escape(message)):
            ResourceTracker.from_snapshot(dict(snap, gpu_devices=value))
    # older snapshots (no key) load, with no per-GPU series
    old = {k: v for k, v in snap.items() if k != "gpu_devices"}
    assert ResourceTracker.from_snapshot(old)._gpu_devices() == []


def _gpu_legend(b):
    return b.eval(
        "Array.from(document.querySelectorAll('#rt-chart-gpu .rt-key')).map(function (k) {"
        " return [k.getAttribute('data-series'), k.querySelector('.rt-val').textContent]; })"
    )


def test_gpu_chart_of_a_real_run_draws_one_line_per_gpu(browser, nvml_run, artifacts):
    """Utilisation in % of each GPU as nvidia-smi shows it (25 % and 40 %: one line each,
    named by number and name, at its height on the axis), and the process's 40 % on one of
    two GPUs (20 % of them); VRAM against their 40 GiB."""
    b = _open(browser, nvml_run["page"])
    title = b.eval("document.querySelector('#rt-chart-gpu h3').textContent")
    assert title == "GPU utilisation (per GPU)"
    assert _gpu_legend(b) == [
        ["Process (of all GPUs)", "20%"],
        ["GPU 0 · Stub NVML GPU 0", "25%"],
        ["GPU 1 · Stub NVML GPU 1", "40%"],
    ]  # flat: one figure each
    gpu = _marks(b, "gpu")
    assert gpu["unit"] == "%", gpu
    # each line at its figure on the axis (the last point's height): GPU 0's 25 % on the 25
    # tick, GPU 1's 40 % above it, the process's 20 % below
    ys = b.eval(
        "Array.from(document.querySelectorAll('#rt-chart-gpu path.rt-line')).map(function (p) {"
        " return [p.getAttribute('data-series'), +p.getAttribute('d').match(/,?([0-9.]+)$/)[1]];"
        " })"
    )
    y = dict(ys)
    assert sorted(y) == ["GPU 0 · Stub NVML GPU 0", "GPU 1 · Stub NVML GPU 1",
                         "Process (of all GPUs)"], ys  # fmt: skip
    zero, y25 = gpu["ticks"]["0"], gpu["ticks"]["25"]
    assert y["GPU 0 · Stub NVML GPU 0"] == pytest.approx(y25, abs=1.0), (ys, gpu)
    assert y["GPU 1 · Stub NVML GPU 1"] == pytest.approx(zero - (zero - y25) * 40 / 25, abs=1.0)
    assert y["Process (of all GPUs)"] == pytest.approx(zero - (zero - y25) * 20 / 25, abs=1.0)
    vram = _marks(b, "vram")
    assert vram["above"] == ["↑ System, max 3 GiB", "↑ GPU memory 40 GiB"], vram
    _fit_all(b, "vram")
    vram = _marks(b, "vram")
    assert [(m["name"], m["value"]) for m in vram["marks"]] == [("GPU memory", 40960.0)]
    assert vram["labels"] == ["GPU memory 40 GiB"]
    b.screenshot(os.path.join(artifacts, "gpu-two-stub-gpus.png"), clip=_box(b, "#rt-chart-gpu"))
    assert b.console_errors() == []


def test_gpu_chart_without_per_gpu_series_shows_the_mean(browser, nvml_run):
    """A run stored without per-GPU series (an older snapshot): the mean over the machine's
    two GPUs (nvidia-smi's 25 % and 40 %: 32.5 %; the process's 40 % on one of two: 20 %)."""
    snap = nvml_run["tracker"].snapshot()
    del snap["gpu_devices"]
    page = ResourceTracker.from_snapshot(snap).report().save(nvml_run["folder"] / "old.html")
    b = _open(browser, page)
    title = b.eval("document.querySelector('#rt-chart-gpu h3').textContent")
    assert title == "GPU utilisation (mean of 2 GPUs)"
    assert _gpu_legend(b) == [["Process", "20%"], ["System", "32.5%"]]
    assert b.console_errors() == []


def _ticks(b, chart):
    return b.eval(
        f"Array.from(document.querySelectorAll('#rt-chart-{chart} text.rt-xtick'))"
        ".map(function (t) { return t.textContent; })"
    )


def test_time_axis_dates_a_run_across_midnight(browser, pages):
    b = _open(browser, pages["asked"])  # 23:50 to 00:10 (UTC)
    ticks = _ticks(b, "cpu")
    assert ticks[0].startswith("Sep 21 23:5"), ticks
    assert "Sep 22 00:00" in ticks, ticks
    assert all(re.fullmatch(r"\d\d:\d\d", t) for t in ticks[1:] if not t.startswith("Sep")), ticks
    b = _open(browser, pages["long"])  # 14:13 to 20:13 the same day: times, the day once
    ticks = _ticks(b, "cpu")
    assert ticks and all(re.fullmatch(r"\d\d:\d\d", t) for t in ticks), ticks
    caption = b.eval("document.querySelector('#rt-chart-cpu text.rt-caption').textContent")
    assert caption.startswith("Sep 21, local time"), caption


def test_copy_button_reset_zoom_and_a_flat_disk_chart(browser, pages):
    b = _open(browser, pages["asked"])
    b.browser_call("Browser.grantPermissions", permissions=["clipboardReadWrite"])
    line = b.eval("document.querySelector('#rt-recommended code').textContent")
    assert line.startswith("@resources(")
    _click(b, "#rt-recommended button.rt-copy")
    state = "document.querySelector('#rt-recommended .rt-copy').getAttribute('data-copied')"
    for _ in range(200):  # the clipboard answers asynchronously (a promise)
        if b.eval(state):
            break
        b.pump(0.025)
    assert b.eval(state) == "yes"
    assert b.eval("document.querySelector('#rt-recommended .rt-copy').textContent") == "Copied"
    copied = b.call(
        "Runtime.evaluate",
        expression="navigator.clipboard.readText()",
        awaitPromise=True,
        returnByValue=True,
    )
    assert copied["result"]["value"] == line
    # "Reset zoom": a styled button, shown only while zoomed
    shown = "getComputedStyle(document.getElementById('rt-reset')).display !== 'none'"
    assert b.eval(shown) is False
    full = b.eval("document.documentElement.getAttribute('data-rt-view')")
    _drag(b, "#rt-chart-memory svg", 0.3, 0.6)
    assert b.eval(shown) is True
    assert b.eval("getComputedStyle(document.getElementById('rt-reset')).borderRadius") == "6px"
    _click(b, "#rt-reset")
    assert b.eval(shown) is False
    assert b.eval("document.documentElement.getAttribute('data-rt-view')") == full
    # the disk's use did not change: a short panel; the long run's disk fills up: full size
    flat = "(function () { var c = document.getElementById('rt-chart-diskspace');"
    flat += " return [c.classList.contains('rt-chart-flat'), c.querySelector('svg')"
    flat += ".getBoundingClientRect().height]; })()"
    is_flat, height = b.eval(flat)
    assert is_flat and height < 110, height
    b = _open(browser, pages["long"])
    is_flat, height = b.eval(flat)
    assert not is_flat and height > 200, height
    assert b.console_errors() == []


_PRINTED = """window.__printed = null;
window.addEventListener('beforeprint', function () {
  window.__printed = Array.from(document.querySelectorAll('.rt-chart svg')).map(function (s) {
    var t = s.querySelector('text');
    return [s.parentNode.id, s.viewBox.baseVal.width, parseFloat(getComputedStyle(t).fontSize)];
  });
});"""

_PRINT_LAYOUT = """(function () {
  var out = {}, copy = document.querySelector('.rt-copy');
  document.querySelectorAll('.rt-chart svg').forEach(function (s) {
    out[s.parentNode.id] = s.getBoundingClientRect().width; });
  return {widths: out, scroll: document.documentElement.scrollWidth, inner: innerWidth,
    help: getComputedStyle(document.querySelector('.rt-help')).display,
    copy: copy ? getComputedStyle(copy).display : 'missing'};
})()"""


def _pages(pdf):
    return len(re.findall(rb"/Type\s*/Page\b", pdf))


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_print_is_a_two_page_summary_with_readable_charts(browser, pages, paper, artifacts):
    """Printed from the page as seen on a screen (1280 px): at most two pages, and every
    chart redrawn for its printed column, so its tick labels print at >= 7.5 pt (10 CSS px:
    96 px to the inch, 72 pt)."""
    width_in, height_in = PAPERS[paper]
    content_px = (width_in - 2 * MARGIN_IN) * 96
    for name in ("real", "asked"):  # the 20 s run; a GPU run with ask and limits
        b = _open(browser, pages[name])
        b.eval(_PRINTED)
        pdf = b.call(
            "Page.printToPDF",
            paperWidth=width_in,
            paperHeight=height_in,
            **{f"margin{side}": MARGIN_IN for side in ("Top", "Bottom", "Left", "Right")},
            timeout=60,
        )["data"]
        pdf = base64.b64decode(pdf)
        with open(os.path.join(artifacts, f"{name}-{paper}.pdf"), "wb") as f:
            f.write(pdf)
        printed = b.eval("window.__printed")
        assert printed, "no beforeprint"
        # the printed layout (print media at the paper's content width): each chart's box
        b.viewport(int(content_px), 1000, media="print")
        got = b.eval(_PRINT_LAYOUT)
        assert got["scroll"] <= got["inner"], got
        for chart_id, drawn_width, font_px in printed:
            rendered = font_px * got["widths"][chart_id] / drawn_width
            assert rendered * 0.75 >= 7.5, (name, paper, chart_id, rendered)
        assert 1 <= _pages(pdf) <= 2, (name, paper, _pages(pdf))
        assert got["help"] == "none" and got["copy"] == "none", got  # no hover/drag help
        if name == "asked":
            height = b.eval("document.documentElement.scrollHeight")
            clip = {"x": 0, "y": 0, "width": int(content_px), "height": height}
            b.screenshot(os.path.join(artifacts, f"print-{paper}.png"), clip=clip)
        b.viewport(1280, 900)
    assert b.console_errors() == []


def test_card_banner_stays_in_the_content_column(browser, tmp_path):
    """A Metaflow card's tuning banner sits inside the report's content column at 2560 px."""
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        build_artifact,
    )

    tracker = ResourceTracker.from_snapshot(_asked_snapshot())
    data = build_artifact(tracker, None, failed=False, label="Flow/1/train/2")
    data["tuning"] = {"changes": ["memory 4096 -> 3072 MiB"], "note": "from 3 earlier runs"}
    path = tmp_path / "card.html"
    path.write_text(card.render_artifact(data, label="Flow/1/train/2"), encoding="utf-8")
    b = _open(browser, str(path), width=2560)
    got = b.eval(
        "(function () { var p = document.querySelector('main.rt-page').getBoundingClientRect();"
        " var s = document.querySelector('[role=status]').getBoundingClientRect();"
        " return [p.left, p.right, s.left, s.right]; })()"
    )
    page_left, page_right, left, right = got
    assert page_right - page_left < 2000 and page_left <= left and right <= page_right, got
    assert b.console_errors() == []
