"""A code-profiled ``ResourceTracker`` around work done by its process's workers
(docs/code_profile.md, "Workers of a tracker"): multiprocessing ``Pool`` with fork, spawn and
forkserver, ``concurrent.futures.ProcessPoolExecutor`` and a bare ``os.fork()`` ending with
``os._exit`` (as Metaflow's ``parallel_map`` does). One real run in a fresh interpreter; each
worker function measures its own ``thread_time`` (the truth of the same run).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from resource_tracker import ResourceTracker, _core

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")

JOB = textwrap.dedent(
    """
    import json, multiprocessing, os, sys, time
    from concurrent.futures import ProcessPoolExecutor
    from resource_tracker import ResourceTracker

    def _burn(seconds):
        start = time.thread_time()
        while time.thread_time() < start + seconds:
            pass
        return time.thread_time() - start

    def fork_pool_work(seconds):
        return _burn(seconds)

    def spawn_pool_work(seconds):
        return _burn(seconds)

    def terminated_pool_work(seconds):
        return _burn(seconds)

    def forkserver_pool_work(seconds):
        return _burn(seconds)

    def executor_work(seconds):
        return _burn(seconds)

    def bare_fork_work(seconds, out):
        os.write(out, json.dumps(_burn(seconds)).encode())

    def bare_fork(seconds):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            bare_fork_work(seconds, write)
            os._exit(3)
        os.close(write)
        spent = json.loads(os.read(read, 100))
        return spent, os.waitpid(pid, 0)[1]

    if __name__ == "__main__":
        truth = {}
        environ = {"before": dict(os.environ)}
        with ResourceTracker(interval=0.05, discover_cloud=False) as tracker:
            environ["during"] = dict(os.environ)
            with multiprocessing.get_context("fork").Pool(2) as pool:
                truth["fork_pool_work"] = sum(pool.map(fork_pool_work, [0.3] * 2, chunksize=1))
                pool.close()
                pool.join()
            with multiprocessing.get_context("spawn").Pool(2) as pool:
                truth["spawn_pool_work"] = sum(pool.map(spawn_pool_work, [0.3] * 2, chunksize=1))
                pool.close()
                pool.join()
            with multiprocessing.get_context("fork").Pool(2) as pool:  # ends by terminate()
                truth["terminated_pool_work"] = sum(
                    pool.map(terminated_pool_work, [0.3] * 2, chunksize=1)
                )
            with multiprocessing.get_context("forkserver").Pool(2) as pool:
                truth["forkserver_pool_work"] = sum(
                    pool.map(forkserver_pool_work, [0.3] * 2, chunksize=1)
                )
                pool.close()
                pool.join()
            with ProcessPoolExecutor(2) as executor:
                truth["executor_work"] = sum(executor.map(executor_work, [0.3] * 2))
            truth["bare_fork_work"], status = bare_fork(0.3)
        environ["after"] = dict(os.environ)
        with open(sys.argv[1], "w") as f:
            json.dump({"truth": truth, "environ": environ, "fork_status": status}, f)
        with open(sys.argv[2], "w") as f:
            f.write(tracker.dumps())
    """
)


def _run(root, job_text, *args):
    job = root / "job.py"
    job.write_text(job_text)
    tmp = root / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH="/nonexistent-user-path")
    env.pop("RESOURCE_TRACKER_CODE_AGENT_DIR", None)
    env.pop("RESOURCE_TRACKER_CODE_PROFILE", None)
    done = subprocess.run(
        [sys.executable, str(job), *args], capture_output=True, text=True, timeout=300, env=env,
        cwd=str(root),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return str(job), tmp, done


@pytest.fixture(scope="module")
def workers_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers")
    facts, snapshot = root / "facts.json", root / "run.json"
    job, tmp, done = _run(root, JOB, str(facts), str(snapshot))
    tracker = ResourceTracker.loads(snapshot.read_text())
    return tracker, json.loads(facts.read_text()), job, tmp, done


def _row(tracker, function, file):
    for row in tracker.code_profile("function", user_code=True).rows():
        if row["function"] == function and row["file"] == file:
            return row
    raise AssertionError(f"{function} not in the profile")


KINDS = (
    "fork_pool_work", "terminated_pool_work", "spawn_pool_work", "forkserver_pool_work",
    "executor_work",
)  # fmt: skip


@pytest.mark.parametrize("function", [*KINDS, "bare_fork_work"])
def test_each_kind_of_worker_is_in_the_tracker_profile_with_its_cpu(workers_run, function):
    tracker, facts, job, _, _ = workers_run
    truth = facts["truth"][function]
    row = _row(tracker, function, job)
    assert abs(row["cpu_seconds"] - truth) <= 0.1 + 0.2 * truth, (row, truth)


def test_the_processes_each_function_ran_in_are_counted(workers_run):
    tracker, _, job, _, _ = workers_run
    assert _row(tracker, "bare_fork_work", job)["processes"] == 1
    for function in KINDS:
        assert 1 <= _row(tracker, function, job)["processes"] <= 2
    assert len(tracker._code_record()["processes"]) >= 5


def test_the_workers_cpu_is_counted_once(workers_run):
    """The tracked process waits while its workers burn: their CPU is charged by their own
    records, not a second time to the waiting line of the tracked process."""
    tracker, facts, job, _, _ = workers_run
    module = _row(tracker, "<module>", job)
    assert module["cpu_share"] <= 1.05
    shares = sum(_row(tracker, f, job)["cpu_share"] for f in facts["truth"])
    assert shares <= 1.05


def test_the_report_names_the_workers_code_and_its_processes(workers_run):
    tracker, _, _, _, _ = workers_run
    html = str(tracker.report())
    most = html.split("Most CPU in")[1].split("</li>")[0]
    assert "<code>_burn()</code>" in most.split(",")[0], most
    count = int(re.search(r"of the run's CPU, in (\d+) processes", most).group(1))
    assert 6 <= count <= 11, most  # the workers that burnt: 2 + 2 + 2 + 2 + 2 + 1 at most
    table = html.split("Top functions by CPU")[1].split("</table>")[0]
    assert f"in {count} processes" in table


def test_the_job_runs_as_without_the_tracker(workers_run):
    """A forked child's exit status is its own; the job's environment is the same while the
    tracker runs (no variable set, PYTHONPATH untouched); the tracker's directory is gone."""
    _, facts, _, tmp, done = workers_run
    assert os.WEXITSTATUS(facts["fork_status"]) == 3
    environ = facts["environ"]
    assert environ["before"] == environ["during"] == environ["after"]
    assert environ["during"]["PYTHONPATH"] == "/nonexistent-user-path"
    assert os.listdir(tmp) == []
    assert done.stderr == ""


NO_WORKERS = textwrap.dedent(
    """
    import os, sys, time
    from resource_tracker import ResourceTracker

    with ResourceTracker(interval=0.05, discover_cloud=False) as tracker:
        end = time.process_time() + 0.2
        while time.process_time() < end:
            pass
    loaded = [m for m in ("json", "resource_tracker._agent_records") if m in sys.modules]
    print(loaded, os.environ.get("RESOURCE_TRACKER_CODE_AGENT_DIR"))
    """
)


def test_a_tracker_without_workers_reads_nothing_and_leaves_nothing(tmp_path):
    _, tmp, done = _run(tmp_path, NO_WORKERS)
    assert done.stdout.strip() == "[] None"
    assert os.listdir(tmp) == []


TWO_TRACKERS = textwrap.dedent(
    """
    import json, multiprocessing, sys, time
    from resource_tracker import ResourceTracker

    def _burn(seconds):
        start = time.thread_time()
        while time.thread_time() < start + seconds:
            pass

    def first_work(seconds):
        _burn(seconds)

    def second_work(seconds):
        _burn(seconds)

    if __name__ == "__main__":
        found = []
        for work in (first_work, second_work):
            with ResourceTracker(interval=0.05, discover_cloud=False) as tracker:
                with multiprocessing.get_context("fork").Pool(2) as pool:
                    pool.map(work, [0.2, 0.2], chunksize=1)
                    pool.close()
                    pool.join()
            found.append(sorted(
                r["function"] for r in tracker.code_profile(user_code=True).rows()
                if r["function"].endswith("_work")
            ))
        print(json.dumps(found))
    """
)


def test_each_tracker_of_a_process_has_its_own_workers(tmp_path):
    """Two trackers one after the other in one process: each profile has its own workers'
    code only, and the directory they shared is gone when the process has exited."""
    _, tmp, done = _run(tmp_path, TWO_TRACKERS)
    assert json.loads(done.stdout) == [["first_work"], ["second_work"]]
    assert os.listdir(tmp) == []


LATE_IMPORT = textwrap.dedent(
    """
    import sys, time
    from resource_tracker import ResourceTracker

    def late_spawn_work(seconds):
        start = time.thread_time()
        while time.thread_time() < start + seconds:
            pass

    if __name__ == "__main__":
        assert "multiprocessing" not in sys.modules
        with ResourceTracker(interval=0.05, discover_cloud=False) as tracker:
            import multiprocessing  # after the tracker started

            with multiprocessing.get_context("spawn").Pool(2) as pool:
                pool.map(late_spawn_work, [0.3, 0.3], chunksize=1)
                pool.close()
                pool.join()
        print(sorted(
            r["function"] for r in tracker.code_profile(user_code=True).rows()
            if r["function"].endswith("_work")
        ), [f for f in sys.meta_path if getattr(f, "__module__", "").endswith("_worker_agent")])
    """
)


def test_spawn_workers_of_multiprocessing_imported_after_the_start_are_profiled(tmp_path):
    """multiprocessing loaded only after the tracker started: its spawn workers are profiled
    all the same, and the tracker's import watcher is gone after stop()."""
    _, tmp, done = _run(tmp_path, LATE_IMPORT)
    assert done.stdout.strip() == "['late_spawn_work'] []", done.stdout
    assert os.listdir(tmp) == []
