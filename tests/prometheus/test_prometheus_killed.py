"""Runs that end without their summary, against a real Pushgateway and a real Prometheus
(Debian's packages, loopback) loading docs/prometheus/*.yml, each test with its own pair:

- a run asking 512 MiB and 1 CPU in real cgroup v1 cgroups limited to 512 MiB and 2 cores,
  holding 275 MiB,
  whose worker the kernel OOM-kills, then killed itself (as a kubelet kills the pod): its
  live gauges carry its ask, its limit and the kill the cgroup counted; the dashboard lists
  it as killed within seconds and sizes the step above the 512 MiB that was killed; the
  alert ResourceTrackerOomKilled fires;
- a successful run whose final push timed out, after one that went through: not a kill (a
  skipped line), ``--check`` exits 0, no alert.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from prom_stack import NO_CATALOG, RULE_FILES
from servers import prom_query, prom_wait, start_prometheus, start_pushgateway

from resource_tracker.dashboard._fleet import build_fleet
from resource_tracker.dashboard._prometheus import load_prometheus

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from cgroup_v1 import own_v1_memory_cgroup, remove_cgroup  # noqa: E402

MIB = 1024 * 1024

# Tracks itself with export on, asking 512 MiB (as Metaflow's @resources would), holding
# 275 MiB; a worker marked as the kernel's first choice (oom_score_adj 1000) allocates past
# the cgroup's limit and is OOM-killed by the kernel; once two more live points went out,
# the process kills itself (SIGKILL, as a kubelet ends the pod).
OOM_KILLED = """
import os, signal, subprocess, sys, time
from resource_tracker import ResourceTracker
t = ResourceTracker(interval=0.1, export="pushgateway", job=sys.argv[1], discover_cloud=False)
t.extra["resources_asked"] = {"memory": 512, "cpu": 1, "source": "test ask"}
hold = bytearray(275 << 20); hold[::4096] = b"x" * len(hold[::4096])
worker = (
    "open('/proc/self/oom_score_adj', 'w').write('1000')\\n"
    "b = bytearray(1024 << 20); b[::4096] = b'x' * len(b[::4096])\\n"
)
assert subprocess.run([sys.executable, "-c", worker]).returncode == -9
def sent():
    return t.export_report()["targets"]["pushgateway"]["sent"]
after, deadline = sent() + 2, time.monotonic() + 60
while sent() < after:
    assert time.monotonic() < deadline, t.export_report()
    time.sleep(0.05)
print("pushed", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""

# A successful run, asking 4096 MiB and using ~45 MiB, after two live points; its final push
# given argv[2] seconds (0: it times out, as on a machine too busy for it).
PUSH_TIMED_OUT = """
import sys, time
from resource_tracker import ResourceTracker
from resource_tracker.export import pipeline
t = ResourceTracker(interval=0.1, export="pushgateway", job=sys.argv[1], discover_cloud=False)
t.extra["resources_asked"] = {"memory": 4096, "cpu": 1, "source": "test ask"}
deadline = time.monotonic() + 60
while t.export_report()["targets"]["pushgateway"]["sent"] < 2:
    assert time.monotonic() < deadline, t.export_report()
    time.sleep(0.05)
pipeline.FINISH_TIMEOUT_S = float(sys.argv[2])
t.stop()
print(t.export_report()["targets"]["pushgateway"]["final"], flush=True)
"""


@pytest.fixture
def servers(tmp_path):
    """(pushgateway, prometheus loading the shipped rules), stopped after the test."""
    pytest.importorskip("prometheus_client")
    pushgateway = start_pushgateway(str(tmp_path))
    try:
        prometheus = start_prometheus(str(tmp_path), pushgateway.url, RULE_FILES)
    except BaseException:
        pushgateway.stop()
        raise
    yield pushgateway, prometheus
    prometheus.stop()
    pushgateway.stop()


def _own_v1_cpu_cgroup():
    """This process's v1 cpu cgroup directory, or None (not mounted, not writable)."""
    place = mount = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            parts = line.strip().split(":", 2)
            if len(parts) == 3 and "cpu" in parts[1].split(","):
                place = parts[2]
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields, _, super_part = line.partition(" - ")
            if super_part.startswith("cgroup ") and "cpu" in super_part.split()[2].split(","):
                mount = fields.split()[4]
    if place is None or mount is None:
        return None
    directory = os.path.join(mount, place.strip("/"))
    return directory if os.access(directory, os.W_OK) else None


@pytest.fixture
def limited_cgroup():
    """Real cgroup v1 cgroups as a kubelet makes them at the ask: memory limited to 512 MiB,
    CPU to 2 cores (a CFS quota of 200 ms per 100 ms); [memory cgroup, cpu cgroup]."""
    root, why = own_v1_memory_cgroup()
    cpu_root = _own_v1_cpu_cgroup()
    if root is None or cpu_root is None:
        pytest.skip(why or "no writable cgroup v1 cpu controller")
    name = f"rt-prom-killed-{os.getpid()}-{time.monotonic_ns()}"
    paths = [os.path.join(root, name), os.path.join(cpu_root, name)]
    for path, (knob, value) in zip(paths, (("memory.limit_in_bytes", 512 * MIB),
                                           ("cpu.cfs_quota_us", 200000))):  # fmt: skip
        os.mkdir(path)
        with open(os.path.join(path, knob), "w") as f:
            f.write(str(value))
    yield paths
    for path in paths:
        remove_cgroup(path)


def _env(pushgateway) -> dict:
    return dict(os.environ, RESOURCE_TRACKER_PUSHGATEWAY_URL=pushgateway.url, **NO_CATALOG)


def _run(script: str, args: list, env: dict, cgroups=()) -> subprocess.CompletedProcess:
    def enter() -> None:
        for cgroup in cgroups:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    return subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
        timeout=180, preexec_fn=enter if cgroups else None,
    )  # fmt: skip


def _until(load, done, timeout: float = 90.0):
    """load() again until done(result) (Prometheus scrapes and evaluates every second)."""
    deadline = time.monotonic() + timeout
    while True:
        result = load()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def test_an_oom_killed_run_is_known_and_sized_from_what_it_had(servers, limited_cgroup):
    pushgateway, prometheus = servers
    started = time.time()
    done = _run(OOM_KILLED, ["oom-killed"], _env(pushgateway), limited_cgroup)
    assert done.returncode == -9 and "pushed" in done.stdout, done.stderr[-3000:]
    with open(os.path.join(limited_cgroup[0], "memory.oom_control")) as f:
        assert "oom_kill 1" in f.read()  # the kernel's own count: the worker only
    # the live gauges carry what the run had and the kill its cgroup counted
    job = '{job="oom-killed"}'
    for name, value in (("resource_tracker_asked_memory_bytes", 512 * MIB),
                        ("resource_tracker_limit_memory_bytes", 512 * MIB),
                        ("resource_tracker_asked_cpu_cores", 1.0),
                        ("resource_tracker_limit_cpu_cores", 2.0),
                        ("resource_tracker_oom_kills", 1.0)):  # fmt: skip
        assert float(prom_wait(prometheus, name + job)[0]["value"][1]) == value, name
    # listed as killed once it missed its pushes: seconds, not the 10 minutes of before
    loaded = _until(
        lambda: load_prometheus(prometheus.url, time.time() - started + 60, []),
        lambda got: any(r.status == "killed" for r in got.records),
    )
    assert time.time() - started < 150
    (record,) = loaded.records
    assert record.status == "killed" and record.step == "oom-killed", loaded
    assert record.ask == {"memory_mib": 512, "cpu": 1} and record.limit_memory_mib == 512
    assert record.limit_cpu_cores == 2
    assert record.oom_kills == 1
    assert record.peak_memory_mib is not None and record.peak_memory_mib < 512
    # sized from what it had, not from its last reading: more than the 512 MiB killed
    (step,) = build_fleet(loaded.records).steps
    assert step.need["memory"] > 512, step.note
    assert step.newest_at_risk
    # and the shipped rule alerts on it
    alert = 'ALERTS{alertname="ResourceTrackerOomKilled",alertstate="firing"}'
    firing = prom_wait(prometheus, alert)
    assert [a["metric"]["job"] for a in firing] == ["oom-killed"]


def test_a_run_whose_final_push_timed_out_is_not_a_kill(servers):
    pushgateway, prometheus = servers
    started = time.time()
    env = _env(pushgateway)
    done = _run(PUSH_TIMED_OUT, ["push-timed-out", "30"], env)  # a run that went through
    assert done.returncode == 0 and done.stdout.split() == ["sent"], done.stderr[-3000:]
    done = _run(PUSH_TIMED_OUT, ["push-timed-out", "0"], env)
    assert done.returncode == 0 and done.stdout.split() == ["timed", "out"], done.stderr[-3000:]
    prom_wait(prometheus, 'resource_tracker_export_period_seconds{job="push-timed-out"}')
    # ten minutes on (the clock given): stopped, with no sign of an OOM kill: not a kill
    later = time.time() + 601
    loaded = load_prometheus(prometheus.url, later - started + 60, [], now=later)
    assert [r.status for r in loaded.records] == ["ok"]
    (line,) = loaded.skipped
    assert 'job="push-timed-out"' in line and "not counted as killed" in line
    # the CLI, now: once the run missed its pushes it says so, and --check passes
    cli = [sys.executable, "-m", "resource_tracker", "dashboard", "--prometheus"]
    cli += [prometheus.url, "--since", f"{int(time.time() - started + 60)}s", "--check"]
    check = _until(
        lambda: subprocess.run(cli, env=env, capture_output=True, text=True, timeout=120),
        lambda got: "push-timed-out" in got.stderr,
    )
    assert "not counted as killed" in check.stderr, check.stderr
    assert check.returncode == 0 and "push-timed-out" not in check.stdout, check.stdout
    assert not prom_query(prometheus, 'ALERTS{alertname="ResourceTrackerOomKilled"}')
