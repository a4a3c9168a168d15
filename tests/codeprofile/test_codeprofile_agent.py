"""``resource-tracker run --code``: the agent in the command's Python processes (docs/
code_profile.md). One real CLI run per module: a parent that burns, then a fork Pool and a
spawn Pool of two workers each that burn (each measuring its own thread_time: the truth of
the same run); and children that cannot load the agent run as before.
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
    import json, multiprocessing, sys, time

    def _burn(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def worker_burn(seconds):
        start = time.thread_time()
        _burn(seconds)
        return time.thread_time() - start

    def parent_work(seconds):
        start = time.thread_time()
        _burn(seconds)
        return time.thread_time() - start

    if __name__ == "__main__":
        truth = {"parent_work": parent_work(0.4), "worker_burn": 0.0}
        for start_method in ("fork", "spawn"):
            with multiprocessing.get_context(start_method).Pool(2) as pool:
                truth["worker_burn"] += sum(pool.map(worker_burn, [0.2, 0.2], chunksize=1))
        with open(sys.argv[1], "w") as f:
            json.dump(truth, f)
    """
)


def _cli(args, **kwargs):
    """The CLI in an isolated interpreter (-I: the command's PYTHONPATH is not its own)."""
    return subprocess.run(
        [sys.executable, "-I", "-m", "resource_tracker", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("agent")
    job = root / "job.py"
    job.write_text(JOB)
    truth_file = root / "truth.json"
    done = _cli(
        [
            "run",
            "--code",
            "-q",
            "--format",
            "json",
            "-o",
            str(root / "out"),
            "--interval",
            "0.05",
            "--",
            sys.executable,
            str(job),
            str(truth_file),
        ]
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tracker = ResourceTracker.loads((root / "out" / "resource-tracker.json").read_text())
    return tracker, json.loads(truth_file.read_text()), str(job)


def _row(tracker, function, file):
    for row in tracker.code_profile("function", user_code=True).rows():
        if row["function"] == function and row["file"] == file:
            return row
    raise AssertionError(f"{function} not in the profile")


def test_the_command_and_its_workers_are_profiled_and_merged_by_function(agent_run):
    tracker, truth, job = agent_run
    processes = tracker._code_record()["processes"]
    assert len(processes) >= 5  # the command and its four workers
    workers = _row(tracker, "worker_burn", job)
    assert (
        abs(workers["cpu_seconds"] - truth["worker_burn"]) <= 0.1 + 0.15 * truth["worker_burn"]
    ), (workers, truth)
    parent = _row(tracker, "parent_work", job)
    assert abs(parent["cpu_seconds"] - truth["parent_work"]) <= 0.1 + 0.15 * truth["parent_work"]


def test_the_workers_cpu_is_counted_once(agent_run):
    """The command's main thread waits in pool.map while its workers burn: their CPU is
    charged by the workers' own records, not a second time to the waiting line."""
    tracker, truth, job = agent_run
    module = _row(tracker, "<module>", job)
    assert module["cpu_share"] <= 1.05
    assert module["cpu_seconds"] <= sum(truth.values()) * 1.15 + 0.2


def test_the_agent_leaves_no_directory_behind(agent_run, tmp_path):
    done = _cli(
        [
            "run",
            "--code",
            "-q",
            "--format",
            "none",
            "--",
            sys.executable,
            "-c",
            "import os; print(os.environ['RESOURCE_TRACKER_CODE_AGENT_DIR'])",
        ]
    )
    assert done.returncode == 0, done.stderr
    assert not os.path.exists(done.stdout.strip())


@pytest.mark.parametrize("flags", [["-I"], ["-S"], []])
def test_a_child_that_cannot_load_the_agent_runs_as_before(tmp_path, flags):
    """-I (no PYTHONPATH), -S (no site: no sitecustomize), and an interpreter that cannot
    import resource_tracker (here: a copy of the package that fails to import)."""
    env = dict(os.environ)
    broken = tmp_path / "broken"
    (broken / "resource_tracker").mkdir(parents=True)
    (broken / "resource_tracker" / "__init__.py").write_text("raise ImportError('old build')\n")
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins; builtins.OWN_SITE = 1\n")
    if not flags:  # the command's own PYTHONPATH: a broken package and its own sitecustomize
        env["PYTHONPATH"] = os.pathsep.join([str(broken), str(own)])
    code = "import builtins, sys; print('ran', getattr(builtins, 'OWN_SITE', 0)); sys.exit(7)"
    done = _cli(
        ["run", "--code", "-q", "--format", "none", "--", sys.executable, *flags, "-c", code],
        env=env,
        cwd=str(tmp_path),
    )
    assert done.returncode == 7, done.stderr[-2000:]
    assert done.stdout.split()[0] == "ran"
    if not flags:
        assert done.stdout.split()[1] == "1"  # its own sitecustomize still ran


OTHER_PYTHONS = [p for p in ("/usr/bin/python3", "/usr/bin/python2") if os.path.exists(p)]


@pytest.mark.skipif(not OTHER_PYTHONS, reason="needs another interpreter")
def test_another_interpreter_without_the_package_runs_as_before(tmp_path):
    other = OTHER_PYTHONS[0]  # the system's: this package is not installed there
    done = _cli(
        ["run", "--code", "-q", "--format", "none", "--", other, "-c", "print('ran')"],
        cwd=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ran"


# -- the code at the tree's memory peak, from the agents' records ---------------------------

#: ``load_dataset()`` runs in a child Python process (started by the command, which waits
#: for it in subprocess.run: two agent processes sampled at the same moments, the one
#: holding the memory must be named); it allocates ~300 MiB, measures its own RSS while
#: holding it (the truth of the same run), then exits; the command then burns in train().
MEMORY_JOB = textwrap.dedent(
    """
    import json, os, subprocess, sys, time

    def load_dataset(truth_file):
        start = time.time()
        data = bytearray(300 << 20)
        for i in range(0, len(data), 4096):
            data[i] = 1
        with open("/proc/self/statm") as f:
            rss_kib = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024
        time.sleep(0.4)  # holds it for a few intervals
        with open(truth_file, "w") as f:
            json.dump({"rss_kib": rss_kib, "start": start, "end": time.time()}, f)
        return len(data)

    def train(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    if __name__ == "__main__":
        if sys.argv[1] == "load":
            load_dataset(sys.argv[2])
        else:
            subprocess.run([sys.executable, __file__, "load", sys.argv[2]], check=True)
            train(0.4)
    """
)


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("agentmem")
    job = root / "job.py"
    job.write_text(MEMORY_JOB)
    truth_file = root / "truth.json"
    out = root / "out"
    args = ["run", "--code", "--format", "json", "-o", str(out), "--interval", "0.05", "--"]
    done = _cli([*args, sys.executable, str(job), "main", str(truth_file)])
    assert done.returncode == 0, done.stderr[-3000:]
    text = (out / "resource-tracker.json").read_text()
    truth = json.loads(truth_file.read_text())
    return ResourceTracker.loads(text), truth, str(job), done.stdout + done.stderr, text


def test_the_code_at_the_memory_peak_is_named_from_the_agents(memory_run):
    tracker, truth, job, _, _ = memory_run
    peak = tracker.code_peak()
    assert peak is not None
    assert (peak["function"], peak["file"]) == ("load_dataset", job), peak
    assert peak["memory_peak"] >= 0.9 * truth["rss_kib"], (peak, truth)
    # the row's time and its readings are a walk apart (longer on a loaded machine)
    assert truth["start"] - 0.5 <= peak["timestamp"] <= truth["end"] + 0.1, (peak, truth)
    assert peak["stack"][-1][0] == "load_dataset"


def test_the_cli_summary_says_where_the_peak_was(memory_run):
    _, _, _, output, _ = memory_run
    lines = [line.split() for line in output.splitlines()]
    code = [" ".join(words[1:]) for words in lines if words[:1] == ["code"]]
    assert any(text.startswith("peak ") and "load_dataset()" in text for text in code), output


def test_the_memory_table_lists_the_loading_function(memory_run):
    tracker, truth, _, _, _ = memory_run
    summary = tracker.summary()
    memory = {row["function"]: row for row in summary.code["memory"]}
    assert "load_dataset" in memory, summary.code
    assert summary.code["memory"][0]["function"] == "load_dataset"
    assert memory["load_dataset"]["memory_peak"] >= 0.9 * truth["rss_kib"]
    timeline = tracker.code_timeline()
    assert "load_dataset" in list(timeline["function"])


@pytest.mark.parametrize(
    "damage, name",
    [
        (lambda c: c["memory"].pop(), "processes[0].columns.memory"),
        (lambda c: c.pop("timestamp"), "processes[0].columns.timestamp"),
        (lambda c: c.update(memory="a lot"), "processes[0].columns"),
    ],
)
def test_an_agent_record_without_its_memory_is_refused_by_name(memory_run, damage, name):
    snapshot = json.loads(memory_run[4])
    damage(snapshot["code_profile"]["processes"][0]["columns"])
    with pytest.raises(ValueError, match=re.escape(f"code_profile.{name} must be")):
        ResourceTracker.loads(json.dumps(snapshot))


HOSTILE = textwrap.dedent(
    """
    import json, os, sys, time
    folder = os.environ["RESOURCE_TRACKER_CODE_AGENT_DIR"]
    def put(name, text):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    os.mkfifo(os.path.join(folder, "fifo.json"))
    os.symlink("/dev/zero", os.path.join(folder, "zero.json"))
    put("deep.json", "[" * 200000)
    put("nan.json", '{"version": 1, "frames": [], "stacks": [], "threads": [], "samples": [],'
        ' "start_time": NaN}')
    now = time.time()
    put("4242.json", json.dumps({  # a forged stack chain 300,000 deep
        "version": 1, "status": "recorded", "frames": [["forged", "forged.py", 1, 1]],
        "stacks": [[i - 1, 0] for i in range(300000)], "threads": [[1, 0]],
        "samples": [[0, 0, 299999, 1000]], "pid": 4242, "start_time": now,
        "columns": {"timestamp": [now], "memory": [1.0]}}))
    def spin():
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
    spin()
    """
)


def test_run_code_skips_what_is_no_agent_record_with_one_line_each(tmp_path):
    """The agents' directory is written by the command: a FIFO named *.json (the old reader
    blocked for ever in open()), a symlink to /dev/zero (it read without end), JSON 200,000
    deep, NaN, a forged stack chain 300,000 deep: each skipped with one line saying why, the
    command's own record kept, its exit status 0; the script's name holds U+202E, which no
    line shows. The deadline makes a regression fail instead of hanging the suite."""
    job = tmp_path / "job\u202egpj.py"
    job.write_text(HOSTILE)
    out = tmp_path / "out"
    args = ["run", "--code", "-f", "json", "-o", str(out), "--interval", "0.05", "--"]
    done = _cli([*args, sys.executable, str(job)])
    assert done.returncode == 0, done.stderr[-3000:]
    skipped = [line for line in done.stderr.splitlines() if "skipped the record" in line]
    assert skipped == [
        "resource-tracker run: --code: skipped the record 4242.json: not a resource-tracker "
        "snapshot: code_profile.stacks[129] must be a chain of at most 129 frames",
        "resource-tracker run: --code: skipped the record deep.json: JSON nested too deeply",
        "resource-tracker run: --code: skipped the record fifo.json: not a regular file (a FIFO)",
        "resource-tracker run: --code: skipped the record nan.json: NaN is not a JSON number",
        "resource-tracker run: --code: skipped the record zero.json: not a regular file (a "
        "character device)",
    ], done.stderr
    assert "Traceback" not in done.stderr and "\u202e" not in done.stderr
    assert "in spin() at jobgpj.py:" in done.stderr, done.stderr
    tracker = ResourceTracker.loads((out / "resource-tracker.json").read_text())
    pids = [p["pid"] for p in tracker._code_record()["processes"]]
    assert len(pids) == 1 and pids[0] != 4242, pids  # the command's own record alone
    assert "spin" in {row["function"] for row in tracker.code_profile().rows()}


#: a Pool worker that burns, then blocks in a call that no signal ends (a normal mutex locked
#: twice: the C handler runs, the lock waits on): its Python code never runs again, as in a
#: worker signalled just before it blocks in its idle wait for a task
BLOCKED = textwrap.dedent(
    """
    import ctypes, json, multiprocessing, os, sys, time

    _LIBC = ctypes.CDLL(None)
    _MUTEX = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER

    def blocked_work(seconds, marker):
        start = time.thread_time()
        while time.thread_time() < start + seconds:
            pass
        open(marker, "w").close()
        _LIBC.pthread_mutex_lock(_MUTEX)
        _LIBC.pthread_mutex_lock(_MUTEX)  # never returns

    def _state(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    if __name__ == "__main__":
        marker = sys.argv[1] + ".blocked"
        pool = multiprocessing.get_context("fork").Pool(1)
        pool.apply_async(blocked_work, (0.3, marker))
        worker = pool._pool[0].pid
        while not os.path.exists(marker) or _state(worker) != "S":
            time.sleep(0.01)  # a condition: the worker blocked in the mutex
        started = time.monotonic()
        pool.terminate()  # SIGTERM to the worker, then waits for it
        with open(sys.argv[1], "w") as f:
            json.dump({"terminate_s": time.monotonic() - started,
                       "exitcode": pool._pool[0].exitcode if pool._pool else None}, f)
    """
)


def test_a_worker_blocked_in_c_when_terminated_writes_its_record_and_dies(tmp_path):
    """Pool.terminate() of a worker whose Python code cannot run (blocked in C): SIGTERM is
    answered from the agent's own thread (a Python handler would wait for ever, and so would
    terminate()): the worker writes its record, then dies of the signal."""
    job, facts = tmp_path / "job.py", tmp_path / "facts.json"
    job.write_text(BLOCKED)
    args = ["run", "--code", "-q", "--format", "json", "-o", str(tmp_path / "out")]
    cli = subprocess.Popen(
        [sys.executable, "-I", "-m", "resource_tracker", *args, "--interval", "0.05", "--",
         sys.executable, str(job), str(facts)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _, stderr = cli.communicate(timeout=90)
    except subprocess.TimeoutExpired as hang:
        os.killpg(cli.pid, 9)
        cli.communicate()
        raise AssertionError("Pool.terminate() waited for the blocked worker for ever") from hang
    assert cli.returncode == 0, stderr[-3000:]
    found = json.loads(facts.read_text())
    assert found["terminate_s"] < 60 and found["exitcode"] == -15, found  # died of SIGTERM
    tracker = ResourceTracker.loads((tmp_path / "out" / "resource-tracker.json").read_text())
    assert _row(tracker, "blocked_work", str(job))["samples"] > 0
