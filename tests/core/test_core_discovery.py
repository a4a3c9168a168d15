"""Child discovery (issue 38): the tracked tree's new processes are found from its members'
children lists (/proc/<pid>/task/<tid>/children) where the kernel has them, else (or with
RESOURCE_TRACKER_CHILD_DISCOVERY=listing) by listing /proc. Every test here runs on both
paths (the ``discovery`` fixture) and checks the path taken: the guarantees are the same,
on real processes and the real /proc (a fake procfs for the fault cases). Memory held by a
process is the proof it was found: a child's CPU would reach its parent's counters anyway
once the parent reaps it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from workloads import FORKER, Workload, total_cpu

from resource_tracker import ResourceTracker, _core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")

# a process holding 100 MiB (every page written) until the file argv[1] exists
HOLDER = (
    "import os, sys, time\n"
    "b = bytearray(100 << 20); b[::4096] = b'x' * (len(b) // 4096)\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.02)\n"
)


def _tracking(workload, interval=0.05):
    """A tracker of the workload (its baseline taken), the workload started."""
    tracker = ResourceTracker(
        pid=workload.pid, interval=interval, discover_cloud=False, discover_server=False,
        track_system=False,
    )  # fmt: skip
    assert tracker.wait_for_samples(1, timeout=10)
    workload.go()
    return tracker


def _assert_path(sampler, discovery):
    """The tracker found new members the way the test asked."""
    assert sampler.children_lists == (1.0 if discovery == "auto" else 0.0)
    if discovery == "auto":
        assert sampler.list_failures == 0
    else:
        assert sampler.children_scans == 0


def _wait_until(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _memory_mib(tracker):
    return max(tracker.process_metrics["memory"], default=0) / 1024


def test_new_children_found_on_a_busy_machine_without_listing_proc(discovery):
    """200 unrelated processes and a neighbour forking ~100 times a second: the workload's
    children, started one after the other (each 0.3 s of CPU), are all counted. With the
    children lists, /proc is never listed and the lists are read at the ticks where
    processes were created (or the new pids probed, when fewer)."""
    neighbours = [subprocess.Popen(["sleep", "120"]) for _ in range(200)]
    neighbours.append(subprocess.Popen([sys.executable, "-c", FORKER]))
    w = Workload(
        """
        import subprocess
        busy = "import time\\nend=time.process_time()+0.3\\nwhile time.process_time()<end: pass"
        for i in range(4):
            subprocess.run([sys.executable, "-c", busy])
            time.sleep(0.2)
        t = os.times()
        report(children_cpu=t.children_user + t.children_system)
        """
    )
    try:
        tracker = _tracking(w, interval=0.1)
        truth = w.read_report()
        w.finish()
        tracker.stop()
    finally:
        w.kill()
        for p in neighbours:
            p.kill()
            p.wait()
    sampler = tracker._sampler
    assert max(tracker.process_metrics["children"]) >= 1
    assert total_cpu(tracker.process_metrics) == pytest.approx(
        truth["children_cpu"], rel=0.1, abs=0.05
    )
    _assert_path(sampler, discovery)
    if discovery == "auto":
        assert sampler.listings == 0
        assert sampler.children_scans + sampler.probes >= 5


def test_a_child_started_by_another_thread_is_found(discovery, tmp_path):
    """A child forked by a second thread of the workload (the kernel lists it under that
    thread, not the main one) holding 100 MiB: its memory is in the tree's."""
    release = tmp_path / "release"
    w = Workload(
        f"""
        import subprocess, threading
        kids = []
        t = threading.Thread(target=lambda: kids.append(subprocess.Popen(
            [sys.executable, "-c", {HOLDER!r}, {str(release)!r}])))
        t.start(); t.join()
        threading.Event().wait()  # held until the test kills it
        """
    )
    try:
        tracker = _tracking(w)
        _wait_until(lambda: _memory_mib(tracker) >= 100)
        children = max(tracker.process_metrics["children"])
        tracker.stop()
    finally:
        release.touch()
        w.kill()
    assert children >= 1
    _assert_path(tracker._sampler, discovery)


def test_an_orphan_reparented_to_a_subreaper_member_is_found(discovery, tmp_path):
    """The root is a subreaper (PR_SET_CHILD_SUBREAPER); a child of it starts a grandchild
    holding 100 MiB and exits at once, before any tick could see it: the grandchild, now the
    root's child, is in the tree."""
    release = tmp_path / "release"
    w = Workload(
        f"""
        import ctypes, subprocess
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        starter = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
                   + repr({HOLDER!r}) + ", " + repr({str(release)!r}) + "])")
        subprocess.run([sys.executable, "-c", starter])  # exits once the grandchild started
        report(started=True)
        while True:
            try:
                os.wait()
            except ChildProcessError:
                time.sleep(0.05)
        """
    )
    try:
        tracker = _tracking(w)
        assert w.read_report()["started"]
        _wait_until(lambda: _memory_mib(tracker) >= 100)
        tracker.stop()
    finally:
        release.touch()
        w.kill()
    _assert_path(tracker._sampler, discovery)


def test_a_member_whose_parent_exits_stays_in_the_tree(discovery, tmp_path):
    """A grandchild holding 100 MiB, seen while its parent lived; the parent then exits and
    the grandchild is reparented (to init): it is still counted at the following ticks."""
    release, parent_go = tmp_path / "release", tmp_path / "parent-go"
    w = Workload(
        f"""
        import subprocess, threading
        parent = ("import os, subprocess, sys, time; "
                  "subprocess.Popen([sys.executable, '-c', " + repr({HOLDER!r}) + ", "
                  + repr({str(release)!r}) + "]); "
                  "exec('while not os.path.exists(sys.argv[1]): time.sleep(0.02)')")
        p = subprocess.Popen([sys.executable, "-c", parent, {str(parent_go)!r}])
        p.wait()
        report(parent_exited=True)
        threading.Event().wait()  # held until the test kills it
        """
    )
    try:
        tracker = _tracking(w)
        _wait_until(lambda: _memory_mib(tracker) >= 100)
        parent_go.touch()
        assert w.read_report()["parent_exited"]
        after = tracker.n_samples
        assert tracker.wait_for_samples(after + 5, timeout=30)
        rows = list(tracker.process_metrics["memory"])[after + 1 :]
        tracker.stop()
    finally:
        release.touch()
        w.kill()
    assert rows and min(rows) / 1024 >= 95  # the orphan is still a member
    _assert_path(tracker._sampler, discovery)


MEMBER_REUSE = """
    import json, os, subprocess, sys
    from resource_tracker import ResourceTracker

    HOG = ("import sys; b = bytearray(300 << 20); b[::4096] = b'x' * (len(b) // 4096); "
           "print('ready', flush=True); sys.stdin.read()")
    ROOT = ("import subprocess, sys; c = subprocess.Popen(['sleep', '60']); "
            "print(c.pid, flush=True); sys.stdin.readline(); c.kill(); c.wait(); "
            "print('reaped', flush=True); sys.stdin.readline()")

    def start_ticks(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]

    root = subprocess.Popen([sys.executable, "-c", ROOT], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    child = int(root.stdout.readline())
    child_ticks = start_ticks(child)
    tracker = ResourceTracker(pid=root.pid, interval=0.05, discover_cloud=False,
                              track_system=False)
    while tracker.n_samples < 3 or max(tracker.process_metrics["children"]) < 1:
        tracker.wait_for_samples(tracker.n_samples + 1)
    root.stdin.write("kill\\n"); root.stdin.flush()
    assert root.stdout.readline() == "reaped\\n"
    while True:  # the next pid handed out is the child's, to a process outside the tree
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(child - 1))
        hog = subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
        assert hog.stdout.readline() == b"ready\\n"
        if hog.pid == child and start_ticks(hog.pid) != child_ticks:
            break
        hog.kill()
        hog.wait()
    tracker.wait_for_samples(tracker.n_samples + 5)
    tracker.stop()
    s = tracker._sampler
    print(json.dumps(dict(
        child=child, hog=hog.pid, memory_max=max(tracker.process_metrics["memory"]),
        children_last=tracker.process_metrics["children"][-1],
        children_lists=s.children_lists, children_scans=s.children_scans,
        list_failures=s.list_failures)))
    hog.kill(); hog.wait()
    root.stdin.write("end\\n"); root.stdin.flush(); root.wait()
"""


@needs_root
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_members_pid_handed_to_a_stranger_is_not_the_member(discovery):
    """In a pid namespace of its own (ns_last_pid writable): a member (the root's `sleep`)
    exits and is reaped, and a 300 MiB process outside the tree gets its pid. The tree does
    not take it for the member: its memory stays the root's, its children 0."""
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c",
         textwrap.dedent(MEMBER_REUSE)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["hog"] == r["child"]
    assert r["memory_max"] / 1024 < 100  # the root (~10 MiB) and its sleep; never the hog
    assert r["children_last"] == 0
    assert r["children_lists"] == (1.0 if discovery == "auto" else 0.0)
    assert r["list_failures"] == 0


def _fake_proc_with_lists(tmp_path, lists):
    """The fake procfs of the fault tests (a root 4242 and its child 4243), with the
    children lists given ({relative path: bytes}) under it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "reliability"))
    from test_reliability_faults import make_fake_proc

    proc, sys_root = make_fake_proc(str(tmp_path))
    for rel, data in lists.items():
        path = os.path.join(proc, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return proc, sys_root


@pytest.mark.parametrize(
    "child_list",
    [b"4243 ", b"", b"\xff ) ( -1 99999999999 4243\x00 77", b"4243 " * 200_000],
    ids=["right", "empty", "garbage", "enormous"],
)
def test_fake_children_lists_never_break_the_tree(tmp_path, child_list):
    """A fake procfs whose root has a children list (right, empty, garbage, enormous): the
    lists are used, nothing crashes, and no pid that is not a process gets in; a right list
    finds the child, and the listing (RESOURCE_TRACKER_CHILD_DISCOVERY=listing) does too."""
    lists = {"4242/task/4242/children": child_list, "4243/task/4243/children": b""}
    proc, sys_root = _fake_proc_with_lists(tmp_path, lists)
    found = {}
    for discovery in ("auto", "listing"):
        s = _core.Sampler(4242, 0.02, proc_root=proc, sys_root=sys_root, discovery=discovery)
        for _ in range(3):
            row = s.sample_now()
        found[discovery] = row[0][2]
        assert s.children_lists == (1.0 if discovery == "auto" else 0.0)
        s.stop()
    assert found["listing"] == 1
    assert found["auto"] == (0 if child_list == b"" else 1)  # 4243 is in all the others


def test_a_procfs_without_children_lists_is_listed(tmp_path):
    """The same fake procfs without children lists (a kernel without CONFIG_PROC_CHILDREN):
    the tree is found by listing it."""
    proc, sys_root = _fake_proc_with_lists(tmp_path, {})
    s = _core.Sampler(4242, 0.02, proc_root=proc, sys_root=sys_root)
    for _ in range(3):
        row = s.sample_now()
    assert s.children_lists == 0
    assert row[0][2] == 1
    assert s.listings >= 1
    s.stop()


def test_discovery_must_be_auto_or_listing():
    with pytest.raises(ValueError, match="discovery must be 'auto'.*got 'fast\\\\x1b'"):
        _core.Sampler(os.getpid(), 1.0, discovery="fast\x1b")
