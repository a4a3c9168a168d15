"""The application's descriptors are its own: the tracker never reads, writes or closes one.

A program that closes every descriptor it did not open itself (daemon code, careful child
set-ups: ``os.closerange(3, 4096)``) closes the ones the tracker keeps open between readings
too, and its next ``open()`` calls get those numbers back. Each test runs a real program in a
process of its own that does exactly that while a tracker samples it, writes known content
to the files it opened, and checks after ``stop()`` that every write and close succeeded;
the test then reads every byte back and compares the memory column with the program's own
resident set. The old code's ``stop()`` closed the program's files (11 of 12 writes failed
with EBADF), its memory column read 0.0 from the closerange on with no data-quality note,
and ``resource-tracker run --code`` lost the end of the program's output (99,969 of 100,000
lines, exit status 0).

Under ``make sanitize`` (tests/reliability/run_sanitize.sh) the in-process program loads the
ASan+UBSan build of the core too (``sanitized_env``): an ASan report aborts it and the test
fails. The ``run --code`` program runs natively there, as every command the CLI starts does
(sanitize_hook/sitecustomize.py); it runs the same C code as the in-process one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from resource_tracker import _core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = 12
ROUNDS = 5  # of writes, each waiting for a new reading of the tracker
BUFFER_MIB = 100

#: the in-process program: a tracker of itself, closerange, 12 files, memory, readings, stop()
TRACKED_APP = r"""
import json, os, sys, time
from resource_tracker import ResourceTracker, _core

out, files_n, rounds, buffer_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
interval = float(sys.argv[5])

def links():  # this process's descriptors and what they are
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the listing's own descriptor, closed already
    return found

def wait_readings(tracker, n):  # until the sampler took n more readings (no fixed sleep)
    target = tracker._sampler.samples_taken + n
    deadline = time.monotonic() + 120
    while tracker._sampler.samples_taken < target:
        assert time.monotonic() < deadline, "the tracker took no reading"
        time.sleep(0.005)

def line(i, k):
    return f"file {i} round {k} " + "x" * 64 + "\n"

tracker = ResourceTracker(interval=interval, discover_cloud=False, discover_server=False)
wait_readings(tracker, 2)  # the closerange comes right after a reading (see INTERVAL)
kept = sorted(n for n, link in links().items() if n > 2 and link.startswith(("/proc", "/sys")))
os.closerange(3, 4096)
files = [open(os.path.join(out, f"app{i}.txt"), "w") for i in range(files_n)]
numbers = [f.fileno() for f in files]
buf = bytearray(buffer_mib << 20)
buf[::4096] = b"x" * len(buf[::4096])  # every page resident
touched = time.time()
failures = []
for k in range(rounds):
    for i, f in enumerate(files):
        f.write(line(i, k) * 200)
        f.flush()
    wait_readings(tracker, 1)
with open("/proc/self/status") as status:
    rss = next(int(l.split()[1]) for l in status if l.startswith("VmRSS:"))
tracker.stop()
for i, f in enumerate(files):
    try:
        f.write(f"file {i} end\n")
        f.close()
    except OSError as exc:
        failures.append(f"file {i} (fd {numbers[i]}): {exc}")
df = tracker.process_metrics
memory = [m for t, m in zip(df["timestamp"], df["memory"]) if t >= touched]
print(json.dumps(dict(
    kept=kept, numbers=numbers, failures=failures, memory=memory, rss_kib=rss,
    quality=tracker.stats()["data_quality"], core=_core.__file__,
)))
"""

#: the program of `run --code`: closerange (at once, or after a reading of the agent's when
#: told: see INTERVAL), one output file left for the interpreter's exit to flush
CODE_APP = r"""
import os, sys, time
agent = None
try:
    import resource_tracker.code_agent as code_agent
    agent = code_agent._agent.get("tracker")
except ImportError:
    pass
def wait_readings(n):  # until the agent's tracker took n more readings (no fixed sleep)
    if agent is None:
        return
    target = agent._sampler.samples_taken + n
    deadline = time.monotonic() + 120
    while agent._sampler.samples_taken < target and time.monotonic() < deadline:
        time.sleep(0.005)
if sys.argv[3] == "after-a-reading":
    wait_readings(1)
os.closerange(3, 4096)
out = open(sys.argv[1], "w")  # never closed: the interpreter's exit flushes and closes it
lines, rounds = int(sys.argv[2]), 5
for k in range(rounds):
    for i in range(k * lines // rounds, (k + 1) * lines // rounds):
        out.write(f"line {i}\n")
    wait_readings(2)  # the agent's tracker reads while the program works
print("agent", type(agent._sampler).__name__ if agent is not None else None, flush=True)
"""


#: the sampling interval per backend. The C sampler keeps descriptors open between readings
#: (the case under test) and opens others only for microseconds within a reading: its
#: programs close every descriptor whenever they like (run --code: at once, as the issue's
#: did). psutil keeps none between readings, but a psutil reading in progress holds files
#: open for milliseconds, handing the interpreter lock to other threads in between: a program
#: that closes and reopens descriptors in another thread at that moment can still have one of
#: its new files read and closed by psutil (not fixed: psutil's own file handling). Its
#: programs close every descriptor right after a reading, with a long interval ahead.
INTERVAL = {"c": 0.05, "psutil": 0.5}


def sanitized_env():
    """This environment; under make sanitize (the ASan runtime loaded here), one in which a
    Python program loads the ASan+UBSan build of the core as this process does (the runtime
    preloaded, CPython's allocations through it, tests/reliability/sanitize_hook on the path)."""
    env = dict(os.environ)
    libs = []
    with open("/proc/self/maps") as maps:
        for row in maps:
            path = row.split()[-1]
            if ("/libasan.so" in path or "/libubsan.so" in path) and path not in libs:
                libs.append(path)
    if env.get("RESOURCE_TRACKER_CORE_SO") and libs:
        env["LD_PRELOAD"] = " ".join(sorted(libs))  # libasan first
        env["PYTHONMALLOC"] = "malloc"
    return env


def _expected(i):
    text = "".join((f"file {i} round {k} " + "x" * 64 + "\n") * 200 for k in range(ROUNDS))
    return text + f"file {i} end\n"


@pytest.mark.skipif(not hasattr(os, "closerange"), reason="os.closerange")
def test_closerange_and_reopen_in_the_application_loses_nothing(backend, tmp_path):
    """A tracker in the program: after closerange(3, 4096) and 12 files opened on the freed
    numbers, every write and close of the program succeeds (also after stop()), every byte
    arrives, and the memory column keeps measuring the program (never a silent 0.0)."""
    app = tmp_path / "app.py"
    app.write_text(TRACKED_APP)
    argv = [sys.executable, str(app), str(tmp_path), str(FILES), str(ROUNDS), str(BUFFER_MIB)]
    argv.append(str(INTERVAL[backend.name]))
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, env=sanitized_env(), cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if os.environ.get("RESOURCE_TRACKER_CORE_SO") and "LD_PRELOAD" in sanitized_env():
        assert got["core"] == os.environ["RESOURCE_TRACKER_CORE_SO"]  # the ASan build ran
    if backend.name == "c":
        # the program got numbers the tracker had kept open: the case under test happened
        assert set(got["numbers"]) & set(got["kept"]), got
    assert got["failures"] == [], got
    for i in range(FILES):
        assert (tmp_path / f"app{i}.txt").read_text() == _expected(i), f"file {i}"
    # the readings after the buffer was touched measure the program (its own VmRSS), every one
    assert len(got["memory"]) >= ROUNDS - 1, got
    low = min(got["memory"])
    assert low >= BUFFER_MIB * 1024 and low >= 0.7 * got["rss_kib"], got
    assert max(got["memory"]) <= 1.1 * got["rss_kib"], got
    assert not got["quality"].get("read_errors"), got["quality"]
    if backend.name == "c":  # the replaced descriptors were noticed and said
        assert got["quality"].get("descriptors_replaced", 0) >= 1, got["quality"]


@pytest.mark.skipif(not _core.HAVE_PROCFS, reason="run --code: the stack sampler (C core)")
def test_run_code_program_after_closerange_keeps_all_its_output(backend, tmp_path):
    """`resource-tracker run --code -- python app.py`: the program closes every descriptor,
    writes 100,000 lines to a file it leaves open for its exit to flush; the agent's
    exit-time stop() must not close that file first: all 100,000 lines arrive, status 0."""
    app, out = tmp_path / "app.py", tmp_path / "out.txt"
    app.write_text(CODE_APP)
    lines = 100_000
    when = "at-once" if backend.name == "c" else "after-a-reading"
    command = [sys.executable, str(app), str(out), str(lines), when]
    done = subprocess.run(
        [sys.executable, "-I", "-m", "resource_tracker", "run", "--code", "-q", "--format"]
        + ["none", "--interval", str(INTERVAL[backend.name]), "--", *command],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    sampler = {"c": "Sampler", "psutil": "PsutilSampler"}[backend.name]
    assert f"agent {sampler}" in done.stdout, done.stdout  # the agent tracked the program
    got = out.read_text().splitlines()
    assert len(got) == lines, f"{len(got)} of {lines} lines arrived"
    assert got == [f"line {i}" for i in range(lines)]
