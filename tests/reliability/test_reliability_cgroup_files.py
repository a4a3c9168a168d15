"""Hostile cgroup files (issue 25, item 7): a FIFO as a limit file, ``/dev/zero`` as
``cgroup.procs``, sizes of 2**61 and 2**64 - 1 in the memory files and ``memory.stat``.

Real: a mount namespace (``unshare --mount``, root only: else the tests skip saying why) in
which a tmpfs covers this machine's cgroup mount; the cgroup directories the process's own
``/proc/self/cgroup`` names are made in it and filled with the hostile files, then the real
``get_server_info``, ``read_cgroup`` and a real tracker (its C sampler reading the tree's
memory from ``memory.stat``) run there on a real workload. Each must return, with its memory
bounded, and no figure may be absurd (above the machine's RAM).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
U64_MAX = (1 << 64) - 1
#: A hang of the old code is found by this timeout (the new code returns in well under 1 s).
HANG_S = 120

_SCRIPT = textwrap.dedent(
    """
    import json, os, resource, subprocess, sys, time
    sys.path.insert(0, {root!r})
    from resource_tracker._cgroup_fs import _cgroup_places, cgroup_directory

    U64 = {u64}
    # the memory of this process is bounded: the old reader of /dev/zero stops at it
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/sys/fs/cgroup"], check=True)
    version, places = _cgroup_places(os.getpid(), "/proc", "")
    dirs = set()
    for (root, mount_point), path in places.values():
        dirs.add(mount_point)
        dirs.add(cgroup_directory((root, mount_point), path))
    os.makedirs("/sys/fs/cgroup/unified", exist_ok=True)  # cgroup v2 (unified) mount point

    def write(directory, name, text):
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)

    def hostile(directory):
        os.makedirs(directory, exist_ok=True)
        for name in ("memory.max", "cpu.max", "memory.limit_in_bytes", "cpu.cfs_quota_us"):
            os.mkfifo(os.path.join(directory, name))  # no writer: an open() blocks
        write(directory, "cpu.cfs_period_us", "100000")
        os.symlink("/dev/zero", os.path.join(directory, "cgroup.procs"))
        for name in ("memory.current", "memory.usage_in_bytes"):
            write(directory, name, str(1 << 61))  # 2 EiB: no machine has that
        for name in ("memory.peak", "memory.max_usage_in_bytes", "cpuacct.usage"):
            write(directory, name, str(U64))
        write(directory, "cpu.stat", "usage_usec %d\\nuser_usec 1\\nsystem_usec 1\\n" % U64)
        write(directory, "memory.stat",
              "anon %d\\nfile_mapped 4096\\ntotal_rss %d\\ntotal_mapped_file 4096\\n" % (U64, U64))

    for d in dirs:
        hostile(d)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    from resource_tracker.server_info import get_server_info
    from resource_tracker.cgroup_usage import read_cgroup
    info = get_server_info(os.getpid())
    figures = read_cgroup(os.getpid())
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    from resource_tracker._run_data import cgroup_run
    dedicated = cgroup_run(figures, figures, os.getpid())["dedicated"]
    # the tracker: the tree's memory from memory.stat (2**64 - 1 bytes), the list of its
    # processes a regular file naming the workload
    work = subprocess.Popen([sys.executable, "-c",
        "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096]); "
        "import sys; print('ok', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert work.stdout.readline().strip() == b"ok"
    for d in dirs:
        os.unlink(os.path.join(d, "cgroup.procs"))
        write(d, "cgroup.procs", "%d\\n" % work.pid)
    os.environ["RESOURCE_TRACKER_TREE_SOURCE"] = "cgroup"
    from resource_tracker import ResourceTracker
    tracker = ResourceTracker(pid=work.pid, interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(8, timeout=60)
    tracker.stop()
    with open("/proc/%d/status" % work.pid) as f:
        own_rss_kib = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    work.stdin.close()
    work.wait()
    print(json.dumps({{
        "version": version, "cgroup_limits": info["cgroup"], "figures": figures,
        "rss_growth_kib": rss1 - rss0, "ram_mib": info["memory_mb"], "dedicated": dedicated,
        "memory_kib": list(tracker.process_metrics.column_array("memory")),
        "own_rss_kib": own_rss_kib, "tree_source": tracker.stats().get("tree_source"),
        "recommended": tracker.recommend_resources(),
    }}))
    """
)


def _can_unshare_mount():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root and unshare (a tmpfs over the cgroup mount in a mount namespace)"
    probe = subprocess.run(["unshare", "--mount", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        return "unshare --mount is not permitted here: " + probe.stderr.decode().strip()
    if not os.path.isdir("/sys/fs/cgroup"):
        return "no /sys/fs/cgroup"
    return None


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """The JSON the script printed in its mount namespace (one run for the module's tests)."""
    why = _can_unshare_mount()
    if why:
        pytest.skip(why)
    script = tmp_path_factory.mktemp("cgroup-files") / "hostile.py"
    script.write_text(_SCRIPT.format(root=ROOT, u64=U64_MAX))
    env = dict(os.environ, RESOURCE_TRACKER_DISCOVER_CLOUD="0")
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--fork", "--kill-child", sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=HANG_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a cgroup file made the readers hang (no answer in {HANG_S} s)")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["figures"] is None:
        pytest.skip("no cgroup found for this process (nothing to cover with a tmpfs)")
    return result


def test_fifo_limit_files_do_not_block_server_info(hostile_run):
    """A FIFO as ``memory.max``/``cpu.max`` (v1: ``memory.limit_in_bytes``,
    ``cpu.cfs_quota_us``) is not read: server_info returns, with no limit found."""
    limits = hostile_run["cgroup_limits"]
    assert limits["version"] == hostile_run["version"]
    assert limits["memory_limit_mb"] is None and limits["cpu_limit_cores"] is None


def test_dev_zero_as_cgroup_procs_costs_no_memory(hostile_run):
    """``/dev/zero`` as ``cgroup.procs`` is not a regular file: not read (who is in the
    cgroup is unknown: None, not an empty list), and the reading process's peak resident set
    grows by less than 16 MiB (the old reader: gigabytes)."""
    assert hostile_run["figures"]["pids"] is None
    assert hostile_run["dedicated"] is False  # not claimed as the workload's own
    assert hostile_run["rss_growth_kib"] < 16 * 1024


def test_sizes_beyond_the_machine_are_not_read(hostile_run):
    """2**61 and 2**64 - 1 bytes in the memory files and 2**64 - 1 microseconds of CPU are
    'not read' (None), never taken as figures."""
    figures = hostile_run["figures"]
    assert figures["memory_mib"] is None
    assert figures["memory_peak_mib"] is None
    assert figures["cpu_seconds"] is None


def test_memory_stat_of_2_64_is_no_memory_column(hostile_run):
    """The tree source's ``memory.stat`` saying 2**64 - 1 bytes: the column goes back to the
    process walk (the note says why) and measures the workload's own RSS; no sample and no
    recommendation above the machine's RAM."""
    memory = hostile_run["memory_kib"]
    ram_kib = hostile_run["ram_mib"] * 1024
    assert memory and max(memory) <= ram_kib
    own = hostile_run["own_rss_kib"]
    assert 0.8 * own <= memory[-1] <= 1.25 * own + 4096, (memory[-1], own)
    assert hostile_run["recommended"]["memory"] <= hostile_run["ram_mib"] * 2
    note = (hostile_run["tree_source"] or {}).get("note") or ""
    assert "memory.stat" in note, hostile_run["tree_source"]
