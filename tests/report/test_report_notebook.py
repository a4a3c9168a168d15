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
