"""Against the real Pushgateway + Prometheus fed by 30 tracked runs (conftest.py): the job
label of every path (CLI --job, RESOURCE_TRACKER_JOB, ResourceTracker(job=)), the
dashboard's Prometheus source (library and ``resource-tracker dashboard --prometheus``),
every Grafana panel's PromQL, and the alerting rules evaluated by Prometheus itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter

import pytest
from prom_stack import RISKY_RUN, ROOT
from servers import prom_query

from resource_tracker.dashboard._prometheus import KILLED_AFTER_S, load_prometheus

GRAFANA = os.path.join(ROOT, "docs", "grafana", "resource-tracker.json")


def _since(stack) -> float:
    return time.time() - stack.started + 60


def test_every_path_pushes_its_job_label(stack):
    """CLI --job, the variable and the library argument each name the job label of the
    run summaries and of the live series; the CLI's failing command is the failed run."""
    result = prom_query(
        stack.prometheus, "count by (job) (resource_tracker_run_end_timestamp_seconds)"
    )
    assert {r["metric"]["job"]: int(r["value"][1]) for r in result} == stack.expected
    # the final push replaced each finished run's live gauges: the killed run's are left
    live = prom_query(stack.prometheus, "count by (job) (resource_tracker_process_memory_bytes)")
    assert {r["metric"]["job"]: int(r["value"][1]) for r in live} == {"killed-lib": 1}
    failed = prom_query(stack.prometheus, "resource_tracker_run_failed == 1")
    assert [r["metric"]["job"] for r in failed] == ["etl-cli"]


def test_prometheus_source_reads_every_run(stack):
    """load_prometheus: one record per run, grouped by job, with the run's own figures (the
    tracker's peak memory, the ask) and the failed status."""
    loaded = load_prometheus(stack.prometheus.url, _since(stack), [])
    _only_forgotten_skipped(stack, loaded.skipped)
    assert Counter(r.step for r in loaded.records) == {**stack.expected, "killed-lib": 1}
    by_pid = {r.labels.get("pid"): r for r in loaded.records}
    for run in (r for r in stack.runs if r.peak_mib is not None):
        record = by_pid[str(run.pid)]
        assert record.step == run.job and record.source == "prometheus"
        assert record.peak_memory_mib == pytest.approx(run.peak_mib, rel=1e-9)
        assert record.ask.get("memory_mib") == run.asked.get("memory")
        assert record.ask.get("cpu") == run.asked.get("cpu")
        assert record.started + record.duration_s <= time.time()
        assert record.mean_cpu_cores is not None and record.peak_cpu_cores is not None
        # the workload's own peak (VmHWM) against what the source reads
        assert record.peak_memory_mib == pytest.approx(run.maxrss_mib, rel=0.15)
    for run in stack.runs:  # the CLI runs (no pid known here): a run of the job this high
        assert any(
            r.peak_memory_mib == pytest.approx(run.maxrss_mib, rel=0.15)
            for r in loaded.records
            if r.step == run.job
        )
    statuses = Counter((r.step, r.status) for r in loaded.records)
    assert statuses[("etl-cli", "failed")] == 1 and statuses[("etl-cli", "ok")] == 2
    train = sorted((r for r in loaded.records if r.step == "train-lib"), key=lambda r: r.run_id)
    assert len({r.run_id for r in train}) == stack.expected["train-lib"]


def _only_forgotten_skipped(stack, skipped) -> None:
    """The skipped lines are those of runs made again on a busy machine (their summaries
    never arrived: not killed, no sign of an OOM kill)."""
    for line in skipped:
        assert "not counted as killed" in line, line
        assert any(f'pid="{r.pid}"' in line for r in stack.forgotten), line


def test_prometheus_source_lists_a_killed_run(stack):
    """A run SIGKILLed before its summary at its ask: listed as killed (its last reading
    near its ask), with the peak its live gauges showed (its own VmHWM within 15%) and its
    ask, ten minutes on (the clock injected) as now."""
    now = time.time() + KILLED_AFTER_S + 1
    loaded = load_prometheus(stack.prometheus.url, now - stack.started + 60, [], now=now)
    killed = {(r.step, r.labels["pid"]): r for r in loaded.records if r.status == "killed"}
    record = killed.pop(("killed-lib", str(stack.killed.pid)))
    assert record.peak_memory_mib == pytest.approx(stack.killed.maxrss_mib, rel=0.15)
    assert record.ask["memory_mib"] == pytest.approx(stack.killed.maxrss_mib, rel=0.15)
    assert record.duration_s >= 0 and record.started >= stack.started  # from its scrapes
    assert killed == {}
    _only_forgotten_skipped(stack, loaded.skipped)
    assert Counter(r.step for r in loaded.records if r.status != "killed") == stack.expected


def test_prometheus_source_groups_by_another_label(stack):
    """--group-by instance: the host's name is part of the step; --since shorter than the
    runs' age: no run."""
    loaded = load_prometheus(stack.prometheus.url, _since(stack), ["instance"])
    hosts = {r.labels["instance"] for r in loaded.records}
    assert Counter(r.step for r in loaded.records) == {
        f"{job} [instance={host}]": n
        for job, n in {**stack.expected, "killed-lib": 1}.items()
        for host in hosts
    }
    later = load_prometheus(stack.prometheus.url, 1, [], now=time.time() + 3600)
    assert later.records == []


def test_dashboard_cli_lists_every_job(stack):
    """``resource-tracker dashboard --prometheus URL --json``: every job with its number of
    runs, the killed one within seconds of its kill; ``--check`` names the at-risk jobs
    only (risky-lib's newest run above its ask, killed-lib's OOM kill), and exits 1."""
    cli = [sys.executable, "-m", "resource_tracker", "dashboard", "--prometheus"]
    cli += [stack.prometheus.url, "--since", f"{int(_since(stack))}s"]
    done = subprocess.run(cli + ["--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fleet = json.loads(done.stdout)
    assert {s["step"]: s["runs"] for s in fleet["steps"]} == {**stack.expected, "killed-lib": 1}
    failed = {s["step"]: s["failed_or_killed"] for s in fleet["steps"]}
    assert failed["etl-cli"] == 1 and failed["killed-lib"] == 1
    risky = {s["step"]: s["at_risk_runs"] for s in fleet["steps"]}
    assert risky == {**{job: 0 for job in stack.expected}, "risky-lib": 1, "killed-lib": 1}
    check = subprocess.run(cli + ["--check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 1, check.stderr
    named = sorted(line.split(":")[0] for line in check.stdout.splitlines())
    assert named == ["killed-lib", "risky-lib"]


def _panel_queries():
    with open(GRAFANA) as f:
        dashboard = json.load(f)
    for panel in dashboard["panels"]:
        for target in panel.get("targets", ()):
            yield panel["title"], target["expr"]


def _grafana(expr: str) -> str:
    """The PromQL Grafana sends for the dashboard with every job chosen."""
    for name, value in (("$job", ".*"), ("$__rate_interval", "1m"), ("$__interval", "1s")):
        expr = expr.replace(name, value)
    assert "$" not in expr, expr
    return expr


def _query_range(stack, expr: str):
    params = {"query": expr, "start": stack.started, "end": time.time(), "step": "1"}
    url = stack.prometheus.url + "/api/v1/query_range?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def test_every_grafana_panel_returns_data(stack):
    """Each panel's PromQL, as Grafana sends it (all jobs), over the runs' time: data; the
    job variable lists every job."""
    queries = list(_panel_queries())
    assert len(queries) >= 10
    deadline = time.monotonic() + 30  # a rate() needs two scrapes of a series (1 s apart)
    for title, expr in queries:
        while not _query_range(stack, _grafana(expr)):
            assert time.monotonic() < deadline, f"panel {title!r}: no data for {expr}"
            time.sleep(0.2)
    with open(GRAFANA) as f:
        variable = json.load(f)["templating"]["list"][0]
    metric = re.fullmatch(r"label_values\((\w+), job\)", variable["definition"]).group(1)
    url = (
        stack.prometheus.url
        + "/api/v1/label/job/values?"
        + urllib.parse.urlencode({"match[]": metric})
    )
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert set(json.load(answer)["data"]) == set(stack.expected)


def _firing(stack):
    alerts = prom_query(stack.prometheus, 'ALERTS{alertstate="firing"}')
    return {(a["metric"]["alertname"], a["metric"]["job"]) for a in alerts}


def test_alerting_rules_fire_on_the_right_jobs(stack):
    """Prometheus evaluating docs/prometheus/*.yml over the runs: memory at risk fires for
    risky-lib only (its run peaking above the ask), over-provisioned for score-lib only, OOM
    killed for killed-lib only (killed at its ask)."""
    wanted = {
        ("ResourceTrackerMemoryAtRisk", "risky-lib"),
        ("ResourceTrackerOverProvisioned", "score-lib"),
        ("ResourceTrackerOomKilled", "killed-lib"),
    }
    deadline = time.monotonic() + 30
    while not wanted <= _firing(stack) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _firing(stack) == wanted
    risky = [r for r in stack.runs if r.job == "risky-lib"]
    assert [r.peak_mib > r.asked["memory"] for r in risky] == [
        i == RISKY_RUN for i in range(len(risky))
    ]
