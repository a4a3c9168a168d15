"""The tracked tree read from its own cgroup (RESOURCE_TRACKER_TREE_SOURCE): CPU, memory, I/O
and the children in a constant number of file reads per tick, whatever the tree's size.

Real: child cgroups of this machine's v1 cpuacct, memory and blkio hierarchies (root only;
else the tests skip saying why) with a real workload tree in them, tracked by two trackers at
once (cgroup source and process walk) against the workload's own os.times() and its known
allocation. Fake: cgroup files written in a temporary directory handed to the real C sampler
tracking a real process tree (the parsing, the fallback rules), and fake /proc + /sys trees for
the plan made at start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from array import array

import pytest

from resource_tracker import ResourceTracker, _core
from resource_tracker._tree_cgroup import tree_cgroup_plan

MIB = 1024 * 1024
# the first columns of the process table, in order (columns.h)
NAMES = ("timestamp", "pid", "children", "utime", "stime", "cpu_usage", "memory", "read_bytes",
         "write_bytes")  # fmt: skip


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


# -- the real cgroups of this machine -------------------------------------------------------


def _v1_mount(controller):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if " - cgroup " in line and controller in line.split(" - ")[1].split()[2].split(","):
                return line.split()[4]
    return None


def _own_path(controller):
    with open("/proc/self/cgroup") as f:
        for line in f:
            parts = line.strip().split(":", 2)
            if len(parts) == 3 and controller in parts[1].split(","):
                return parts[2].strip("/")
    return ""


@pytest.fixture
def tree_cgroups():
    """New child cgroups of this process's own in v1 cpuacct, memory, blkio and pids (removed
    after the test, once the workload has exited)."""
    if os.geteuid() != 0:
        pytest.skip("creating cgroups needs root")
    made = []
    name = f"rt-tree-{os.getpid()}-{time.monotonic_ns()}"
    for controller in ("cpuacct", "memory", "blkio", "pids"):
        mount = _v1_mount(controller)
        if mount is None:
            pytest.skip(f"no v1 {controller} hierarchy mounted (cgroup v2 machine)")
        path = os.path.join(mount, _own_path(controller), name)
        try:
            os.mkdir(path)
        except OSError as exc:
            pytest.skip(f"cannot create a cgroup under {os.path.dirname(path)}: {exc.strerror}")
        made.append(path)
    yield made
    _remove_cgroups(made)


def _remove_cgroups(paths):
    """rmdir each cgroup, retried for 5 s (the kernel frees it once its processes exited)."""
    for path in paths:
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)


def _fork_burn_and_stop(w, stop):
    """Lets the workload fork its children and burn, calls stop() once they are done, then
    ends the workload: its own CPU seconds (the truth)."""
    w.stdin.write("go\n")
    w.stdin.flush()
    assert w.stdout.readline().strip() == "forked"
    truth = float(w.stdout.readline())
    time.sleep(0.3)
    stop()
    w.stdin.write("end\n")
    w.stdin.flush()
    assert w.wait(10) == 0
    return truth


WORKLOAD = textwrap.dedent(
    """
    import os, sys, time
    n, hold_mib, burn_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    buf = bytearray(hold_mib * 2**20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    print("ready", flush=True)
    sys.stdin.readline()
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            end = time.process_time() + burn_s
            while time.process_time() < end:
                pass
            time.sleep(0.5)
            os._exit(0)
        kids.append(pid)
    time.sleep(0.3)
    print("forked", flush=True)
    for pid in kids:
        os.waitpid(pid, 0)
    t = os.times()
    print(t.user + t.system + t.children_user + t.children_system, flush=True)
    sys.stdin.readline()
    """
)


def _start_in(cgroups, *args):
    """A shell that moves itself into the cgroups, then becomes the Python workload."""
    enter = "; ".join(f"echo $$ > {os.path.join(c, 'cgroup.procs')}" for c in cgroups)
    return subprocess.Popen(
        ["sh", "-c", f'{enter}; exec "$0" -c "$1" "$2" "$3" "$4"', sys.executable, WORKLOAD,
         *map(str, args)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _tracker(monkeypatch, pid, source, interval=0.1):
    monkeypatch.setenv("RESOURCE_TRACKER_TREE_SOURCE", source)
    tracker = ResourceTracker(
        pid=pid, interval=interval, discover_cloud=False, discover_server=False, method="procfs"
    )
    assert tracker.wait_for_samples(1)  # the plan is made beside start(), before this
    return tracker


def _totals(tracker):
    p = tracker.process_metrics
    return {
        "cpu": sum(p["utime"]) + sum(p["stime"]),
        "memory_mib": max(p["memory"]) / 1024,
        "children": max(p["children"]),
    }


def test_real_tree_in_its_own_v1_cgroups(tree_cgroups, monkeypatch):
    """4 children burn 0.8 s of CPU each and exit (reaped) while the root holds 120 MiB: the
    cgroup source counts the exited children's CPU and the children; CPU within 15% of the
    workload's own os.times(), memory within the allocation plus the interpreter, and both
    within tolerance of the process walk's figures on the same run."""
    w = _start_in(tree_cgroups, 4, 120, 0.8)
    try:
        assert w.stdout.readline().strip() == "ready"
        by_cgroup = _tracker(monkeypatch, w.pid, "cgroup")
        by_walk = _tracker(monkeypatch, w.pid, "procfs")
        truth = _fork_burn_and_stop(w, lambda: (by_cgroup.stop(), by_walk.stop()))
    finally:
        w.kill()
        w.wait()
    source = by_cgroup.stats()["tree_source"]
    assert source["source"] == "cgroup", source
    assert source["columns"] == {"cpu": "cgroup", "memory": "cgroup", "io": "cgroup"}
    assert by_walk.stats()["tree_source"]["source"] == "procfs"
    # kept by the snapshot, shown in the report's container section
    assert ResourceTracker.from_snapshot(by_cgroup.snapshot()).stats()["tree_source"] == source
    assert re.search(
        r"Workload figures read from</th><td>(<span[^>]*>)?the container", str(by_cgroup.report())
    )
    # after the first readings the cgroup source walks no processes
    assert source["walks"] <= 3 and source["cgroup_readings"] >= 10, source
    c, p = _totals(by_cgroup), _totals(by_walk)
    assert abs(c["cpu"] - truth) <= 0.15 * truth + 0.1, (c, truth)
    assert abs(c["cpu"] - p["cpu"]) <= 0.15 * truth + 0.1, (c, p)
    assert c["children"] == 4 and p["children"] == 4, (c, p)
    assert 120 <= c["memory_mib"] <= 120 + 40, c
    assert abs(c["memory_mib"] - p["memory_mib"]) <= 0.25 * p["memory_mib"], (c, p)


@pytest.fixture
def v2_cgroup():
    """A new cgroup in this machine's cgroup v2 hierarchy (no controller enabled there: only
    the core files, cpu.stat among them), removed after the test."""
    if os.geteuid() != 0:
        pytest.skip("creating cgroups needs root")
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f if " - cgroup2 " in line]
    if not mounts:
        pytest.skip("no cgroup v2 hierarchy mounted")
    path = os.path.join(mounts[0], f"rt-tree-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.mkdir(path)
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup under {mounts[0]}: {exc.strerror}")
    yield path
    _remove_cgroups([path])


def test_real_v2_cgroup_cpu_and_the_missing_controllers(v2_cgroup):
    """A real v2 cgroup without the memory and io controllers: CPU (cpu.stat) and the
    children come from it, within 15% of the workload's os.times(); memory and I/O from the
    processes (memory.stat, io.stat absent: the note says so); the source is 'mixed'."""
    w = _start_in([v2_cgroup], 3, 50, 0.6)
    try:
        assert w.stdout.readline().strip() == "ready"
        s = _core.Sampler(w.pid, 0.1)
        s.use_cgroup(2, v2_cgroup, v2_cgroup, v2_cgroup)
        s.start()
        assert s.wait(2, 10.0)
        truth = _fork_burn_and_stop(w, s.stop)
    finally:
        w.kill()
        w.wait()
    info = s.tree_source()
    assert info["source"] == "mixed", info
    assert info["columns"] == {"cpu": "cgroup", "memory": "procfs", "io": "procfs"}, info
    assert "memory.stat" in info["note"] or "io.stat" in info["note"], info
    p = {n: array("d", s.columns("process")[i]) for i, n in enumerate(NAMES)}
    cpu = sum(p["utime"]) + sum(p["stime"])
    assert abs(cpu - truth) <= 0.15 * truth + 0.1, (cpu, truth)
    assert max(p["children"]) == 3
    assert 50 * 1024 <= max(p["memory"]) <= 100 * 1024  # the walk's PSS


def _sleepers_in(cgroups, n):
    enter = "; ".join(f"echo $$ > {os.path.join(c, 'cgroup.procs')}" for c in cgroups)
    return subprocess.Popen(
        ["sh", "-c", f"{enter}; i=0; while [ $i -lt {n} ]; do sleep 60 & p=\"$p $!\"; "
         "i=$((i+1)); done; echo ready; read x; kill $p; wait"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize("n", [10, 500])
def test_real_reads_per_tick_do_not_grow_with_the_tree(tree_cgroups, monkeypatch, n):
    """10 and 500 processes in the cgroup: the same files read per cgroup reading whatever
    the size (cpuacct.usage, cpuacct.stat, memory.stat, blkio, pids.current; cgroup.procs
    only when pids.current moves, and every 5 s), no process walked, the children counted."""
    w = _sleepers_in(tree_cgroups, n)
    try:
        assert w.stdout.readline().strip() == "ready"
        tracker = _tracker(monkeypatch, w.pid, "cgroup", interval=0.05)
        assert tracker.wait_for_samples(5)
        before = tracker.tree_source
        assert tracker.wait_for_samples(25)
        after = tracker.tree_source
        tracker.stop()
        w.stdin.write("end\n")
        w.stdin.flush()
        w.wait(20)
    finally:
        w.kill()
        w.wait()
    readings = after["cgroup_readings"] - before["cgroup_readings"]
    reads = after["cgroup_reads"] - before["cgroup_reads"]
    assert after["source"] == "cgroup", after
    assert readings >= 10 and after["walks"] == before["walks"], (before, after)
    # 5 every reading; the sleepers neither come nor go: cgroup.procs (3 hierarchies) at
    # most every 5 s (the shell's parent, this test process, is outside: not read)
    assert 5 * readings <= reads <= 5 * readings + 3 * (readings // 50 + 1), (reads, readings)
    assert max(tracker.process_metrics["children"]) == n


# -- fake cgroup files, the real C sampler over a real process tree --------------------------


def _row(sampler):
    """One reading now: the process row as a dict (None for the baseline)."""
    rows = sampler.sample_now()
    return None if rows is None else dict(zip(NAMES, rows[0]))


@pytest.fixture
def real_tree():
    """A real root with two sleeping children."""
    w = subprocess.Popen(
        ["sh", "-c", 'sleep 30 & a=$!; sleep 30 & b=$!; echo ready; read x; kill $a $b; wait'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert w.stdout.readline().strip() == "ready"
    time.sleep(0.1)
    yield w
    for pid in _children(w.pid):
        os.kill(pid, 9)
    w.kill()
    w.wait()


def _children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _v2_files(d, tree, usage_s, anon_mib, rbytes, extra_pids=()):
    pids = [tree.pid, *_children(tree.pid), *extra_pids]
    _write(os.path.join(d, "cgroup.procs"), "".join(f"{p}\n" for p in pids))
    _write(os.path.join(d, "cpu.stat"), f"usage_usec {int(usage_s * 1e6)}\n"
           f"user_usec {int(usage_s * 0.75e6)}\nsystem_usec {int(usage_s * 0.25e6)}\n"
           "nr_periods 0\n")  # fmt: skip
    _write(os.path.join(d, "memory.stat"),
           f"anon {anon_mib * MIB}\nfile 999999999\nfile_mapped {10 * MIB}\nshmem 0\n")  # fmt: skip
    _write(os.path.join(d, "io.stat"),
           f"8:0 rbytes={rbytes} wbytes=4096 rios=1 wios=1\n"
           f"8:16 rbytes={rbytes} wbytes=0 rios=1 wios=0\n")  # fmt: skip


def test_fake_v2_cgroup_columns_and_the_intruder_fallback(tmp_path, real_tree):
    """v2 files read at each tick: CPU is the rise of usage_usec split by user/system, memory
    anon + file_mapped, I/O the rise of rbytes/wbytes summed over devices, children from
    cgroup.procs; a process outside the tree joining the cgroup hands every column back to the
    process walk (that tick still counted from the cgroup), saying so."""
    d = str(tmp_path / "job")
    _v2_files(d, real_tree, 5.0, 100, 1000)
    s = _core.Sampler(real_tree.pid, 1.0)
    s.use_cgroup(2, d, d, d)
    assert _row(s) is None  # the baseline (a walk, and the cgroup's first reading)
    _v2_files(d, real_tree, 7.0, 120, 1000 + 3000)
    p = _row(s)
    info = s.tree_source()
    assert info["source"] == "cgroup" and info["note"] is None, info
    walks = info["walks"]
    assert p["utime"] == pytest.approx(1.5) and p["stime"] == pytest.approx(0.5)
    assert p["memory"] == pytest.approx(130 * 1024)
    assert p["read_bytes"] == 6000 and p["write_bytes"] == 0
    assert p["children"] == 2
    stranger = subprocess.Popen(["sleep", "30"])  # this test's child: not of the tree
    try:
        _v2_files(d, real_tree, 8.0, 120, 4000, extra_pids=[stranger.pid])
        p = _row(s)
    finally:
        stranger.kill()
        stranger.wait()
    info = s.tree_source()
    assert info["source"] == "procfs" and f"process {stranger.pid}" in info["note"], info
    assert p["utime"] + p["stime"] == pytest.approx(1.0)  # the tick it joined
    p = _row(s)
    assert s.tree_source()["walks"] > walks
    assert p["children"] == 2


def test_fake_v2_member_list_read_when_the_task_count_moves(tmp_path, real_tree):
    """With the tree's own pids cgroup, cgroup.procs is read again only when pids.current
    moves: a pid written into the file alone is not read; once the count moves, it is (and,
    not being of the tree, hands the columns back to the walk)."""
    d = str(tmp_path / "job")
    _v2_files(d, real_tree, 5.0, 100, 0)
    _write(os.path.join(d, "pids.current"), "3\n")
    s = _core.Sampler(real_tree.pid, 1.0)
    s.use_cgroup(2, d, d, d, d)
    _row(s)
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        _v2_files(d, real_tree, 6.0, 100, 0, extra_pids=[stranger.pid])
        reads = s.tree_source()["cgroup_reads"]
        assert _row(s)["children"] == 2
        info = s.tree_source()
        assert info["source"] == "cgroup" and info["cgroup_reads"] - reads == 4, info
        _write(os.path.join(d, "pids.current"), "4\n")
        _row(s)
    finally:
        stranger.kill()
        stranger.wait()
    info = s.tree_source()
    assert info["source"] == "procfs" and f"process {stranger.pid}" in info["note"], info


def test_fake_v2_child_cgroups_are_read_too(tmp_path, real_tree):
    """The cgroup's counters include its child cgroups': their cgroup.procs are read too. A
    member in a child cgroup is counted; a stranger there ends the cgroup source. (A child
    cgroup made later is found at the next rescan, every CGROUP_PROCS_MAX_AGE: checked on an
    injected clock by tests/core/c/cgroup_check.c.)"""
    d = str(tmp_path / "job")
    kids = _children(real_tree.pid)
    _v2_files(d, real_tree, 5.0, 100, 0)
    _write(os.path.join(d, "cgroup.procs"), f"{real_tree.pid}\n{kids[0]}\n")
    _write(os.path.join(d, "sub", "cgroup.procs"), f"{kids[1]}\n")
    s = _core.Sampler(real_tree.pid, 1.0)
    s.use_cgroup(2, d, d, d)
    _row(s)
    _v2_files(d, real_tree, 6.0, 100, 0)
    _write(os.path.join(d, "cgroup.procs"), f"{real_tree.pid}\n{kids[0]}\n")
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        p = _row(s)
        assert p["children"] == 2 and s.tree_source()["source"] == "cgroup"
        _write(os.path.join(d, "sub", "cgroup.procs"), f"{kids[1]}\n{stranger.pid}\n")
        subprocess.run(["true"], check=True)  # a task created: the cgroup.procs are read again
        _row(s)
    finally:
        stranger.kill()
        stranger.wait()
    info = s.tree_source()
    assert info["source"] == "procfs" and f"process {stranger.pid}" in info["note"], info


def _own_cpu_and_anon():
    """This process's own CPU seconds and resident anonymous KiB (stat, statm)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open("/proc/self/statm") as f:
        _, resident, shared = (int(x) for x in f.read().split()[:3])
    tick = os.sysconf("SC_CLK_TCK")
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    return (int(fields[11]) + int(fields[12])) / tick, (resident - shared) * page_kib


def test_fake_v2_ancestor_in_the_cgroup_is_taken_off(tmp_path, real_tree):
    """The root's parent (this test process) in the cgroup too: not a stranger; its own CPU
    and anonymous memory, read from its stat / statm each tick, are taken off the cgroup's."""
    d = str(tmp_path / "job")
    me = os.getpid()
    _v2_files(d, real_tree, 5.0, 400, 0, extra_pids=[me])
    s = _core.Sampler(real_tree.pid, 1.0)
    s.use_cgroup(2, d, d, d)
    # this process's CPU just before and after each reading: the sampler read it in between
    before1, _ = _own_cpu_and_anon()
    _row(s)
    after1, _ = _own_cpu_and_anon()
    while _own_cpu_and_anon()[0] - after1 < 0.1:  # this process burns 0.1 s of CPU meanwhile
        sum(i * i for i in range(10_000))  # (measured, not a loop count: ASan runs it 10x slower)
    _v2_files(d, real_tree, 7.0, 400, 0, extra_pids=[me])
    before2, anon = _own_cpu_and_anon()
    p = _row(s)
    after2, _ = _own_cpu_and_anon()
    info = s.tree_source()
    assert info["source"] == "cgroup" and p["children"] == 2, info
    assert before2 - after1 >= 0.05
    # 2 s of the cgroup's CPU less this process's between the two readings (a slow, e.g.
    # sanitized, interpreter spends more of it around them: bracketed, not assumed)
    counted = p["utime"] + p["stime"]
    assert 2.0 - (after2 - before1) - 0.03 <= counted <= 2.0 - (before2 - after1) + 0.03
    assert p["memory"] == pytest.approx(410 * 1024 - anon, abs=2048)


def test_fake_v2_missing_file_leaves_that_column_to_the_walk(tmp_path, real_tree):
    """No memory.stat (memory controller not enabled): memory from the walk, CPU and I/O from
    the cgroup; the source is 'mixed' and the note names the file."""
    d = str(tmp_path / "job")
    _v2_files(d, real_tree, 5.0, 100, 0)
    os.remove(os.path.join(d, "memory.stat"))
    s = _core.Sampler(real_tree.pid, 1.0)
    s.use_cgroup(2, d, d, d)
    _row(s)
    _v2_files(d, real_tree, 6.0, 100, 0)
    os.remove(os.path.join(d, "memory.stat"))
    p = _row(s)
    info = s.tree_source()
    assert info["source"] == "mixed" and info["columns"]["memory"] == "procfs", info
    assert "memory.stat" in info["note"]
    assert p["utime"] + p["stime"] == pytest.approx(1.0)
    assert 0 < p["memory"] < 50 * 1024  # three small processes' PSS, not the fake 110 MiB


def test_fake_v1_cgroup_files(tmp_path, real_tree):
    """v1: cpuacct.usage (ns) split by cpuacct.stat, memory.stat total_rss +
    total_mapped_file, blkio Read/Write lines (Total left out), each hierarchy's
    cgroup.procs."""
    dirs = {c: str(tmp_path / c / "docker" / "abc") for c in ("cpuacct", "memory", "blkio")}
    pids = "".join(f"{p}\n" for p in [real_tree.pid, *_children(real_tree.pid)])

    def files(usage_ns, read_b):
        for d in dirs.values():
            _write(os.path.join(d, "cgroup.procs"), pids)
        _write(os.path.join(dirs["cpuacct"], "cpuacct.usage"), f"{usage_ns}\n")
        _write(os.path.join(dirs["cpuacct"], "cpuacct.stat"), "user 300\nsystem 100\n")
        memory = f"rss 1\nmapped_file 1\ntotal_rss {50 * MIB}\ntotal_mapped_file {MIB}\n"
        _write(os.path.join(dirs["memory"], "memory.stat"), memory)
        blkio = f"8:0 Read {read_b}\n8:0 Write 512\n8:0 Total {read_b + 512}\nTotal 9\n"
        _write(os.path.join(dirs["blkio"], "blkio.throttle.io_service_bytes_recursive"), blkio)

    files(2 * 10**9, 100)
    s = _core.Sampler(real_tree.pid, 1.0)
    s.use_cgroup(1, dirs["cpuacct"], dirs["memory"], dirs["blkio"])
    _row(s)
    files(4 * 10**9, 300)
    p = _row(s)
    assert s.tree_source()["source"] == "cgroup"
    assert p["utime"] == pytest.approx(1.5) and p["stime"] == pytest.approx(0.5)
    assert p["memory"] == pytest.approx(51 * 1024)
    assert p["read_bytes"] == 200 and p["write_bytes"] == 0


# -- the plan made at start (fake /proc and /sys) ------------------------------------------


def _fake_proc(root, pid, cgroup_lines, mount_lines):
    _write(os.path.join(root, str(pid), "cgroup"), "".join(x + "\n" for x in cgroup_lines))
    _write(os.path.join(root, str(pid), "mountinfo"), "".join(m + "\n" for m in mount_lines))


def test_plan_v2_own_cgroup_and_hierarchy_root(tmp_path):
    """v2: the pid's own cgroup gives every column when its files are there (the memory and
    io controllers enabled); a missing one, or the hierarchy's root, leaves the tree to the
    walk in auto mode (the walk would run anyway), and only that column in cgroup mode."""
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    mount = ["30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw"]
    _fake_proc(proc, 7, ["0::/kubepods/pod1/job"], mount)
    d = os.path.join(sys_root, "fs/cgroup/kubepods/pod1/job")
    for name in ("cpu.stat", "memory.stat", "io.stat"):
        _write(os.path.join(d, name), "")
    version, dirs, note = tree_cgroup_plan(7, "auto", proc, sys_root)
    assert version == 2 and dirs == {"cpu": d, "memory": d, "io": d, "pids": ""} and not note
    _write(os.path.join(d, "pids.current"), "3\n")  # the pids controller is enabled
    assert tree_cgroup_plan(7, "auto", proc, sys_root)[1]["pids"] == d
    os.remove(os.path.join(d, "io.stat"))  # no io controller
    _, dirs, note = tree_cgroup_plan(7, "auto", proc, sys_root)
    assert dirs == {"cpu": "", "memory": "", "io": "", "pids": d} and "no io.stat" in note
    _, dirs, note = tree_cgroup_plan(7, "cgroup", proc, sys_root)
    assert dirs == {"cpu": d, "memory": d, "io": "", "pids": d} and "no io.stat" in note
    _fake_proc(proc, 8, ["0::/"], mount)  # the machine's root
    _, dirs, note = tree_cgroup_plan(8, "cgroup", proc, sys_root)
    assert not any(dirs.values()) and "no cgroup of the tree's own" in note
    assert tree_cgroup_plan(9, "auto", proc, sys_root) is None  # no /proc/9


def test_plan_v1_blkio_only_where_the_kernel_counts(tmp_path):
    """v1: cpuacct, memory and blkio of the pid's own; blkio only where the hierarchy's root
    shows bytes (else walked in auto mode, taken in cgroup mode); cpuacct at the root walks."""
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    mounts = ["40 31 0:35 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
              "41 31 0:36 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct",
              "42 31 0:37 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio"]  # fmt: skip
    _fake_proc(proc, 7, ["5:blkio:/docker/abc", "4:memory:/docker/abc", "3:cpuacct:/docker/abc"],
               mounts)  # fmt: skip
    cg = os.path.join(sys_root, "fs/cgroup")
    _write(os.path.join(cg, "cpuacct/docker/abc/cpuacct.usage"), "0\n")
    _write(os.path.join(cg, "memory/docker/abc/memory.stat"), "")
    _write(os.path.join(cg, "blkio/docker/abc/blkio.throttle.io_service_bytes"), "Total 0\n")
    counter = os.path.join(cg, "blkio/blkio.throttle.io_service_bytes_recursive")
    _write(counter, "Total 0\n")
    version, dirs, note = tree_cgroup_plan(7, "auto", proc, sys_root)
    assert version == 1 and not any(dirs.values()) and "blkio" in note
    _, dirs, note = tree_cgroup_plan(7, "cgroup", proc, sys_root)
    assert dirs["io"].endswith("blkio/docker/abc") and dirs["cpu"].endswith("cpuacct/docker/abc")
    _write(counter, "8:0 Read 4096\n8:0 Write 0\nTotal 4096\n")  # the kernel counts
    _, dirs, note = tree_cgroup_plan(7, "auto", proc, sys_root)
    assert dirs["io"].endswith("blkio/docker/abc") and dirs["memory"] and note is None
    _fake_proc(proc, 7, ["5:blkio:/docker/abc", "4:memory:/docker/abc", "3:cpuacct:/"], mounts)
    _, dirs, note = tree_cgroup_plan(7, "auto", proc, sys_root)
    assert not any(dirs.values()) and "cpu: no cgroup of the tree's own" in note
