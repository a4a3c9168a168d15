"""The code at the memory peak is the user's where a user frame exists (issue 38 point 5): a
real run whose memory peaks while a worker thread runs only standard-library and C code
(concurrent.futures' worker deriving a key with hashlib.scrypt, which fills 128 MiB without
the GIL) and the main thread waits for it in threading's Condition.wait() under the user's
own line. The peak, the timeline and the summary's tables all name that line, not
threading.py or concurrent/futures/thread.py.

The script runs in a fresh interpreter (its memory is the workload's alone); its own clock
around the wait is the truth the peak's time is checked against.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from resource_tracker import ResourceTracker, _core

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")

INTERVAL = 0.05
SCRIPT = textwrap.dedent(
    """
    import concurrent.futures, hashlib, json, sys, time
    from resource_tracker import ResourceTracker

    TRUTH = {}
    SCRYPT = dict(salt=b"salt", n=1 << 17, r=8, p=3, maxmem=1 << 28, dklen=32)  # 128 MiB

    def wait_for_the_pool():
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            TRUTH["start"] = time.time()
            key = pool.submit(hashlib.scrypt, b"password", **SCRYPT).result()  # the wait
            TRUTH["end"] = time.time()
        return key

    tracker = ResourceTracker(interval=INTERVAL, discover_server=False, discover_cloud=False)
    time.sleep(0.3)
    wait_for_the_pool()
    time.sleep(0.3)
    tracker.stop()
    with open(sys.argv[1], "w") as out:
        json.dump({"truth": TRUTH, "run": tracker.dumps()}, out)
    """
).replace("INTERVAL", repr(INTERVAL))
WAIT_LINE = next(i for i, text in enumerate(SCRIPT.splitlines(), 1) if "# the wait" in text)


def _freed_memory_stays() -> bool:
    """Under ASan freed memory stays resident: the run's peak is then at its end."""
    with open("/proc/self/maps") as f:
        return "libasan" in f.read()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("peak")
    script, saved = folder / "train.py", folder / "run.json"
    script.write_text(SCRIPT)
    env = dict(os.environ, RESOURCE_TRACKER_DISCOVER_CLOUD="0", RESOURCE_TRACKER_KEEPER_URL="off")
    subprocess.run([sys.executable, str(script), str(saved)], check=True, env=env, timeout=300)
    data = json.loads(saved.read_text())
    return ResourceTracker.loads(data["run"]), data["truth"], str(script)


def test_the_worker_without_user_code_was_sampled(run):
    """The scenario holds: the pool's worker (no user frame on its stack) was sampled."""
    tracker, _, _ = run
    worker = [r for r in tracker.code_profile("function").rows() if r["function"] == "_worker"]
    assert worker and worker[0]["origin"] == "stdlib" and worker[0]["samples"] > 0


def test_the_peak_names_the_user_line_that_waited(run):
    tracker, truth, script = run
    peak = tracker.code_peak()
    assert (peak["function"], peak["file"], peak["line"]) == (
        "wait_for_the_pool",
        script,
        WAIT_LINE,
    )
    assert peak["origin"] == "user"
    assert all(os.path.basename(frame[1]) == "train.py" for frame in peak["stack"])
    if not _freed_memory_stays():
        assert truth["start"] <= peak["timestamp"] <= truth["end"] + 2 * INTERVAL


def test_the_timeline_names_user_code_wherever_a_user_frame_ran(run):
    tracker, truth, script = run
    during = [
        r
        for r in tracker.code_timeline().rows()
        if truth["start"] + 2 * INTERVAL < r["timestamp"] < truth["end"] - 2 * INTERVAL
    ]
    assert during
    assert {(r["file"], r["line"]) for r in during} == {(script, WAIT_LINE)}


def test_the_summary_s_peak_and_memory_table_name_the_same_line(run):
    tracker, _, _ = run
    view = tracker.summary(lookup_server=False).code
    peak, top = view["peak"], view["memory"][0]
    assert (peak["function"], peak["file"], peak["line"]) == (
        "wait_for_the_pool",
        "train.py",
        WAIT_LINE,
    )
    assert (top["function"], top["file"], top["line"]) == (peak["function"], "train.py", WAIT_LINE)
    assert top["memory_peak"] == peak["memory_kib"]
