"""Hardening, round two (issue 25, items 4, 5 and 11): each test fails on the code before.

- A reused pid: the root is (pid, start time). In a pid namespace of its own (pids small and
  predictable, ``ns_last_pid`` writable) the root exits and a 300 MiB process gets its pid:
  the run reports neither that process's memory nor its command line (both backends; with
  readings between, and with only the baseline and the final reading).
- No thread can be created (RLIMIT_NPROC as a non-root real user): ``stop()`` returns, the
  end figures are read in the caller and ``stats()['data_quality']`` says so; ``stats()``
  and ``report()`` work.
- A ``KeyboardInterrupt`` landing in ``start()`` (a trace hook raises it at a chosen line)
  leaves no tracker behind: descriptors back to where they were, no uncollectable cycle.
- The descriptor margin counts the sampler's own descriptors: at RLIMIT_NOFILE 16 the
  application can open every descriptor but the sampler's permanent ones.

Each runs its workload in a fresh interpreter (a namespace, a limit or a lost thread stays
there), which inherits the environment (the backend under test).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def _python(code, argv=(), prefix=(), preexec_fn=None, timeout=120):
    """Runs code in a fresh interpreter (after ``prefix``, e.g. unshare): the JSON it prints
    last, or a failed test with its stderr."""
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        preexec_fn=preexec_fn,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- a reused pid ------------------------------------------------------------------------

REUSE = """
    import json, os, subprocess, sys
    from resource_tracker import ResourceTracker

    interval, readings = float(sys.argv[1]), int(sys.argv[2])
    HOG = ("import sys; b = bytearray(300 << 20); b[::4096] = b'x' * (len(b) // 4096); "
           "print('ready', flush=True); sys.stdin.read()")

    def start_ticks(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]

    def rss_kib(pid):
        with open(f"/proc/{pid}/status") as f:
            return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])

    root = subprocess.Popen(["sleep", "60"])
    while open(f"/proc/{root.pid}/cmdline", "rb").read() != b"sleep\\0" + b"60\\0":
        pass  # exec'd: the tracker reads the root's own command line
    root_ticks = start_ticks(root.pid)
    tracker = ResourceTracker(pid=root.pid, interval=interval, discover_cloud=False)
    tracker.wait_for_samples(readings)
    root.kill()
    root.wait()
    while True:  # the next pid handed out is the root's, to a process started later
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(root.pid - 1))
        hog = subprocess.Popen([sys.executable, "-c", HOG, "hog-marker"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert hog.stdout.readline() == b"ready\\n"
        if hog.pid == root.pid and start_ticks(hog.pid) != root_ticks:
            break
        hog.kill()
        hog.wait()
    tracker.wait_for_samples(tracker.n_samples + readings)
    tracker.stop()
    stats = tracker.stats()
    print(json.dumps(dict(
        root=root.pid, hog=hog.pid, hog_rss=rss_kib(hog.pid), n=tracker.n_samples,
        memory_max=stats["process_memory"]["max"], hwm=tracker.memory_hwm,
        command=tracker.command, memory_ask=tracker.recommend_resources()["memory"])))
    hog.kill()
    hog.wait()
"""


@needs_root
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
@pytest.mark.parametrize(
    "interval, readings", [(3600.0, 0), (0.05, 3)], ids=["final-reading-only", "readings-between"]
)
def test_identity_reused_root_pid_is_not_the_run(backend, interval, readings):
    """The root exits and a 300 MiB process gets its pid (a pid namespace of its own): the
    run's memory, kernel peak, recommendation and command line stay the root's (a `sleep`
    of ~2 MiB). The old code reported 300 MiB, a 512 MiB recommendation and the hog's
    command line."""
    r = _python(
        REUSE,
        argv=(str(interval), str(readings)),
        prefix=("unshare", "--pid", "--fork", "--mount-proc"),
    )
    print(f"pid reuse ({backend.name}, {interval} s): {r}")
    assert r["hog"] == r["root"]  # the pid was reused
    assert r["hog_rss"] > 250 * 1024  # the ground truth: the hog holds ~300 MiB
    assert r["memory_max"] < r["hog_rss"] / 10
    assert r["hwm"] is None or r["hwm"] < r["hog_rss"] / 10
    assert r["memory_ask"] < 512
    assert "hog-marker" not in r["command"] and r["command"] == "sleep 60"


CGROUP_REUSE = """
    import json, os, subprocess, sys, tempfile
    from resource_tracker import _core

    MIB = 1 << 20
    NAMES = ("timestamp", "pid", "children", "utime", "stime", "cpu_usage", "memory")

    def start_ticks(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]

    def cgroup_files(d, pids, usage_s):  # a v2 cgroup holding pids, its anon memory 100 MiB
        for name, text in (
            ("cgroup.procs", "".join(f"{p}\\n" for p in pids)),
            ("cpu.stat", f"usage_usec {int(usage_s * 1e6)}\\nuser_usec 0\\nsystem_usec 0\\n"),
            ("memory.stat", f"anon {100 * MIB}\\nfile 0\\nfile_mapped 0\\nshmem 0\\n"),
            ("io.stat", "8:0 rbytes=0 wbytes=0 rios=0 wios=0\\n"),
        ):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)

    def row(sampler):
        rows = sampler.sample_now()
        return None if rows is None else dict(zip(NAMES, rows[0]))

    root = subprocess.Popen(["sleep", "60"])
    root_ticks = start_ticks(root.pid)
    d = tempfile.mkdtemp()
    cgroup_files(d, [root.pid], 1.0)
    sampler = _core.Sampler(root.pid, 1.0)
    sampler.use_cgroup(2, d, d, d)
    assert row(sampler) is None  # the baseline
    cgroup_files(d, [root.pid], 2.0)
    before = row(sampler)
    source_before = sampler.tree_source()["source"]
    root.kill()
    root.wait()
    while True:  # the root's pid goes to a process of this script (not of the tree)
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(root.pid - 1))
        other = subprocess.Popen(["sleep", "60"])
        if other.pid == root.pid and start_ticks(other.pid) != root_ticks:
            break
        other.kill()
        other.wait()
    subprocess.run(["true"])  # the machine moves on: the last pid handed out is another
    cgroup_files(d, [other.pid], 3.0)
    after = row(sampler)
    info = sampler.tree_source()
    other.kill()
    other.wait()
    print(json.dumps(dict(before=before, source_before=source_before, after=after,
                          source_after=info["source"], note=info["note"], pid=root.pid)))
"""


@needs_root
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_identity_reused_root_pid_in_the_trees_cgroup_is_a_stranger():
    """The tree's columns from its cgroup (a fake v2 cgroup of 100 MiB anon, real
    processes): the root exits and a process that is not of the tree gets its pid and its
    place in cgroup.procs. It is a stranger (the columns go back to the process walk,
    saying which process), not the root: the old code kept the cgroup's 100 MiB and CPU as
    the run's."""
    from resource_tracker import _core

    if not _core.HAVE_PROCFS:
        pytest.skip("the C sampler: this build of the core has no procfs readers")
    r = _python(CGROUP_REUSE, prefix=("unshare", "--pid", "--fork", "--mount-proc"))
    print(f"pid reuse in the tree's cgroup: {r}")
    assert r["source_before"] == "cgroup" and r["before"]["memory"] == 100 * 1024
    assert r["source_after"] == "procfs"
    assert f"process {r['pid']}, not of the tracked tree" in r["note"]
    assert r["after"]["children"] == 0


# -- no thread can be created ------------------------------------------------------------

NO_THREADS = """
    import _thread, json, resource, threading
    from resource_tracker import ResourceTracker

    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    assert tracker.wait_for_samples(3)
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))  # this process has more threads already
    try:
        _thread.start_new_thread(print, ())
        blocked = False
    except RuntimeError:
        blocked = True  # the ground truth: no thread can be created now
    errors = []
    for name, call in [("stop", tracker.stop), ("stats", tracker.stats),
                       ("report", tracker.report), ("stats again", tracker.stats)]:
        try:
            call()
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    stats = tracker.stats() if not errors else {}
    html = str(tracker.report()) if not errors else ""
    print(json.dumps(dict(
        blocked=blocked, errors=errors, state=tracker.status,
        quality=stats.get("data_quality"), cgroup="cgroup" in stats,
        note_in_report="read in the caller of stop()" in html,
        threads=threading.active_count())))
"""


def _nobody_keeping_root_files():
    """preexec_fn: the real user becomes nobody (RLIMIT_NPROC counts and binds the real
    user's processes) while the effective user stays root (the interpreter's files under
    /root stay readable), without CAP_SYS_RESOURCE and CAP_SYS_ADMIN (which lift the limit)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (21, 24):  # CAP_SYS_ADMIN, CAP_SYS_RESOURCE: out of the bounding set
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    os.setresuid(65534, 0, 0)  # the exec then grants only the bounding set


@needs_root
def test_identity_stop_without_threads_degrades(backend):
    """RLIMIT_NPROC reached (no thread can be created): stop() returns, stats() and
    report() work, the cgroup's end figures are read in the caller and the data-quality
    record (and the report) say so. The old code: stop() raised RuntimeError "can't start
    new thread", report() too."""
    r = _python(NO_THREADS, preexec_fn=_nobody_keeping_root_files)
    print(f"no threads ({backend.name}): {r}")
    assert r["blocked"]
    assert r["errors"] == []
    assert r["state"] == "finished"
    assert "read in the caller" in r["quality"]["read_in_caller"]
    assert r["note_in_report"]


# -- leaks -------------------------------------------------------------------------------

INTERRUPTED_START = """
    import gc, json, os, sys
    from resource_tracker import ResourceTracker, tracker as module

    LINE = next(i for i, text in enumerate(open(module.__file__), 1)
                if text.strip() == "self._sampler.start()")

    def in_start(frame, event, arg):  # a KeyboardInterrupt lands at LINE of start()
        if frame.f_code.co_filename == module.__file__ and frame.f_code.co_name == "start":
            return at_line
        return None

    def at_line(frame, event, arg):
        if event == "line" and frame.f_lineno == LINE:
            raise KeyboardInterrupt
        return at_line

    fds = lambda: len(os.listdir("/proc/self/fd"))
    warm = ResourceTracker(interval=0.05, discover_cloud=False)
    warm.stop()
    warm._wait_cgroup_start()  # its end figures are read: nothing of it pending
    del warm
    gc.collect()
    base = fds()
    interrupted = 0
    for _ in range(20):
        sys.settrace(in_start)
        try:
            ResourceTracker(interval=0.05, discover_cloud=False)
        except KeyboardInterrupt:
            interrupted += 1
        finally:
            sys.settrace(None)
    unreachable = gc.collect()
    left = sum(isinstance(o, ResourceTracker) for o in gc.get_objects())
    print(json.dumps(dict(base=base, after=fds(), interrupted=interrupted, left=left,
                          unreachable=unreachable)))
"""


def test_identity_interrupt_in_start_leaves_nothing():
    """20 KeyboardInterrupts land in start() between handing the start figures' job to the
    C sampler and starting its thread: no tracker is left (the job holds it weakly), the
    descriptors are back to where they were. The old code: 20 trackers kept alive by a
    cycle through the C sampler (hidden from the collector), 9 descriptors each."""
    from resource_tracker import _core

    if not _core.HAVE_PROCFS:
        pytest.skip("the C sampler: this build of the core has no procfs readers")
    r = _python(INTERRUPTED_START)
    print(f"interrupted start(): {r}")
    assert r["interrupted"] == 20
    assert r["left"] == 0
    assert r["after"] == r["base"]


# -- the Metaflow card of a damaged artifact ---------------------------------------------


def test_identity_card_of_a_damaged_artifact_says_what_is_wrong():
    """The card of an artifact whose ``tracker`` is a string (or a list, or whose snapshot
    or tables are damaged, or which is no dict) is a page naming the problem, never an
    exception. The old code: AttributeError ('str' object has no attribute 'get')."""
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        build_artifact,
    )
    from resource_tracker import ResourceTracker

    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(2)
    tracker.stop()
    good = build_artifact(tracker, None, failed=False, label="Flow/1/train/2")
    assert "cannot be shown" not in card.render_artifact(good)  # the real artifact renders
    damaged = {
        "tracker is a str": (dict(good, tracker="<b>snapshot</b>"), "&#x27;tracker&#x27; is a str"),
        "tracker is a list": (dict(good, tracker=[1, 2]), "&#x27;tracker&#x27; is a list"),
        "snapshot damaged": (
            dict(good, tracker=dict(good["tracker"], interval="fast")),
            "ValueError",
        ),
        "not a dict": ("resource data", "the artifact is a str"),
    }
    for name, (data, expected) in damaged.items():
        page = card.render_artifact(data, label="Flow/1/train/2")
        assert "cannot be shown" in page and expected in page, name
        assert "<b>snapshot</b>" not in page  # escaped


# -- the descriptor margin ---------------------------------------------------------------

SMALL_NOFILE = """
    import json, os, resource, sys
    from resource_tracker import _core

    limit = int(sys.argv[1])
    fds = lambda: len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    base = fds()
    sampler = _core.Sampler(os.getpid(), 0.02)
    sampler.start()
    assert sampler.wait(5, 30.0)
    opened = []
    try:
        while True:
            opened.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    free = len(opened)
    assert sampler.wait(sampler.n_samples + 3, 30.0)  # still sampling meanwhile
    for fd in opened:
        os.close(fd)
    sampler.stop()
    print(json.dumps(dict(base=base, free=free, after=fds())))
"""

PERMANENT_FDS = 2  # the procfs root (tree and machine): see csrc/fd_budget.h


@pytest.mark.parametrize("limit", [16, 24])
def test_identity_small_nofile_leaves_the_application_its_descriptors(limit):
    """At RLIMIT_NOFILE 16 the sampler keeps no file open beyond its permanent two (the
    margin max(16, limit / 4) counts its own procfs descriptors too): the application can
    open every other descriptor; at 24, the margin (16). The old code kept the machine's and
    the tree's procfs files open below any limit: 3 files left to the application at 16."""
    from resource_tracker import _core

    if not _core.HAVE_PROCFS:
        pytest.skip("the C sampler: this build of the core has no procfs readers")
    r = _python(SMALL_NOFILE, argv=(str(limit),))
    print(f"RLIMIT_NOFILE {limit}: {r}")
    margin = max(16, limit // 4)  # what every kept descriptor leaves free above it
    assert r["free"] >= min(margin, limit - r["base"] - PERMANENT_FDS)
    assert r["after"] == r["base"]
