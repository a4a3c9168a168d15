"""Every state of the report at every width, light and dark, in a real headless Chromium (in
an empty network namespace where the machine allows it, and with the network flags of
report_browser): no horizontal overflow, no console error, no request but the page, the
answers (the recommendation and the cheapest server) in the first 800 px, no chart or tile
for hardware that is not there, and issue 27's layout nits (no empty slot where a row of
tiles wraps, no command word cut in two, no sideways scroll of the statistics table, "Reset
zoom" hidden until zoomed). A screenshot of the first screen of each state, width and
scheme is saved under $RESOURCE_TRACKER_TEST_ARTIFACTS/screenshots/ (CI can keep them), else
in the session's temporary directory, never in the working tree (the path is printed)."""

from __future__ import annotations

import os

import pytest
from report_browser import Browser, artifacts_dir, chromium_path
from report_states import build_states

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (make test installs it)"
)

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
WIDTHS = (375, 800, 1280, 2560)
#: the states whose run had no GPU: no GPU/VRAM chart, no GPU tile
NO_GPU = ("no-cloud-no-gpu", "real-workload")
#: the states with a catalog answer: the headline names a server
WITH_SERVER = ("full", "no-cloud-no-gpu", "failed-step", "24h", "real-workload")


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        return build_states(tmp_path_factory.mktemp("states"), mp)
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory):
    """The folder of the screenshots (made)."""
    return artifacts_dir(tmp_path_factory, "screenshots")


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


_LAYOUT = """(function () {
  function bottom(sel) {
    var e = document.querySelector(sel);
    return e ? e.getBoundingClientRect().bottom + window.scrollY : null;
  }
  return {
    scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
    rec: bottom('#rt-recommended'), server: bottom('#rt-best-server'),
    charts: Array.from(document.querySelectorAll('.rt-chart')).map(function (c) { return c.id; }),
    gpuTile: !!document.querySelector('#rt-tile-gpu'),
    problems: document.querySelectorAll('.rt-problem').length,
    bg: getComputedStyle(document.body).backgroundColor,
    slots: emptySlots(), broken: brokenWords(), usage: usageOverflow(),
    reset: resetShown()
  };
  /* rows of boxes that wrap: the last box of the last row ends where the row ends */
  function emptySlots() {
    var out = [];
    document.querySelectorAll('.rt-tiles, .rt-answers').forEach(function (row) {
      var last = row.lastElementChild;
      if (!last) { return; }
      var gap = row.getBoundingClientRect().right - last.getBoundingClientRect().right;
      if (gap > 1.5) { out.push(row.className + ' ' + Math.round(gap)); }
    });
    return out;
  }
  /* words of the command (header, Run) split over two lines though they fit on one */
  function brokenWords() {
    var run = document.getElementById('rt-run');
    if (run) { run.open = true; }
    var out = [];
    document.querySelectorAll('.rt-sub, .rt-cmd').forEach(function (box) {
      var walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT), node, m;
      while ((node = walk.nextNode())) {
        var words = /\\S+/g;
        while ((m = words.exec(node.data))) {
          var r = document.createRange();
          r.setStart(node, m.index);
          r.setEnd(node, m.index + m[0].length);
          var rects = Array.from(r.getClientRects()).filter(function (x) { return x.width > 0; });
          var wide = rects.reduce(function (a, x) { return a + x.width; }, 0);
          if (rects.length > 1 && wide < box.clientWidth - 4) { out.push(m[0]); }
        }
      }
    });
    if (run) { run.open = false; }
    return out;
  }
  /* the statistics table (opened) scrolls sideways by this many px */
  function usageOverflow() {
    var fold = document.getElementById('rt-usage');
    if (!fold) { return 0; }
    var was = fold.open;
    fold.open = true;
    var wrap = fold.querySelector('.rt-scroll');
    var over = wrap ? wrap.scrollWidth - wrap.clientWidth : 0;
    fold.open = was;
    return over;
  }
  function resetShown() {
    var b = document.getElementById('rt-reset');
    return !!b && getComputedStyle(b).display !== 'none';
  }
})()"""


def _check_state(b, name, path, width, dark, screenshots):
    b.viewport(width, 800, dark=dark)
    b.events.clear()
    b.load("file://" + path, READY)
    b.pump(0.1)
    got = b.eval(_LAYOUT)
    where = (name, width, "dark" if dark else "light")
    assert got["scroll"] <= got["inner"], (where, got)
    # layout nits (issue 27): no empty slot in a wrapped row of tiles, no command word cut
    # in two, no sideways scroll of the statistics, "Reset zoom" only when zoomed
    assert got["slots"] == [] and got["broken"] == [], (where, got)
    assert got["usage"] <= 0 and not got["reset"], (where, got)
    assert b.console_errors() == [], where
    assert b.requests() == ["file://" + path], where
    if name in WITH_SERVER:
        assert got["rec"] is not None and got["rec"] <= 800, (where, got)
        assert got["server"] is not None and got["server"] <= 800, (where, got)
    if name in NO_GPU:
        assert not got["gpuTile"], where
        assert "rt-chart-gpu" not in got["charts"] and "rt-chart-vram" not in got["charts"]
    # day and night: the page follows prefers-color-scheme
    assert got["bg"] == ("rgb(13, 17, 23)" if dark else "rgb(255, 255, 255)"), where
    shot = os.path.join(screenshots, f"{name}-{width}-{where[2]}.png")
    b.eval("window.scrollTo(0, 0)")
    b.screenshot(shot, clip={"x": 0, "y": 0, "width": width, "height": 800})
    return got


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_every_state_at_every_width(browser, states, dark, screenshots):
    for name, path in states.items():
        for width in WIDTHS:
            _check_state(browser, name, path, width, dark, screenshots)
    print(f"\n[report] screenshots of {len(states)} states x {len(WIDTHS)} widths: {screenshots}")


def test_states_say_each_problem_once(browser, states):
    b = browser
    b.viewport(1280, 800)
    b.load("file://" + states["offline"], READY)
    text = b.eval("document.body.innerText")
    assert text.count("No server prices") == 1 and text.count("catalog update") == 1
    assert b.eval("document.querySelectorAll('.rt-problem').length") == 1
    assert b.eval("document.querySelector('#rt-best-server')") is None
    b.load("file://" + states["failed-step"], READY)
    text = b.eval("document.body.innerText")
    assert "The step failed after 2 min 00 s" in text and "up to the failure" in text
    b.load("file://" + states["one-sample"], READY)
    text = b.eval("document.body.innerText")
    assert text.count("Not enough data") == 1
    assert b.eval("document.documentElement.getAttribute('data-rt-charts')") == "0"
    b.load("file://" + states["no-cloud-no-gpu"], READY)
    text = b.eval("document.body.innerText")
    # the machine has 2 vCPUs; one sample read 2.08: never shown above 2
    cpu = b.eval("document.querySelector('#rt-chart-cpu .rt-readout').textContent")
    assert cpu.endswith("max 2 cores"), cpu  # the legend: System ... max 2 cores
    assert "2.08" not in text
    b.load("file://" + states["full"], READY)
    insights = b.eval(
        "Array.from(document.querySelectorAll('#rt-insights li')).map(function (l) {"
        " return l.textContent; })"
    )
    assert [i.split(" ", 1)[0] for i in insights] == ["warning", "info"]
    assert b.eval("document.querySelector('#rt-recommended code').textContent") == (
        "@resources(cpu=1, memory=3072, gpu=1)"
    )


@pytest.mark.parametrize("width", [360, 500])
def test_server_table_fits_narrow_screens(browser, states, width, screenshots):
    """The fitting servers' table (opened) keeps its price column on screen."""
    b = browser
    b.viewport(width, 800)
    b.load("file://" + states["full"], READY)
    got = b.eval(
        "(function () { document.querySelector('#rt-servers').open = true;"
        " var t = document.querySelector('#rt-servers table');"
        " var cells = t.querySelectorAll('tbody tr td:last-child');"
        " return {right: Math.max.apply(null, Array.from(cells).map(function (c) {"
        "   return c.getBoundingClientRect().right; })), wrap: t.parentNode.scrollWidth,"
        "   box: t.parentNode.clientWidth, inner: innerWidth,"
        "   scroll: document.documentElement.scrollWidth}; })()"
    )
    assert got["right"] <= got["inner"] and got["wrap"] <= got["box"], got
    assert got["scroll"] <= got["inner"], got
    top = b.eval("document.querySelector('#rt-servers').getBoundingClientRect().top + scrollY")
    shot = os.path.join(screenshots, f"servers-table-{width}.png")
    b.screenshot(shot, clip={"x": 0, "y": top, "width": width, "height": 400})


def test_print_opens_the_statistics_and_the_run(browser, states):
    """On paper (a one- or two-page summary): the statistics and the run's details are
    printed open, the other folds as their one-line summary; the PDF is made offline."""
    b = browser
    b.viewport(1280, 800)
    b.load("file://" + states["full"], READY)
    opened = "Array.from(document.querySelectorAll('details.rt-fold[open]')).map(d => d.id)"
    assert b.eval(opened) == []
    pdf = b.call("Page.printToPDF", printBackground=False)["data"]
    assert len(pdf) > 10_000
    assert sorted(b.eval(opened)) == ["rt-run", "rt-usage"]
    assert b.console_errors() == []
