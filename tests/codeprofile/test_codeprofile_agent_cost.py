"""``resource-tracker run --code`` costs each of the command's Python processes little, runs
the command's own ``sitecustomize`` as Python would, and keeps its own work out of the
profile (issue 41, point 4). Real CLI runs; the truth is the same command run without the
agent (its children's CPU from their rusage, its output), in the same test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from test_codeprofile_agent import _cli  # the CLI in an isolated interpreter

from resource_tracker import ResourceTracker, _core
from resource_tracker.code_profile import origin_of

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")
HERE = os.path.dirname(os.path.abspath(__file__))
STUB_SOURCE = os.path.join(os.path.dirname(HERE), "gpu_cloud", "nvml_stub.c")

#: Starts N bare interpreters one after the other and prints their CPU-seconds (user +
#: system, from the rusage of the reaped children: their threads' too).
STARTER = textwrap.dedent(
    """
    import json, resource, subprocess, sys

    n = int(sys.argv[1])
    for _ in range(n):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime}))
    """
)


def _code_run(command, **kwargs):
    return _cli(["run", "--code", "-q", "--format", "none", "--", *command], **kwargs)


def test_the_agent_adds_less_cpu_to_a_child_than_the_bare_interpreter_costs(tmp_path):
    """Each child's CPU with the agent, less its CPU without it (both runs here, interleaved,
    the least of three taken), is at most the bare interpreter's own start-up CPU."""
    starter = tmp_path / "starter.py"
    starter.write_text(STARTER)
    n = 8
    bare, agent = [], []
    for _ in range(3):
        plain = subprocess.run([sys.executable, str(starter), str(n)], capture_output=True)
        bare.append(json.loads(plain.stdout)["cpu"] / n)
        done = _code_run([sys.executable, str(starter), str(n)])
        assert done.returncode == 0, done.stderr[-2000:]
        agent.append(json.loads(done.stdout)["cpu"] / n)
    added = min(agent) - min(bare)
    assert added <= min(bare), (bare, agent)


def _own_site(tmp_path, body):
    """A directory holding the command's own sitecustomize (``body``) and a data file beside
    it; the environment that puts it on PYTHONPATH."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text(textwrap.dedent(body))
    (own / "beside.txt").write_text("found beside me")
    return dict(os.environ, PYTHONPATH=str(own))


SHOW_SITE = (
    "import builtins, sitecustomize; "
    "print(builtins.OWN_SITE, sitecustomize.__name__, sitecustomize.__file__)"
)


def test_the_commands_sitecustomize_runs_with_its_own_file(tmp_path):
    env = _own_site(
        tmp_path,
        """
        import builtins, os, sys
        with open(os.path.join(os.path.dirname(__file__), "beside.txt")) as f:
            builtins.OWN_SITE = repr((f.read(), __name__, sys.modules[__name__].__file__))
        """,
    )
    command = [sys.executable, "-c", SHOW_SITE]
    truth = subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert truth.returncode == 0 and "found beside me" in truth.stdout, truth.stderr
    done = _code_run(command, env=env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == truth.stdout
    assert done.stderr == truth.stderr == ""


@pytest.mark.parametrize("verbose", [False, True])
def test_the_commands_sitecustomize_errors_are_reported_as_python_reports_them(tmp_path, verbose):
    env = _own_site(tmp_path, "raise RuntimeError('the site is broken')\n")
    if verbose:
        env["PYTHONVERBOSE"] = "1"
    command = [sys.executable, "-c", "import sys; print('ran', 'sitecustomize' in sys.modules)"]
    truth = subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(tmp_path))
    done = _code_run(command, env=env, cwd=str(tmp_path))
    assert (done.returncode, done.stdout) == (truth.returncode, truth.stdout) == (0, "ran False\n")
    if verbose:  # the traceback (sys.excepthook): the error and the line that raised it
        assert "RuntimeError: the site is broken" in done.stderr, done.stderr[-3000:]
        assert "raise RuntimeError('the site is broken')" in done.stderr
    else:
        expected = (
            "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
            "RuntimeError: the site is broken\n"
        )
        assert truth.stderr == expected
        assert done.stderr == expected


#: Loads 200 MiB in ``load_data`` and holds it while ``crunch`` burns, then exits: the tree's
#: memory is highest at the end, and the agent's exit work then must not be named.
HOLDING_JOB = textwrap.dedent(
    """
    import time

    def load_data():
        data = bytearray(200 << 20)
        for i in range(0, len(data), 4096):
            data[i] = 1
        return data

    def crunch(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    if __name__ == "__main__":
        data = load_data()
        crunch(0.4)
    """
)


def test_the_agents_own_work_is_not_profiled_as_the_workloads(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(HOLDING_JOB)
    out = tmp_path / "out"
    args = ["run", "--code", "-q", "--format", "json", "-o", str(out), "--interval", "0.05"]
    done = _cli([*args, "--", sys.executable, str(job)], cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    tracker = ResourceTracker.loads((out / "resource-tracker.json").read_text())
    processes = tracker._code_record()["processes"]
    assert len(processes) == 1
    record = processes[0]
    sampled = set()
    for _, _, stack, _ in record["samples"]:
        while stack >= 0:
            parent, frame = record["stacks"][stack]
            sampled.add(tuple(record["frames"][frame][:2]))
            stack = parent
    assert ("crunch", str(job)) in sampled
    assert not [f for f in sampled if origin_of(f[1]) == "resource_tracker"], sampled
    peak = tracker.code_peak()
    assert peak is not None
    assert peak["origin"] != "resource_tracker", peak
    assert peak["file"] == str(job) and peak["function"] in {"crunch", "load_data", "<module>"}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the NVML stand-in")
def test_a_child_ended_before_its_first_tick_never_loads_the_gpu_library(tmp_path):
    """The NVML stand-in of tests/gpu_cloud (the real dlopen path): a child that runs 0.3 s
    at a 5 s interval has not mapped it (the sampler took its baseline long before)."""
    stub = str(tmp_path / "libnvidia-ml-stub.so.1")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-o", stub,
                    STUB_SOURCE], check=True)  # fmt: skip
    env = dict(os.environ, RESOURCE_TRACKER_NVML_LIBRARY=stub)
    check = f"import time; time.sleep(0.3); print({stub!r} in open('/proc/self/maps').read())"
    args = ["run", "--code", "-q", "--format", "none", "--interval", "5", "--"]
    done = _cli([*args, sys.executable, "-c", check], env=env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "False\n"


def test_samples_taken_while_the_agent_starts_are_left_out(tmp_path):
    """A real agent directory and a child's real record, plus the samples a tick makes when
    it lands in the agent's own start (a stack holding the agent's module, or the agent's
    sitecustomize): the CLI keeps the child's samples and leaves those out."""
    from resource_tracker import code_agent
    from resource_tracker.cli import code_records

    env, directory = code_agent.prepare(0.05)
    # under `make sanitize` the agent's core is this process's ASan build: its runtime first
    preload = os.environ.get("RESOURCE_TRACKER_SANITIZE_PRELOAD")
    if preload:
        env = dict(env, LD_PRELOAD=preload)
    burn = "import time\nend = time.thread_time() + 0.3\nwhile time.thread_time() < end: pass\n"
    subprocess.run([sys.executable, "-c", burn], env=env, check=True, timeout=60)
    (name,) = [n for n in os.listdir(directory) if n.endswith(".json")]
    path = os.path.join(directory, name)
    with open(path) as f:
        record = json.load(f)

    def top_file(sample):
        return record["frames"][record["stacks"][sample[2]][1]][1]

    burning = [s for s in record["samples"] if top_file(s) == "<string>"]  # the child's code
    assert burning
    agent_module = os.path.join(os.path.dirname(code_agent.__file__), "_code_agent_child.py")
    for function, file in [("start", agent_module), ("<module>", f"{directory}/sitecustomize.py")]:
        record["frames"].append([function, file, 40, 35])
        record["stacks"].append([-1, len(record["frames"]) - 1])
        record["samples"].append([0, 0, len(record["stacks"]) - 1, 1000])
    with open(path, "w") as f:
        json.dump(record, f)
    tracker = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    tracker.stop()
    assert code_records.collect(tracker, directory) == []
    (read,) = tracker._code_processes
    assert all(sample in read["samples"] for sample in burning)
    injected = {len(record["stacks"]) - 1, len(record["stacks"]) - 2}
    assert not [sample for sample in read["samples"] if sample[2] in injected]
    assert not os.path.exists(directory)
