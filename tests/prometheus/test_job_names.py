"""A name for every job: ``ResourceTracker(job=...)``, ``RESOURCE_TRACKER_JOB``,
``resource-tracker run --job``; checked at construction, stored in the snapshot, shown in the
report and the command line's summary. (The exported label: test_prometheus_stack.py; a
Metaflow step's ``flow/step``: tests/export/test_export_metaflow.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from resource_tracker import ResourceTracker
from resource_tracker.settings import SettingError


def test_job_from_argument_variable_and_default(monkeypatch):
    assert ResourceTracker(autostart=False).job == "resource_tracker"
    monkeypatch.setenv("RESOURCE_TRACKER_JOB", " report-env ")
    assert ResourceTracker(autostart=False).job == "report-env"
    assert ResourceTracker(autostart=False, job=" nightly-etl ").job == "nightly-etl"


@pytest.mark.parametrize("bad", ["", "   ", "etl\x1b[31m", "a\nb", "x" * 201, 5, b"etl"])
def test_bad_job_is_an_error_naming_it(bad):
    with pytest.raises(ValueError, match=r"^job=.* is not valid: give a name of 1 to 200"):
        ResourceTracker(autostart=False, job=bad)
    with pytest.raises(ValueError, match="job="):
        ResourceTracker.run([sys.executable, "-c", "raise SystemExit(9)"], job=bad)


def test_bad_job_variable_names_the_variable(monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_JOB", "bell\x07")
    with pytest.raises(SettingError, match="^RESOURCE_TRACKER_JOB="):
        ResourceTracker(autostart=False)


def test_job_is_stored_and_shown():
    run = ResourceTracker.run([sys.executable, "-c", "pass"], interval=0.05, job="nightly-etl")
    tracker = run.tracker
    again = ResourceTracker.loads(tracker.dumps())
    assert again.job == "nightly-etl"
    assert json.loads(tracker.dumps())["job"] == "nightly-etl"
    html = str(again.report())
    assert "<title>Resource usage: nightly-etl</title>" in html
    assert "<tr><th>Job</th><td><code>nightly-etl</code></td></tr>" in html


def _cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", *args],
        capture_output=True, text=True, timeout=120, **kw,
    )  # fmt: skip


def test_cli_job_option(tmp_path):
    done = _cli("--job", "etl-cli", "--interval", "0.05", "--format", "json", "--output",
                str(tmp_path), "--", sys.executable, "-c", "pass")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "resource-tracker.json").read_text())["job"] == "etl-cli"
    assert "  job         etl-cli" in done.stderr.splitlines()
    bad = _cli("--job", "", "--", sys.executable, "-c", "pass")
    assert bad.returncode == 2
    assert "--job='' is not valid: give a name of 1 to 200 printable characters" in bad.stderr
