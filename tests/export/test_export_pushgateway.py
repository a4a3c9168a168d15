"""Pushgateway export against the real servers: Debian's prometheus-pushgateway and a
Prometheus scraping it, both on loopback (see servers.py). The values are read back through
Prometheus's HTTP API (/api/v1/query) and checked against the tracker's own data."""

from __future__ import annotations

import time

import pytest
from servers import prom_query, prom_wait
from typed_dict_check import assert_typed
from workloads import Workload

from resource_tracker import ResourceTracker
from resource_tracker.results_types import ExportReport

MIB = 1024 * 1024

ALLOCATE_200_MIB = """
block = bytearray(200 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
report(allocated=True)
sys.stdin.readline()  # hold the memory until told to exit
"""


def _series(prometheus, name, pid):
    return prom_query(prometheus, f'{name}{{job="resource_tracker",pid="{pid}"}}')


def test_pushgateway_live_gauges_and_final_summary_reach_prometheus(prom_stack, monkeypatch):
    """A child allocating 200 MiB, tracked with pushgateway export: while it holds the
    memory its live gauge shows in Prometheus; after stop() the run summary's peak equals the
    tracker's own peak (within 1%), with the job/instance/pid labels."""
    pushgateway, prometheus = prom_stack
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", pushgateway.url)
    work = Workload(ALLOCATE_200_MIB)
    try:
        tracker = ResourceTracker(pid=work.pid, interval=0.2, export="pushgateway")
        work.go()
        assert work.read_report()["allocated"]
        live = prom_wait(
            prometheus,
            f'resource_tracker_process_memory_bytes{{pid="{work.pid}"}} > {150 * MIB}',
        )
        assert live[0]["metric"]["job"] == "resource_tracker"
        work.send("exit\n")
        work.proc.wait(30)
    finally:
        if work.proc.poll() is None:
            work.proc.kill()
    began = time.monotonic()
    tracker.stop()
    assert time.monotonic() - began < 3.0  # the final push waits 2 s at most
    stats = tracker.stats()
    report = stats["export"]["targets"]["pushgateway"]
    assert report["final"] == "sent" and report["failures"] == 0, report
    peak_kib = stats["process_memory"]["max"]
    assert peak_kib * 1024 > 200 * MIB
    name = "resource_tracker_run_process_memory_peak_bytes"
    result = prom_wait(prometheus, f'{name}{{pid="{work.pid}"}}')
    assert len(result) == 1
    value = float(result[0]["value"][1])
    assert value == pytest.approx(peak_kib * 1024, rel=0.01)
    labels = result[0]["metric"]
    assert labels["job"] == "resource_tracker"
    assert labels["instance"] and labels["pid"] == str(work.pid)
    duration = float(
        _series(prometheus, "resource_tracker_run_duration_seconds", work.pid)[0]["value"][1]
    )
    assert duration == pytest.approx(stats["timestamp"]["duration"], rel=0.01)
    recommended = tracker.recommend_resources()["memory"] * MIB
    got = _series(prometheus, "resource_tracker_recommended_memory_bytes", work.pid)
    assert float(got[0]["value"][1]) == recommended
    sent = stats["process_read_bytes"]["sum"]
    got = _series(prometheus, "resource_tracker_run_process_read_total_bytes", work.pid)
    assert float(got[0]["value"][1]) == pytest.approx(sent, abs=1)


@pytest.mark.parametrize("money_floor", ["0", None])
def test_pushgateway_final_push_on_failure(prom_stack, monkeypatch, money_floor):
    """A job failing inside ``with ResourceTracker(...)``: the exception reaches the caller
    unchanged and the final push still happens, marked failed, with the run's findings (it
    asked for 8 CPUs and 16000 MiB, as a Metaflow step's @resources would: over-provisioned),
    the same as the report's: priced, the gap costs a few cents a month, under the default
    floor of $1 a month, but the ask is many times the need: info with or without the money
    floor)."""
    pushgateway, prometheus = prom_stack
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", pushgateway.url)
    if money_floor is not None:
        monkeypatch.setenv("RESOURCE_TRACKER_OVER_MIN_USD_MONTH", money_floor)
    work = Workload("time.sleep(1.0)\n")
    try:
        with pytest.raises(ZeroDivisionError):
            with ResourceTracker(pid=work.pid, interval=0.2, export="pushgateway") as tracker:
                tracker.extra["resources_asked"] = {"cpu": 8, "memory": 16000}
                work.go()
                work.proc.wait(30)
                raise ZeroDivisionError("the job broke")
    finally:
        if work.proc.poll() is None:
            work.proc.kill()
    assert tracker.stats()["export"]["targets"]["pushgateway"]["final"] == "sent"
    assert_typed(ExportReport, tracker.export_report(), "export_report()")  # the typed contract
    assert tracker.stats()["export"] == tracker.export_report()
    failed = prom_wait(prometheus, f'resource_tracker_run_failed{{pid="{work.pid}"}}')
    assert float(failed[0]["value"][1]) == 1.0
    # one push, one scrape: its findings are there with its failed flag (or none at all)
    found = prom_query(prometheus, f'resource_tracker_run_insights{{pid="{work.pid}"}}')
    kinds = {(r["metric"]["kind"], r["metric"]["severity"]): float(r["value"][1]) for r in found}
    expected = {}
    for insight in tracker.summary().insights:
        key = (insight.kind, insight.severity)
        expected[key] = expected.get(key, 0.0) + 1.0
    assert kinds == expected
    assert ("over_provisioned", "info") in kinds


def test_pushgateway_final_push_at_exit_without_stop(prom_stack, tmp_path):
    """A script that dies of an uncaught exception without calling stop(): the final push
    still happens at interpreter exit, marked failed; the script's own exit status and
    traceback are untouched."""
    import os
    import subprocess
    import sys

    pushgateway, prometheus = prom_stack
    script = tmp_path / "job.py"
    script.write_text(
        "import os, time\n"
        "from resource_tracker import ResourceTracker\n"
        "tracker = ResourceTracker(interval=0.2, export='pushgateway')\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(1.5)\n"
        "raise RuntimeError('the job broke')\n"
    )
    env = dict(os.environ, RESOURCE_TRACKER_PUSHGATEWAY_URL=pushgateway.url)
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "RuntimeError: the job broke" in done.stderr
    pid = done.stdout.split()[0]
    failed = prom_wait(prometheus, f'resource_tracker_run_failed{{pid="{pid}"}}')
    assert float(failed[0]["value"][1]) == 1.0
    peak = prom_query(prometheus, f'resource_tracker_run_process_memory_peak_bytes{{pid="{pid}"}}')
    assert float(peak[0]["value"][1]) > 0
