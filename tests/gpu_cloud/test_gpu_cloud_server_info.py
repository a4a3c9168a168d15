"""server_info: CPUs, memory, OS and the cgroup limits that apply to the tracked process.

The machine facts are checked against this machine's /proc. cgroup limits are checked on
a real cgroup (v1 cpu controller, created for the test when this machine permits it) and on
cgroup v1 and v2 trees laid out like the kernel's (``/proc/<pid>/cgroup``, ``mountinfo``,
``cpu.max`` / ``memory.max`` / ``cpu.cfs_quota_us`` / ``memory.limit_in_bytes``) in a
temporary directory, since this machine offers only one cgroup layout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from resource_tracker.server_info import cgroup_limits, get_server_info

KEYS = {
    "vcpus",
    "memory_mb",
    "memory_mib",  # the name code for the 0.4/0.5 packages reads
    "gpu_count",
    "gpu_names",
    "gpu_memory_mb",
    "gpu_memory_mib",
    "cpu_model",
    "architecture",
    "os",
    "cgroup",
}


def test_server_info_this_machine(monkeypatch):
    """The keys of the contract, with this machine's values, in a few ms of CPU (this
    thread's: a loaded machine stretches the wall time, not the work), no subprocess."""

    def no_subprocess(*args, **kwargs):
        raise AssertionError("server_info must not start a subprocess")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    monkeypatch.setenv("RESOURCE_TRACKER_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    get_server_info()  # warm the imports
    start = time.thread_time()
    info = get_server_info()
    cpu = time.thread_time() - start
    assert set(info) == KEYS
    assert cpu < 0.02
    assert info["vcpus"] == os.cpu_count()
    with open("/proc/meminfo") as f:
        total_kib = int(f.readline().split()[1])
    assert info["memory_mb"] == total_kib // 1024
    assert info["gpu_count"] == 0 and info["gpu_names"] == [] and info["gpu_memory_mb"] == 0
    assert info["architecture"] == os.uname().machine
    with open("/proc/cpuinfo") as f:
        models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    if models:
        assert info["cpu_model"] == models[0]
    assert os.uname().release in info["os"]
    assert set(info["cgroup"]) == {"version", "cpu_limit_cores", "memory_limit_mb"}
    assert info["cgroup"]["version"] in (1, 2)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _fake_proc(tmp_path, pid, cgroup, mountinfo):
    proc = tmp_path / "proc"
    _write(str(proc / str(pid) / "cgroup"), cgroup)
    _write(str(proc / str(pid) / "mountinfo"), mountinfo)
    return str(proc)


def test_server_info_cgroup_v2(tmp_path):
    """cgroup v2: the tightest cpu.max and memory.max from the cgroup up to the root."""
    fs = str(tmp_path / "fs")
    base = fs + "/sys/fs/cgroup"
    _write(base + "/cgroup.controllers", "cpuset cpu io memory pids\n")
    _write(base + "/kubepods/cpu.max", "max 100000\n")
    _write(base + "/kubepods/memory.max", "1073741824\n")
    _write(base + "/kubepods/pod1/cpu.max", "150000 100000\n")
    _write(base + "/kubepods/pod1/memory.max", "max\n")
    _write(base + "/kubepods/pod1/ctr/cpu.max", "max 100000\n")
    _write(base + "/kubepods/pod1/ctr/memory.max", "536870912\n")
    proc = _fake_proc(
        tmp_path,
        4242,
        "0::/kubepods/pod1/ctr\n",
        "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - "
        "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
    )
    limits = cgroup_limits(4242, proc_root=proc, fs_root=fs)
    assert limits == {"version": 2, "cpu_limit_cores": 1.5, "memory_limit_mb": 512}


def test_server_info_cgroup_v2_namespaced(tmp_path):
    """In a cgroup namespace (containers) the process's path is '/' at the mount's root."""
    fs = str(tmp_path / "fs")
    _write(fs + "/sys/fs/cgroup/cpu.max", "250000 100000\n")
    _write(fs + "/sys/fs/cgroup/memory.max", "max\n")
    proc = _fake_proc(
        tmp_path,
        7,
        "0::/\n",
        "610 600 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw\n",
    )
    limits = cgroup_limits(7, proc_root=proc, fs_root=fs)
    assert limits == {"version": 2, "cpu_limit_cores": 2.5, "memory_limit_mb": None}


def test_server_info_tiny_limits_are_not_rounded_to_nothing(tmp_path):
    """A quota of 1 ms per 20 s and a 100-byte memory limit are limits: 0.001 core, 1 MiB
    (rounding them to 0 read as 'no CPU at all'; found by fuzz/fuzz_cgroup.py)."""
    fs = str(tmp_path / "fs")
    _write(fs + "/sys/fs/cgroup/cpu.max", "1000 20000000\n")
    _write(fs + "/sys/fs/cgroup/memory.max", "100\n")
    proc = _fake_proc(
        tmp_path, 8, "0::/\n", "610 600 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup rw\n"
    )
    limits = cgroup_limits(8, proc_root=proc, fs_root=fs)
    assert limits == {"version": 2, "cpu_limit_cores": 0.001, "memory_limit_mb": 1}


def test_server_info_cgroup_v1(tmp_path):
    """cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us and memory.limit_in_bytes."""
    fs = str(tmp_path / "fs")
    _write(fs + "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n")
    _write(fs + "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    _write(fs + "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    _write(fs + "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    _write(fs + "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "2147483648\n")
    _write(fs + "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
    proc = _fake_proc(
        tmp_path,
        99,
        "12:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n",
        "25 20 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
        "27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
        "28 25 0:25 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
        "29 25 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n",
    )
    limits = cgroup_limits(99, proc_root=proc, fs_root=fs)
    assert limits == {"version": 1, "cpu_limit_cores": 2.0, "memory_limit_mb": 2048}


def test_server_info_cgroup_v1_unlimited(tmp_path):
    """v1 'no limit' values (-1 quota, 2**63-ish bytes) read as None."""
    fs = str(tmp_path / "fs")
    _write(fs + "/cg/cpu/cpu.cfs_quota_us", "-1\n")
    _write(fs + "/cg/cpu/cpu.cfs_period_us", "100000\n")
    _write(fs + "/cg/memory/memory.limit_in_bytes", "9223372036854771712\n")
    proc = _fake_proc(
        tmp_path,
        5,
        "4:memory:/\n1:cpu:/\n",
        "32 31 0:29 / /cg/cpu rw - cgroup cgroup rw,cpu\n"
        "35 31 0:32 / /cg/memory rw - cgroup cgroup rw,memory\n",
    )
    limits = cgroup_limits(5, proc_root=proc, fs_root=fs)
    assert limits == {"version": 1, "cpu_limit_cores": None, "memory_limit_mb": None}


def test_server_info_no_cgroup_files(tmp_path):
    """A process that does not exist (or no cgroup fs): no version, no limits."""
    proc = str(tmp_path / "proc")
    os.makedirs(proc)
    assert cgroup_limits(123, proc_root=proc) == {
        "version": None,
        "cpu_limit_cores": None,
        "memory_limit_mb": None,
    }


def _v1_cpu_root():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            post = line.split(" - ", 1)[1].split()
            if post[0] == "cgroup" and "cpu" in post[2].split(","):
                return line.split()[4]
    return None


def test_server_info_real_cgroup_cpu_limit():
    """A real cgroup v1 cpu quota of 0.5 core on a real process is read for that process."""
    root = _v1_cpu_root()
    with open("/proc/self/cgroup") as f:
        mine = [line for line in f if ":cpu:" in line or ":cpu," in line]
    if root is None or not mine or mine[0].rstrip().rsplit(":", 1)[1] != "/":
        pytest.skip("needs a cgroup v1 cpu hierarchy with this process at its root")
    group = os.path.join(root, f"rt-test-{os.getpid()}")
    try:
        os.mkdir(group)
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup here: {exc}")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with open(os.path.join(group, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
            f.write("50000")
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(proc.pid))
        info = get_server_info(pid=proc.pid)
        assert info["cgroup"]["version"] == 1
        assert info["cgroup"]["cpu_limit_cores"] == 0.5
        assert get_server_info()["cgroup"]["cpu_limit_cores"] is None  # this process: none
    finally:
        proc.kill()
        proc.wait()
        for _ in range(50):
            try:
                os.rmdir(group)
                break
            except OSError:
                time.sleep(0.02)
