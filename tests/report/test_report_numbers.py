"""One value per figure (issue 27): every place a page shows the peak memory, the duration,
the peak and the mean CPU (headline tiles, statistics and run tables, chart legends, the
findings' and the failure note's sentences) reads the same text, the formatter's text of the
run summary's value; the visible text keeps the documented number style; the CLI's summary
says what the report says. Pages: a 6 h run with phases, a GPU, a container limit, an ask and
four earlier runs (finished, and as a failed Metaflow step), and a real short run through
`resource-tracker run`, all read back in headless Chromium."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from report_browser import Browser, chromium_path
from report_data import WORKLOAD
from report_numbers import PROBE_JS, figures, six_hour_tracker, text_problems

from resource_tracker import formatting as fmt
from resource_tracker.report import render_report

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (make test installs it)"
)

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
OPEN_ALL = "document.querySelectorAll('details').forEach(function (d) { d.open = true; }); 1"


def _cli_run(directory):
    """A real short run through the CLI: (its stderr summary, the report it wrote)."""
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", "--interval", "0.1", "-o",
         str(directory), "-f", "html", "--", sys.executable, "-c", WORKLOAD],
        input="go\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr, os.path.join(str(directory), "resource-tracker.html")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: (path, summary or None, CLI stderr or None)}, read in one Chromium."""
    out = {}
    root = tmp_path_factory.mktemp("numbers")
    for name, failed in (("six-hours", False), ("failed-step", True)):
        tracker = six_hour_tracker(failed=failed)
        summary = tracker.summary()
        page = render_report(tracker, summary=summary, integration="Metaflow")
        out[name] = (page.save(str(root / f"{name}.html")), summary, None)
    stderr, path = _cli_run(root / "cli")
    out["cli-run"] = (path, None, stderr)
    return out


@pytest.fixture(scope="module")
def read(pages):
    """{name: (figures, visible text)} of each page, rendered in Chromium."""
    found = {}
    with Browser() as b:
        for name, (path, _, _) in pages.items():
            b.load("file://" + path, READY)
            probed = b.eval(PROBE_JS)
            b.eval(OPEN_ALL)
            found[name] = (figures(probed), b.eval("document.body.innerText"))
        assert b.console_errors() == []
    return found


@pytest.mark.parametrize("name", ["six-hours", "failed-step", "cli-run"])
def test_one_value_per_quantity_per_page(read, name):
    shown, _ = read[name]
    assert {"duration", "peak_memory", "peak_cpu", "mean_cpu"} <= set(shown)
    for quantity, places in shown.items():
        if quantity in ("legend", "axis"):
            continue
        assert len(set(places.values())) == 1, (quantity, places)
    # read in the tiles, the tables and the legends, not in one place only
    assert len(shown["peak_memory"]) >= 3 and len(shown["duration"]) >= 3, shown


def test_the_figures_are_the_formatters_text_of_the_summary(read, pages):
    shown, _ = read["six-hours"]
    summary = pages["six-hours"][1]
    memory = summary.row("process_memory", "max").value
    expected = {
        "peak_memory": fmt.quantity(memory, "KiB"),
        "duration": fmt.duration(summary.duration),
        "mean_cpu": fmt.quantity(summary.row("process_cpu_usage", "mean").value, "cores"),
        # sampling jitter read above the machine's vCPUs is shown as the vCPUs, everywhere
        "peak_cpu": fmt.quantity(min(summary.row("process_cpu_usage", "max").value, 8), "cores"),
    }
    assert {k: set(shown[k].values()) for k in expected} == {k: {v} for k, v in expected.items()}
    # the findings state the figures too (the change against the history)
    assert "finding (changed)" in shown["peak_memory"] and "finding (changed)" in shown["duration"]


def test_a_finding_states_the_change_the_history_table_shows(read):
    _, text = read["six-hours"]
    for label, row in (("Peak memory", "Process memory usage, peak"), ("Duration", "Duration")):
        finding = re.search(rf"{label} ([+-]\d+%) against the last 4 runs", text)
        table = re.search(rf"\n{re.escape(row)}\t[^\t]+\t[^\t]+\t([+-]\d+%)", text)
        assert finding and table, (label, text)
        assert finding.group(1) == table.group(1)


@pytest.mark.parametrize("name", ["six-hours", "failed-step", "cli-run"])
def test_visible_text_keeps_the_number_style(read, name):
    _, text = read[name]
    assert text_problems(text) == []
    assert "(no cloud_info)" not in text and "Discovery took" not in text
    assert "--datastore" not in text and "procfs)" not in text


def test_a_failed_step_says_why_and_marks_its_recommendation(read):
    _, text = read["failed-step"]
    # the exception's type and message, escaped (the markup shows as text) and printable
    assert "failed after 6 h 00 min with ValueError: bad <input> row 42: expected 3" in text
    assert "\x1b" not in text and "[31m" not in text
    assert "cut short by its failure" in text
    _, finished = read["six-hours"]
    assert "cut short" not in finished and "ValueError" not in finished


def test_the_cli_summary_says_what_the_report_says(read, pages):
    shown, _ = read["cli-run"]
    stderr = pages["cli-run"][2]
    cpu = re.search(r"CPU\s+mean (.+?), peak (.+?) \(", stderr)
    memory = re.search(r"memory\s+peak (.+?) \(", stderr)
    duration = re.search(r"duration\s+(.+?), ", stderr)
    assert cpu and memory and duration, stderr
    said = {"mean_cpu": cpu.group(1), "peak_cpu": cpu.group(2),
            "peak_memory": memory.group(1), "duration": duration.group(1)}  # fmt: skip
    assert {k: set(shown[k].values()) for k in said} == {k: {v} for k, v in said.items()}


_SMALLEST = ("B", "B/s", "core", "cores", "GPU", "GPUs", "%")
_FIGURE = re.compile(r"([\d.,]+) ?([A-Za-z/%]+)")


@pytest.mark.parametrize("name", ["six-hours", "cli-run"])
def test_legends_use_the_unit_that_fits_and_axes_whole_bytes(read, name):
    """A legend figure reads in its own unit ('5.65 KiB/s', not '0.00565 MiB/s' in the
    axis unit); a byte-rate axis has no fractions of a byte ('0.25 B/s')."""
    shown, _ = read[name]
    assert shown["legend"], shown
    for chart, text in shown["legend"]:
        figures_shown = _FIGURE.findall(text)  # one value, or "min .. · mean .. · max .."
        assert figures_shown or text == "n/a", (chart, text)
        for number, unit in figures_shown:
            value = float(number.replace(",", ""))
            assert value >= 1 or value == 0 or unit in _SMALLEST, (chart, text)
            assert value < 1024 or unit in ("B", "B/s"), (chart, text)
    assert shown["axis"], shown  # the y ticks (an x tick is a time, never a figure)
    for chart, text in shown["axis"]:
        number, unit = text.split(" ", 1)
        if unit == "B/s":
            assert float(number.replace(",", "")).is_integer(), (chart, text)
