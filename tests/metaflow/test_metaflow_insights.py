"""Insights, @track_resources(tune=True) and `recommend --metaflow` in real Metaflow runs.

RightsizeFlow (flows/mf_rightsize_flow.py): `start` asks @resources(memory=16000, cpu=8)
and uses ~500 MiB on one core; `train` asks memory=8000, cpu=4 and holds 200 MiB, idle.
Run 6 times in one hermetic root (module-scoped, shared by every test): two plain runs, a
run with tune=True after 2 runs (too little history: values only raised), three runs with
tune=True after 3, 4 and 5 runs (tuned); in the 6th, `train` holds 300 MiB (+50%): the
changed finding. The step reads its own @resources attributes inside the task.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys

import pytest
from mf_harness import FLOWS, hermetic_env, query, run_flow, task_of

FLOW = os.path.join(FLOWS, "mf_rightsize_flow.py")


@pytest.fixture(scope="module")
def rightsize(tmp_path_factory):
    root = tmp_path_factory.mktemp("mf-rightsize")
    for tune, train_mib in (("0", 200), ("0", 200), ("1", 200), ("1", 200), ("1", 200),
                            ("1", 300)):  # fmt: skip
        # a short test step's gap costs cents a month: floors at 0 so that it is a warning
        floors = {"RESOURCE_TRACKER_OVER_MIN_USD_MONTH": 0, "RESOURCE_TRACKER_WARN_USD_MONTH": 0}
        env = {"MF_TUNE": tune, "MF_TRAIN_MIB": train_mib, **floors}
        done = run_flow(root, FLOW, env=env)
        assert done.returncode == 0, done.stdout[-4000:]
    runs = query(root, "RightsizeFlow", all_runs=True)
    assert len(runs) == 6
    return root, runs[::-1]  # oldest first


def _start(run):
    task = task_of(run, "start")
    return task, task["artifacts"]["resource_tracker_data"]


def test_over_provisioned_finding_in_artifact_and_card(rightsize):
    _, runs = rightsize
    task, data = _start(runs[0])
    (found,) = [i for i in data["insights"] if i["kind"] == "over_provisioned"]
    n = found["numbers"]
    assert n["source"] == "@resources" and (n["asked_memory"], n["asked_cpu"]) == (16000, 8)
    # the spin's own share of a core (its CPU time over its wall time; less on a busy
    # machine): the peak of the samples within it is at least most of that
    share = task["artifacts"]["spin_share"]
    assert 400 < n["peak_memory"] < 900 and 0.8 * share <= n["peak_cpu"] < 1.6, (n, share)
    assert n["memory_used_share"] < 0.06
    assert n["gap_usd_per_run"] > 0 and n["gap_usd_per_month"] == pytest.approx(
        30 * n["gap_usd_per_run"]
    )
    assert "asked 15.6 GiB memory" in found["message"] and found["severity"] == "warning"
    (card,) = [c for c in task["cards"] if c["type"] == "tracked_resources"]
    page = html.unescape(card["html"])
    assert 'id="rt-insights"' in card["html"] and found["message"] in page
    # the train step asks 8000 MiB and 4 CPU for ~200 MiB: its own finding
    train = task_of(runs[0], "train")["artifacts"]["resource_tracker_data"]
    (other,) = [i for i in train["insights"] if i["kind"] == "over_provisioned"]
    assert other["numbers"]["asked_memory"] == 8000


def test_tune_with_two_runs_of_history_only_raises(rightsize):
    _, runs = rightsize
    task, data = _start(runs[2])
    assert task["artifacts"]["asked_inside"] == {"cpu": 8, "memory": 16000, "gpu": None}
    tuning = data["tuning"]
    # the ask covers both runs: too little history to lower it
    assert tuning["changes"] == [] and tuning["runs"] == 2
    assert "2 finished earlier runs: values only raised, lowered from 3" in tuning["note"]
    (card,) = [c for c in task["cards"] if c["type"] == "tracked_resources"]
    assert "values only raised, lowered from 3" in html.unescape(card["html"])


def test_tune_with_three_runs_sets_the_steps_resources(rightsize):
    _, runs = rightsize
    task, data = _start(runs[3])
    tuning = data["tuning"]
    assert tuning["runs"] == 3
    tuned = tuning["resources"]
    # never below the highest observed peak plus the margin (20%)
    peaks = [_start(r)[1]["detailed_stats"]["process_memory"]["max"] / 1024 for r in runs[:3]]
    assert tuned["memory"] >= 1.2 * max(peaks)
    # a step down by at most half of what the newest run had (16000 MiB, 8 CPU) per run
    assert tuned["memory"] == 8192 and tuned["cpu"] == 4
    inside = task["artifacts"]["asked_inside"]  # what the task saw on its own @resources
    assert (float(inside["cpu"]), float(inside["memory"])) == (tuned["cpu"], tuned["memory"])
    assert f"memory 16000 -> {tuned['memory']} MiB from 3 runs" in tuning["changes"]
    (card,) = [c for c in task["cards"] if c["type"] == "tracked_resources"]
    assert f"memory 16000 -> {tuned['memory']} MiB from 3 runs" in html.unescape(card["html"])


def test_changed_on_the_sixth_run_and_no_false_alarm_before(rightsize):
    _, runs = rightsize

    def changed(run):
        data = task_of(run, "train")["artifacts"]["resource_tracker_data"]
        return [i for i in data["insights"] if i["kind"] == "changed"], data

    for run in runs[3:5]:  # against 3 and 4 earlier unchanged runs
        found, data = changed(run)
        assert found == [], found
    found, data = changed(runs[5])
    assert data["historical_stats"]["runs_analyzed"] == 5
    (memory,) = found
    assert memory["numbers"]["metric"] == "memory_peak_mib" and memory["numbers"]["runs"] == 5
    assert 0.25 < memory["numbers"]["change"] < 0.65, memory
    assert "Peak memory +" in memory["message"] and "against the last 5 runs" in memory["message"]


def test_recommend_metaflow_lists_both_tracked_steps(rightsize):
    root, runs = rightsize
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "recommend", "--metaflow", "RightsizeFlow"],
        cwd=str(root), env=hermetic_env(root), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "RightsizeFlow: 5 recent runs" in out  # --runs defaults to 5
    assert "step start (5 runs)" in out and "step train (5 runs)" in out
    assert "step end" not in out  # end holds train's artifact, passed on by Metaflow
    train = out.split("step train", 1)[1]
    assert "today       @resources(cpu=4, memory=8000)" in train
    # half of what the newest run had (a step down by at most half per run)
    assert "recommended @resources(cpu=2, memory=4096)" in train
    # the saving by the documented rule for amounts: "$1.23" or "< $0.01", never "$0.000190"
    assert re.search(r"saving      (< )?\$\d+(,\d{3})*(\.\d\d)? a month", train), train
    start = out.split("step start", 1)[1].split("step train")[0]
    # start is tuned in its newest run: it asks what the tuning set
    assert "today       @resources(cpu=" in start and "memory=16000" not in start


def test_recommend_metaflow_for_an_unknown_flow_says_so(rightsize):
    root, _ = rightsize
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "recommend", "--metaflow", "NoSuchFlow"],
        cwd=str(root), env=hermetic_env(root), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "resource-tracker recommend: no Metaflow flow named 'NoSuchFlow' in this namespace "
        "(check the name and the metadata service, e.g. METAFLOW_DEFAULT_METADATA)"
    ]
