"""One answer everywhere (issue 24, point 4): a tuned Metaflow step pushes to a real
Pushgateway (loopback) the same recommended request as its artifact, its card's summary and
`resource-tracker recommend --metaflow` give; the push is computed after the ask and the
history are attached (the tuning's min_memory guardrail, 2048 MiB, is above what the
step's peak alone would give). Issue 37: every other surface too, `dashboard --prometheus`
and Grafana's "Recommended per step" panel against a real Prometheus scraping it."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest
from mf_harness import FLOWS, hermetic_env, query, run_flow, task_of
from servers import prom_query, start_prometheus, start_pushgateway

from resource_tracker import ResourceTracker
from resource_tracker.tuning import resources_line

pytest.importorskip("metaflow")
MIB = 1024 * 1024
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAFANA = os.path.join(ROOT, "docs", "grafana", "resource-tracker.json")


def _pushed(url, name, step):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    pattern = rf'^{name}\{{[^}}]*step="{step}"[^}}]*\}} (\S+)$'
    return [float(v) for v in re.findall(pattern, text, re.M)]


def test_tuned_step_pushes_the_artifacts_recommendation(tmp_path):
    pushgateway = start_pushgateway(str(tmp_path))
    try:
        env = {"RESOURCE_TRACKER_EXPORT": "pushgateway", "RT_TEST_ALLOC_MIB": "50",
               "RESOURCE_TRACKER_PUSHGATEWAY_URL": pushgateway.url,
               "RT_TEST_MIN_MEMORY": "2048"}  # fmt: skip
        done = run_flow(tmp_path, os.path.join(FLOWS, "mf_oom_tune_flow.py"), env=env)
        assert done.returncode == 0, done.stdout[-3000:]
        pushed = _pushed(pushgateway.url, "resource_tracker_recommended_memory_bytes", "work")
    finally:
        pushgateway.stop()
    (run,) = query(tmp_path, "OomTuneFlow")
    data = task_of(run, "work")["artifacts"]["resource_tracker_data"]
    assert data["detailed_stats"]["process_memory"]["max"] < 1024 * 1024  # < 1 GiB peak
    recommended = data["recommendations"]["resources"]
    assert recommended["memory"] == data["tuning"]["next"]["memory"] == 2048
    assert pushed == [2048 * MIB]
    cli = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "recommend", "--metaflow", "OomTuneFlow",
         "--json", "--catalog", os.path.join(str(tmp_path), "no-catalog.db")],
        cwd=str(tmp_path), env=hermetic_env(tmp_path), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert json.loads(cli.stdout)["steps"]["work"]["recommended"]["memory"] == 2048


def _json_cli(root, *args):
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", *args, "--json", "--catalog",
         os.path.join(str(root), "no-catalog.db")],
        cwd=str(root), env=hermetic_env(root), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def _grafana_panel(prometheus):
    """The tuned ask the Grafana panel "Recommended per step" shows now for `work` (its
    PromQL as Grafana sends it with every job chosen)."""
    with open(GRAFANA) as f:
        (panel,) = [p for p in json.load(f)["panels"] if p["title"] == "Recommended per step"]
    shown = {}
    for target in panel["targets"]:
        expr = target["expr"].replace("$job", ".*")
        key = "memory" if "memory" in expr else "cpu"
        (series,) = [s for s in prom_query(prometheus, expr) if s["metric"].get("step") == "work"]
        shown[key] = float(series["value"][1]) / (MIB if key == "memory" else 1)
    return resources_line(shown)


def _prometheus_surfaces(root, prometheus, runs):
    """`dashboard --prometheus` and the Grafana panel, once Prometheus scraped the runs."""
    deadline = time.monotonic() + 60
    end = 'resource_tracker_run_end_timestamp_seconds{step="work"}'
    while len(prom_query(prometheus, end)) < runs:
        assert time.monotonic() < deadline, f"{runs} runs not scraped in 60 s"
        time.sleep(0.3)
    (view,) = _json_cli(root, "dashboard", "--prometheus", prometheus.url)["steps"]
    return {
        "dashboard --prometheus": resources_line(
            {"cpu": view["need"].get("cpu"), "memory": view["need"].get("memory")}
        ),
        "grafana panel": _grafana_panel(prometheus),
    }


def _surfaces(root, pushgateway, run):
    """The next run's @resources line of the step `work` on every surface."""
    data = task_of(run, "work")["artifacts"]["resource_tracker_data"]
    (card,) = [c for c in task_of(run, "work")["cards"] if c["type"] == "tracked_resources"]
    page = html.unescape(card["html"])
    shown = re.search(r"Next run: (@resources\([^)]*\))", page)
    tile = re.search(r'id="rt-recommended".*?<code>(@resources\([^)]*\))</code>.*?from ([^<]*)<',
                     page, re.S)  # fmt: skip
    pushed = {key: _pushed(pushgateway.url, f"resource_tracker_recommended_{name}", "work")
              for key, name in (("cpu", "cpu_cores"), ("memory", "memory_bytes"))}  # fmt: skip
    saved = os.path.join(str(root), "saved", str(run["id"]))
    os.makedirs(saved, exist_ok=True)
    with open(os.path.join(saved, "resource-tracker.json"), "w") as f:  # `run --output`'s
        f.write(ResourceTracker.from_snapshot(data["tracker"]).dumps())
    (mf_view,) = _json_cli(root, "dashboard", "--metaflow", "OomTuneFlow")["steps"]
    (runs_view,) = _json_cli(root, "dashboard", "--runs", os.path.join(str(root), "saved"))[
        "steps"]  # fmt: skip
    return {
        "artifact": resources_line(data["tuning"]["next"]),
        "summary": resources_line(data["recommendations"]["resources"]),
        "card": shown.group(1) if shown else None,
        "card's tile": tile.group(1) if tile else None,
        "tile basis": tile.group(2) if tile else None,
        "export": resources_line({"cpu": pushed["cpu"][-1], "memory": pushed["memory"][-1] / MIB}),
        "recommend --metaflow": resources_line(
            _json_cli(root, "recommend", "--metaflow", "OomTuneFlow")["steps"]["work"][
                "recommended"
            ]
        ),  # fmt: skip
        "dashboard --metaflow": resources_line(
            {"cpu": mf_view["need"].get("cpu"), "memory": mf_view["need"].get("memory")}
        ),
        "dashboard --runs": resources_line(
            {"cpu": runs_view["need"].get("cpu"), "memory": runs_view["need"].get("memory")}
        ),
    }


@pytest.mark.parametrize("tuned_cpu", ["whole", "fractional"])
def test_one_answer_on_every_surface(tmp_path, tuned_cpu):
    """Issue 37, point 5: a tuned step with the guardrail min_memory=2048, then 1024 (its
    peak alone would ask less; the second run's answer is lower), after one run and after a
    second: the artifact, the card, the export, `recommend --metaflow`, `dashboard
    --metaflow`, `dashboard --runs` (its saved snapshots), `dashboard --prometheus` and
    the Grafana panel (a real Prometheus scraping the Pushgateway) show the same
    @resources line (one run included: a recommendation); with
    RESOURCE_TRACKER_TUNED_CPU=fractional (Kubernetes) a fraction of a core on each."""
    pytest.importorskip("prometheus_client")
    pushgateway = start_pushgateway(str(tmp_path))
    try:
        prometheus = start_prometheus(str(tmp_path), pushgateway.url)
    except BaseException:
        pushgateway.stop()
        raise
    try:
        for runs, floor in ((1, "2048"), (2, "1024")):
            env = {"RESOURCE_TRACKER_EXPORT": "pushgateway", "RT_TEST_ALLOC_MIB": "50",
                   "RESOURCE_TRACKER_PUSHGATEWAY_URL": pushgateway.url,
                   "RT_TEST_MIN_MEMORY": floor,
                   "RESOURCE_TRACKER_TUNED_CPU": tuned_cpu}  # fmt: skip
            done = run_flow(tmp_path, os.path.join(FLOWS, "mf_oom_tune_flow.py"), env=env)
            assert done.returncode == 0, done.stdout[-3000:]
            answers = _surfaces(tmp_path, pushgateway, query(tmp_path, "OomTuneFlow")[0])
            answers.update(_prometheus_surfaces(tmp_path, prometheus, runs))
            basis = answers.pop("tile basis")
            assert len(set(answers.values())) == 1, (runs, answers)
            assert f"memory={floor}" in answers["artifact"], answers
            assert basis.startswith("tuned by @track_resources from"), basis
            cpu = float(re.search(r"cpu=([0-9.]+)", answers["artifact"]).group(1))
            assert (cpu < 1 and cpu % 0.25 == 0) if tuned_cpu == "fractional" else cpu >= 1
    finally:
        prometheus.stop()
        pushgateway.stop()
