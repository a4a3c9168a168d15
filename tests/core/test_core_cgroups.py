"""The container's truth from its cgroup: memory now and at its peak, the memory limit, CPU
quota, CPU throttling and OOM kills, for cgroup v2 and v1.

Fake cgroup trees (what the kernel shows in a v2 container and in a v1 container) under
RESOURCE_TRACKER_PROCFS_ROOT / RESOURCE_TRACKER_SYSFS_ROOT, with the counters moved between
start() and stop() as the kernel would; and this machine's real cgroup v1 memory controller:
a child cgroup of the test's own, with a real workload in it (and a real OOM kill), when the
test may create one (root, a writable v1 memory hierarchy); else it skips saying why."""

from __future__ import annotations

import os
import time

import pytest
from cgroup_v1 import own_v1_memory_cgroup, remove_cgroup
from workloads import Workload

from resource_tracker import ResourceTracker
from resource_tracker.cgroup_usage import read_cgroup

MIB = 1024 * 1024


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _fake_proc(root, pid, cgroup_lines, mount_lines):
    _write(os.path.join(root, str(pid), "cgroup"), "".join(line + "\n" for line in cgroup_lines))
    _write(os.path.join(root, str(pid), "mountinfo"), "".join(m + "\n" for m in mount_lines))


def _v2_tree(tmp_path, pid):
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    _fake_proc(proc, pid, ["0::/kubepods/pod1/job"],
               ["30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw"])  # fmt: skip
    d = os.path.join(sys_root, "fs/cgroup/kubepods/pod1/job")
    files = {
        "memory.current": str(300 * MIB),
        "memory.peak": str(700 * MIB),
        "memory.max": str(2048 * MIB),
        "cpu.max": "150000 100000",
        "cpu.stat": "usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\n"
        "nr_periods 100\nnr_throttled 10\nthrottled_usec 2000000\n",
        "memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        "cgroup.procs": f"{pid}\n",
    }
    for name, text in files.items():
        _write(os.path.join(d, name), text)
    return proc, sys_root, d


def _v1_tree(tmp_path, pid):
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    _fake_proc(
        proc, pid,
        ["12:memory:/docker/abc", "4:cpu,cpuacct:/docker/abc", "1:name=systemd:/docker/abc"],
        ["40 31 0:35 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
         "41 31 0:36 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct"],
    )  # fmt: skip
    mem = os.path.join(sys_root, "fs/cgroup/memory/docker/abc")
    cpu = os.path.join(sys_root, "fs/cgroup/cpu,cpuacct/docker/abc")
    for name, text in {
        "memory.usage_in_bytes": str(250 * MIB),
        "memory.max_usage_in_bytes": str(900 * MIB),
        "memory.limit_in_bytes": str(1024 * MIB),
        "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
        "cgroup.procs": f"{pid}\n",
    }.items():
        _write(os.path.join(mem, name), text)
    for name, text in {
        "cpu.cfs_quota_us": "200000",
        "cpu.cfs_period_us": "100000",
        "cpu.stat": "nr_periods 50\nnr_throttled 5\nthrottled_time 1000000000\n",
        "cpuacct.usage": str(3 * 10**9),
        "cgroup.procs": f"{pid}\n",
    }.items():
        _write(os.path.join(cpu, name), text)
    return proc, sys_root, mem, cpu


def _track_fake(monkeypatch, proc, sys_root, pid, during):
    """A tracker of the real process pid reading the fake cgroup tree; `during()` runs
    between start() and stop() (it moves the kernel's counters)."""
    monkeypatch.setenv("RESOURCE_TRACKER_PROCFS_ROOT", proc)
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", sys_root)
    tracker = ResourceTracker(
        pid=pid, interval=0.05, discover_cloud=False, discover_server=False, method="psutil"
    )
    assert tracker.wait_for_samples(1)  # the start figures are read beside start()
    during()
    tracker.stop()
    return tracker


def test_cgroup_v2_figures_of_a_run(tmp_path, monkeypatch):
    pid = os.getpid()
    proc, sys_root, d = _v2_tree(tmp_path, pid)

    def during():  # the kernel's counters move during the run
        _write(os.path.join(d, "cpu.stat"), "usage_usec 9500000\nnr_periods 160\n"
               "nr_throttled 40\nthrottled_usec 5000000\n")  # fmt: skip
        _write(os.path.join(d, "memory.events"), "oom 3\noom_kill 3\n")
        _write(os.path.join(d, "memory.current"), str(400 * MIB))
        _write(os.path.join(d, "memory.peak"), str(1500 * MIB))

    tracker = _track_fake(monkeypatch, proc, sys_root, pid, during)
    cg = tracker.stats()["cgroup"]
    assert cg["version"] == 2 and cg["path"] == "/kubepods/pod1/job"
    assert cg["memory_mib"] == 400 and cg["memory_peak_mib"] == 1500
    assert cg["memory_limit_mib"] == 2048 and cg["cpu_limit_cores"] == 1.5
    assert cg["cpu_seconds"] == pytest.approx(4.5)
    assert (cg["cpu_periods"], cg["cpu_throttled_periods"]) == (60, 30)
    assert cg["cpu_throttled_seconds"] == pytest.approx(3.0)
    assert cg["oom_kills"] == 2 and cg["dedicated"] is True
    # kept in the snapshot (and so in the Metaflow artifact), shown in the report
    again = ResourceTracker.loads(tracker.dumps())
    assert again.stats()["cgroup"] == cg
    html = str(tracker.report())
    assert "rt-cgroup" in html and "OOM kills" in html and "throttled" in html


def test_cgroup_v1_figures_of_a_run(tmp_path, monkeypatch):
    pid = os.getpid()
    proc, sys_root, mem, cpu = _v1_tree(tmp_path, pid)

    def during():
        _write(os.path.join(cpu, "cpu.stat"), "nr_periods 80\nnr_throttled 25\n"
               "throttled_time 3500000000\n")  # fmt: skip
        _write(os.path.join(cpu, "cpuacct.usage"), str(7 * 10**9))
        _write(os.path.join(mem, "memory.oom_control"), "oom_kill_disable 0\noom_kill 1\n")

    tracker = _track_fake(monkeypatch, proc, sys_root, pid, during)
    cg = tracker.stats()["cgroup"]
    assert cg["version"] == 1 and cg["path"] == "/docker/abc"
    assert (cg["memory_mib"], cg["memory_peak_mib"], cg["memory_limit_mib"]) == (250, 900, 1024)
    assert cg["cpu_limit_cores"] == 2.0 and cg["cpu_seconds"] == pytest.approx(4.0)
    assert (cg["cpu_periods"], cg["cpu_throttled_periods"]) == (30, 20)
    assert cg["cpu_throttled_seconds"] == pytest.approx(2.5)
    assert cg["oom_kills"] == 1


def test_cgroup_shared_with_other_processes_is_not_dedicated(tmp_path, monkeypatch):
    pid = os.getpid()
    proc, sys_root, d = _v2_tree(tmp_path, pid)
    _write(os.path.join(d, "cgroup.procs"), f"{pid}\n1\n")  # init: not ours
    _write(os.path.join(proc, "1", "stat"), "1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0\n")
    cg = read_cgroup(pid, proc, sys_root)
    assert cg["pids"] == [pid, 1]
    tracker = _track_fake(monkeypatch, proc, sys_root, pid, lambda: None)
    assert tracker.stats()["cgroup"]["dedicated"] is False


def test_no_cgroup_files_means_no_cgroup_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_PROCFS_ROOT", str(tmp_path))
    tracker = ResourceTracker(interval=0.05, discover_cloud=False, method="psutil")
    tracker.stop()
    assert "cgroup" not in tracker.stats()


# -- this machine's real cgroup v1 memory controller ---------------------------------------


def _own_v1_memory_cgroup():
    """The directory of this process's v1 memory cgroup, or pytest.skip with the reason."""
    directory, reason = own_v1_memory_cgroup()
    if directory is None:
        pytest.skip(reason)
    return directory


@pytest.fixture
def child_cgroup():
    """A new child memory cgroup of this test's own (removed afterwards)."""
    parent = _own_v1_memory_cgroup()
    path = os.path.join(parent, f"rt-test-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.mkdir(path)
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup under {parent}: {exc.strerror}")
    yield path
    remove_cgroup(path)  # the workload's processes have exited: the cgroup empties


def _enter(cgroup, pid, limit_mib):
    with open(os.path.join(cgroup, "memory.limit_in_bytes"), "w") as f:
        f.write(str(limit_mib * MIB))
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write(str(pid))


@pytest.mark.parametrize("interval", [1.0, 0.1])
def test_real_v1_memory_cgroup_peak_limit_and_oom_kill(child_cgroup, interval):
    """A real workload alone in a real v1 memory cgroup (limit 300 MiB): it touches 200 MiB
    for 0.05 s between two samples and frees it, then its child touches 400 MiB and is
    OOM-killed. The cgroup's own high-water mark shows the peak the samples missed, the
    limit, and the OOM kill."""
    w = Workload(
        """
        import subprocess
        buf = bytearray(200 * 1024 * 1024)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        time.sleep(0.05)
        del buf
        hog = "b = bytearray(400 * 2**20)\\nfor i in range(0, len(b), 4096): b[i] = 1"
        report(child=subprocess.run([sys.executable, "-c", hog]).returncode)
        """
    )
    try:
        _enter(child_cgroup, w.pid, 300)
        tracker = ResourceTracker(
            pid=w.pid, interval=interval, discover_cloud=False, discover_server=False
        )
        w.go()
        assert w.read_report()["child"] == -9  # SIGKILL from the OOM killer
        w.finish()
        tracker.stop()
    finally:
        w.kill()
    cg = tracker.stats()["cgroup"]
    assert cg["version"] == 1 and os.path.basename(cg["path"]) == os.path.basename(child_cgroup)
    assert cg["memory_limit_mib"] == 300
    assert cg["oom_kills"] == 1
    assert cg["dedicated"] is True
    # the kernel's peak: up to the limit (the OOM child pushed it there), above 200 MiB
    assert 200 <= cg["memory_peak_mib"] <= 300


def test_cgroup_v1_with_only_cpuacct_of_its_own_is_read(tmp_path):
    """A v1 process whose memory and cpu hierarchies are the machine's (the root) and whose
    cpuacct hierarchy is its own: the figures of its own hierarchy, not a TypeError (the
    member list was read from a memory or cpu directory that is not there)."""
    pid = os.getpid()
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    _fake_proc(
        proc, pid,
        ["12:memory:/", "5:cpu:/", "4:cpuacct:/batch/job"],
        ["40 31 0:35 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
         "41 31 0:36 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu",
         "42 31 0:37 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct"],
    )  # fmt: skip
    acct = os.path.join(sys_root, "fs/cgroup/cpuacct/batch/job")
    _write(os.path.join(acct, "cpuacct.usage"), str(3 * 10**9))
    _write(os.path.join(acct, "cgroup.procs"), f"{pid}\n")
    cg = read_cgroup(pid, proc, sys_root)
    assert cg["version"] == 1 and cg["path"] == "/batch/job"
    assert cg["cpu_seconds"] == pytest.approx(3.0) and cg["pids"] == [pid]
    assert cg["memory_mib"] is None and cg["cpu_limit_cores"] is None
