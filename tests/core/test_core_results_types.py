"""The typed contract of the results (``resource_tracker.results_types``, issue 26 point 4).

A real tracked run (one short subprocess workload per backend, made once for the module):
its ``stats()``, ``data_quality()``, ``recommend_resources()`` and ``recommend_server()``
have exactly the keys and value types their TypedDicts declare; and the documents' tables of
those keys (docs/resource_tracker.md, docs/catalog.md) list the TypedDicts' keys, which are
required where the table says "always", so that neither can drift from the other.
"""

from __future__ import annotations

import os
import re
from typing import get_type_hints

import pytest
from typed_dict_check import assert_typed, problems
from workloads import Workload, run_to_report

from resource_tracker import ResourceTracker, _core
from resource_tracker.results_types import (
    DataQuality,
    Distribution,
    Resources,
    RunStats,
    ServerRecord,
    Timing,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")

WORKLOAD = """
buf = touched(64)
spin(0.4)
report(rss_kib=rss_kib())
"""

METHODS = {"c": "procfs", "psutil": "psutil"}


@pytest.fixture(scope="module", params=list(METHODS))
def run(request):
    """One stopped tracker of a real workload (64 MiB touched, 0.4 s of CPU) per backend."""
    chosen = request.config.getoption("backend")
    if chosen not in ("both", request.param):
        pytest.skip(f"--backend {chosen}")
    if request.param == "c" and not _core.HAVE_PROCFS:
        pytest.skip("the C sampler: this build of the core has no procfs readers")
    if request.param == "psutil":
        pytest.importorskip("psutil", reason="the psutil backend needs psutil")
    workload = Workload(WORKLOAD)
    tracker = ResourceTracker(
        pid=workload.pid, interval=0.05, discover_cloud=False, method=METHODS[request.param]
    )
    report = run_to_report(workload, tracker)
    workload.reap()
    return request.param, tracker, report


# -- the documents' tables -------------------------------------------------------------------


def doc_table(page, heading):
    """The rows (lists of cells) of the first table of the section ``heading`` of docs/<page>."""
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        text = f.read()
    lines = text[text.index(heading + "\n") :].splitlines()[1:]
    section = lines[: next((i for i, x in enumerate(lines) if x.startswith(("## ", "### "))), None)]
    first = next((i for i, line in enumerate(section) if line.startswith("|")), None)
    assert first is not None, f"no table under {heading!r} in docs/{page}"
    lines = section
    rows = []
    for line in lines[first + 2 :]:  # past the header and the |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def ticked(text):
    """The `names` of a cell, in order."""
    return re.findall(r"`([^`]+)`", text)


def keys_by_presence(rows):
    """{key: the row's last cell (when it is present)}, each key once."""
    out = {}
    for row in rows:
        for key in ticked(row[0]):
            assert key not in out, f"{key} twice in the table"
            out[key] = row[-1]
    return out


def stats_table():
    return doc_table("resource_tracker.md", "### `stats(specs=None)`")


def test_stats_table_lists_the_keys_of_run_stats_required_where_always():
    presence = keys_by_presence(stats_table())
    assert set(presence) == set(get_type_hints(RunStats))
    always = {key for key, when in presence.items() if when == "always"}
    assert always == set(RunStats.__required_keys__)
    assert set(presence) - always == set(RunStats.__optional_keys__)


def test_stats_table_names_each_value_type_and_its_keys():
    hints = get_type_hints(RunStats)
    for row in stats_table():
        named = ticked(row[1])
        value_type = named[0]
        listed = named[1:] if row[1].startswith(f"`{value_type}`: `") else None
        for key in ticked(row[0]):
            assert hints[key].__name__ == value_type, (key, hints[key], value_type)
            if listed is not None:
                assert listed == list(get_type_hints(hints[key])), (key, listed)


def test_resources_table_lists_the_keys_of_resources():
    rows = doc_table("resource_tracker.md", "### `recommend_resources(historical_stats=None)`")
    keys = [key for row in rows for key in ticked(row[0])]
    assert keys == list(Resources.__annotations__)
    assert set(keys) == set(Resources.__required_keys__)


def test_server_record_table_lists_the_keys_of_server_record_required_where_always():
    presence = keys_by_presence(doc_table("catalog.md", "### The record"))
    assert set(presence) == set(get_type_hints(ServerRecord))
    always = {key for key, when in presence.items() if when == "always"}
    assert always == set(ServerRecord.__required_keys__)


# -- a real run's results --------------------------------------------------------------------


def _gpu_held_and_busy(tracker):
    """The tree held a GPU and some GPU's series shows utilisation (machines with GPUs)."""
    held = tracker.stats().get("process_gpu_utilized", {}).get("max") or 0
    return held > 0 and any(any(d["utilization"]) for d in tracker._gpu_devices())


def present_by_the_docs(when, tracker, backend):
    """Whether a key whose table says ``when`` is there for this run (its own facts)."""
    facts = {
        "always": True,
        "processes tracked": tracker.track_processes,
        "system tracked": tracker.track_system,
        "C sampler": backend == "c",
        "C sampler, processes tracked": backend == "c" and tracker.track_processes,
        "the process in a cgroup": tracker.cgroup_metrics is not None,
        "with an export": tracker.export_report() is not None,
        "C sampler, a GPU held and busy": backend == "c" and _gpu_held_and_busy(tracker),
    }
    return facts[when]


def test_stats_of_a_real_run_are_a_run_stats(run):
    backend, tracker, _ = run
    stats = tracker.stats()
    assert_typed(RunStats, dict(stats), "stats()")


def test_stats_of_a_real_run_have_the_keys_the_docs_say_are_there(run):
    backend, tracker, _ = run
    presence = keys_by_presence(stats_table())
    expected = {k for k, when in presence.items() if present_by_the_docs(when, tracker, backend)}
    assert set(tracker.stats()) == expected


def test_the_figures_of_the_typed_run_are_the_workloads(run):
    """The typed values are the run's figures, not placeholders: the process's peak memory is
    at least the 64 MiB the workload touched (its own RSS, same run), its duration and
    sample count those of the tracker."""
    _, tracker, report = run
    stats = tracker.stats()
    memory: Distribution = stats["process_memory"]
    assert memory["max"] >= 64 * 1024 and report["rss_kib"] >= 64 * 1024
    timing: Timing = stats["timestamp"]
    assert timing["samples"] == len(tracker.process_metrics)
    assert timing["duration"] == pytest.approx(tracker.stop_time - tracker.start_time, abs=0.5)


def test_data_quality_of_a_real_run_is_a_data_quality(run):
    _, tracker, _ = run
    assert_typed(DataQuality, tracker.data_quality(), "data_quality()")


def test_recommend_resources_of_a_real_run_is_a_resources(run):
    _, tracker, _ = run
    resources = tracker.recommend_resources()
    assert_typed(Resources, resources, "recommend_resources()")
    assert set(resources) == set(Resources.__annotations__)
    assert resources["memory"] >= 64  # MiB: above the 64 MiB the workload touched


def test_recommend_server_of_a_real_run_is_a_server_record(run, monkeypatch):
    """The embedded catalog (the Keeper at the suite's loopback dead end, no local one)."""
    _, tracker, _ = run
    monkeypatch.delenv("RESOURCE_TRACKER_CATALOG", raising=False)
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    monkeypatch.delenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", raising=False)
    server = tracker.recommend_server()
    assert_typed(ServerRecord, server, "recommend_server()")
    servers = tracker.recommend_server(n=3)
    assert isinstance(servers, list) and len(servers) == 3
    for i, one in enumerate(servers):
        assert_typed(ServerRecord, one, f"recommend_server(n=3)[{i}]")


# -- the checker itself ----------------------------------------------------------------------


def test_the_checker_finds_a_missing_an_unknown_and_a_mistyped_key():
    good = {"cpu": 1, "memory": 128, "gpu": 0, "vram": 0}
    assert problems(Resources, good) == []
    assert problems(Resources, {k: v for k, v in good.items() if k != "gpu"})
    assert problems(Resources, dict(good, disk=1))
    assert problems(Resources, dict(good, memory=128.0))
    assert problems(Resources, dict(good, cpu=True))
    nested = {"timestamp": {"duration": 1.0, "samples": 2}, "data_quality": {}}
    assert problems(RunStats, nested) == [
        "value['data_quality']: DataQuality key 'incomplete_columns' missing",
        "value['data_quality']: DataQuality key 'samples_dropped' missing",
    ]
