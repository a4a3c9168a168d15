"""The code profile (docs/code_profile.md) of a real run in this interpreter: stack samples
from the C core, attributed to the code that ran, compared with the workload's own thread
CPU times (time.thread_time() inside each function: the truth of the same run).

One tracked run per module (tests/codeprofile/workload.py): three CPU phases, a thread in a C
call without the GIL that exits mid-run, a fork() while sampling, recursion 500 deep, a
generator, a sleep and a 160 MiB allocation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from resource_tracker import ResourceTracker, _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")
INTERVAL = 0.02
SCALE = 1.0  # CPU-seconds of the largest phase
WORKLOAD_FILE = workload.__file__.replace(".pyc", ".py")


@pytest.fixture(scope="module")
def run():
    tracker = ResourceTracker(interval=INTERVAL, discover_server=False, discover_cloud=False)
    truth = workload.run(SCALE)
    tracker.stop()
    return tracker, truth


def _by(table, column="function"):
    return {(row["function"], row["file"]): row for row in table.rows()}


def _row(tracker, function, by="function", user_code=False):
    rows = _by(tracker.code_profile(by, user_code))
    return rows[(function, WORKLOAD_FILE)]


def _slack(tracker):
    """The error one attribution may make: the CPU of the two largest sampled intervals (a
    function's first and last interval may be shared with its neighbours), plus a margin of
    the tree's other threads (the sampler's, the test runner's)."""
    cpu = sorted(tracker.code_timeline()["cpu_seconds"], reverse=True)
    return 2 * sum(cpu[:2]) + 0.03


def test_the_run_was_recorded(run):
    tracker, _ = run
    status = tracker.code_profile_status()
    assert status["status"] == "recorded", status
    assert status["samples"] > 0 and status["captures"] > 0
    assert status["dropped"] == 0
    assert 0 < status["gil_hold_us_p50"] <= status["gil_hold_us_p99"]
    assert list(tracker.code_profile().columns)[:3] == ["function", "file", "line"]


@pytest.mark.parametrize("function", ["phase_a", "phase_b", "phase_c"])
def test_each_phase_gets_its_own_thread_cpu(run, function):
    tracker, truth = run
    row = _row(tracker, function)
    assert abs(row["cpu_seconds"] - truth[function]) <= _slack(tracker), (row, truth)
    assert row["origin"] == "user"


def test_the_shares_of_the_three_phases_follow_the_truth(run):
    """30 / 50 / 20: each phase's share of the three, within 5 points plus the slack."""
    tracker, truth = run
    names = ("phase_a", "phase_b", "phase_c")
    measured = {n: _row(tracker, n)["cpu_seconds"] for n in names}
    known = sum(truth[n] for n in names)
    for n in names:
        share, true_share = measured[n] / sum(measured.values()), truth[n] / known
        assert abs(share - true_share) <= 0.05 + _slack(tracker) / known, (n, measured, truth)


def test_a_thread_in_a_c_call_without_the_gil_is_charged_to_the_calling_line(run):
    tracker, truth = run
    lines = [
        r
        for r in tracker.code_profile("line").rows()
        if r["function"] == "hash_in_c" and r["file"] == WORKLOAD_FILE
    ]
    top = max(lines, key=lambda r: r["cpu_self_seconds"])
    source = open(WORKLOAD_FILE).read().splitlines()[top["line"] - 1]
    assert "sha256" in source
    assert (
        abs(top["cpu_seconds"] - truth["hash_in_c"]) <= _slack(tracker) + 0.1 * truth["hash_in_c"]
    )


def test_recursion_500_deep_counts_each_function_once_per_stack(run):
    tracker, truth = run
    deep = _row(tracker, "deep")
    total = sum(tracker.code_timeline()["cpu_seconds"])
    assert deep["cpu_seconds"] <= total + 1e-9  # not 500 times over
    assert abs(deep["cpu_seconds"] - truth["deep"]) <= _slack(tracker)
    frames = {row["function"] for row in tracker.code_profile().rows()}
    assert "<truncated>" in frames  # kept the 128 frames nearest the running code


def _chain_lengths(stacks):
    lengths = []
    for parent, _ in stacks:
        lengths.append(1 + (lengths[parent] if parent >= 0 else 0))
    return lengths


@pytest.mark.parametrize("longer", [1, 300_000])
def test_loads_refuses_a_stack_chain_longer_than_a_capture_makes(run, longer):
    """The real capture of recursion 500 deep stops at its deepest chain (STACKS_MAX_DEPTH
    frames under one <truncated> frame) and loads; a forged chain one frame longer, or
    300,000 longer (the old loads() took it and code_profile() then raised RecursionError),
    is one ValueError naming the stack."""
    from resource_tracker import code_profile

    tracker, _ = run
    snapshot = json.loads(tracker.dumps())
    stacks = snapshot["code_profile"]["stacks"]
    lengths = _chain_lengths(stacks)
    assert len(ResourceTracker.loads(json.dumps(snapshot)).code_profile()) > 0
    deepest = lengths.index(max(lengths))
    for _ in range(longer):
        stacks.append([deepest, 0])
        deepest = len(stacks) - 1
    snapshot["code_profile"]["samples"].append([0, 0, deepest, 1])
    first_bad = len(stacks) - longer
    with pytest.raises(ValueError, match=rf"code_profile\.stacks\[{first_bad}\] must be a chain"):
        ResourceTracker.loads(json.dumps(snapshot))
    # the bound is the capture's: its constant, and the deepest chain the capture made
    assert max(lengths) - 1 == code_profile.STACK_MAX_DEPTH == _core.STACKS_MAX_DEPTH


def test_a_generator_is_charged_where_it_runs(run):
    tracker, truth = run
    gen = _row(tracker, "numbers")
    assert abs(gen["cpu_self_seconds"] - truth["numbers"]) <= _slack(tracker)
    assert _row(tracker, "consume")["cpu_seconds"] >= gen["cpu_seconds"] - 1e-9


def test_a_sleep_is_time_on_stack_without_cpu(run):
    tracker, truth = run
    nap = _row(tracker, "nap")
    assert nap["cpu_seconds"] <= 0.05 + 0.1 * truth["nap"]
    assert nap["seconds_on_stack"] >= 0.5 * truth["nap"]


def _freed_memory_stays() -> bool:
    """Under ASan (make sanitize) freed memory stays resident (quarantine, shadow): the run's
    peak is then at its end, wherever the allocation was."""
    with open("/proc/self/maps") as f:
        return "libasan" in f.read()


def test_the_memory_peak_is_the_allocating_function(run):
    tracker, truth = run
    peak = tracker.code_peak()
    timeline = list(tracker.code_timeline().rows())
    assert peak["memory_peak"] == max(r["memory"] for r in timeline)
    at_peak = next(r for r in timeline if r["timestamp"] == peak["timestamp"])
    assert (at_peak["function"], at_peak["line"]) == (peak["function"], peak["line"])
    allocate = _row(tracker, "allocate")
    held_kib = truth["allocate_len"] / 1024
    assert allocate["memory_peak"] >= held_kib * 0.9  # the memory while it ran held it
    if _freed_memory_stays():
        return
    assert truth["allocate_start"] <= peak["timestamp"] <= truth["allocate_end"] + 2 * INTERVAL
    assert ["allocate", WORKLOAD_FILE] == peak["stack"][-2][:2], peak  # it called _burn
    assert peak["function"] == "_burn" and peak["file"] == WORKLOAD_FILE
    assert allocate["memory_peak"] == peak["memory_peak"]


def test_fork_after_start_leaves_the_child_and_the_recording_sound(run):
    tracker, truth = run
    assert truth["fork_status"] == 0
    after_fork = _row(tracker, "phase_b")  # the phases after the fork were recorded
    assert after_fork["samples"] > 0


def test_user_code_folds_the_standard_library_into_its_caller(run):
    tracker, truth = run
    folded = tracker.code_profile("function", user_code=True)
    raw = tracker.code_profile("function")

    # threading's frames above the hasher thread's user code: its CPU raw, folded away (a
    # stack without user code, e.g. the thread before its target ran, keeps its top frame)
    def thread_run(table):
        return sum(r["cpu_seconds"] for r in table.rows() if r["function"] == "Thread.run")

    assert thread_run(raw) >= 0.5 * truth["hash_in_c"]
    assert thread_run(folded) <= _slack(tracker)
    assert _row(tracker, "hash_in_c", user_code=True)["cpu_self_seconds"] > 0


def test_phases_can_be_named_by_their_code(run):
    tracker, _ = run
    from resource_tracker.code_profile import phase_code

    timeline = list(tracker.code_timeline().rows())
    b_rows = [r["timestamp"] for r in timeline if r["function"] == "_burn"]
    assert b_rows  # the burning helper is user code too
    start, end = tracker.start_time, tracker.stop_time
    named = phase_code(tracker, start, end)
    assert named is not None and named["function"] == "_burn"


def test_the_snapshot_keeps_the_profile(run):
    tracker, _ = run
    text = tracker.dumps()
    loaded = ResourceTracker.loads(text)
    assert json.loads(text)["code_profile"]["status"] == "recorded"
    for by in ("function", "line"):
        assert loaded.code_profile(by).to_dict() == tracker.code_profile(by).to_dict()
    assert loaded.code_peak() == tracker.code_peak()


def test_a_bad_record_in_a_snapshot_is_refused_by_name(run):
    tracker, _ = run
    snap = json.loads(tracker.dumps())
    snap["code_profile"]["samples"][0][2] = 10**9
    with pytest.raises(ValueError, match=r"code_profile\.samples\[0\]"):
        ResourceTracker.from_snapshot(snap)


def test_switched_off_by_argument_and_by_variable(monkeypatch):
    off = ResourceTracker(
        interval=0.05, discover_server=False, discover_cloud=False, code_profile=False
    )
    off.wait_for_samples(2)
    off.stop()
    assert off.code_profile_status()["status"] == "off"
    assert len(off.code_profile()) == 0 and off.code_peak() is None
    monkeypatch.setenv("RESOURCE_TRACKER_CODE_PROFILE", "0")
    env_off = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    env_off.stop()
    assert env_off.code_profile_status()["status"] == "off"


def test_another_process_is_not_sampled_without_the_agent():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        tracker = ResourceTracker(
            pid=child.pid, interval=0.05, discover_server=False, discover_cloud=False
        )
        tracker.stop()
    finally:
        child.wait()
    status = tracker.code_profile_status()
    assert status["status"] == "off" and "agent" in status["note"]


_LATE_START = """
import json, sys, threading, time
from resource_tracker import ResourceTracker

def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass

def before_the_tracker(go, done):
    burn(0.6)  # before the tracker started: not the run's
    go.wait()
    start = time.thread_time()
    burn(0.1)
    done["helper_after"] = time.thread_time() - start

def after_the_tracker():
    start = time.thread_time()
    burn(0.2)
    return time.thread_time() - start

go, done = threading.Event(), {}
helper = threading.Thread(target=before_the_tracker, args=(go, done))
helper.start()
burn(0.6)  # the main thread, before the tracker started
tracker = ResourceTracker(interval=0.02, discover_server=False, discover_cloud=False)
go.set()
done["main_after"] = after_the_tracker()
helper.join()
tracker.stop()
rows = {r["function"]: r for r in tracker.code_profile("function").rows()}
print(json.dumps({"truth": done, "tree_cpu": sum(tracker.code_timeline()["cpu_seconds"]),
    "cpu": {k: v["cpu_seconds"] for k, v in rows.items()},
    "self": {k: v["cpu_self_seconds"] for k, v in rows.items()}}))
"""


def test_a_late_tracker_counts_no_thread_cpu_from_before_it_started():
    """A tracker started late in a long-lived process (a notebook kernel, a test runner): the
    CPU its threads used before the tracker started is not the run's, so no stack gets it at
    its thread's first sample (it did: the main thread's first stack took all its CPU so far)."""
    out = subprocess.run(
        [sys.executable, "-c", _LATE_START], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    truth, cpu = got["truth"], got["cpu"]
    slack = 0.1  # a thread's first and last interval, at 20 ms, on a loaded machine
    assert cpu["before_the_tracker"] <= truth["helper_after"] + slack, got
    assert cpu["<module>"] <= truth["main_after"] + truth["helper_after"] + slack, got
    assert sum(got["self"].values()) <= got["tree_cpu"] + slack, got


_EXIT_WHILE_SAMPLING = """
import threading, sys
from resource_tracker import ResourceTracker
def spin():
    while True:
        sum(range(1000))
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
tracker = ResourceTracker(interval=0.0005, discover_server=False, discover_cloud=False)
tracker.wait_for_samples(20)
print(tracker.code_profile_status()["captures"] > 0, flush=True)
sys.exit(3)  # no stop(): the interpreter finalizes while the sampler and captures run
"""


def test_the_interpreter_exits_while_sampling_without_a_crash():
    """atexit stops the captures before the interpreter tears down, with daemon threads
    running Python at every tick (repeated: a crash would be a race)."""
    for _ in range(4):
        done = subprocess.run(
            [sys.executable, "-c", _EXIT_WHILE_SAMPLING], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 3, done.stderr[-2000:]
        assert done.stdout.strip() == "True"


_MANY_CAPTURES = """
import _thread, os, sys, time
from resource_tracker import _core

samplers = []
for _ in range(40):
    sampler = _core.Sampler(os.getpid(), 0.001, children=False, track_system=False)
    sampler.record_stacks(_thread.get_ident())
    sampler.start()
    samplers.append(sampler)

def down(n):
    return 0 if n == 0 else down(n - 1)

end = time.monotonic() + 1.0
while time.monotonic() < end:
    down(50)
_core.stop_stacks()
for sampler in samplers:
    sampler.stop()
print(sum(s.stacks()["stats"]["captures"] for s in samplers) > 0, flush=True)
"""


def test_captures_walk_past_a_thread_state_being_made():
    """Each capture makes its thread state at each tick (PyGILState_Ensure, without the GIL)
    while another capture walks the interpreter's threads: a state linked but not yet filled
    in is skipped, not read (40 captures at 1 ms: on the unfixed walk, a crash every run)."""
    done = subprocess.run(
        [sys.executable, "-c", _MANY_CAPTURES], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"
