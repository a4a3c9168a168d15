"""The states a report (and so a Metaflow card) can be in, each as a real page: a run with
everything (cloud, GPU, catalog, history, insights), offline with no catalog, no cloud and no
GPU, one sample, a failed Metaflow step, a 24 h run, and a real tracked workload (this
machine: no GPU). Built from real snapshots through ResourceTracker.from_snapshot and the
real summary; the catalog is the embedded one, or none at all (its env switches)."""

from __future__ import annotations

import dataclasses
import json
import os

from report_data import long_run_snapshot, tracked_xss_run

from resource_tracker import ResourceTracker
from resource_tracker.insights import Insight
from resource_tracker.report._render import render_summary

NO_GPU_SERVER = {
    "vcpus": 2,
    "memory_mb": 4096,
    "gpu_count": 0,
    "gpu_names": [],
    "gpu_memory_mb": 0,
    "cpu_model": "AMD EPYC 7B13",
    "architecture": "x86_64",
    "os": "Debian GNU/Linux 12 (bookworm)",
    "cgroup": {"version": 2, "cpu_limit_cores": None, "memory_limit_mb": None},
}


#: Insights as build_summary makes them (resource_tracker.insights.Insight).
InsightLike = Insight


INSIGHTS = (
    InsightLike(
        "over_provisioned",
        "warning",
        "The step used at most 2.5 GiB of its 16 GiB memory limit: 6 GiB would do.",
        {"peak_mib": 2520.0, "limit_mib": 16384.0},
    ),
    InsightLike("changed", "info", "CPU use doubled against the 2 earlier runs.", {"ratio": 2.0}),
)


def _no_gpu(snap):
    snap["server_info"] = NO_GPU_SERVER
    for table in ("process_metrics", "system_metrics"):
        for name in ("gpu_usage", "gpu_vram", "gpu_utilized"):
            snap[table][name] = snap[table][name][:0] + type(snap[table][name])(
                "d", bytes(8 * len(snap[table][name]))
            )
    # the machine above has 2 vCPUs: keep CPU in its range, but one sample reads 2.08
    snap["system_metrics"]["cpu_usage"][5] = 2.08
    return snap


def _history(tracker):
    past = json.loads(json.dumps(tracker.stats()))
    past["process_cpu_usage"]["mean"] /= 2.0
    return [past, past]


def _page(tracker, history=None, insights=()):
    summary = tracker.summary(history)
    if insights:
        summary = dataclasses.replace(summary, insights=tuple(insights))
    return render_summary(summary, tracker.process_metrics, tracker.system_metrics)


def offline(monkeypatch):
    """No catalog at all: no file, no embedded snapshot, no Keeper."""
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", "/nonexistent/rt-catalog.db")
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "off")
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")


def build_states(directory, monkeypatch):
    """{state name: path of its page} (written into directory)."""
    pages = {}
    full = ResourceTracker.from_snapshot(long_run_snapshot(rows=600))
    pages["full"] = _page(full, _history(full), INSIGHTS)
    pages["no-cloud-no-gpu"] = _page(
        ResourceTracker.from_snapshot(dict(_no_gpu(long_run_snapshot(rows=300)), cloud_info=None))
    )
    failed = long_run_snapshot(rows=120)
    failed["extra"] = {"step_failed": True, "integration": "Metaflow"}
    failed["label"] = "TrainFlow/17/train/3"
    failed["status"] = "failed"
    pages["failed-step"] = _page(ResourceTracker.from_snapshot(failed))
    pages["24h"] = _page(ResourceTracker.from_snapshot(long_run_snapshot()))
    pages["real-workload"] = _page(tracked_xss_run())
    with monkeypatch.context() as m:
        offline(m)
        pages["offline"] = _page(ResourceTracker.from_snapshot(long_run_snapshot(rows=300)))
        pages["one-sample"] = _page(ResourceTracker.from_snapshot(long_run_snapshot(rows=1)))
    paths = {}
    for name, page in pages.items():
        paths[name] = os.path.join(str(directory), f"{name}.html")
        page.save(paths[name])
    return paths
