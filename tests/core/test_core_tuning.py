"""The tuning rule (resource_tracker.tuning), on real runs' statistics where the point is
what a run measured, and on hand-made records where the point is an odd value (issue 24
points 1-3, issue 25 item 10)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from workloads import Workload, run_to_report

from resource_tracker import ResourceTracker
from resource_tracker.tuning import (
    check_bounds,
    limit_runs,
    resources_line,
    run_record,
    tune_resources,
)


def _real_stats(mib=120, seconds=0.6):
    """stats() of a real workload holding ``mib`` MiB and spinning ``seconds`` of CPU."""
    w = Workload(f"buf = touched({mib})\nspin({seconds})\nreport(rss=rss_kib())")
    tracker = ResourceTracker(pid=w.pid, interval=0.1, discover_cloud=False,
                              discover_server=False)  # fmt: skip
    report = run_to_report(w, tracker)
    return tracker.stats(), report


@pytest.fixture(scope="module")
def real():
    return _real_stats()


def _tuned_runs(stats, code_ask, n):
    """n runs of the same workload, each asking what the tuning gave it and recorded with
    that ask (the history: the newest 5 runs); the asks, in order."""
    records, asks = [], []
    for i in range(n):
        tuning = tune_resources(records, code_ask)
        had = tuning.resources or dict(code_ask)
        asks.append(dict(had))
        records = limit_runs([dict(run_record(stats, had), run=str(i))] + records, 5)
    return asks


def test_tuned_runs_of_an_unchanged_workload_keep_one_ask(real):
    """No compounding: from an oversized ask the tuning steps down by at most half a run
    and then holds; from a right-sized ask, 5 tuned runs ask the same."""
    stats, report = real
    asks = _tuned_runs(stats, {"cpu": 8, "memory": 16000}, 14)
    memory = [a["memory"] for a in asks]
    assert memory[:3] == [16000, 16000, 16000]  # fewer than 3 runs: kept
    assert all(b <= a and b >= a / 2 for a, b in zip(memory, memory[1:]))
    assert memory[-1] == memory[-2] == memory[-3] == memory[-4] == memory[-5]
    assert memory[-1] >= 1.2 * report["rss"] / 1024
    steady = asks[-1]
    again = _tuned_runs(stats, steady, 8)[3:]  # five tuned runs
    assert again == [steady] * 5


def test_oom_kill_raises_over_what_the_run_had_not_the_code(real):
    stats, _ = real
    killed = dict(stats, cgroup={"oom_kills": 1, "memory_limit_mib": 1024})
    records = [run_record(killed, {"memory": 4096})] + [run_record(stats)] * 3
    tuning = tune_resources(records, {"memory": 4096})
    # 1.5 x the 1 GiB the container had, rounded up: not 1.5 x the 4096 in the code
    assert tuning.resources["memory"] == 2048, tuning
    # a killed run (no final record) counts as an OOM kill at what it had
    gone = dict(run_record(stats, {"memory": 256}), status="killed")
    assert tune_resources([gone], {"memory": 256}).resources["memory"] > 256


def test_throttled_run_gets_a_core_over_its_limit_not_over_the_code(real):
    stats, _ = real
    hit = dict(stats, cgroup={"cpu_limit_cores": 0.25, "cpu_periods": 100,
                              "cpu_throttled_periods": 80})  # fmt: skip
    tuning = tune_resources([run_record(hit, {"cpu": 4})] * 3, {"cpu": 4})
    assert tuning.resources["cpu"] == max(1, tuning.resources["cpu"]) <= 2  # not 5


def test_cpu_covers_the_busy_intervals_not_the_mean():
    # idle -> 2 busy cores -> idle: mean 0.7, 90th percentile 2.0
    stats = {"process_cpu_usage": {"mean": 0.7, "p90": 2.0, "max": 2.0},
             "process_memory": {"max": 100 * 1024}, "timestamp": {"duration": 60}}  # fmt: skip
    tuning = tune_resources([stats] * 3, {"cpu": 2})
    assert tuning.resources["cpu"] == 2
    assert "recommend_resources() uses the mean" in tuning.why


def test_a_starved_run_does_not_lower_the_ask():
    """A real step that wants 2 cores on a machine whose every core is kept busy by other
    processes: it gets less than 2 cores; its record says starved and the ask stays 2."""
    cores = os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        w = Workload("import threading\nimport subprocess\n"
                     "p = [subprocess.Popen([sys.executable, '-c', 'x=0\\nwhile x < 3e7: x += 1'])"
                     " for _ in range(2)]\n[q.wait() for q in p]\nreport(done=1)")  # fmt: skip
        tracker = ResourceTracker(pid=w.pid, interval=0.2, discover_cloud=False,
                                  discover_server=False)  # fmt: skip
        run_to_report(w, tracker)
        stats = tracker.stats()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    record = run_record(stats, {"cpu": 2}, machine_cores=cores)
    assert record["cpu_p90"] < 1.6 and record["starved"]  # it got less than it wanted
    tuning = tune_resources([record] * 4, {"cpu": 2})
    assert tuning.resources["cpu"] >= 2, tuning
    assert "starved" in tuning.note


@pytest.mark.parametrize(
    "asked",
    [{"memory": "16G"}, {"memory": float("inf")}, {"memory": "text"}, {"memory": None},
     "16G", {"cpu": float("nan"), "memory": 1e18}],
)  # fmt: skip
def test_odd_asks_give_a_note_never_an_exception(real, asked):
    stats, _ = real
    tuning = tune_resources([stats] * 3, asked)
    assert tuning.resources["memory"] >= 128
    if asked not in ({"memory": None},):
        assert "ignored" in tuning.note


def test_odd_history_values(real):
    stats, _ = real
    # oom_kills "0" is no kill; a NaN peak leaves that run's peak out, not the tuning
    zero = dict(stats, cgroup={"oom_kills": "0"})
    base = tune_resources([stats] * 3, {"memory": 512}).resources
    assert tune_resources([zero] * 3, {"memory": 512}).resources == base
    nan = dict(stats, process_memory={"max": float("nan")}, process_memory_hwm={})
    assert tune_resources([nan, stats, stats], {"memory": 512}).resources == base
    # an OOM at an absurd ask: the ask is not a size, the peak decides
    huge = run_record(dict(stats, cgroup={"oom_kills": 1}), {"memory": 1e18})
    tuned = tune_resources([huge], {"memory": 1e18})
    assert tuned.resources["memory"] < 4096 and "ignored" in tuned.note
    for junk in ([None, "x", 3], [{"version": 1, "status": "ok", "memory_peak_mib": "abc"}]):
        tune_resources(junk, None)  # no exception


def test_resources_line_prints_whole_numbers_rounded_up():
    assert resources_line({"cpu": 1.2, "memory": 11717600.3}) == (
        "@resources(cpu=2, memory=11717601)"
    )
    assert resources_line({"memory": "16G"}) == "nothing (no @resources, @kubernetes or @batch)"


def test_guardrails(real):
    stats, _ = real
    assert tune_resources([stats] * 3, {}, {"min_memory": 3000}).resources["memory"] == 3000
    capped = tune_resources([dict(stats, cgroup={"oom_kills": 1, "memory_limit_mib": 4096})],
                            {"memory": 4096}, {"max_memory": 5000})  # fmt: skip
    assert capped.resources["memory"] == 5000 and "max_memory" in capped.note
    with pytest.raises(ValueError, match="min_memory=9000 is above max_memory=100"):
        check_bounds({"min_memory": 9000, "max_memory": 100})
    with pytest.raises(ValueError, match="max_cpu"):
        check_bounds({"max_cpu": "lots"})


def test_recommend_metaflow_step_view_with_odd_values(real, tmp_path, capsys):
    """The `recommend --metaflow` path (its step view and printer) on odd stored values:
    notes, whole numbers, no exception."""
    from resource_tracker.cli.recommend_metaflow import _print, step_view

    stats, _ = real
    odd = dict(stats, cgroup={"oom_kills": "0", "memory_limit_mib": "lots"})
    entry = {
        "stats": [odd, {"timestamp": {"duration": "x"}}],
        "records": [run_record(odd, {"memory": "16G"})] * 3 + [{"version": 1, "status": "ok"}],
        "asked": {"memory": "16G", "cpu": float("inf"), "gpu": None},
        "tune": "junk",
    }
    view = step_view(entry, 30.0, str(tmp_path / "no-catalog.db"))
    assert "ignored" in view["note"] and view["recommended"]["memory"] >= 128
    _print("F", ["1"], {"work": view}, 30.0, "assumed")
    out = capsys.readouterr().out
    assert "recommended @resources(" in out and "e+" not in out
