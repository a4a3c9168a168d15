"""A real Metaflow run (pip-installed metaflow, local datastore and metadata; see
tests/metaflow/mf_harness.py) with @track_resources(export="pushgateway"): the step's series
reach Prometheus (through Debian's Pushgateway, scraped on loopback) carrying the flow, run,
step and task ids, and the PromQL of docs/export.md answers "peak memory of step X over the
last N runs" from them."""

from __future__ import annotations

import os

import pytest
from mf_harness import query, run_flow, task_of
from servers import prom_query, prom_wait

pytest.importorskip("metaflow")

FLOW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flows", "mf_export_flow.py")
MIB = 1024 * 1024

# the query of docs/export.md, with N = 30 (and 1 below)
LAST_RUNS = """
max by (run_id) (
  resource_tracker_run_process_memory_peak_bytes{{flow="ExportFlow", step="train"}}
  and on (run_id)
  topk({n}, max by (run_id) (
    resource_tracker_run_end_timestamp_seconds{{flow="ExportFlow", step="train"}}))
)
"""


def test_metaflow_step_series_carry_the_task_ids(prom_stack, tmp_path):
    pushgateway, prometheus = prom_stack
    env = {"RESOURCE_TRACKER_PUSHGATEWAY_URL": pushgateway.url}
    for _ in range(2):
        done = run_flow(tmp_path, FLOW, env=env)
        assert done.returncode == 0, done.stdout[-4000:]
    runs = query(tmp_path, "ExportFlow", all_runs=True)
    assert len(runs) == 2
    tasks = {}
    for run in runs:
        task = task_of(run, "train")
        data = task["artifacts"]["resource_tracker_data"]
        assert data["error"] is None, data["error"]
        export = data["detailed_stats"]["export"]["targets"]["pushgateway"]
        assert export["final"] == "sent" and export["failures"] == 0, export
        tasks[str(run["id"])] = (str(task["id"]), data["detailed_stats"])

    peaks = prom_wait(
        prometheus, 'resource_tracker_run_process_memory_peak_bytes{flow="ExportFlow"}', count=2
    )
    for series in peaks:
        labels = series["metric"]
        assert labels["step"] == "train" and labels["job"] == "ExportFlow/train"  # flow/step
        task_id, stats = tasks[labels["run_id"]]
        assert labels["task_id"] == task_id
        assert labels["instance"]
        peak = stats["process_memory"]["max"] * 1024
        assert float(series["value"][1]) == pytest.approx(peak, rel=0.01)
        assert peak > 100 * MIB
    # the final push replaced the live gauges: no live series of a finished task is left
    assert prom_query(prometheus, 'resource_tracker_process_memory_bytes{flow="ExportFlow"}') == []

    last_30 = prom_query(prometheus, LAST_RUNS.format(n=30))
    assert {s["metric"]["run_id"] for s in last_30} == set(tasks)
    newest = max(tasks, key=int)
    last_1 = prom_query(prometheus, LAST_RUNS.format(n=1))
    assert [s["metric"]["run_id"] for s in last_1] == [newest]


def test_metaflow_otlp_resource_carries_the_task_ids(tmp_path):
    """RESOURCE_TRACKER_EXPORT=otlp and no export attribute: the step exports over OTLP to a
    loopback receiver (official opentelemetry-proto decoding); the resource carries the
    flow, run, step and task ids beside host.name and process.pid."""
    from servers import OtlpReceiver, data_points

    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    flow = os.path.join(os.path.dirname(FLOW), "mf_otlp_flow.py")
    receiver = OtlpReceiver()
    try:
        env = {"RESOURCE_TRACKER_EXPORT": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        done = run_flow(tmp_path, flow, env=env)
        assert done.returncode == 0, done.stdout[-4000:]
    finally:
        receiver.close()
    run = query(tmp_path, "OtlpFlow")[0]
    task = task_of(run, "train")
    resources = {tuple(sorted(p["resource"].items())) for p in data_points(receiver.requests)}
    assert len(resources) == 1  # only the tracked step exported
    resource = dict(next(iter(resources)))
    assert resource["metaflow.flow_name"] == "OtlpFlow"
    assert resource["metaflow.run_id"] == str(run["id"])
    assert resource["metaflow.step_name"] == "train"
    assert resource["metaflow.task_id"] == str(task["id"])
    assert resource["host.name"] and resource["process.pid"] > 0


def test_metaflow_with_options_merge_into_the_steps_decorator(prom_stack, tmp_path):
    """`run --with track_resources:export=pushgateway,interval=0.5` on a flow whose step has
    @track_resources(interval=0.2, create_card=False, history=False): the command line's
    options win (export on, interval 0.5), the code's others stay (no card, no history), and
    the step is tracked once; the steps without a decorator get the command line's."""
    pushgateway, prometheus = prom_stack
    flow = os.path.join(os.path.dirname(FLOW), "mf_with_flow.py")
    env = {"RESOURCE_TRACKER_PUSHGATEWAY_URL": pushgateway.url}
    with_option = "track_resources:export=pushgateway,interval=0.5,history=False"
    done = run_flow(tmp_path, flow, "--with", with_option, env=env)
    assert done.returncode == 0, done.stdout[-4000:]
    (run,) = query(tmp_path, "WithFlow")
    train = task_of(run, "train")
    data = train["artifacts"]["resource_tracker_data"]
    assert data["error"] is None, data["error"]
    assert data["tracker"]["interval"] == 0.5  # the command line wins
    export = data["detailed_stats"]["export"]["targets"]["pushgateway"]
    assert export["final"] == "sent" and export["failures"] == 0, export
    assert train["cards"] == []  # create_card=False of the code stays
    assert task_of(run, "start")["cards"] != []  # --with alone: the defaults (a card)
    (peak,) = prom_wait(
        prometheus, 'resource_tracker_run_process_memory_peak_bytes{flow="WithFlow",step="train"}'
    )
    assert peak["metric"]["run_id"] == str(run["id"])
    assert float(peak["value"][1]) == pytest.approx(
        data["detailed_stats"]["process_memory"]["max"] * 1024, rel=0.01
    )


def _groups(pushgateway, flow: str):
    """The Pushgateway's groups of a flow: {attempt: metric names}."""
    import json
    import urllib.request

    with urllib.request.urlopen(pushgateway.url + "/api/v1/metrics", timeout=10) as answer:
        groups = json.load(answer)["data"]
    return {
        g["labels"].get("attempt"): {k for k in g if k.startswith("resource_tracker_")}
        for g in groups
        if g["labels"].get("flow") == flow
    }


def test_metaflow_retry_attempts_keep_their_own_series(prom_stack, tmp_path):
    """A real @retry: the first attempt of ``train`` is SIGKILLed once its live gauges went
    out, the second goes through. Each attempt keeps its own Pushgateway group (the
    ``attempt`` label): the killed one its live gauges, the finished one its summary only
    (its live gauges replaced). The dashboard reads the attempt that went through as a run
    of its own, and the killed one (no sign of an OOM kill) as one skipped line."""
    import time

    from resource_tracker.dashboard._prometheus import load_prometheus

    pushgateway, prometheus = prom_stack
    flow = os.path.join(os.path.dirname(FLOW), "mf_retry_export_flow.py")
    started = time.time()
    done = run_flow(tmp_path, flow, env={"RESOURCE_TRACKER_PUSHGATEWAY_URL": pushgateway.url})
    assert done.returncode == 0, done.stdout[-4000:]
    (run,) = query(tmp_path, "RetryExportFlow")
    task = task_of(run, "train")
    export = task["artifacts"]["resource_tracker_data"]["detailed_stats"]["export"]
    assert export["targets"]["pushgateway"]["final"] == "sent", export
    groups = _groups(pushgateway, "RetryExportFlow")
    assert set(groups) == {"0", "1"}, groups
    assert "resource_tracker_process_memory_bytes" in groups["0"]
    assert "resource_tracker_run_end_timestamp_seconds" not in groups["0"]
    assert "resource_tracker_run_end_timestamp_seconds" in groups["1"]
    assert "resource_tracker_process_memory_bytes" not in groups["1"]  # replaced at the end
    assert "resource_tracker_export_period_seconds" not in groups["1"]
    prom_wait(prometheus, 'resource_tracker_run_end_timestamp_seconds{flow="RetryExportFlow"}')
    prom_wait(prometheus, 'resource_tracker_export_period_seconds{flow="RetryExportFlow"}')
    later = time.time() + 601  # both attempts long over (the clock given)
    loaded = load_prometheus(prometheus.url, later - started + 60, [], now=later)
    mine = [r for r in loaded.records if r.labels.get("flow") == "RetryExportFlow"]
    assert [(r.status, r.labels["attempt"]) for r in mine] == [("ok", "1")]
    assert mine[0].run_id == f"RetryExportFlow/{run['id']}/train/{task['id']} (attempt 1)"
    lost = [line for line in loaded.skipped if "RetryExportFlow" in line]
    assert len(lost) == 1 and 'attempt="0"' in lost[0] and "not counted as killed" in lost[0]
