"""`tracker.report().browse()` as the last line of a script opens the page.

The seeds' quick start ends with ``tracker.report().browse()``. These tests run that script
in a real Python subprocess that exits right after the call, with ``BROWSER`` pointing at a
fake browser: a shell script that waits a moment (a real browser takes a while to start)
and then records the URL it was given. A real graphical browser cannot run here; the fake
one stands in for it, exactly as ``BROWSER`` is meant to be used.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
import urllib.parse

import pytest

QUICK_START = """
from resource_tracker import ResourceTracker

tracker = ResourceTracker(interval=0.05)
# your compute-heavy code
sum(i * i for i in range(300000))
tracker.stop()
tracker.report().browse()
"""

# a short run whose report is browsed; prints what browse() returned (the page's path)
BROWSE_AND_PRINT = """
from resource_tracker import ResourceTracker
t = ResourceTracker(interval=0.05)
t.wait_for_samples(2)
t.stop()
print(t.report().browse())
"""


def _fake_browser(folder, delay=1.0):
    """A 'browser' that sleeps, then writes its argument to <folder>/opened.txt."""
    record = folder / "opened.txt"
    script = folder / "fake-browser"
    script.write_text(
        f"#!/bin/sh\nsleep {delay}\nprintf '%s' \"$1\" > '{record}.tmp'\n"
        f"mv '{record}.tmp' '{record}'\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, record


def _run(code, env, cwd):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=120, env=env, cwd=cwd,
    )  # fmt: skip


def _wait_for(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.05)
    return None


@pytest.mark.parametrize("repeat", range(3))
def test_browse_as_the_last_line_of_a_script_opens_the_page(tmp_path, repeat):
    browser, record = _fake_browser(tmp_path)
    env = dict(os.environ, BROWSER=str(browser))
    result = _run(QUICK_START, env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert not record.exists()  # the script ended before the browser got to the page
    url = _wait_for(record)
    assert url is not None, "the browser never opened the page"
    assert url.startswith("file:///")
    page = urllib.parse.unquote(url[len("file://") :])
    with open(page, encoding="utf-8") as f:
        html = f.read()
    assert html.startswith("<!DOCTYPE html>") and "Resource usage report" in html
    assert "no web browser found" not in result.stderr


def test_browser_command_with_a_url_placeholder(tmp_path):
    browser, record = _fake_browser(tmp_path, delay=0)
    env = dict(os.environ, BROWSER=f"/no/such/browser{os.pathsep}{browser} %s")
    result = _run(BROWSE_AND_PRINT, env, tmp_path)
    assert result.returncode == 0, result.stderr
    path = result.stdout.strip()
    assert _wait_for(record) == "file://" + path


def test_with_no_browser_it_says_where_the_file_is(tmp_path):
    """No BROWSER, no display, no browser program on PATH: browse() says where the page is
    and returns its path."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "MIR_SOCKET")
    }
    env["PATH"] = str(empty)
    result = _run(BROWSE_AND_PRINT, env, tmp_path)
    assert result.returncode == 0, result.stderr
    path = result.stdout.strip()
    assert os.path.isfile(path) and path.endswith(".html")
    assert result.stderr.strip() == (
        f"resource-tracker: no web browser found; the report is at {path}"
    )


def test_cli_report_browse_opens_the_written_page(tmp_path):
    browser, record = _fake_browser(tmp_path)
    env = dict(os.environ, BROWSER=str(browser))
    code = """
    from resource_tracker import ResourceTracker
    t = ResourceTracker(interval=0.05)
    t.wait_for_samples(2)
    t.stop()
    open("run.json", "w").write(t.dumps())
    """
    assert _run(code, env, tmp_path).returncode == 0
    cli = [sys.executable, "-m", "resource_tracker", "report", "run.json", "--browse"]
    result = subprocess.run(cli, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _wait_for(record) == (tmp_path / "run.html").as_uri()
