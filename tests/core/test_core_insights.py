"""Insights of a run summary from real tracked runs: changed (6 runs of a real workload, the
6th holding half as much memory again), phases (a real workload on one core, then two),
at risk and over-provisioned from the container's cgroup figures.

The cgroup figures come from a fake cgroup v2 tree (what the kernel shows in a container,
the stand-in of tests/core/test_core_cgroups.py) under RESOURCE_TRACKER_PROCFS_ROOT /
RESOURCE_TRACKER_SYSFS_ROOT, with the kernel's counters moved during the run; the tracked
process is real."""

from __future__ import annotations

import json
import math
import os
import time

import pytest
from workloads import Workload

from resource_tracker import ResourceTracker
from resource_tracker import formatting as fmt
from resource_tracker.insights import (
    Insight,
    Pricing,
    above_ask,
    changed,
    over_provisioned,
    phases,
)
from resource_tracker.summary import RunSummary, build_summary

MIB = 1024 * 1024

HOLD = """
mib = int(sys.argv[1]) if len(sys.argv) > 1 else 0
block = bytearray(MIB_HELD * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
report(rss=rss_kib())
time.sleep(1.5)
"""


def _tracked_hold(mib):
    """A real run: a workload touching `mib` MiB and holding it, tracked every 0.2 s."""
    work = Workload(HOLD.replace("MIB_HELD", str(mib)))
    tracker = ResourceTracker(pid=work.pid, interval=0.2, discover_cloud=False)
    try:
        work.go()
        work.read_report()
        work.finish()
        tracker.stop()
        work.reap()
    finally:
        work.kill()
    return tracker


@pytest.fixture(scope="module")
def hold_runs():
    """Five runs holding 200 MiB, then one holding 300 MiB (+50%)."""
    return [_tracked_hold(200) for _ in range(5)] + [_tracked_hold(300)]


def _kinds(summary, kind):
    return [i for i in summary.insights if i.kind == kind]


def test_changed_memory_on_the_sixth_run_and_no_false_alarm(hold_runs):
    stats = [t.stats() for t in hold_runs]
    for n in (3, 4):  # runs 4 and 5 against their 3 and 4 earlier (unchanged) runs
        summary = build_summary(hold_runs[n], stats[:n], lookup_server=False)
        assert _kinds(summary, "changed") == [], [i.message for i in summary.insights]
    summary = build_summary(hold_runs[5], stats[:5], lookup_server=False)
    (found,) = _kinds(summary, "changed")
    assert found.numbers["metric"] == "memory_peak_mib" and found.severity == "warning"
    assert found.numbers["runs"] == 5
    assert 0.35 < found.numbers["change"] < 0.65, found.numbers
    assert "Peak memory +" in found.message and "against the last 5 runs" in found.message
    # never from fewer than 3 earlier runs
    assert _kinds(build_summary(hold_runs[5], stats[:2], lookup_server=False), "changed") == []
    # kept through the stored form
    again = RunSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again.insights == summary.insights


def test_changed_needs_more_than_noise():
    past = [{"memory_peak_mib": v} for v in (500, 510, 495, 505)]
    assert changed({"memory_peak_mib": 540}, past) == []  # +7%: below the 20% floor
    assert changed({"memory_peak_mib": 760}, past)[0].numbers["change"] > 0.45
    small = [{"memory_peak_mib": v} for v in (20, 21, 20)]
    assert changed({"memory_peak_mib": 60}, small) == []  # +40 MiB: below the 64 MiB floor


PHASED = """
import select
LOG = []                        # (time, CPU seconds of the workload so far), on its own clock
def own_cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
def cpu_of(pid):                # another process's CPU seconds so far
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
def workload_cpu():             # this process, its reaped helper, the helper while it runs
    try:
        return own_cpu() + (cpu_of(helper) if helper_running else 0.0)
    except OSError:
        return own_cpu()
def burn(fd, log=False):        # one core busy until fd has something to read (or EOF)
    due = 0.0
    while not select.select([fd], [], [], 0)[0]:
        if log and time.time() >= due:
            LOG.append((time.time(), workload_cpu()))
            due = time.time() + 0.05
    os.read(fd, 64)
r, w = os.pipe()
helper = os.fork()              # computing: two cores and 400 MiB
if helper == 0:
    os.close(w)
    burn(r)
    os._exit(0)
helper_running = True
os.close(r)
block = touched(400)
began, cpu0, helper0 = time.time(), own_cpu(), cpu_of(helper)
report(began=began)             # the test starts tracking now
burn(0, log=True)               # until the test says "next"
release = time.time()
del block                       # released at once (munmap): one core, little memory
os.close(w)                     # the helper's end
os.waitpid(helper, 0)
helper_running = False
switch, cpu1 = time.time(), own_cpu() - helper0
report(switch=switch)
burn(0, log=True)               # until the test says "end"
end, cpu2 = time.time(), own_cpu()
LOG.append((end, workload_cpu()))
report(release=release, switch=switch, rss=rss_kib(),
       rate1=(cpu1 - cpu0) / (release - began), rate2=(cpu2 - cpu1) / (end - release), log=LOG)
"""
#: samples the tracker takes in each phase of PHASED before the test moves it on
PHASE_SAMPLES = 12


def _tracked_truth(body, interval):
    """(tracker, the workload's report): a real workload tracked every `interval` s."""
    work = Workload(body)
    tracker = ResourceTracker(pid=work.pid, interval=interval, discover_cloud=False)
    try:
        work.go()
        truth = work.read_report()
        work.finish()
        tracker.stop()
        work.reap()
    finally:
        work.kill()
    return tracker, truth


def _after_samples(tracker, count, timeout=300.0):
    """Returns once the tracker took `count` more samples (however slowly a busy machine
    lets it): the phases last a number of samples, not a number of seconds."""
    target, deadline = tracker.n_samples + count, time.monotonic() + timeout
    while tracker.n_samples < target and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.fixture(scope="module")
def phased_run():
    return _phased_run()


def _phased_run():
    """The phased workload, tracked from the moment it holds its memory, moved from one phase
    to the next by the test once the tracker took PHASE_SAMPLES samples of it."""
    work = Workload(PHASED)
    tracker = None
    try:
        work.go()
        work.read_report()  # holding 400 MiB, two cores busy
        tracker = ResourceTracker(pid=work.pid, interval=0.25, discover_cloud=False)
        _after_samples(tracker, PHASE_SAMPLES)
        work.send("next")
        work.read_report()  # released
        _after_samples(tracker, PHASE_SAMPLES)
        work.send("end")
        truth = work.read_report()
        work.finish()
        tracker.stop()
        work.reap()
    finally:
        if tracker is not None:
            tracker.stop()
        work.kill()
    return tracker, truth


def _memory_after(tracker, moment):
    """The highest memory (MiB) the tracker read in the samples taken after `moment`."""
    table = tracker.process_metrics
    rows = zip(table["timestamp"], table["memory"])
    return max((float(m) / 1024 for t, m in rows if t > moment), default=0.0)


def _stamp_before(tracker, moment):
    """The timestamp of the tracker's last sample taken at or before `moment`."""
    return max(float(t) for t in tracker.process_metrics["timestamp"] if t <= moment)


def _cores_needed(rate):
    """The whole cores a phase using `rate` cores on average needs (insights._need's rule),
    for a rate a little below and above the workload's own (its first and last samples
    straddle the phase's edges)."""
    return {max(1, math.ceil(r - 0.2)) for r in (0.85 * rate, rate, 1.1 * rate + 0.05)}


def _cpu_at(log, moment):
    """The workload's CPU seconds at `moment`, from its own log (linear between entries)."""
    for (t0, c0), (t1, c1) in zip(log, log[1:]):
        if t0 <= moment <= t1:
            return c0 + (c1 - c0) * ((moment - t0) / (t1 - t0) if t1 > t0 else 0.0)
    return log[0][1] if moment < log[0][0] else log[-1][1]


def _phase_shapes(n):
    """[{start_time, duration_s, cpu, memory}] of the finding's phases, in order."""
    keys = ("start_time", "duration_s", "cpu", "memory")
    return [{k: n[f"phase{i}_{k}"] for k in keys} for i in range(1, n["phases"] + 1)]


def test_two_phases_with_the_boundary_within_one_interval(phased_run):
    """400 MiB and two cores, then one core and little memory, each for PHASE_SAMPLES
    samples. The memory step is a boundary whatever the load, in the sample interval in
    which the workload released it (its own clock against the tracker's own timestamps).
    The cores each phase needs are what the workload's own CPU times (os.times, the helper's
    /proc stat) say it got over that phase's span: 2 and 1 on a quiet machine, fewer on a
    busy one, where a neighbour's burst may also cut the first part in two: a third phase
    only when the workload's own record shows its CPU changed that much (never a skip)."""
    tracker, truth = phased_run
    summary = build_summary(tracker)  # the embedded catalog prices the split
    (found,) = _kinds(summary, "phases")
    n = found.numbers
    shapes = _phase_shapes(n)
    assert 2 <= len(shapes) <= 4 and "memory" in n["changed_series"], found.message
    stamps = [float(t) for t in tracker.process_metrics["timestamp"]]
    before = [t for t in stamps if t <= truth["release"]]
    during = [t for t in stamps if t <= truth["switch"]]
    # the phases up to the release hold the 400 MiB; the first after it, what was left after
    # the release began (a busy machine draws the release out over samples)
    cut = next(i for i, s in enumerate(shapes) if s["memory"] < shapes[0]["memory"] - 256)
    assert before and before[-1] <= shapes[cut]["start_time"] <= during[-1], (n, truth, stamps)
    assert all(s["memory"] >= 400 for s in shapes[:cut]), found.message
    after = _memory_after(tracker, truth["release"])
    assert all(s["memory"] <= max(after, truth["rss"] / 1024 + 32) for s in shapes[cut:]), (
        found.message,
        after,
    )
    log = truth["log"]
    for shape in shapes:  # each phase's cores: what the workload's own record says it got
        began, ended = shape["start_time"], shape["start_time"] + shape["duration_s"]
        rate = (_cpu_at(log, ended) - _cpu_at(log, began)) / (ended - began)
        assert shape["cpu"] in _cores_needed(rate), (found.message, shape, rate)
    if "split_saving_share" not in n:  # priced on the catalog's recommended server
        pytest.fail(f"no catalog price for the split: {summary.server}")
    assert n["split_saving_usd_per_month"] == pytest.approx(30 * n["split_saving_usd_per_run"])
    # a saving, at most the share of the time in phases that need less than the whole step
    whole = (max(s["cpu"] for s in shapes), max(s["memory"] for s in shapes))
    total = sum(s["duration_s"] for s in shapes)
    smaller = sum(s["duration_s"] for s in shapes if (s["cpu"], s["memory"]) != whole)
    assert 0 < n["split_saving_share"] <= smaller / total, (n, smaller / total)


def test_one_steady_phase_is_no_finding():
    stamps = [float(i) for i in range(20)]
    noisy = [1.0 + 0.05 * ((i * 7) % 3 - 1) for i in range(20)]
    assert phases(stamps, {"cpu": noisy, "memory": [500.0] * 20}) == []


# -- the cgroup stand-in ------------------------------------------------------------------


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _v2_container(tmp_path, pid, limit_mib, cpu_max):
    """A fake cgroup v2 container of pid: its memory limit and CPU quota."""
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    _write(os.path.join(proc, str(pid), "cgroup"), "0::/kubepods/pod1/job\n")
    _write(
        os.path.join(proc, str(pid), "mountinfo"),
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
    )
    d = os.path.join(sys_root, "fs/cgroup/kubepods/pod1/job")
    for name, text in {
        "memory.current": str(300 * MIB),
        "memory.peak": str(400 * MIB),
        "memory.max": str(limit_mib * MIB),
        "cpu.max": cpu_max,
        "cpu.stat": "usage_usec 5000000\nnr_periods 100\nnr_throttled 0\nthrottled_usec 0\n",
        "memory.events": "oom 0\noom_kill 0\n",
        "cgroup.procs": f"{pid}\n",
    }.items():
        _write(os.path.join(d, name), text)
    return proc, sys_root, d


def _track_in(monkeypatch, proc, sys_root, during):
    monkeypatch.setenv("RESOURCE_TRACKER_PROCFS_ROOT", proc)
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", sys_root)
    tracker = ResourceTracker(
        pid=os.getpid(), interval=0.05, discover_cloud=False, discover_server=False,
        method="psutil",
    )  # fmt: skip
    tracker.wait_for_samples(1, timeout=20)  # the cgroup's start figures are read
    during()
    tracker.stop()
    return tracker


def test_at_risk_after_an_oom_kill_near_the_limit_and_throttled(tmp_path, monkeypatch):
    proc, sys_root, d = _v2_container(tmp_path, os.getpid(), 2048, "100000 100000")

    def during():  # the kernel: an OOM kill, memory at 1900 of 2048 MiB, 30 of 60 throttled
        _write(os.path.join(d, "memory.events"), "oom 1\noom_kill 1\n")
        _write(os.path.join(d, "memory.peak"), str(1900 * MIB))
        _write(os.path.join(d, "cpu.stat"), "usage_usec 9000000\nnr_periods 160\n"
               "nr_throttled 30\nthrottled_usec 3000000\n")  # fmt: skip

    summary = build_summary(_track_in(monkeypatch, proc, sys_root, during), lookup_server=False)
    risks = _kinds(summary, "at_risk")
    assert [i.severity for i in risks] == ["critical", "warning", "warning"], risks
    oom, memory, throttled = risks
    assert oom.numbers["oom_kills"] == 1 and "OOM kill" in oom.message
    assert memory.numbers["share"] == pytest.approx(1900 / 2048)
    assert "is 93% of its 2 GiB limit" in memory.message
    assert throttled.numbers["throttled_share"] == pytest.approx(0.5)
    assert "throttled in 50% of its CPU periods" in throttled.message


def test_no_risk_in_a_quiet_container(tmp_path, monkeypatch):
    proc, sys_root, _ = _v2_container(tmp_path, os.getpid(), 2048, "100000 100000")
    summary = build_summary(
        _track_in(monkeypatch, proc, sys_root, lambda: None), lookup_server=False
    )
    assert _kinds(summary, "at_risk") == []


def test_over_provisioned_against_the_containers_limits(tmp_path, monkeypatch):
    """A container limited to 16000 MiB and 8 cores, used by this test process (one core at
    most, a few hundred MiB): over-provisioned, priced on the embedded catalog."""
    proc, sys_root, _ = _v2_container(tmp_path, os.getpid(), 16000, "800000 100000")
    tracker = _track_in(monkeypatch, proc, sys_root, lambda: __import__("time").sleep(1.0))
    # a one-second run's gap costs well under the default $1 a month, but 8 cores and 16000
    # MiB are many times what it needs: a finding whatever it costs
    (found,) = _kinds(build_summary(tracker), "over_provisioned")
    assert found.severity == "info"  # under the $10 a month of a warning
    assert found.numbers["ask_need_ratio"] >= 4
    n = found.numbers
    assert n["source"] == "cgroup limits"
    assert n["asked_memory"] == 16000 and n["asked_cpu"] == 8
    assert n["peak_memory"] < 1000 and n["peak_cpu"] <= 1.5
    assert n["gap_usd_per_run"] > 0 and n["gap_usd_per_month"] == pytest.approx(
        30 * n["gap_usd_per_run"]
    )
    assert "asked 15.6 GiB memory" in found.message and "asked 8 cores" in found.message


def test_over_provisioned_only_above_its_floors_severity_by_cost(monkeypatch):
    """A gap under 256 MiB / 1 core, or costing less than $1 a month, is no finding; one
    costing less than $10 a month is info; the floors are settings."""
    pricing = Pricing(hourly_usd=0.10, vcpus=2, memory_mib=4096, server="v s")
    used = {"cpu": 0.4, "memory": 300.0}

    def found(asked, needed, runs=10):
        return over_provisioned(asked, used, needed, 3600, pricing, runs_per_month=runs)

    # the tuned ask is the recommendation: a $0 gap (it was a warning of $0.000000)
    assert found({"cpu": 1, "memory": 1024}, {"cpu": 1, "memory": 1024}) == []
    # 1024 MiB asked, 768 needed: 2 runs a month at $0.00625 an hour: $0.0125, under $1
    assert found({"cpu": 1, "memory": 1024}, {"cpu": 1, "memory": 768}, runs=2) == []
    # 8 cores asked for 1 needed: $0.35 a run, $3.50 a month at 10 runs: info
    (info,) = found({"cpu": 8, "memory": 1024}, {"cpu": 1, "memory": 1024})
    assert info.severity == "info" and info.numbers["gap_usd_per_month"] == pytest.approx(3.5)
    (warning,) = found({"cpu": 8, "memory": 1024}, {"cpu": 1, "memory": 1024}, runs=30)
    assert warning.severity == "warning"  # $10.50 a month
    monkeypatch.setenv("RESOURCE_TRACKER_WARN_USD_MONTH", "3")
    assert found({"cpu": 8, "memory": 1024}, {"cpu": 1, "memory": 1024})[0].severity == "warning"
    # a 200 MiB gap is under the 256 MiB floor whatever it costs ...
    small = {"memory": 400}
    assert over_provisioned(small, {"memory": 190.0}, None, 3600, None) == []
    monkeypatch.setenv("RESOURCE_TRACKER_OVER_MIN_MIB", "100")  # ... unless the floor is lower
    (lowered,) = over_provisioned(small, {"memory": 190.0}, None, 3600, None)
    assert lowered.severity == "info" and "gap_usd_per_month" not in lowered.numbers


def test_a_peak_above_the_ask_is_critical_without_an_enforcing_limit(hold_runs):
    """A real run holding 300 MiB in a step asking 256 MiB (@resources, run locally: no limit
    enforced): critical, it would be killed on Kubernetes/Batch."""
    tracker = hold_runs[-1]
    peak = tracker.stats()["process_memory"]["max"] / 1024
    assert peak > 300
    try:
        tracker.extra["resources_asked"] = {"cpu": 1, "memory": 256, "source": "@resources"}
        risks = _kinds(build_summary(tracker, lookup_server=False), "at_risk")
        tracker.extra["resources_asked"] = {"cpu": 1, "memory": 2048, "source": "@resources"}
        fits = _kinds(build_summary(tracker, lookup_server=False), "at_risk")
    finally:
        del tracker.extra["resources_asked"]
    (risk,) = risks
    assert risk.severity == "critical"
    assert risk.numbers["memory_peak_mib"] == pytest.approx(peak, rel=0.01)
    assert (
        f"Peak memory {fmt.quantity(peak, 'MiB')} is above the 256 MiB this step asks"
        in risk.message
    )
    assert "on Kubernetes or AWS Batch it would be killed" in risk.message
    assert fits == []
    # mean CPU above the cores asked: a warning (throttled, not killed); cgroup limits are
    # at_risk's own figures (the kernel's), not judged twice
    (slow,) = above_ask({"cpu": 1, "memory": 4096, "source": "@kubernetes"}, 100.0, 1.6)
    assert (
        slow.severity == "warning" and "Mean CPU 1.6 cores is above the 1 core this" in slow.message
    )
    assert above_ask({"cpu": 1, "memory": 64, "source": "cgroup limits"}, 100.0, 1.6) == []


def test_an_ask_four_times_the_need_is_over_provisioned_whatever_it_costs():
    """8 cores / 16 GiB asked by a 2-minute step that needs 0.3 core / 250 MiB (rounded up
    by the recommendation to 1 core / 512 MiB), once a month: its gap costs cents a month,
    under the $1 floor, and it is still a finding (the shipped Prometheus rule flags it too);
    an ask under 4x the need costing as little is none."""
    pricing = Pricing(hourly_usd=0.10, vcpus=2, memory_mib=4096, server="v s")
    used = {"cpu": 0.3, "memory": 250.0}
    asked = {"cpu": 8, "memory": 16384, "source": "@resources"}
    (found,) = over_provisioned(asked, used, {"cpu": 1, "memory": 512}, 120, pricing, 1)
    assert found.numbers["gap_usd_per_month"] < 1  # under RESOURCE_TRACKER_OVER_MIN_USD_MONTH
    assert found.severity == "info"
    assert found.numbers["ask_need_ratio"] == pytest.approx(32)  # 16384 / 512
    assert "it asks 32x what it needs" in found.message
    assert "asked 8 cores, peak 0.3 cores" in found.message
    # 3 cores for 1 needed (3x), 1 GiB for 512 MiB: cheap and under 4x, no finding
    small = {"cpu": 3, "memory": 1024, "source": "@resources"}
    assert over_provisioned(small, used, {"cpu": 1, "memory": 512}, 120, pricing, 1) == []


def test_over_provisioned_prices_the_gap():
    pricing = Pricing(hourly_usd=0.10, vcpus=2, memory_mib=4096, server="v s")
    found = over_provisioned(
        {"cpu": 8, "memory": 16000, "source": "@resources"},
        {"cpu": 1.0, "memory": 500.0},
        {"cpu": 1, "memory": 1024},
        duration_s=3600,
        pricing=pricing,
        runs_per_month=10,
    )
    (insight,) = found
    # asked: 8 of 2 vCPUs = 4 servers ($0.40/h); needed 1024 MiB of 4096 = 0.5 ($0.05/h)
    assert insight.numbers["gap_usd_per_run"] == pytest.approx(0.35)
    assert insight.numbers["gap_usd_per_month"] == pytest.approx(3.5)
    assert Insight.from_dict(insight.to_dict()) == insight
    assert (
        over_provisioned({"cpu": 2, "memory": 1024}, {"cpu": 1.8, "memory": 900}, None, 60, pricing)
        == []
    )


def test_phases_of_a_one_then_two_core_series_priced_on_a_server(monkeypatch):
    """The detector on the shape of the workload above as the sampler records it on a quiet
    machine (every 0.5 s; the sample across the switch half way), with noise."""
    stamps = [1000.0 + 0.5 * i for i in range(1, 25)]
    noise = [0.04 * ((i * 5) % 5 - 2) for i in range(24)]
    cpu = [1.0] * 12 + [1.5] + [2.0] * 11
    cpu = [c + e for c, e in zip(cpu, noise)]
    pricing = Pricing(hourly_usd=0.08, vcpus=2, memory_mib=4096, server="v s")
    series = {"cpu": cpu, "memory": [300.0] * 24}
    (found,) = phases(stamps, series, pricing, runs_per_month=60)
    n = found.numbers
    assert n["phases"] == 2 and abs(n["phase2_start_time"] - 1006.0) <= 0.5
    assert (n["phase1_cpu"], n["phase2_cpu"]) == (1, 2)
    # one step sized for 2 cores for 12 s against 1 core for ~6 s and 2 for ~6 s: ~25%
    assert 0.2 <= n["split_saving_share"] <= 0.3
    # ... but a fraction of a cent a month: no split advice under the $10 a month floor
    assert n["split_saving_usd_per_month"] < 0.01
    assert found.severity == "info" and "Splitting" not in found.message
    monkeypatch.setenv("RESOURCE_TRACKER_SPLIT_MIN_USD_MONTH", "0.001")
    (found,) = phases(stamps, series, pricing, runs_per_month=60)
    assert found.severity == "warning" and "Splitting the step at 6 s" in found.message


# -- tuning (@track_resources(tune=True), recommend --metaflow) ---------------------------


def test_tuning_is_raised_after_an_oom_kill_and_heavy_throttling(tmp_path, monkeypatch):
    """Three real runs of this process in the cgroup stand-in (a 2 GiB, 1-core container),
    the last with an OOM kill and 19% of its CPU periods throttled, 3 s of throttled time:
    memory raised to twice the limit the run had, CPU to what it used plus the cores that
    waited for quota (issue 37: from throttled time, no longer one core more)."""
    from resource_tracker.tuning import tune_resources

    proc, sys_root, d = _v2_container(tmp_path, os.getpid(), 2048, "100000 100000")
    quiet = [_track_in(monkeypatch, proc, sys_root, lambda: None).stats() for _ in range(2)]
    calm = tune_resources(quiet + quiet[:1], {"cpu": 1, "memory": 2048})
    assert calm.runs == 3 and "raised" not in calm.note
    assert calm.resources["memory"] < 2048  # this process uses far less than 2 GiB

    def during():
        _write(os.path.join(d, "memory.events"), "oom 1\noom_kill 1\n")
        _write(os.path.join(d, "cpu.stat"), "usage_usec 9000000\nnr_periods 160\n"
               "nr_throttled 30\nthrottled_usec 3000000\n")  # fmt: skip

    hit = _track_in(monkeypatch, proc, sys_root, during).stats()
    raised = tune_resources([hit] + quiet, {"cpu": 1, "memory": 2048})
    waited = 3.0 / hit["timestamp"]["duration"]  # cores that waited for quota
    assert raised.resources["memory"] == 4096
    assert raised.resources["cpu"] == max(1, math.ceil(1 + waited - 0.1))
    assert "had an OOM kill at 2048 MiB" in raised.note
    assert "was throttled at 1 cores (" in raised.note
    assert "memory 2048 -> 4096 MiB from 3 runs" in raised.changes


def test_tuning_keeps_what_the_runs_did_not_measure():
    from resource_tracker.tuning import tune_resources

    tuning = tune_resources([{"timestamp": {"duration": 1.0}}] * 2, {"memory": 16000})
    assert tuning.resources == {"memory": 16000} and tuning.changes == []  # kept as asked


def test_the_cli_summary_lines_carry_the_insights(tmp_path, monkeypatch):
    from resource_tracker.cli.summary import lines_of

    proc, sys_root, d = _v2_container(tmp_path, os.getpid(), 2048, "100000 100000")

    def during():
        _write(os.path.join(d, "memory.events"), "oom 1\noom_kill 1\n")

    summary = build_summary(_track_in(monkeypatch, proc, sys_root, during), lookup_server=False)
    lines = lines_of(summary, server=False)
    assert any(line.split()[0] == "critical" and "OOM kill" in line for line in lines), lines


def test_run_frequency_from_start_times():
    from resource_tracker.insights import runs_per_month

    day = 86400.0
    assert runs_per_month([0.0, day, 2 * day, 3 * day]) == pytest.approx(30)
    assert runs_per_month([0.0, 60.0, 120.0]) is None  # a burst tells no schedule
    assert runs_per_month([5.0]) is None
    pricing = Pricing(hourly_usd=0.10, vcpus=2, memory_mib=4096, server="v s")
    asked, used = {"cpu": 8, "memory": 16000}, {"cpu": 1.0, "memory": 500.0}
    weekly = over_provisioned(asked, used, None, 3600, pricing, runs_per_month=4)[0]
    assert "at 4 runs a month (" in weekly.message and "assumed" not in weekly.message
    daily = over_provisioned(asked, used, None, 3600, pricing)[0]
    assert "30 runs a month (assumed: one a day)" in daily.message


def test_the_report_shows_the_insights_first(tmp_path, monkeypatch):
    from resource_tracker.report import render_report

    proc, sys_root, d = _v2_container(tmp_path, os.getpid(), 2048, "100000 100000")

    def during():
        _write(os.path.join(d, "memory.events"), "oom 1\noom_kill 1\n")

    tracker = _track_in(monkeypatch, proc, sys_root, during)
    summary = build_summary(tracker, lookup_server=False)
    page = str(render_report(tracker, summary=summary))
    assert 'id="rt-insights"' in page
    assert page.index('id="rt-insights"') < page.index('id="rt-run"')
    assert '<span class="rt-badge">critical</span> The kernel killed 1 process of' in page


def test_a_gpu_idle_through_loading_is_a_split_worth_making(monkeypatch):
    """30 s of data loading on one core with the GPU idle, then 30 s of training on it."""
    stamps = [float(i) for i in range(1, 61)]
    gpu = [0.0] * 30 + [1.0] * 30
    cpu = [1.0] * 60
    pricing = Pricing(hourly_usd=1.0, vcpus=8, memory_mib=32768, gpus=1, server="v g")
    monkeypatch.setenv("RESOURCE_TRACKER_SPLIT_MIN_USD_MONTH", "0.1")  # $0.22 a month
    (found,) = phases(stamps, {"cpu": cpu, "memory": [2000.0] * 60, "gpu": gpu}, pricing)
    n = found.numbers
    assert n["phases"] == 2 and n["changed_series"] == "gpu"
    assert (n["phase1_gpu"], n["phase2_gpu"]) == (0, 1) and n["phase2_start_s"] == 30
    # the GPU server for the whole minute against 1/8 of it for the loading half: ~44% saved
    assert n["split_saving_share"] == pytest.approx(1 - (30 / 8 + 30) / 60, abs=0.01)
    assert found.severity == "warning"


def test_a_wobble_within_a_phase_is_not_a_phase():
    """Two cores, then 1.5 cores (a busy machine took some): both need 2 cores, so the
    detector's third boundary is dropped and the finding is the two real phases."""
    stamps = [float(i) for i in range(1, 41)]
    cpu = [1.0] * 20 + [2.0] * 10 + [1.5] * 10
    (found,) = phases(stamps, {"cpu": cpu, "memory": [100.0] * 20 + [120.0] * 20})
    n = found.numbers
    assert n["phases"] == 2, found.message
    assert (n["phase1_cpu"], n["phase2_cpu"]) == (1, 2)
    assert n["phase2_start_s"] == pytest.approx(20.0)


# -- phases: idle -> busy -> idle, levels, ramps --------------------------------------------

IDLE_BUSY_IDLE = """
import select
def told():
    return select.select([0], [], [], 0)[0] and os.read(0, 64)
t0 = time.time()
touched(400)                    # the ramp once, untracked: how long this machine takes now
report(ramp=time.time() - t0)
while not select.select([0], [], [], None)[0]:  # idle until the test says "next"
    pass
os.read(0, 64)
rss0 = rss_kib()
t1 = time.time()
block = touched(400)            # the allocation ramp, then one core busy
report(busy=time.time(), ramp=time.time() - t1)
while not told():
    pass
t2 = time.time()
del block                       # the release, then idle
report(idle=time.time())
select.select([0], [], [], None)
os.read(0, 64)
report(t1=t1, t2=t2, rss0=rss0, rss=rss_kib())
"""


def test_phases_of_a_real_idle_busy_idle_run():
    """A real workload idle, then holding 400 MiB busy on one core, then idle again, tracked
    every 0.25 s, each part for 12 samples (the first 24) and at least three times as many
    as the allocation ramp takes (the test moves it on): three phases, each boundary in the
    sample interval where the workload's own clock says it began (the ramps a busy machine
    draws out counted in the phase they lead to), and the allocation ramp counted in the
    busy phase, not in the idle one before it."""
    work = Workload(IDLE_BUSY_IDLE)
    tracker = None
    try:
        work.go()
        # a ramp as long as the phases is no step between them: on a busy machine the
        # workload's own ramp (untracked, before the run) sets how long each part lasts
        ramp = work.read_report()["ramp"]
        tracker = ResourceTracker(pid=work.pid, interval=0.25, discover_cloud=False)
        reports = []
        # idle, busy, idle; the detector needs a first part of 24 samples or a third of a
        # longer ramp than the untracked one (tried on the same shapes: ramps of 1-89 samples)
        for least in (24, 12, 12):
            _after_samples(tracker, max(least, 3 * math.ceil(ramp / 0.25)))
            work.send("next")
            reports.append(work.read_report())
            ramp = max(ramp, reports[-1].get("ramp", 0.0))  # the tracked one, once it is done
        work.finish()
        tracker.stop()
        work.reap()
    finally:
        if tracker is not None:
            tracker.stop()
        work.kill()
    (found,) = _kinds(build_summary(tracker, lookup_server=False), "phases")
    n, (busy, idle, truth) = found.numbers, reports
    assert n["phases"] == 3, found.message
    # each boundary: from the sample before the workload began the change to the sample
    # before it finished it (its own clock: the allocation or the release done)
    began, done = _stamp_before(tracker, truth["t1"]), _stamp_before(tracker, busy["busy"])
    assert began <= n["phase2_start_time"] <= done, (n, truth, busy)
    began, done = _stamp_before(tracker, truth["t2"]), _stamp_before(tracker, idle["idle"])
    assert began <= n["phase3_start_time"] <= done, (n, truth, idle)
    idle_mib = truth["rss0"] / 1024
    assert n["phase1_memory"] <= idle_mib + 32, found.message  # no share of the ramp
    assert n["phase2_memory"] >= 400
    after = _memory_after(tracker, truth["t2"])
    assert n["phase3_memory"] <= max(after, truth["rss"] / 1024 + 32), (found.message, after)
    assert n["phase3_memory"] < n["phase2_memory"] - 256, found.message


def _noisy(levels, lengths, noise, seed=7):
    import random

    rnd = random.Random(seed)
    out = []
    for level, length in zip(levels, lengths):
        out += [max(0.0, level + rnd.gauss(0, noise * max(level, 0.1))) for _ in range(length)]
    return out


def test_phases_of_six_hours_idle_busy_idle(monkeypatch):
    """The issue's series: 6 h at 10 s, 0.04 -> 3.6 -> 0.04 cores (2 h each; the busy part
    starts half way through an interval). Three phases at the right samples; the split
    advice is there when it saves more than the floor a month, and not when it saves less."""
    stamps = [10.0 * i for i in range(1, 2161)]
    cpu = _noisy([0.04, 3.6, 0.04], [720, 720, 720], 0.05)
    cpu[720] = 1.8  # the busy part starts half way through this interval
    memory = [300.0] * 2160
    pricing = Pricing(hourly_usd=0.20, vcpus=4, memory_mib=16384, server="v m")
    (found,) = phases(stamps, {"cpu": cpu, "memory": memory}, pricing, runs_per_month=30)
    n = found.numbers
    assert n["phases"] == 3, found.message
    assert n["phase2_start_s"] == pytest.approx(7200.0) and n["phase3_start_s"] == 14400.0
    assert (n["phase1_cpu"], n["phase2_cpu"], n["phase3_cpu"]) == (1, 4, 1)
    # one 4-core step for 6 h against 1, 4, 1 cores for 2 h each: half the cost, $18 a month
    assert n["split_saving_usd_per_month"] == pytest.approx(18.0, rel=0.01)
    assert found.severity == "warning" and "Splitting the step at 2 h 00 min" in found.message
    cheap = Pricing(hourly_usd=0.02, vcpus=4, memory_mib=16384, server="v c")  # $1.80 a month
    (found,) = phases(stamps, {"cpu": cpu, "memory": memory}, cheap, runs_per_month=30)
    assert found.severity == "info" and "Splitting" not in found.message


@pytest.mark.parametrize(
    "levels", [(0.5, 2.0, 3.5), (0.5, 2.0, 3.5, 1.0), (3.0, 1.0, 4.0, 2.0)], ids=str
)
def test_phases_of_steps_of_three_and_four_levels(levels):
    """Steps of 3 and 4 CPU levels, 50 samples each with noise: one phase per level, each
    boundary at its sample."""
    stamps = [float(i) for i in range(1, 50 * len(levels) + 1)]
    cpu = _noisy(levels, [50] * len(levels), 0.05)
    (found,) = phases(stamps, {"cpu": cpu, "memory": [300.0] * len(cpu)})
    n = found.numbers
    assert n["phases"] == len(levels), found.message
    for i, level in enumerate(levels, 1):
        assert n[f"phase{i}_start_s"] == pytest.approx(50.0 * (i - 1))
        assert n[f"phase{i}_cpu"] == max(1, math.ceil(level - 0.2))


def test_an_allocation_ramp_belongs_to_the_phase_it_allocates_for():
    """52 MiB held, then an allocation ramp (150, 379 MiB) to 400 MiB, then 52 MiB again:
    the quiet phases hold 52 MiB (not the 379 MiB of the ramp), the ramp starts the busy
    one."""
    stamps = [float(i) for i in range(1, 63)]
    memory = [52.0] * 20 + [150.0, 379.0] + [400.0] * 20 + [260.0] + [52.0] * 19
    (found,) = phases(stamps, {"cpu": [1.0] * 62, "memory": memory})
    n = found.numbers
    assert n["phases"] == 3, found.message
    assert n["phase1_memory"] == 52 and n["phase3_memory"] == 52
    assert n["phase2_start_s"] == 20 and n["phase3_start_s"] == 43
    assert n["phase2_memory"] == 400


def test_phases_boundary_of_a_memory_drop_stays_where_the_memory_drops():
    """A memory step and a CPU change 2 samples apart are one boundary, at the memory's: the
    holding phase keeps its 612 MiB samples (the earlier CPU boundary put two of them into
    the next phase, which then "needed" 612 MiB too and was merged into the holding one)."""
    memory = [12.0] * 14 + [34.0, 257.0, 547.0] + [612.0] * 19 + [120.0] + [12.0] * 30
    cpu = [1.0] * 17 + [0.02] * 18 + [1.0] * 26 + [0.0] * 6
    stamps = [0.05 * (i + 1) for i in range(len(memory))]
    (found,) = phases(stamps, {"cpu": cpu, "memory": memory})
    n = found.numbers
    assert n["phases"] == 3, found.message
    assert n["phase2_memory"] == 612.0 and n["phase3_memory"] == 12.0, found.message
    assert n["phase3_start_s"] == pytest.approx(37 * 0.05), found.message
