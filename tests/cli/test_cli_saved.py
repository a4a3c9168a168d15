"""`report`, `stats` and `recommend` on snapshots written by a real `run` (subprocesses)."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest
from cli_helpers import BURN, env_with, report_available, run_cli, script, summary_figures

from resource_tracker import ResourceTracker
from resource_tracker import formatting as fmt


def _record(directory, mib, seconds):
    """Runs the BURN workload through `run` into directory; (snapshot path, tracker)."""
    os.makedirs(directory, exist_ok=True)
    result = run_cli("run", "-q", "--interval", "0.2", "-o", str(directory), "-f", "json,html",
                     "--", *script(BURN), str(mib), str(seconds))  # fmt: skip
    assert result.returncode == 0, result.stderr
    path = os.path.join(directory, "resource-tracker.json")
    with open(path) as f:
        return path, ResourceTracker.loads(f.read())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two real runs of one job: a small one (60 MiB, 0.8 s) and a big one (300 MiB, 1 s)."""
    base = tmp_path_factory.mktemp("runs")
    return {
        "small": _record(base / "small", 60, 0.8),
        "big": _record(base / "big", 300, 1.0),
    }


def test_report_of_a_saved_run_equals_the_original_report(runs, tmp_path):
    path, _ = runs["small"]
    out = tmp_path / "again.html"
    result = run_cli("report", path, "-o", str(out))
    if not report_available():
        assert result.returncode == 2
        assert "HTML report is not available" in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
        pytest.skip("resource_tracker.report is not importable yet: the error path was checked")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out)
    original = os.path.join(os.path.dirname(path), "resource-tracker.html")
    with open(original, encoding="utf-8") as a, open(out, encoding="utf-8") as b:
        assert a.read() == b.read()


def test_report_default_path_and_browse(runs, tmp_path):
    """--browse opens the saved file: BROWSER is set to a script that records its argument."""
    if not report_available():
        pytest.skip("resource_tracker.report is not importable yet")
    path, _ = runs["big"]
    copy = tmp_path / "run.json"
    copy.write_bytes(open(path, "rb").read())
    seen = tmp_path / "seen.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {seen}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    result = run_cli("report", str(copy), "--browse", env=env_with(BROWSER=str(browser)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "run.html")
    assert (tmp_path / "run.html").stat().st_size > 1000
    assert seen.read_text().strip() == (tmp_path / "run.html").as_uri()


def test_stats_prints_the_summary_of_the_saved_run(runs):
    path, tracker = runs["big"]
    result = run_cli("stats", path)
    assert result.returncode == 0, result.stderr
    fig = summary_figures(result.stdout)
    stats = tracker.stats()
    assert fig["status"] == "exited with status 0"
    # three significant digits (resource_tracker.formatting)
    assert fig["cpu_mean"] == float(
        fmt.quantity(stats["process_cpu_usage"]["mean"], "cores").split()[0]
    )
    peak_mib = stats["process_memory"]["max"] / 1024
    assert abs(fig["memory_mib"] - peak_mib) <= 0.005 * peak_mib
    assert 300 <= fig["memory_mib"] <= 340
    assert fig["samples"] == tracker.n_samples


def test_stats_json_equals_stats_of_the_loaded_snapshot(runs):
    path, tracker = runs["small"]
    result = run_cli("stats", path, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(json.dumps(tracker.stats()))


def test_recommend_combines_runs_as_history(runs):
    """First snapshot is the current run, the rest its history: the highest memory peak
    wins, and the CPU is the mean of the runs' means."""
    small, t_small = runs["small"]
    big, t_big = runs["big"]
    alone = json.loads(run_cli("recommend", small, "--json").stdout)
    both = run_cli("recommend", small, big, "--json")
    assert both.returncode == 0, both.stderr
    combined = json.loads(both.stdout)
    assert combined["runs"] == 2
    assert alone["resources"]["memory"] == 128  # 60 MiB + interpreter, + 20%
    assert combined["resources"]["memory"] == 512  # 300 MiB + 20% > 256
    assert combined["resources"] == t_small.recommend_resources(historical_stats=[t_big.stats()])
    # without a catalog there is no server, and the reason is given
    if combined["server"] is None:
        assert combined["note"]
    text = run_cli("recommend", small, big, "--vendor", "aws", "--allocation", "spot")
    # 0 with a server; 1 when there is none (no catalog reachable in these tests)
    assert text.returncode == (1 if "server      no " in text.stdout else 0), text.stdout
    assert "resources   1 CPU, 512 MiB memory" in text.stdout
    assert text.stdout.splitlines()[0] == "runs        2"
    assert "server" in text.stdout


def test_python_m_and_help_of_every_command():
    """`python -m resource_tracker` is the tool; each command's --help shows examples."""
    for cmd in ([], ["run"], ["report"], ["stats"], ["recommend"], ["watch"], ["catalog"]):
        result = run_cli(*cmd, "--help")
        assert result.returncode == 0, (cmd, result.stderr)
        assert "examples:" in result.stdout
        assert f"resource-tracker {cmd[0] if cmd else 'run'} " in result.stdout
    assert run_cli("--version").stdout.startswith("resource-tracker ")
    assert sys.executable  # the entry point ran under this interpreter
