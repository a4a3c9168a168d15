"""The @track_resources artifact as the docs page shows it (its "Artifacts" section).

Real Metaflow runs (local datastore and metadata, see mf_harness.py) of ContractFlow: the
flow is run twice, so the second run has the first as its history. The artifacts are read
back with the Metaflow client, as the docs page does.
"""

from __future__ import annotations

import os
import re
from typing import get_type_hints

import pytest
from mf_harness import DOCUMENTED_HISTORY, FLOWS, REPO, query, run_flow, task_of
from typed_dict_check import assert_typed

from resource_tracker import ResourceTracker, TinyDataFrame
from resource_tracker._artifact_types import TrackResourcesArtifact
from resource_tracker.rounding import COLUMN_DIGITS

#: the artifact's keys, as the TypedDict declares them
ARTIFACT_KEYS = set(get_type_hints(TrackResourcesArtifact))

DOCUMENTED_STATS = {
    "cpu_usage": {"mean", "max"},
    "memory_usage": {"mean", "max"},
    "gpu_usage": {"mean", "max"},
    "gpu_vram": {"mean", "max"},
    "gpu_utilized": {"mean", "max"},
    "disk_usage": {"max"},
    "traffic": {"inbound", "outbound"},
    "duration": None,
}


@pytest.fixture(scope="module")
def contract_runs(tmp_path_factory):
    """ContractFlow run twice: (first run, second run) as read by the Metaflow client."""
    root = tmp_path_factory.mktemp("mf-contract")
    flow = os.path.join(FLOWS, "mf_contract_flow.py")
    for _ in range(2):
        done = run_flow(root, flow)
        assert done.returncode == 0, done.stdout[-4000:]
    second, first = query(root, "ContractFlow", all_runs=True)  # newest first
    return first, second


def _artifact(run, step):
    return task_of(run, step)["artifacts"]["resource_tracker_data"]


def _is_rounded(value, digits):
    return isinstance(value, float) and round(value, digits) == value


def test_stats_have_the_documented_shape_and_rounding(contract_runs):
    """data["stats"]["cpu_usage"] is {'mean': 1.42, 'max': 6.11}-like: the documented keys,
    means/maxes to 2 decimals, KiB and bytes whole; all of stats() under detailed_stats."""
    data = _artifact(contract_runs[0], "work")
    stats = data["stats"]
    assert set(stats) == set(DOCUMENTED_STATS)
    for key, fields in DOCUMENTED_STATS.items():
        if fields is None:
            assert _is_rounded(stats[key], 2)
            continue
        assert set(stats[key]) == fields
        digits = 0 if key in ("memory_usage", "traffic") else 2
        assert all(_is_rounded(v, digits) for v in stats[key].values()), (key, stats[key])
    exact = data["detailed_stats"]
    assert stats["cpu_usage"]["mean"] == round(exact["process_cpu_usage"]["mean"], 2)
    assert stats["memory_usage"]["max"] == round(exact["process_memory"]["max"])
    assert stats["traffic"]["inbound"] == round(exact["system_net_recv_bytes"]["sum"])
    assert stats["disk_usage"]["max"] == round(exact["system_disk_space_used_gb"]["max"], 2)
    assert stats["duration"] == round(exact["timestamp"]["duration"], 2) >= 1.2
    assert 0 < stats["cpu_usage"]["mean"] <= stats["cpu_usage"]["max"] <= os.cpu_count()
    assert stats["memory_usage"]["max"] >= 64 * 1024  # KiB: the 64 MiB held


def test_cloud_and_server_info_as_documented(contract_runs):
    data = _artifact(contract_runs[0], "work")
    cloud = data["cloud_info"]
    assert set(cloud) == {"vendor", "instance_type", "region", "discovery_time"}
    # not in a cloud here: 'unknown' strings, as documented (not None)
    assert cloud["vendor"] == cloud["instance_type"] == cloud["region"] == "unknown"
    assert isinstance(cloud["discovery_time"], float) and cloud["discovery_time"] >= 0
    server = data["server_info"]
    assert {"vcpus", "memory_mb", "gpu_count", "gpu_names", "gpu_memory_mb"} <= set(server)
    assert server["vcpus"] == os.cpu_count()
    assert server["gpu_count"] == 0 and server["gpu_names"] == []
    assert server["memory_mib"] == server["memory_mb"] > 0


def test_tables_keep_exact_values(contract_runs):
    data = _artifact(contract_runs[0], "work")
    process = data["process_metrics"]
    assert isinstance(process, TinyDataFrame) and len(process.columns) == 13
    assert len(data["system_metrics"].columns) == 24
    exact = data["detailed_stats"]["process_memory"]["max"]
    assert max(process["memory"]) == exact  # not rounded in the column


def test_historical_stats_as_documented(contract_runs):
    first, second = contract_runs
    assert _artifact(first, "work")["historical_stats"]["available"] is False
    history = _artifact(second, "work")["historical_stats"]
    assert list(history)[: len(DOCUMENTED_HISTORY)] == list(DOCUMENTED_HISTORY)
    assert history["available"] is True and history["runs_analyzed"] == 1
    earlier = _artifact(first, "work")["detailed_stats"]
    assert history["avg_cpu_mean"] == round(earlier["process_cpu_usage"]["mean"], 2)
    assert history["max_memory_max"] == round(earlier["process_memory"]["max"])
    assert history["avg_duration"] == round(earlier["timestamp"]["duration"], 2)
    assert history["avg_gpu_mean"] == history["max_vram_max"] == history["max_gpu_count"] == 0
    for key in DOCUMENTED_HISTORY[2:]:
        assert _is_rounded(history[key], 2), (key, history[key])


def test_the_run_rebuilt_from_the_artifact_renders_the_cards_page(contract_runs):
    """ResourceTracker.from_snapshot(data["tracker"]).report() is the page of the card."""
    second = contract_runs[1]
    task = task_of(second, "work")
    data = task["artifacts"]["resource_tracker_data"]
    tracker = ResourceTracker.from_snapshot(data["tracker"])
    assert tracker.process_metrics == data["process_metrics"]
    assert tracker.system_metrics == data["system_metrics"]
    assert tracker.stats() == data["detailed_stats"]
    assert tracker.label == task["pathspec"]
    meta = data["tracker"]["metadata"]  # where the original's artifacts keep the run's settings
    assert meta["pid"] == tracker.pid and meta["interval"] == tracker.interval
    assert meta["duration"] == round(tracker.stop_time - tracker.start_time, 2) > 0
    assert (
        tracker.recommend_resources(historical_stats=data["historical_runs_stats"])
        == data["recommendations"]["resources"]
    )
    (card,) = [c for c in task["cards"] if c["type"] == "tracked_resources"]
    page = tracker.report()
    assert page == card["html"]
    assert "<th>Integration</th><td>Metaflow</td>" in page.replace("\n", "")
    assert ResourceTracker.loads(tracker.dumps()).report() == page  # and it saves losslessly


def test_combined_metrics_have_no_float_noise(contract_runs):
    tracker = ResourceTracker.from_snapshot(_artifact(contract_runs[0], "work")["tracker"])
    combined = tracker.get_combined_metrics()
    assert len(combined) == tracker.n_samples
    for column in combined.columns:
        bare = column.split("_", 1)[1] if column != "timestamp" else column
        digits = COLUMN_DIGITS[bare]
        if digits is not None:
            assert all(round(v, digits) == v for v in combined[column]), column


def test_the_docs_page_snippet_reads_the_run_level_artifact(contract_runs):
    """`Flow("ResourceTrackingFlow").latest_run.data.resource_tracker_data` reads the last
    tracked step's artifact (the end step carries it)."""
    second = contract_runs[1]
    end = task_of(second, "end")["artifacts"]["resource_tracker_data"]
    assert end["stats"] == _artifact(second, "work")["stats"]


def test_a_trivial_step_reads_no_more_cores_than_the_machine_has(contract_runs):
    """`start` does next to nothing (a few milliseconds of CPU; its wall time is whatever the
    machine's load makes it): its CPU usage is never more than the cores the process may use,
    and the recommendation does not come from that artefact."""
    for run in contract_runs:
        data = _artifact(run, "start")
        cores = len(os.sched_getaffinity(0))
        assert max(data["process_metrics"]["cpu_usage"]) <= cores
        assert data["stats"]["cpu_usage"]["max"] <= cores
        assert data["recommendations"]["resources"]["cpu"] == 1


def test_the_artifact_has_exactly_the_typed_dicts_keys_and_types(contract_runs):
    """Every tracked step's artifact of both runs (the second with history) is a
    TrackResourcesArtifact: its keys are the declared ones (all of them but ``tuning``, which
    needs tune=True), each value of its declared type, nested dicts included."""
    for run in contract_runs:
        for step in ("start", "work"):
            data = _artifact(run, step)
            assert set(data) == ARTIFACT_KEYS - {"tuning"}, (step, sorted(data))
            assert_typed(TrackResourcesArtifact, data, f"{step} artifact")
    history = _artifact(contract_runs[1], "work")["historical_stats"]
    assert history["available"] is True and "lookup_cpu_s" in history  # the lookup ran


def _documented_artifact_keys():
    """The keys of docs/metaflow.md's table of what the artifact stores (first column)."""
    with open(os.path.join(REPO, "docs", "metaflow.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## What it stores", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {key for row in rows for key in re.findall(r"`(\w+)`", row.split("|")[1])}


def test_the_docs_table_of_artifact_keys_is_the_typed_dicts():
    """docs/metaflow.md lists exactly the keys TrackResourcesArtifact declares."""
    assert _documented_artifact_keys() == ARTIFACT_KEYS
