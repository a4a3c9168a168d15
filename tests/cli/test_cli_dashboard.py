"""`resource-tracker dashboard` without Metaflow: the trend fit, the downsampling, `--runs`
over saved snapshots, `--check` / `--json`, bad input. (The Metaflow source, the anomaly on
a real run, the trend against the truth and the browser checks: tests/metaflow/
test_metaflow_dashboard.py.)

The snapshots: ONE real short tracked run (`resource-tracker run` of a process holding
150 MiB), saved by our own code; copies of it are edited only where the scenario needs it:
the job name (``label``), the ask (``extra["resources_asked"]``: far above the peak for an
over-provisioned job, just above it for an at-risk one) and the start time (runs a day
apart). Its measured figures are not edited.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from resource_tracker.dashboard import RunRecord, _trend
from resource_tracker.dashboard._fleet import build_fleet
from resource_tracker.dashboard._page import MAX_POINTS, kept_points, step_data

HOLD = """import time
b = bytearray(150 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
time.sleep(0.5)
"""


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "resource_tracker", "dashboard", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A folder of snapshots: jobs `etl` (asks 4x its peak) and a risky one (asks 1.05x),
    three runs each a day apart, and one file that is not a snapshot."""
    root = tmp_path_factory.mktemp("saved")
    script = root / "hold.py"
    script.write_text(HOLD)
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", "-q", "--interval", "0.1", "--format",
         "json", "-o", str(root / "real"), "--", sys.executable, str(script)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    snap = json.loads((root / "real" / "resource-tracker.json").read_text())
    from resource_tracker.tracker import ResourceTracker

    peak = ResourceTracker.from_snapshot(snap).stats()["process_memory"]["max"] / 1024
    runs = root / "runs"
    for job, share in (("etl", 4.0), ("risky\x1b[31m job", 1.05)):
        for day in range(3):
            copy = dict(snap, label=job, start_time=snap["start_time"] + day * 86400,
                        stop_time=snap["stop_time"] + day * 86400)  # fmt: skip
            copy["extra"] = dict(
                snap.get("extra") or {}, resources_asked={"memory": peak * share, "cpu": 1}
            )
            folder = runs / f"{job.split()[0][:5]}-{day}"
            folder.mkdir(parents=True)
            (folder / "resource-tracker.json").write_text(json.dumps(copy))
    (runs / "notes.json").write_text('{"not": "a snapshot"}')
    return {"runs": str(runs), "peak": peak, "root": root}


def test_trend_is_exact_on_steady_growth_and_robust_to_an_outlier():
    values = [500 * 1.05**i for i in range(12)]
    values[7] *= 3  # one odd run
    trend = _trend.fit(values, line=500 * 1.05**20)
    assert abs(trend.growth - 0.05) < 1e-9
    assert math.isclose(trend.level, 500 * 1.05**11, rel_tol=1e-9)
    assert trend.runs_to_line == 9
    assert _trend.fit(values[:4]) is None  # too few runs
    assert _trend.fit([100.0] * 10, line=200).runs_to_line is None  # flat: never
    assert _trend.fit(values, line=500 * 1.05**60).runs_to_line is None  # beyond the horizon


def test_runs_check_lists_the_at_risk_job_only_in_printable_lines(saved):
    done = _cli("--runs", saved["runs"], "--check")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("risky job: at risk: Peak memory"), lines
    assert "% of the " in lines[0] and "it asks" in lines[0], lines
    assert all(line.isprintable() for line in lines)
    assert "notes.json" in done.stderr and "not a resource-tracker snapshot" in done.stderr


def test_runs_json_page_and_money(saved, tmp_path):
    page = tmp_path / "fleet.html"
    done = _cli("--runs", saved["runs"], "--json", "-o", str(page))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    steps = {s["step"]: s for s in data["steps"]}
    assert set(steps) == {"etl", "risky\x1b[31m job"}
    etl = steps["etl"]
    assert etl["runs"] == 3 and etl["alerts"] == [] and etl["waste_usd_per_month"] > 0
    # the need is the tuning rule's: the highest peak + 15% or more (issue 37: was 20%),
    # rounded up; never below the peak
    assert saved["peak"] * 1.15 <= etl["need"]["memory"] < etl["ask"]["memory_mib"]
    assert steps["risky\x1b[31m job"]["newest_at_risk"] and data["steps_at_risk"] == 1
    assert math.isclose(data["waste_usd_per_month"],
                        sum(s["waste_usd_per_month"] or 0 for s in data["steps"]))  # fmt: skip
    assert data["skipped"] and "notes.json" in data["skipped"][0]
    html = page.read_text()
    assert "\x1b" not in html and "risky job" in html  # control sequences taken out
    assert data["headline"] in html


def test_bad_sources_are_one_clear_line(tmp_path):
    done = _cli("--runs", str(tmp_path / "missing"))
    assert done.returncode == 2 and "not a directory" in done.stderr, done.stderr
    done = _cli("--check")
    assert done.returncode == 2 and "give a source" in done.stderr
    done = _cli("--runs", str(tmp_path), "--since", "soon")
    assert done.returncode == 2 and "--since" in done.stderr
    empty = _cli("--runs", str(tmp_path), "-o", str(tmp_path / "p.html"))
    assert empty.returncode == 1 and "no tracked run" in empty.stderr


def _records(n, spikes, slow):
    """n runs an hour apart: peak memory 1000-1006 MiB (4x on `spikes`), 60 s long (600 s
    on `slow`: their memory is mid-range, so only the anomaly rule keeps them)."""
    return [
        RunRecord(step="big/step", run_id=f"r{i}", started=1.7e9 + i * 3600,
                  duration_s=600.0 if i in slow else 60.0, status="ok", source="runs",
                  peak_memory_mib=1000.0 * (4 if i in spikes else 1) + (3 if i in slow else i % 7),
                  mean_cpu_cores=1.0, ask={"memory_mib": 8000.0, "cpu": 2.0})
        for i in range(n)
    ]  # fmt: skip


def test_downsampling_keeps_every_anomaly_on_its_run():
    spikes, slow = {40, 777, 1500, 2999}, {123, 1234, 2345}
    view = build_fleet(_records(3000, spikes, slow)).steps[0]
    assert {a.index for a in view.anomalies if a.metric == "memory_peak_mib"} == spikes
    assert {a.index for a in view.anomalies if a.metric == "duration_s"} == slow
    kept = kept_points(view)
    assert len(kept) <= MAX_POINTS + len(view.anomalies) + 2
    data = step_data(view, 0)
    assert {data["runs"][a["i"]] for a in data["anomalies"]} == {f"r{i}" for i in spikes | slow}
    charts = {c["id"]: c for c in data["charts"]}
    for a in data["anomalies"]:
        run = view.runs[int(a["run"][1:])]
        assert data["runs"][a["i"]] == a["run"]
        assert charts["memory"]["v"][a["i"]] == pytest.approx(run.peak_memory_mib)
        assert charts["duration"]["v"][a["i"]] == pytest.approx(run.duration_s)
