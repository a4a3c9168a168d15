"""The notebook example runs in a real Jupyter kernel (nbclient + ipykernel) and shows the
report inline; the inline output then draws its charts in a real headless Chromium."""

from __future__ import annotations

import html
import os
import re

import pytest
from report_browser import Browser, chromium_path

NOTEBOOK = os.path.join(
    os.path.dirname(__file__), "..", "..", "examples", "report_in_notebook.ipynb"
)


@pytest.fixture(scope="module")
def executed():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}},
    ).execute()
    return nb


def _html_output(cell):
    for out in cell.get("outputs", []):
        data = out.get("data") or {}
        if "text/html" in data:
            return data["text/html"]
    return None


def test_report_notebook_runs_and_shows_tables_and_report(executed):
    cells = [c for c in executed.cells if c.cell_type == "code"]
    for cell in cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, errors
    rec = cells[1]["outputs"][-1]["data"]["text/plain"]
    assert "'cpu'" in rec and "'memory'" in rec
    table = _html_output(cells[2])
    assert table and "<table>" in table and "<th>cpu_usage</th>" in table
    inline = _html_output(cells[3])
    assert inline.startswith("<iframe") and "srcdoc=" in inline
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', inline).group(1))
    assert page.startswith("<!DOCTYPE html>") and "Resource usage report" in page
    assert '"charts":[{"id":"cpu"' in page
    assert "keeper.sparecores.net" not in page  # the kernel ran with the loopback overrides


def _display_rows(cell):
    """{header: value} of the tracker's own display (its table) in a cell's output."""
    shown = _html_output(cell)
    assert shown and "resource-tracker-status" in shown, cell.get("outputs")
    pairs = re.findall(r"<th[^>]*>([^<]*)</th><td>([^<]*)</td>", shown)
    return {html.unescape(k): html.unescape(v) for k, v in pairs}


def test_the_tracker_shows_its_state_and_headline_figures(executed):
    """The tracker itself, the last expression of a cell, shows what it tracks, its state and,
    once stopped, the run's headline figures: those of the report of the same run; and the
    report calls a kernel's run a notebook, not `ipykernel_launcher -f /tmp/...`."""
    cells = [c for c in executed.cells if c.cell_type == "code"]
    started = _display_rows(cells[0])
    assert started["Status"] == "running" and started["Tracking"].startswith("Jupyter notebook")
    assert "ResourceTracker pid=" not in _html_output(cells[0])
    done = _display_rows(cells[4])
    assert done["Status"] == "finished" and done["Duration"].endswith(" s"), done
    samples = int(done["Samples"].split()[0])
    assert samples >= 8, done  # wait_for_samples(8) before stop()
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', _html_output(cells[3])).group(1))
    title = re.search(r"<title>([^<]*)</title>", page).group(1)
    assert title == "Resource usage: Jupyter notebook", title
    assert done["Recommended"] in page, (done["Recommended"], "not in the report")
    assert done["Memory peak"] in page, (done["Memory peak"], "not in the report")
    assert (
        done["Recommended"]
        == "@resources("
        + ", ".join(
            f"{k}={v}"
            for k, v in re.findall(
                r"'(cpu|memory|gpu)': (\d+)", cells[1]["outputs"][-1]["data"]["text/plain"]
            )
            if int(v)
        )
        + ")"
    )


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed")
def test_report_notebook_output_draws_in_chromium(executed, tmp_path):
    """The cell's HTML output put into a page as Jupyter does: the iframe's report draws its
    charts (inside the iframe) and grows the iframe to fit."""
    inline = _html_output([c for c in executed.cells if c.cell_type == "code"][3])
    outer = tmp_path / "notebook-output.html"
    outer.write_text(
        "<!DOCTYPE html><html><body><h1>notebook</h1><div class='output'>"
        + inline
        + "</div></body></html>",
        encoding="utf-8",
    )
    frame_doc = "document.querySelector('iframe').contentDocument.documentElement"
    with Browser() as b:
        b.load(
            "file://" + str(outer),
            f"{frame_doc} && {frame_doc}.getAttribute('data-rt-rendered-ms')",
        )
        # CPU, memory, disk I/O, disk space, network; GPU and VRAM only with a GPU
        charts = 7 if os.path.exists("/dev/nvidiactl") else 5
        assert b.eval(f"{frame_doc}.getAttribute('data-rt-charts')") == str(charts)
        assert b.eval(f"{frame_doc}.querySelectorAll('path.rt-line').length") >= 2 * charts
        height = b.eval("document.querySelector('iframe').getBoundingClientRect().height")
        assert height > 900  # fitted to the report, not the default 900 px
        assert b.eval("document.querySelectorAll('.rt-chart').length") == 0  # no leak
        assert b.console_errors() == []
        assert b.requests() == ["file://" + str(outer)]
