"""A tracked process no reading can see (issue 25, item 6): rows of zeros are a data-quality
error, stated in stats()/the summary/the report/the snapshot, and no resources are
recommended from them.

Real: a workload of 150 MiB (its own RSS is the ground truth of what was missed) tracked by
a real tracker in another process that cannot see it: ``/proc`` remounted ``hidepid=2`` in a
mount namespace with the tracker running as ``nobody`` (root only: else skipped); an empty
``/proc`` (a tmpfs over it: the psutil fallback is chosen); RLIMIT_NOFILE 6 at start (the fd
budget reads by path from 7 on). The tracker's snapshot is loaded here and read as the CLI,
the report and a Metaflow history do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from resource_tracker import ResourceTracker
from resource_tracker._run_data import has_measurements
from resource_tracker.tuning import tune_resources

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_TRACK = textwrap.dedent(
    """
    import os, resource, sys
    sys.path.insert(0, {root!r})
    from resource_tracker import ResourceTracker
    if {uid!r} is not None:  # everything imported first: nobody may not read the checkout
        import resource_tracker._stored, resource_tracker._cgroup_read  # dumps(), the worker's
        import resource_tracker.cgroup_usage, resource_tracker._cgroup_v1
        import resource_tracker._tree_cgroup, resource_tracker.server_info
        os.setgroups([]); os.setgid({uid!r}); os.setuid({uid!r})
    nofile = {nofile}
    if nofile:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    tracker = ResourceTracker(pid={pid}, interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(6, timeout=60)
    tracker.stop()
    text = tracker.dumps()
    with open({out!r}, "w") as f:
        f.write(text)
    print(tracker.method)
    """
)


@pytest.fixture
def shared_dir():
    """A directory the tracker can write as nobody (pytest's tmp_path is root's only)."""
    path = tempfile.mkdtemp(prefix="rt-invisible-")
    os.chmod(path, 0o777)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def workload():
    """A process holding 150 MiB until the test ends; its own VmRSS (KiB) as ground truth."""
    code = (
        "b = bytearray(150 << 20); b[::4096] = b'x' * len(b[::4096]); "
        "import sys; print('ok', flush=True); sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout.readline().strip() == b"ok"
    with open(f"/proc/{proc.pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    yield proc.pid, rss
    proc.stdin.close()
    proc.wait(timeout=30)


def _namespaces_or_skip():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (a /proc mount in a mount namespace)")
    probe = subprocess.run(["unshare", "--mount", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare --mount is not permitted here: " + probe.stderr.decode().strip())


def _track(directory, pid, uid=None, setup="", nofile=0):
    """The tracker's snapshot (loaded) and backend, tracking pid in a process of its own:
    ``setup`` (shell) runs first in a mount namespace when given; ``uid``: the tracker
    drops to that user once the package is imported (a checkout in a private directory, as
    CI's clone is, is root's only)."""
    os.chmod(directory, 0o777)  # the tracker may run as nobody
    out, script = directory / "snapshot.json", directory / "track.py"
    script.write_text(_TRACK.format(root=ROOT, pid=pid, out=str(out), nofile=nofile, uid=uid))
    os.chmod(script, 0o644)
    command = " ".join([sys.executable, str(script)])
    argv = ["unshare", "--mount", "--fork", "--kill-child", "sh", "-c", f"{setup} {command}"]
    done = subprocess.run(
        argv if setup else ["sh", "-c", command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return ResourceTracker.loads(out.read_text()), done.stdout.split()[-1]


def _assert_no_data_error(tracker, pid, rss_kib):
    """What the run says: an error everywhere, no recommendation, no crash."""
    stats = tracker.stats()
    assert stats["process_memory"]["max"] < rss_kib / 10  # really nothing was seen
    quality = stats["data_quality"]
    assert quality["process_visible"] is False
    assert f"pid {pid}" in quality["errors"][0] and "never visible" in quality["errors"][0]
    assert not has_measurements(stats)
    with pytest.raises(ValueError, match="never visible"):
        tracker.recommend_resources()
    summary = tracker.summary(lookup_server=False)
    assert summary.resources is None
    assert any("never visible" in w for w in summary.warnings_about("data"))
    assert summary.data_quality["process_visible"] is False
    assert "never visible" in str(tracker.report())
    # a later run with this one in its history: recommended from what was measured only
    assert tune_resources([stats, stats, stats]).resources == {}


def test_hidepid_process_of_another_user_is_a_data_quality_error(shared_dir, workload):
    """/proc mounted hidepid=2, the tracker running as nobody, the workload root's."""
    _namespaces_or_skip()
    pid, rss = workload
    tracker, _ = _track(
        shared_dir,
        pid,
        uid=65534,
        setup="mount -t proc -o hidepid=2 proc /proc &&",
    )
    _assert_no_data_error(tracker, pid, rss)


def test_empty_proc_psutil_fallback_is_a_data_quality_error(shared_dir, workload):
    """A tmpfs over /proc: the psutil backend is chosen, and sees nothing either."""
    _namespaces_or_skip()
    pid, rss = workload
    tracker, method = _track(shared_dir, pid, setup="mount -t tmpfs tmpfs /proc &&")
    assert method == "psutil"
    _assert_no_data_error(tracker, pid, rss)


def test_too_few_descriptors_at_start_is_a_data_quality_error(shared_dir, workload):
    """RLIMIT_NOFILE 5 at start (stdio, the procfs root of the tree and of the machine: none
    left): every procfs read fails, and the count is reported."""
    pid, rss = workload
    tracker, _ = _track(shared_dir, pid, nofile=5)
    quality = tracker.stats()["data_quality"]
    assert quality["read_errors"] > 0
    assert f"{quality['read_errors']} procfs reads failed" in quality["errors"][0]
    _assert_no_data_error(tracker, pid, rss)


def test_a_visible_run_is_recommended_without_the_invisible_ones(shared_dir, workload):
    """The same workload seen: its memory is measured, no error; an invisible earlier run in
    the history changes nothing in the recommendation, and is no run a tuning counts."""
    pid, rss = workload
    seen, _ = _track(shared_dir, pid)
    stats = seen.stats()
    assert "process_visible" not in stats["data_quality"]
    assert stats["process_memory"]["max"] >= 0.8 * rss
    (shared_dir / "blind").mkdir()
    blind, _ = _track(shared_dir / "blind", pid, nofile=5)
    alone = seen.recommend_resources()
    assert alone["memory"] >= rss / 1024
    assert seen.recommend_resources(historical_stats=[blind.stats()]) == alone
    assert blind.recommend_resources(historical_stats=[stats]) == alone
    tuning = tune_resources([blind.stats(), blind.stats(), stats])
    assert tuning.runs == 1, tuning  # the invisible runs are no runs
    assert tuning.resources == tune_resources([stats]).resources


@pytest.mark.parametrize("method", ["procfs", "psutil"])
def test_a_command_gone_before_the_first_reading_is_no_error(shared_dir, method):
    """`resource-tracker run -- true`: the command ends before the first reading (a zombie,
    then reaped): it was not hidden, so no data-quality error, and a recommendation."""
    env = dict(os.environ, RESOURCE_TRACKER_METHOD=method)
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", "-o", str(shared_dir), "--", "true"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "never visible" not in done.stderr
    tracker = ResourceTracker.loads((shared_dir / "resource-tracker.json").read_text())
    assert "process_visible" not in tracker.stats()["data_quality"]
    assert tracker.recommend_resources()["memory"] > 0
